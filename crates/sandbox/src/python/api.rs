//! The guest's view of the host: `tools`, `call_tool`, `search_tools` and `describe_tools`.
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
//! id). Building every tool's function into each interpreter cost about 30 µs per execution with
//! 48 tools, for a program that calls one. A tool of a ready namespace resolves to its function;
//! any other name raises `AttributeError` listing the namespace's tools. In a namespace whose
//! server is not ready every name becomes a call the host answers — it waits for the server or
//! explains why it failed. (Monty answers names with a leading underscore itself, without
//! asking: tools named so are made ahead.)

use std::sync::Arc;

use monty_types::{
    DictPairs, ExcType, MontyClassInstance, MontyClassType, MontyException, MontyObject, MontyUuid,
    NameLookupResult,
};
use serde_json::{Map, Value};

use super::values::{ValuePath, to_json, type_name};
use crate::{HostRequest, Manifest};

/// The global names the engine provides.
const CALL_TOOL: &str = "call_tool";
const SEARCH_TOOLS: &str = "search_tools";
const DESCRIBE_TOOLS: &str = "describe_tools";
/// The most hits `search_tools` may ask for.
const MAX_SEARCH_LIMIT: i64 = 1000;
/// How many tool names an error message lists.
const LISTED_NAMES: usize = 20;

/// Identity of the `tools` instance (and its class). Namespace instances and classes take ids
/// from [`NAMESPACE_ID_BASE`] up, one per namespace.
const TOOLS_ID: u128 = 1;
const NAMESPACE_ID_BASE: u128 = 1 << 64;
/// Set in a class id, so the ids of classes and instances never meet.
const CLASS_ID_BIT: u128 = 1 << 127;

/// What a guest call asks of the host.
pub(super) enum Call {
    /// Send this request to the host.
    Host(HostRequest),
    /// Raise this exception at the call, without asking the host.
    Raise(MontyException),
    /// Not one of the engine's functions: the name is undefined.
    NotFound,
}

/// The names of one execution's manifest, as the guest sees them.
pub(super) struct GuestApi {
    manifest: Arc<Manifest>,
}

impl GuestApi {
    pub(super) fn new(manifest: Arc<Manifest>) -> Self {
        Self { manifest }
    }

    /// Answers Monty's question about a name it cannot resolve: a global (`object_id` is `None`)
    /// or an attribute missing from one of the engine's instances.
    pub(super) fn lookup(&self, name: &str, object_id: Option<MontyUuid>) -> NameLookupResult {
        match object_id {
            None => match name {
                "tools" => NameLookupResult::Value(self.tools()),
                CALL_TOOL | SEARCH_TOOLS | DESCRIBE_TOOLS => {
                    NameLookupResult::Value(function(name.to_owned()))
                }
                _ => NameLookupResult::Undefined,
            },
            Some(id) => match self.namespace_of(id) {
                // One of a ready namespace's tools, or any name of a namespace whose server is not
                // ready: every attribute of that is a call the host answers.
                Some((namespace, tools)) if tools.is_none_or(|tools| has_tool(tools, name)) => {
                    NameLookupResult::Value(function(format!("{namespace}.{name}")))
                }
                // `tools`, or a name a ready namespace does not have: the attribute does not
                // exist (AttributeError, and `hasattr` and `getattr(..., default)` work as usual).
                _ => NameLookupResult::Undefined,
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
            return match self.namespace_of(id) {
                Some((namespace, None)) => {
                    tool_call(&format!("{namespace}.{function_name}"), args, kwargs)
                }
                // One of the namespace's tools, or one kept from code by the host's policy (the
                // host answers with its refusal).
                Some((namespace, Some(tools)))
                    if has_tool(tools, function_name)
                        || self.is_hidden(namespace, function_name) =>
                {
                    tool_call(&format!("{namespace}.{function_name}"), args, kwargs)
                }
                Some((namespace, Some(tools))) => Call::Raise(attribute_error(format!(
                    "tools.{namespace} has no tool '{function_name}'; its tools are {}. \
                     search_tools(\"what you need\") finds tools by description",
                    listing(tools)
                ))),
                None => Call::Raise(attribute_error(format!(
                    "tools has no server '{function_name}'; the servers are {}",
                    listing(
                        self.manifest
                            .namespaces
                            .iter()
                            .map(|namespace| &namespace.name)
                    )
                ))),
            };
        }
        match function_name {
            CALL_TOOL => call_tool(args, kwargs),
            SEARCH_TOOLS => search_tools(args, kwargs),
            DESCRIBE_TOOLS => describe_tools(args, kwargs),
            // Only the engine hands out functions with a dot in their name: `tools.<ns>.<tool>`.
            name if name.contains('.') => tool_call(name, args, kwargs),
            _ => Call::NotFound,
        }
    }

    /// The namespace an instance id belongs to, with its tools (`None`: not ready).
    fn namespace_of(&self, id: MontyUuid) -> Option<(&str, Option<&[String]>)> {
        self.manifest
            .namespaces
            .iter()
            .enumerate()
            .find(|(index, _)| MontyUuid::from_u128(namespace_id(*index)) == id)
            .map(|(_, namespace)| (namespace.name.as_str(), namespace.tools.as_deref()))
    }

    /// Whether `tool` of `namespace` is one the host's policy keeps from code.
    fn is_hidden(&self, namespace: &str, tool: &str) -> bool {
        self.manifest.namespaces.iter().any(|candidate| {
            candidate.name == namespace && candidate.hidden.iter().any(|name| name == tool)
        })
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

fn has_tool(tools: &[String], name: &str) -> bool {
    tools.iter().any(|tool| tool == name)
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

fn listing<'a>(names: impl IntoIterator<Item = &'a String>) -> String {
    let names: Vec<&String> = names.into_iter().collect();
    let mut text = names
        .iter()
        .take(LISTED_NAMES)
        .map(|name| name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    if names.is_empty() {
        text.push_str("(none)");
    } else if names.len() > LISTED_NAMES {
        text.push_str(&format!(" and {} more", names.len() - LISTED_NAMES));
    }
    text
}

fn type_error(message: String) -> MontyException {
    MontyException::new(ExcType::TypeError, Some(message))
}

fn attribute_error(message: String) -> MontyException {
    MontyException::new(ExcType::AttributeError, Some(message))
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
        [other] => {
            return Call::Raise(type_error(format!(
                "{label} takes keyword arguments or one dict of arguments, not a {}",
                type_name(other)
            )));
        }
        _ => {
            return Call::Raise(type_error(format!(
                "{label} takes keyword arguments or one dict of arguments, got {} positional \
                 arguments",
                args.len()
            )));
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
