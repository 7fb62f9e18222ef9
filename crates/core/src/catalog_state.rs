//! The catalog as of the last upstream change, with compiled argument validators.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use jsonschema::Validator;
use toolweave_catalog::{Catalog, Entry, Flavor, GuestNames, ToolDefinition};
use toolweave_config::{Denial, Policy, ToolName};
use toolweave_sandbox::{Manifest, Namespace};

use crate::pins::{HeldTool, ToolPins};

/// One immutable catalog snapshot. Validators are compiled on first use and kept with it, so a
/// snapshot never validates against a schema from another version of the tool list.
pub(crate) struct CatalogState {
    /// The catalog itself.
    pub(crate) catalog: Catalog,
    /// Upstream state version this snapshot was built from.
    pub(crate) version: u64,
    /// Servers that were ready (their tools are in the catalog) when this snapshot was built.
    pub(crate) ready: Vec<String>,
    /// Tools the policy keeps out of the catalog, and why, for the error a call to one gets.
    pub(crate) denied: Vec<DeniedTool>,
    /// Tools held out of the catalog because their definitions differ from their pins.
    pub(crate) held: Vec<HeldTool>,
    /// `(server, tool)` of the MCP Apps tools kept out of the catalog because only the
    /// server's user interface may call them (`_meta.ui.visibility` leaves out the model).
    pub(crate) app_only: Vec<(String, String)>,
    /// The guest names of every server and of every tool of the ready servers, kept or not:
    /// what rules are matched against and what the catalog shows.
    pub(crate) names: GuestNames,
    validators: Mutex<HashMap<(usize, Direction), CompiledSchema>>,
    /// What guest code may call, made once per snapshot: engines prepared for it ahead of an
    /// execution recognise it, and skip setting the tools up on the execution's time.
    manifest: OnceLock<Arc<Manifest>>,
}

/// How much of what a server says about itself (its `instructions`) search reads: the first
/// few KB, where a server says what it is for.
pub(crate) const SEARCHED_INSTRUCTIONS_BYTES: usize = 4 * 1024;

/// A tool of a ready server that the policy keeps out of the catalog.
pub(crate) struct DeniedTool {
    /// The server's name, as configured.
    pub(crate) server: String,
    /// The tool's name, as the server lists it.
    pub(crate) tool: String,
    /// The server's name in code.
    pub(crate) guest_server: String,
    /// The tool's name in code, had it been kept.
    pub(crate) guest_tool: String,
    /// Why it may not be called.
    pub(crate) denial: Denial,
}

impl DeniedTool {
    /// Its names, as rules match them.
    pub(crate) fn name(&self) -> ToolName<'_> {
        ToolName {
            server: &self.server,
            tool: &self.tool,
            guest_server: &self.guest_server,
            guest_tool: &self.guest_tool,
        }
    }
}

/// The typings code in `language` reads: TypeScript declarations for JavaScript and TypeScript,
/// Python stubs for Python.
pub fn flavor_of(language: toolweave_sandbox::Language) -> Flavor {
    use toolweave_sandbox::Language;
    match language {
        Language::JavaScript | Language::TypeScript => Flavor::TypeScript,
        Language::Python => Flavor::Python,
    }
}

/// The names of a tool of the catalog, as rules match them.
pub fn entry_name(entry: &Entry) -> ToolName<'_> {
    ToolName {
        server: &entry.server,
        tool: &entry.tool,
        guest_server: &entry.guest_server,
        guest_tool: &entry.guest_tool,
    }
}

/// A compiled schema, or why the upstream's schema could not be compiled.
pub(crate) type CompiledSchema = Arc<Result<Validator, String>>;

/// Which schema of a tool a validator checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Direction {
    Input,
    Output,
}

impl CatalogState {
    /// Builds a snapshot from every configured server name and the tool lists known so far,
    /// leaving out the tools `policy` denies, and then, with `pins`, those whose definitions
    /// differ from their pins (pinning the ones seen for the first time). What `previous`
    /// already built for a tool that has not changed is taken from it.
    ///
    /// Guest names are assigned over each server's whole list, before any tool is left out:
    /// rules match a tool by the name code would call it by, and leaving a tool out renames no
    /// other (a server listing `get_sum` and `get-sum` has them as `get_sum` and `get_sum_2`
    /// whichever the rules keep).
    ///
    /// `instructions`: what servers say about themselves, by name; search reads the first
    /// [`SEARCHED_INSTRUCTIONS_BYTES`] of each.
    pub(crate) fn new(
        servers: &[String],
        tools: Vec<(String, Vec<ToolDefinition>)>,
        instructions: &HashMap<String, String>,
        version: u64,
        policy: &Policy,
        pins: Option<&ToolPins>,
        previous: Option<&CatalogState>,
    ) -> Self {
        let ready = tools.iter().map(|(server, _)| server.clone()).collect();
        let names = GuestNames::assign(
            servers,
            tools.iter().flat_map(|(server, tools)| {
                tools
                    .iter()
                    .map(move |tool| (server.as_str(), tool.name.as_str()))
            }),
        );
        let mut denied = Vec::new();
        let mut app_only = Vec::new();
        let tools: Vec<(String, Vec<ToolDefinition>)> = tools
            .into_iter()
            .map(|(server, tools)| {
                let guest_server = names.server(&server);
                let allowed = tools
                    .into_iter()
                    .filter(|tool| {
                        if tool.app_only {
                            app_only.push((server.clone(), tool.name.clone()));
                            return false;
                        }
                        let guest_tool = names.tool(&server, &tool.name);
                        let name = ToolName {
                            server: &server,
                            tool: &tool.name,
                            guest_server: &guest_server,
                            guest_tool: &guest_tool,
                        };
                        match policy.decide(&name) {
                            Ok(()) => true,
                            Err(denial) => {
                                denied.push(DeniedTool {
                                    server: server.clone(),
                                    tool: tool.name.clone(),
                                    guest_server: guest_server.clone(),
                                    guest_tool,
                                    denial,
                                });
                                false
                            }
                        }
                    })
                    .collect();
                (server, allowed)
            })
            .collect();
        let (tools, held) = match pins {
            Some(pins) => {
                let checked = pins.check(tools);
                (checked.kept, checked.held)
            }
            None => (tools, Vec::new()),
        };
        let upstream_tools = tools.into_iter().flat_map(|(_, tools)| tools).collect();
        let instructions = instructions
            .iter()
            .map(|(server, text)| {
                let text = toolweave_jsonrpc::text::head(text, SEARCHED_INSTRUCTIONS_BYTES);
                (server.clone(), text.to_owned())
            })
            .collect();
        Self {
            catalog: Catalog::named(
                servers,
                upstream_tools,
                &names,
                instructions,
                previous.map(|previous| &previous.catalog),
            ),
            version,
            ready,
            denied,
            held,
            app_only,
            names,
            validators: Mutex::new(HashMap::new()),
            manifest: OnceLock::new(),
        }
    }

    /// The names guest code can call in this snapshot.
    pub(crate) fn manifest(&self) -> Arc<Manifest> {
        self.manifest
            .get_or_init(|| {
                let namespaces = self
                    .catalog
                    .namespaces()
                    .map(|(guest, original)| Namespace {
                        name: guest.to_owned(),
                        tools: self.ready.iter().any(|ready| ready == original).then(|| {
                            self.catalog
                                .entries()
                                .iter()
                                .filter(|entry| entry.server == original)
                                .map(|entry| entry.guest_tool.clone())
                                .collect()
                        }),
                    })
                    .collect();
                Arc::new(Manifest { namespaces })
            })
            .clone()
    }

    /// The index of an entry in `catalog.entries()`.
    pub(crate) fn index_of(&self, entry: &Entry) -> Option<usize> {
        // From its address, not by comparing it with every entry (a call at 10,000 tools would
        // look at thousands); the entry found must be that very one.
        let entries = self.catalog.entries();
        let offset = (std::ptr::from_ref(entry) as usize).checked_sub(entries.as_ptr() as usize)?;
        let index = offset / std::mem::size_of::<Entry>();
        entries
            .get(index)
            .is_some_and(|candidate| std::ptr::eq(candidate, entry))
            .then_some(index)
    }

    /// The compiled validator for one schema of one entry; `Err` holds why the upstream's schema
    /// could not be compiled (then the call goes through unvalidated: the upstream still checks).
    pub(crate) fn validator(&self, index: usize, direction: Direction) -> Option<CompiledSchema> {
        let entry = self.catalog.entries().get(index)?;
        let schema = match direction {
            Direction::Input => &entry.input_schema,
            Direction::Output => entry.output_schema.as_ref()?,
        };
        let mut cache = match self.validators.lock() {
            Ok(cache) => cache,
            // A panic while holding the lock leaves only a cache behind: keep using it.
            Err(poisoned) => poisoned.into_inner(),
        };
        let validator = cache
            .entry((index, direction))
            .or_insert_with(|| {
                Arc::new(
                    jsonschema::options()
                        .should_validate_formats(false)
                        .build(&schema.value())
                        .map_err(|error| error.to_string()),
                )
            })
            .clone();
        Some(validator)
    }
}

impl CatalogState {
    /// The denied tool a call name means, if any: `server.tool` with the tool's guest or
    /// original name, or `mcp__server__tool`.
    pub(crate) fn denied_tool(&self, name: &str) -> Option<&DeniedTool> {
        self.denied
            .iter()
            .find(|denied| self.names(name, &denied.server, &denied.tool))
    }

    /// The app-only tool a call name means, if any, spelled as [`denied_tool`](Self::denied_tool)
    /// says: `(server, tool)` as the server names them.
    pub(crate) fn app_only_tool(&self, name: &str) -> Option<&(String, String)> {
        self.app_only
            .iter()
            .find(|(server, tool)| self.names(name, server, tool))
    }

    /// The tool the call name `name` means, kept out or not, as its server names it:
    /// `server.tool`.
    pub(crate) fn tool_called(&self, name: &str) -> Option<String> {
        if let Some(entry) = self.catalog.resolve(name) {
            return Some(format!("{}.{}", entry.server, entry.tool));
        }
        if let Some(denied) = self.denied_tool(name) {
            return Some(format!("{}.{}", denied.server, denied.tool));
        }
        if let Some((server, tool)) = self.app_only_tool(name) {
            return Some(format!("{server}.{tool}"));
        }
        self.held_tool(name)
            .map(|held| format!("{}.{}", held.server, held.tool))
    }

    /// The names of every tool of the ready servers, kept or not, as rules match them.
    pub(crate) fn tool_names(&self) -> Vec<ToolName<'_>> {
        self.names
            .tools()
            .map(|[server, guest_server, tool, guest_tool]| ToolName {
                server,
                tool,
                guest_server,
                guest_tool,
            })
            .collect()
    }

    /// The held tool a call name means, if any, spelled as [`denied_tool`](Self::denied_tool)
    /// takes it.
    pub(crate) fn held_tool(&self, name: &str) -> Option<&HeldTool> {
        self.held
            .iter()
            .find(|held| self.names(name, &held.server, &held.tool))
    }

    /// Whether the call name `name` names `tool` of `server`, a tool that is not in the catalog.
    fn names(&self, name: &str, server: &str, tool: &str) -> bool {
        let name = name.strip_prefix("tools.").unwrap_or(name);
        let Some((namespace, called)) = (match name.strip_prefix("mcp__") {
            Some(rest) => rest.split_once("__"),
            None => name.split_once('.'),
        }) else {
            return false;
        };
        let server_matches = server == namespace
            || self
                .catalog
                .namespaces()
                .any(|(guest, original)| guest == namespace && original == server);
        server_matches && (tool == called || self.names.tool(server, tool) == called)
    }
}

impl CatalogState {
    /// The configured server (as configured) a call name's namespace part names: `server` of
    /// `server.tool`, `tools.server.tool` or `mcp__server__tool`, by its guest or configured
    /// name. It says nothing of whether the tool exists.
    pub(crate) fn server_of_call(&self, name: &str) -> Option<&str> {
        self.server_by_name(namespace_part(name)?)
    }

    /// The configured server a name mentions: as [`server_of_call`](Self::server_of_call), or
    /// a server's name alone (guest or configured), as a describe takes it.
    pub(crate) fn server_mentioned(&self, name: &str) -> Option<&str> {
        self.server_of_call(name).or_else(|| {
            let name = name.trim();
            self.server_by_name(name.strip_prefix("tools.").unwrap_or(name))
        })
    }

    /// The configured server whose guest or configured name is `namespace`.
    fn server_by_name(&self, namespace: &str) -> Option<&str> {
        self.catalog
            .namespaces()
            .find(|(guest, original)| *guest == namespace || *original == namespace)
            .map(|(_, original)| original)
    }

    /// Whether the configured server `server` was ready when this snapshot was built.
    pub(crate) fn is_ready(&self, server: &str) -> bool {
        self.ready.iter().any(|ready| ready == server)
    }
}

/// The part of a call name that names a server: `server` of `server.tool`, `tools.server.tool`
/// and `mcp__server__tool`.
pub(crate) fn namespace_part(name: &str) -> Option<&str> {
    let name = name.trim();
    let name = name.strip_prefix("tools.").unwrap_or(name);
    match name.strip_prefix("mcp__") {
        Some(rest) => rest.split_once("__").map(|(server, _)| server),
        None => name.split_once('.').map(|(server, _)| server),
    }
}
