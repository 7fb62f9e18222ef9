//! The guest's view of the host: `tools`, `call_tool`, `search_tools`, `describe_tools`,
//! `resources` and `prompts` (`resources.<server>.read(uri)`, `prompts.<server>.get(name)`), the
//! session's `store`, `results` and `handle`, `emit` and `progress`, and `llm` (`llm.ask(prompt)`,
//! `llm.think(messages)`).
//!
//! None of these exist in the interpreter until the guest names them: Monty asks the host for
//! every name it cannot resolve (`NameLookup`), and [`GuestApi::lookup`] answers. `tools` is a
//! host class instance whose attributes are the server namespaces, each an instance whose
//! attributes are external functions named `"<server>.<tool>"`. Calling one of them makes Monty
//! suspend with a `FunctionCall`; [`GuestApi::request`] turns it into the [`HostRequest`] the
//! JavaScript engine would send, or an exception for the guest when the arguments are wrong.
//!
//! A namespace's tools are not attributes made ahead: Monty asks for each public attribute of a
//! host instance as it is read (a lazy lookup) or called (a method call routed by the instance's
//! id). Building every tool's function into each interpreter cost every execution time that grew
//! with the catalog, for a program that calls one. Every name resolves to a call the host answers, as in
//! JavaScript: a tool (by its Python name or its original one), a name the host does not know (it
//! answers with the closest tools and what exists), a tool of a server still starting (it waits
//! for the server, or explains why it failed). So does an unknown server (`tools.fs.read`, a
//! namespace of its own) and a tool with its server left out (`tools.read(...)`). (Monty answers
//! names with a leading underscore itself, without asking: tools named so are made ahead.)

use std::sync::Arc;

use monty_types::{
    DictPairs, ExcType, MontyClassInstance, MontyClassType, MontyException, MontyObject, MontyUuid,
    NameLookupResult,
};
use serde_json::{Map, Value};

use super::values::{ValuePath, to_json, type_name};
use crate::{HostRequest, LlmAsk, Manifest, ServerAsk, SessionAsk};

/// The global names the engine provides.
const CALL_TOOL: &str = "call_tool";
/// code-executor-mcp's name for `call_tool`, with the same arguments, which models bring.
const CALL_MCP_TOOL: &str = "call_mcp_tool";
const SEARCH_TOOLS: &str = "search_tools";
const DESCRIBE_TOOLS: &str = "describe_tools";
/// The most hits `search_tools` may ask for.
const MAX_SEARCH_LIMIT: i64 = 1000;
/// How many names of servers that do not exist one execution may use: each is a namespace the
/// engine keeps until the end.
const MAX_UNKNOWN_SERVERS: usize = 1000;

/// Identity of the `tools` instance (and its class). Namespace instances and classes take ids
/// from [`NAMESPACE_ID_BASE`] up, one per namespace: those of the manifest, then those of
/// unknown servers as code names them.
const TOOLS_ID: u128 = 1;
/// Identities of `resources` and `prompts`; a server's scope under either takes an id from
/// [`SCOPE_ID_BASE`] up, in the order code names them.
const RESOURCES_ID: u128 = 2;
const PROMPTS_ID: u128 = 3;
/// Identities of `store` and `results`, what the session keeps across executions.
const STORE_ID: u128 = 4;
const RESULTS_ID: u128 = 5;
/// Identity of `llm`, whose `ask` and `think` ask the model's LLM.
const LLM_ID: u128 = 6;
/// Functions of `llm` read as attributes (`ask = llm.ask`) are named with this prefix and the
/// method (`llm#ask`).
const LLM_FUNCTION: &str = "llm#";
/// `handle(value)`, which keeps a value in the session.
const HANDLE: &str = "handle";
/// `emit(block)`, which adds a content block to the answer.
const EMIT: &str = "emit";
/// `progress(done, total=None, message=None)`, which tells the client how far the program is.
const PROGRESS: &str = "progress";
/// Functions of `store` and `results` read as attributes (`get = store.get`) are named with
/// this prefix and the function's name in code (`session#store.get`).
const SESSION_FUNCTION: &str = "session#";
const SCOPE_ID_BASE: u128 = 1 << 96;
/// Functions of a server's scope read as attributes (`f = resources.s.read`) are named with this
/// prefix, the scope's number, a dot and the method.
const SCOPE_FUNCTION: &str = "scope#";
const NAMESPACE_ID_BASE: u128 = 1 << 64;
/// Set in a class id, so the ids of classes and instances never meet.
const CLASS_ID_BIT: u128 = 1 << 127;

/// What a guest call asks of the host.
pub(super) enum Call {
    /// Send this request to the host.
    Host(HostRequest),
    /// Raise this exception at the call, without asking the host.
    Raise(MontyException),
    /// Tell the host how far the program is, and return `None` at once.
    Progress(crate::Progress),
    /// Not one of the engine's functions: the name is undefined.
    NotFound,
}

/// The names of one execution's manifest, as the guest sees them.
pub(super) struct GuestApi {
    manifest: Arc<Manifest>,
    /// Names of servers the manifest does not have that code used (`tools.fs`), in order.
    unknown_servers: Vec<String>,
    /// `resources.<server>` and `prompts.<server>` as code named them, in order: whether it is
    /// resources, and the server's name.
    scopes: Vec<(bool, String)>,
}

impl GuestApi {
    pub(super) fn new(manifest: Arc<Manifest>) -> Self {
        Self {
            manifest,
            unknown_servers: Vec::new(),
            scopes: Vec::new(),
        }
    }

    /// The execution's manifest: its servers and the tools of those that are ready.
    pub(super) fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// A global name of the API: `tools`, `store`, the functions, ...; `Undefined` for others.
    fn global(&self, name: &str) -> NameLookupResult {
        match name {
            "tools" => NameLookupResult::Value(self.tools()),
            "store" => NameLookupResult::Value(instance(
                "store".to_owned(),
                STORE_ID,
                DictPairs::default(),
            )),
            "results" => NameLookupResult::Value(instance(
                "results".to_owned(),
                RESULTS_ID,
                DictPairs::default(),
            )),
            CALL_TOOL | CALL_MCP_TOOL | SEARCH_TOOLS | DESCRIBE_TOOLS | HANDLE | EMIT
            | PROGRESS => NameLookupResult::Value(function(name.to_owned())),
            "llm" => {
                NameLookupResult::Value(instance("llm".to_owned(), LLM_ID, DictPairs::default()))
            }
            "resources" => NameLookupResult::Value(instance(
                "resources".to_owned(),
                RESOURCES_ID,
                DictPairs::default(),
            )),
            "prompts" => NameLookupResult::Value(instance(
                "prompts".to_owned(),
                PROMPTS_ID,
                DictPairs::default(),
            )),
            _ => NameLookupResult::Undefined,
        }
    }

    /// `resources.<server>` (`resources`) or `prompts.<server>`: the server's scope, whatever
    /// its name (the host answers a server it does not know), up to [`MAX_UNKNOWN_SERVERS`].
    fn server_scope(&mut self, resources: bool, name: &str) -> NameLookupResult {
        let index = match self
            .scopes
            .iter()
            .position(|(kind, server)| *kind == resources && server == name)
        {
            Some(index) => index,
            None if self.scopes.len() >= MAX_UNKNOWN_SERVERS => {
                return NameLookupResult::Undefined;
            }
            None => {
                self.scopes.push((resources, name.to_owned()));
                self.scopes.len() - 1
            }
        };
        let kind = if resources { "resources" } else { "prompts" };
        NameLookupResult::Value(instance(
            format!("{kind}.{name}"),
            SCOPE_ID_BASE + index as u128,
            DictPairs::default(),
        ))
    }

    /// Answers Monty's question about a name it cannot resolve: a global (`object_id` is `None`)
    /// or an attribute missing from one of the engine's instances.
    pub(super) fn lookup(&mut self, name: &str, object_id: Option<MontyUuid>) -> NameLookupResult {
        match object_id {
            None => self.global(name),
            // `resources.<server>`, `prompts.<server>`: the server's scope, whatever its name;
            // the host answers a server it does not know.
            Some(id)
                if id == MontyUuid::from_u128(RESOURCES_ID)
                    || id == MontyUuid::from_u128(PROMPTS_ID) =>
            {
                self.server_scope(id == MontyUuid::from_u128(RESOURCES_ID), name)
            }
            Some(id) if id == MontyUuid::from_u128(LLM_ID) => match name {
                "ask" | "think" => {
                    NameLookupResult::Value(function(format!("{LLM_FUNCTION}{name}")))
                }
                _ => NameLookupResult::Undefined,
            },
            Some(id) if session_object(id).is_some() => {
                let object = session_object(id).unwrap_or_default();
                match session_signature(&format!("{object}.{name}")) {
                    Some(_) => NameLookupResult::Value(function(format!(
                        "{SESSION_FUNCTION}{object}.{name}"
                    ))),
                    None => NameLookupResult::Undefined,
                }
            }
            Some(id) if self.scope_of(id).is_some() => {
                let index = u128::from_be_bytes(*id.as_bytes()) - SCOPE_ID_BASE;
                NameLookupResult::Value(function(format!("{SCOPE_FUNCTION}{index}.{name}")))
            }
            // A server the manifest does not have: a namespace whose calls the host explains.
            Some(id) if id == MontyUuid::from_u128(TOOLS_ID) => {
                if self.unknown_servers.len() >= MAX_UNKNOWN_SERVERS {
                    return NameLookupResult::Undefined;
                }
                let index = self.manifest.namespaces.len() + self.unknown_servers.len();
                self.unknown_servers.push(name.to_owned());
                NameLookupResult::Value(instance(
                    format!("tools.{name}"),
                    namespace_id(index),
                    DictPairs::default(),
                ))
            }
            Some(id) => match self.namespace_of(id) {
                Some(namespace) => NameLookupResult::Value(function(format!("{namespace}.{name}"))),
                None => NameLookupResult::Undefined,
            },
        }
    }

    /// Turns a call of one of the engine's functions into a request, or says why it cannot be
    /// one. `object_id` is set when the guest called a missing attribute of an instance.
    pub(super) fn request(
        &self,
        function_name: &str,
        object_id: Option<MontyUuid>,
        args: &[MontyObject],
        kwargs: &[(MontyObject, MontyObject)],
    ) -> Call {
        if let Some(id) = object_id {
            // `tools.<name>(...)`: a tool named without its server, which the host explains.
            if id == MontyUuid::from_u128(TOOLS_ID) {
                return tool_call(function_name, args, kwargs);
            }
            if let Some((resources, server)) = self.scope_of(id) {
                return server_call(resources, server, function_name, args, kwargs);
            }
            if let Some(object) = session_object(id) {
                return session_call(&format!("{object}.{function_name}"), args, kwargs);
            }
            if id == MontyUuid::from_u128(LLM_ID) {
                return llm_call(function_name, args, kwargs);
            }
            return match self.namespace_of(id) {
                Some(namespace) => tool_call(&format!("{namespace}.{function_name}"), args, kwargs),
                None => Call::NotFound,
            };
        }
        if let Some((index, method)) = function_name
            .strip_prefix(SCOPE_FUNCTION)
            .and_then(|rest| rest.split_once('.'))
        {
            let scope = index
                .parse::<usize>()
                .ok()
                .and_then(|index| self.scopes.get(index));
            return match scope {
                Some((resources, server)) => server_call(*resources, server, method, args, kwargs),
                None => Call::NotFound,
            };
        }
        if let Some(function) = function_name.strip_prefix(SESSION_FUNCTION) {
            return session_call(function, args, kwargs);
        }
        if let Some(method) = function_name.strip_prefix(LLM_FUNCTION) {
            return llm_call(method, args, kwargs);
        }
        match function_name {
            HANDLE => session_call(HANDLE, args, kwargs),
            EMIT => emit(args, kwargs),
            PROGRESS => progress(args, kwargs),
            CALL_TOOL | CALL_MCP_TOOL => call_tool(args, kwargs),
            SEARCH_TOOLS => search_tools(args, kwargs),
            DESCRIBE_TOOLS => describe_tools(args, kwargs),
            // Only the engine hands out functions with a dot in their name: `tools.<ns>.<tool>`.
            name if name.contains('.') => tool_call(name, args, kwargs),
            _ => Call::NotFound,
        }
    }

    /// The name of the namespace an instance id belongs to: one of the manifest's, or an unknown
    /// server code named.
    fn namespace_of(&self, id: MontyUuid) -> Option<&str> {
        let index = u128::from_be_bytes(*id.as_bytes()).checked_sub(NAMESPACE_ID_BASE)?;
        let index = usize::try_from(index).ok()?;
        match self.manifest.namespaces.get(index) {
            Some(namespace) => Some(&namespace.name),
            None => self
                .unknown_servers
                .get(index - self.manifest.namespaces.len())
                .map(String::as_str),
        }
    }

    /// The scope (`resources.<server>` or `prompts.<server>`) an instance id belongs to: whether
    /// it is resources, and the server as code named it.
    fn scope_of(&self, id: MontyUuid) -> Option<(bool, &str)> {
        let index = u128::from_be_bytes(*id.as_bytes()).checked_sub(SCOPE_ID_BASE)?;
        let (resources, server) = self.scopes.get(usize::try_from(index).ok()?)?;
        Some((*resources, server))
    }

    /// `tools`: one attribute per namespace, each with no attributes of its own but the tools
    /// Monty would not ask for (see the module's notes).
    fn tools(&self) -> MontyObject {
        let namespaces = self
            .manifest
            .namespaces
            .iter()
            .enumerate()
            .map(|(index, namespace)| {
                let functions = namespace
                    .tools
                    .iter()
                    .flatten()
                    .filter(|tool| tool.starts_with('_'))
                    .map(|tool| {
                        (
                            MontyObject::String(tool.clone()),
                            function(format!("{}.{tool}", namespace.name)),
                        )
                    })
                    .collect::<DictPairs>();
                (
                    MontyObject::String(namespace.name.clone()),
                    instance(
                        format!("tools.{}", namespace.name),
                        namespace_id(index),
                        functions,
                    ),
                )
            })
            .collect::<DictPairs>();
        instance("tools".to_owned(), TOOLS_ID, namespaces)
    }
}

/// `store` or `results`, when `id` is one of them.
fn session_object(id: MontyUuid) -> Option<&'static str> {
    if id == MontyUuid::from_u128(STORE_ID) {
        Some("store")
    } else if id == MontyUuid::from_u128(RESULTS_ID) {
        Some("results")
    } else {
        None
    }
}

/// The parameters of a function of the session's state, and how many are required.
fn session_signature(function: &str) -> Option<(&'static [&'static str], usize)> {
    Some(match function {
        "store.get" | "store.delete" => (&["key"], 1),
        "store.set" => (&["key", "value"], 2),
        "store.keys" => (&[], 0),
        "results.get" => (&["handle", "options", "path", "offset", "limit"], 1),
        HANDLE => (&["value"], 1),
        _ => return None,
    })
}

/// `store.get(key)`, `store.set(key, value)`, `store.delete(key)`, `store.keys()`,
/// `results.get(handle, options=None, path=None, offset=None, limit=None)` and `handle(value)`:
/// the arguments as JSON, checked by the ask both languages make.
fn session_call(
    function: &str,
    args: &[MontyObject],
    kwargs: &[(MontyObject, MontyObject)],
) -> Call {
    let Some((parameters, required)) = session_signature(function) else {
        let (object, name) = function.split_once('.').unwrap_or((function, ""));
        let offered = if object == "store" {
            "get(key), set(key, value), delete(key) and keys()"
        } else {
            "get(handle, options=None)"
        };
        return Call::Raise(MontyException::new(
            ExcType::AttributeError,
            Some(format!("{object} has no method '{name}'; it has {offered}")),
        ));
    };
    let signature = format!("{function}({})", parameters.join(", "));
    let bound = match bind(&signature, parameters, required, args, kwargs) {
        Ok(bound) => bound,
        Err(exception) => return Call::Raise(exception),
    };
    let mut arguments = Vec::with_capacity(bound.len());
    for (parameter, value) in parameters.iter().zip(&bound) {
        let value = match value {
            None => Value::Null,
            Some(value) => match to_json(
                value,
                &mut ValuePath::new(format!("the argument {parameter} of {signature}")),
            ) {
                Ok(value) => value,
                Err(message) => return Call::Raise(type_error(message)),
            },
        };
        arguments.push(value);
    }
    if function == "results.get" {
        // `path=`, `offset=` and `limit=` are the options JavaScript passes as one object.
        let keywords = arguments.split_off(2);
        let mut options = match arguments.pop() {
            Some(Value::Object(options)) => options,
            Some(Value::Null) | None => Map::new(),
            Some(_) => {
                return Call::Raise(type_error(format!(
                    "{signature}: options must be a dict like {{\"path\": ..., \"offset\": ..., \"limit\": ...}}"
                )));
            }
        };
        for (name, value) in ["path", "offset", "limit"].into_iter().zip(keywords) {
            if !value.is_null() {
                options.insert(name.to_owned(), value);
            }
        }
        arguments.push(Value::Object(options));
    }
    match SessionAsk::new(function, arguments) {
        Ok(ask) => Call::Host(HostRequest::Session(ask)),
        Err(message) => Call::Raise(type_error(message)),
    }
}

/// `llm.ask(prompt, options=None, system=None, max_tokens=None, model=None)` and
/// `llm.think(messages, system=None, max_tokens=None, model=None)` (`messages` a list of
/// `{"role", "content"}` dicts, or the whole request as a dict, as JavaScript passes it): the
/// arguments as the JSON JavaScript sends, checked by the ask both languages make.
fn llm_call(method: &str, args: &[MontyObject], kwargs: &[(MontyObject, MontyObject)]) -> Call {
    let (parameters, required): (&[&str], usize) = match method {
        "ask" => (&["prompt", "options", "system", "max_tokens", "model"], 1),
        "think" => (&["messages", "system", "max_tokens", "model"], 1),
        _ => {
            return Call::Raise(MontyException::new(
                ExcType::AttributeError,
                Some(format!(
                    "llm has no method '{method}'; it has ask(prompt, system=None, \
                     max_tokens=None, model=None) and think(messages, system=None, \
                     max_tokens=None, model=None)"
                )),
            ));
        }
    };
    let signature = format!("llm.{method}({})", parameters.join(", "));
    let bound = match bind(&signature, parameters, required, args, kwargs) {
        Ok(bound) => bound,
        Err(exception) => return Call::Raise(exception),
    };
    let mut values = Vec::with_capacity(bound.len());
    for (parameter, value) in parameters.iter().zip(&bound) {
        values.push(match value {
            None => Value::Null,
            Some(value) => match to_json(
                value,
                &mut ValuePath::new(format!("the argument {parameter} of {signature}")),
            ) {
                Ok(value) => value,
                Err(message) => return Call::Raise(type_error(message)),
            },
        });
    }
    // The keywords are the options JavaScript passes in one object.
    let keywords = values.split_off(values.len() - 3);
    let first = values.remove(0);
    let mut options = match (method, values.pop()) {
        ("ask", Some(Value::Object(options))) => options,
        ("ask", Some(Value::Null) | None) => Map::new(),
        ("ask", Some(_)) => {
            return Call::Raise(type_error(format!(
                "{signature}: options must be a dict like {{\"system\": ..., \"maxTokens\": ...}}"
            )));
        }
        _ => Map::new(),
    };
    for (name, value) in ["system", "maxTokens", "model"].into_iter().zip(keywords) {
        if !value.is_null() {
            options.insert(name.to_owned(), value);
        }
    }
    let arguments = if method == "ask" {
        vec![first, Value::Object(options)]
    } else {
        // `think(messages)` with a list, or the whole request as a dict.
        let mut request = match first {
            Value::Object(request) => request,
            Value::Null => Map::new(),
            messages => Map::from_iter([("messages".to_owned(), messages)]),
        };
        request.extend(options);
        vec![Value::Object(request)]
    };
    match LlmAsk::new(&format!("llm.{method}"), arguments) {
        Ok(ask) => Call::Host(HostRequest::Llm(ask)),
        Err(message) => Call::Raise(type_error(message)),
    }
}

fn namespace_id(index: usize) -> u128 {
    NAMESPACE_ID_BASE + index as u128
}

/// A host class instance of a class of its own (named for it, so Monty's `AttributeError`
/// says `'tools.github' object has no attribute ...`).
fn instance(class_name: String, id: u128, attrs: DictPairs) -> MontyObject {
    MontyObject::ClassInstance(Box::new(MontyClassInstance {
        class_type: MontyClassType {
            name: class_name,
            id: MontyUuid::from_u128(id | CLASS_ID_BIT),
            host_defined: true,
            is_dataclass: false,
            attrs: DictPairs::default(),
        },
        instance_id: MontyUuid::from_u128(id),
        attrs,
    }))
}

fn function(name: String) -> MontyObject {
    MontyObject::Function {
        name,
        docstring: None,
    }
}

fn type_error(message: String) -> MontyException {
    MontyException::new(ExcType::TypeError, Some(message))
}

/// `tools.<ns>.<tool>(a=1)` or `tools.<ns>.<tool>({"a": 1})`: one dict, keywords, or both
/// (keywords win).
fn tool_call(name: &str, args: &[MontyObject], kwargs: &[(MontyObject, MontyObject)]) -> Call {
    let label = format!("tools.{name}()");
    let mut arguments = match args {
        [] | [MontyObject::None] => Map::new(),
        [dict @ MontyObject::Dict(_)] => {
            match to_json(
                dict,
                &mut ValuePath::new(format!("the arguments of {label}")),
            ) {
                Ok(Value::Object(map)) => map,
                Ok(_) => Map::new(),
                Err(message) => return Call::Raise(type_error(message)),
            }
        }
        // Positional arguments: the host refuses them with the tool's signature, which only
        // it knows.
        positional => {
            let mut values = Vec::with_capacity(positional.len());
            for (index, value) in positional.iter().enumerate() {
                let path = format!("positional argument {} of {label}", index + 1);
                match to_json(value, &mut ValuePath::new(path)) {
                    Ok(value) => values.push(value),
                    Err(_) => {
                        return Call::Raise(type_error(format!(
                            "{label} takes keyword arguments or one dict of arguments, got {} \
                             positional arguments",
                            args.len()
                        )));
                    }
                }
            }
            return Call::Host(HostRequest::Tool {
                name: name.to_owned(),
                args: Value::Array(values),
                raw: false,
            });
        }
    };
    for (key, value) in kwargs {
        let MontyObject::String(key) = key else {
            continue;
        };
        match to_json(
            value,
            &mut ValuePath::new(format!("the argument {key}= of {label}")),
        ) {
            Ok(value) => {
                arguments.insert(key.clone(), value);
            }
            Err(message) => return Call::Raise(type_error(message)),
        }
    }
    Call::Host(HostRequest::Tool {
        name: name.to_owned(),
        args: Value::Object(arguments),
        raw: false,
    })
}

/// Positional and keyword arguments matched to parameter names, Python style.
fn bind<'v>(
    signature: &str,
    parameters: &[&str],
    required: usize,
    args: &'v [MontyObject],
    kwargs: &'v [(MontyObject, MontyObject)],
) -> Result<Vec<Option<&'v MontyObject>>, MontyException> {
    if args.len() > parameters.len() {
        return Err(type_error(format!(
            "{signature} takes at most {} positional arguments, got {}",
            parameters.len(),
            args.len()
        )));
    }
    let mut bound: Vec<Option<&MontyObject>> = parameters.iter().map(|_| None).collect();
    for (slot, value) in bound.iter_mut().zip(args) {
        *slot = Some(value);
    }
    for (key, value) in kwargs {
        let MontyObject::String(key) = key else {
            continue;
        };
        let Some(index) = parameters.iter().position(|parameter| parameter == key) else {
            return Err(type_error(format!(
                "{signature} got an unexpected keyword argument '{key}'"
            )));
        };
        if bound[index].is_some() {
            return Err(type_error(format!(
                "{signature} got multiple values for argument '{key}'"
            )));
        }
        bound[index] = Some(value);
    }
    if let Some(missing) = parameters[..required]
        .iter()
        .zip(&bound)
        .find_map(|(name, value)| value.is_none().then_some(name))
    {
        return Err(type_error(format!(
            "{signature} missing required argument '{missing}'"
        )));
    }
    Ok(bound)
}

/// `call_tool(name, args=None, raw=False)`: the name as given (`server.tool` or
/// `mcp__server__tool`); the host resolves it.
fn call_tool(args: &[MontyObject], kwargs: &[(MontyObject, MontyObject)]) -> Call {
    const SIGNATURE: &str = "call_tool(name, args=None, raw=False)";
    let bound = match bind(SIGNATURE, &["name", "args", "raw"], 1, args, kwargs) {
        Ok(bound) => bound,
        Err(exception) => return Call::Raise(exception),
    };
    let name = match bound[0] {
        Some(MontyObject::String(name)) => name.clone(),
        other => {
            return Call::Raise(type_error(format!(
                "{SIGNATURE}: name must be a str such as \"server.tool\", not {}",
                other.map_or_else(|| "nothing".to_owned(), type_name)
            )));
        }
    };
    let arguments = match bound[1] {
        None | Some(MontyObject::None) => Value::Object(Map::new()),
        Some(dict @ MontyObject::Dict(_)) => {
            match to_json(
                dict,
                &mut ValuePath::new(format!("the arguments of {name}")),
            ) {
                Ok(value) => value,
                Err(message) => return Call::Raise(type_error(message)),
            }
        }
        Some(other) => {
            return Call::Raise(type_error(format!(
                "{SIGNATURE}: args must be a dict, not {}",
                type_name(other)
            )));
        }
    };
    let raw = match bound[2] {
        None => false,
        Some(MontyObject::Bool(raw)) => *raw,
        Some(other) => {
            return Call::Raise(type_error(format!(
                "{SIGNATURE}: raw must be True or False, not {}",
                type_name(other)
            )));
        }
    };
    Call::Host(HostRequest::Tool {
        name,
        args: arguments,
        raw,
    })
}

/// `search_tools(query, limit=None)`.
fn search_tools(args: &[MontyObject], kwargs: &[(MontyObject, MontyObject)]) -> Call {
    const SIGNATURE: &str = "search_tools(query, limit=None)";
    let bound = match bind(SIGNATURE, &["query", "limit"], 1, args, kwargs) {
        Ok(bound) => bound,
        Err(exception) => return Call::Raise(exception),
    };
    let query = match bound[0] {
        Some(MontyObject::String(query)) => query.clone(),
        other => {
            return Call::Raise(type_error(format!(
                "{SIGNATURE}: query must be a str, not {}",
                other.map_or_else(|| "nothing".to_owned(), type_name)
            )));
        }
    };
    let limit = match bound[1] {
        None | Some(MontyObject::None) => None,
        Some(MontyObject::Int(limit)) if *limit >= 1 => Some((*limit).min(MAX_SEARCH_LIMIT) as u32),
        Some(other) => {
            return Call::Raise(MontyException::new(
                ExcType::ValueError,
                Some(format!(
                    "{SIGNATURE}: limit must be a positive int, not {}",
                    match other {
                        MontyObject::Int(limit) => limit.to_string(),
                        other => type_name(other),
                    }
                )),
            ));
        }
    };
    Call::Host(HostRequest::Search { query, limit })
}

/// `emit(block)`: the block as JSON, for the host to check and count.
fn emit(args: &[MontyObject], kwargs: &[(MontyObject, MontyObject)]) -> Call {
    const SIGNATURE: &str = "emit(block)";
    let bound = match bind(SIGNATURE, &["block"], 1, args, kwargs) {
        Ok(bound) => bound,
        Err(exception) => return Call::Raise(exception),
    };
    let block = match bound[0] {
        Some(block @ MontyObject::Dict(_)) => block,
        other => {
            return Call::Raise(type_error(format!(
                "{SIGNATURE}: block must be a dict like {{\"type\": \"image\", \"data\": <base64>, \"mimeType\": \"image/png\"}}, not {}",
                other.map_or_else(|| "nothing".to_owned(), type_name)
            )));
        }
    };
    match to_json(block, &mut ValuePath::new("the block of emit(block)")) {
        Ok(block) => Call::Host(HostRequest::Emit { block }),
        Err(message) => Call::Raise(type_error(message)),
    }
}

/// `progress(done, total=None, message=None)`.
fn progress(args: &[MontyObject], kwargs: &[(MontyObject, MontyObject)]) -> Call {
    const SIGNATURE: &str = "progress(done, total=None, message=None)";
    let bound = match bind(SIGNATURE, &["done", "total", "message"], 1, args, kwargs) {
        Ok(bound) => bound,
        Err(exception) => return Call::Raise(exception),
    };
    let number = |name: &str, value: Option<&MontyObject>| match value {
        Some(MontyObject::Int(number)) => Ok(Some(*number as f64)),
        Some(MontyObject::Float(number)) => Ok(Some(*number)),
        None | Some(MontyObject::None) => Ok(None),
        Some(other) => Err(type_error(format!(
            "{SIGNATURE}: {name} must be a number, not {}",
            type_name(other)
        ))),
    };
    let done = match number("done", bound[0]) {
        Ok(Some(done)) => done,
        Ok(None) => {
            return Call::Raise(type_error(format!(
                "{SIGNATURE}: done must be a number, not None"
            )));
        }
        Err(exception) => return Call::Raise(exception),
    };
    let total = match number("total", bound[1]) {
        Ok(total) => total,
        Err(exception) => return Call::Raise(exception),
    };
    let message = match bound[2] {
        None | Some(MontyObject::None) => None,
        Some(MontyObject::String(message)) => Some(message.clone()),
        Some(other) => {
            return Call::Raise(type_error(format!(
                "{SIGNATURE}: message must be a str, not {}",
                type_name(other)
            )));
        }
    };
    match crate::Progress::new(done, total, message) {
        Ok(progress) => Call::Progress(progress),
        Err(message) => Call::Raise(MontyException::new(
            ExcType::ValueError,
            Some(format!("{SIGNATURE}: {message}")),
        )),
    }
}

/// `describe_tools(names)`: a list of names, or one name.
fn describe_tools(args: &[MontyObject], kwargs: &[(MontyObject, MontyObject)]) -> Call {
    const SIGNATURE: &str = "describe_tools(names)";
    let bound = match bind(SIGNATURE, &["names"], 1, args, kwargs) {
        Ok(bound) => bound,
        Err(exception) => return Call::Raise(exception),
    };
    let names = match bound[0] {
        Some(MontyObject::String(name)) => vec![name.clone()],
        Some(MontyObject::List(items) | MontyObject::Tuple(items)) => {
            let mut names = Vec::with_capacity(items.len());
            for item in items {
                let MontyObject::String(name) = item else {
                    return Call::Raise(type_error(format!(
                        "{SIGNATURE}: names must be strs such as \"server.tool\", not {}",
                        type_name(item)
                    )));
                };
                names.push(name.clone());
            }
            names
        }
        other => {
            return Call::Raise(type_error(format!(
                "{SIGNATURE}: names must be a list of str, not {}",
                other.map_or_else(|| "nothing".to_owned(), type_name)
            )));
        }
    };
    Call::Host(HostRequest::Describe { names })
}

/// A method of `resources.<server>` (`list()`, `templates()`, `read(uri)`) or
/// `prompts.<server>` (`list()`, `get(name, arguments=None)`).
fn server_call(
    resources: bool,
    server: &str,
    method: &str,
    args: &[MontyObject],
    kwargs: &[(MontyObject, MontyObject)],
) -> Call {
    let kind = if resources { "resources" } else { "prompts" };
    let (mcp_method, parameters, required): (&str, &[&str], usize) = match (resources, method) {
        (true, "list") => ("resources/list", &[], 0),
        (true, "templates") => ("resources/templates/list", &[], 0),
        (true, "read") => ("resources/read", &["uri"], 1),
        (false, "list") => ("prompts/list", &[], 0),
        (false, "get") => ("prompts/get", &["name", "arguments"], 1),
        _ => {
            let offered = if resources {
                "list(), templates() and read(uri)"
            } else {
                "list() and get(name, arguments=None)"
            };
            return Call::Raise(MontyException::new(
                ExcType::AttributeError,
                Some(format!(
                    "{kind}.{server} has no method '{method}'; it has {offered}"
                )),
            ));
        }
    };
    let signature = format!("{kind}.{server}.{method}({})", parameters.join(", "));
    let bound = match bind(&signature, parameters, required, args, kwargs) {
        Ok(bound) => bound,
        Err(exception) => return Call::Raise(exception),
    };
    let subject = match bound.first().copied().flatten() {
        None => None,
        Some(MontyObject::String(text)) => Some(text.clone()),
        Some(other) => {
            return Call::Raise(type_error(format!(
                "{signature}: {} must be a str, not {}",
                parameters[0],
                type_name(other)
            )));
        }
    };
    let arguments = match bound.get(1).copied().flatten() {
        None | Some(MontyObject::None) => Value::Null,
        Some(dict @ MontyObject::Dict(_)) => {
            match to_json(
                dict,
                &mut ValuePath::new(format!("the arguments of {signature}")),
            ) {
                Ok(value) => value,
                Err(message) => return Call::Raise(type_error(message)),
            }
        }
        Some(other) => {
            return Call::Raise(type_error(format!(
                "{signature}: arguments must be a dict, not {}",
                type_name(other)
            )));
        }
    };
    match ServerAsk::new(mcp_method, subject, arguments) {
        Ok(ask) => Call::Host(HostRequest::Server {
            server: server.to_owned(),
            ask,
        }),
        Err(message) => Call::Raise(type_error(message)),
    }
}
