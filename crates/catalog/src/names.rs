//! Guest names: upstream server and tool names turned into identifiers guest code can write.
//!
//! The rules are part of toolweave's external contract: characters outside `[A-Za-z0-9_$]`
//! become `_`, a leading digit or a reserved word is escaped, and collisions are resolved the
//! same way whatever order the upstream lists its tools in.

use std::collections::{BTreeMap, HashMap, HashSet};

/// Words a guest name must not be, each escaped by appending `_`.
///
/// JavaScript reserved words (strict mode included) cannot name a function declaration; the
/// properties every function or object already has would be shadowed or make a namespace
/// thenable (`then`); Python keywords would make `tools.x.from(...)` a syntax error in Python guest
/// code, which uses the same names.
const RESERVED: &[&str] = &[
    // JavaScript and TypeScript reserved words, including strict mode and future ones.
    "arguments",
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "debugger",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "eval",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "function",
    "if",
    "implements",
    "import",
    "in",
    "instanceof",
    "interface",
    "let",
    "new",
    "null",
    "package",
    "private",
    "protected",
    "public",
    "return",
    "static",
    "super",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "typeof",
    "undefined",
    "var",
    "void",
    "while",
    "with",
    "yield",
    // Properties of function objects and of every object.
    "__proto__",
    "apply",
    "bind",
    "call",
    "caller",
    "constructor",
    "length",
    "name",
    "prototype",
    "raw",
    "then",
    "toString",
    "valueOf",
    // Python keywords.
    "False",
    "None",
    "True",
    "and",
    "as",
    "assert",
    "async",
    "def",
    "del",
    "elif",
    "except",
    "from",
    "global",
    "is",
    "lambda",
    "nonlocal",
    "not",
    "or",
    "pass",
    "raise",
];

/// Whether `word` is one of the names a guest name must not be (see [`sanitize_identifier`]).
pub fn is_reserved(word: &str) -> bool {
    RESERVED.contains(&word)
}

/// Whether `text` is written like an identifier: `[A-Za-z_$][A-Za-z0-9_$]*`.
///
/// Reserved words pass: they are fine as property keys, which is what this is used for.
pub fn is_identifier(text: &str) -> bool {
    let mut characters = text.chars();
    match characters.next() {
        Some(first) if first.is_ascii_alphabetic() || first == '_' || first == '$' => {}
        _ => return false,
    }
    characters.all(is_identifier_character)
}

fn is_identifier_character(character: char) -> bool {
    character.is_ascii_alphanumeric() || character == '_' || character == '$'
}

/// The guest identifier for an upstream name, before collisions are resolved.
///
/// Every character outside `[A-Za-z0-9_$]` becomes `_` (`get-sum` → `get_sum`), a leading digit
/// gets a `_` in front (`2fa` → `_2fa`), an empty name becomes `_`, and a reserved word gets a
/// `_` appended (`delete` → `delete_`, `then` → `then_`).
pub fn sanitize_identifier(name: &str) -> String {
    let mut identifier: String = name
        .chars()
        .map(|character| {
            if is_identifier_character(character) {
                character
            } else {
                '_'
            }
        })
        .collect();
    if identifier.is_empty() || identifier.starts_with(|c: char| c.is_ascii_digit()) {
        identifier.insert(0, '_');
    }
    if is_reserved(&identifier) {
        identifier.push('_');
    }
    identifier
}

/// A property key as TypeScript writes it: bare when it is an identifier, else a quoted string.
pub fn property_key(name: &str) -> String {
    if is_identifier(name) {
        name.to_owned()
    } else {
        quote(name)
    }
}

/// `text` as a double-quoted JavaScript string literal.
pub fn quote(text: &str) -> String {
    // A JSON string is a valid JavaScript string literal.
    serde_json::Value::String(text.to_owned()).to_string()
}

/// Assigns every original name a unique guest identifier, independent of the input order.
///
/// Names that are already valid identifiers keep themselves; the others take their sanitized
/// form, in byte order of the original name, the first keeping it and the next ones getting
/// `_2`, `_3`, …. So on one server `get_sum` stays `get_sum` and `get-sum` becomes `get_sum_2`.
/// `taken` holds identifiers that are not available at all. Duplicate originals share one name.
pub fn assign_unique<'a>(
    originals: impl IntoIterator<Item = &'a str>,
    taken: &[&str],
) -> BTreeMap<String, String> {
    let originals: Vec<&str> = {
        let mut sorted: Vec<&str> = originals.into_iter().collect();
        sorted.sort_unstable();
        sorted.dedup();
        sorted
    };
    let mut used: HashSet<String> = taken.iter().map(|name| (*name).to_owned()).collect();
    let mut assigned = BTreeMap::new();
    // Exact names first, so an upstream name that already works is never renamed because of a
    // look-alike.
    for original in &originals {
        let identifier = sanitize_identifier(original);
        if identifier == *original && used.insert(identifier.clone()) {
            assigned.insert((*original).to_owned(), identifier);
        }
    }
    for original in &originals {
        if assigned.contains_key(*original) {
            continue;
        }
        let base = sanitize_identifier(original);
        let mut candidate = base.clone();
        let mut counter = 2;
        while used.contains(&candidate) {
            candidate = format!("{base}_{counter}");
            counter += 1;
        }
        used.insert(candidate.clone());
        assigned.insert((*original).to_owned(), candidate);
    }
    assigned
}

/// The guest names of servers and of their tools, each assigned over a whole list: the server
/// names over every configured server (then those only tools name, sorted), each server's tool
/// names over every tool it lists, as [`assign_unique`] does.
///
/// The gateway assigns them over a server's whole list before its rules keep tools out, so a
/// rule naming `everything.get_sum` and the catalog showing that name mean the same tool
/// whichever tools the rules leave in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GuestNames {
    /// `(guest, configured)` server names, in the order described above.
    namespaces: Vec<(String, String)>,
    /// Per configured server name: each upstream tool name's guest name.
    tools: HashMap<String, BTreeMap<String, String>>,
}

impl GuestNames {
    /// Assigns names to `servers` (configured names, in order) and to `tools`
    /// (`(server, tool)` as listed).
    pub fn assign<'a>(
        servers: &[String],
        tools: impl IntoIterator<Item = (&'a str, &'a str)> + Clone,
    ) -> Self {
        let mut server_names: Vec<String> = Vec::new();
        for server in servers {
            if !server_names.contains(server) {
                server_names.push(server.clone());
            }
        }
        let mut unlisted: Vec<String> = tools
            .clone()
            .into_iter()
            .map(|(server, _)| server)
            .filter(|server| !server_names.iter().any(|name| name == server))
            .map(str::to_owned)
            .collect();
        unlisted.sort_unstable();
        unlisted.dedup();
        server_names.extend(unlisted);
        let guest_servers = assign_unique(server_names.iter().map(String::as_str), &[]);
        let namespaces = server_names
            .into_iter()
            .map(|server| {
                let guest = guest_servers
                    .get(&server)
                    .cloned()
                    .unwrap_or_else(|| sanitize_identifier(&server));
                (guest, server)
            })
            .collect();
        let mut by_server: HashMap<&str, Vec<&str>> = HashMap::new();
        for (server, tool) in tools {
            by_server.entry(server).or_default().push(tool);
        }
        let tools = by_server
            .into_iter()
            .map(|(server, tools)| (server.to_owned(), assign_unique(tools, &[])))
            .collect();
        Self { namespaces, tools }
    }

    /// `(guest, configured)` for every server, configured ones first in the order given.
    pub fn namespaces(&self) -> &[(String, String)] {
        &self.namespaces
    }

    /// The guest name of the server configured as `server`; itself made an identifier when
    /// it was not among those names were assigned to.
    pub fn server(&self, server: &str) -> String {
        self.namespaces
            .iter()
            .find(|(_, original)| original == server)
            .map_or_else(|| sanitize_identifier(server), |(guest, _)| guest.clone())
    }

    /// The guest name of `server`'s tool `tool`; itself made an identifier when it was not
    /// among those names were assigned to.
    pub fn tool(&self, server: &str, tool: &str) -> String {
        self.tools
            .get(server)
            .and_then(|tools| tools.get(tool))
            .cloned()
            .unwrap_or_else(|| sanitize_identifier(tool))
    }

    /// Every tool names were assigned to, as `[server, guest server, tool, guest tool]`,
    /// servers in [`namespaces`](Self::namespaces) order, each server's tools sorted.
    pub fn tools(&self) -> impl Iterator<Item = [&str; 4]> {
        self.namespaces.iter().flat_map(|(guest_server, server)| {
            self.tools.get(server).into_iter().flat_map(move |tools| {
                tools.iter().map(move |(tool, guest_tool)| {
                    [
                        server.as_str(),
                        guest_server.as_str(),
                        tool.as_str(),
                        guest_tool.as_str(),
                    ]
                })
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitizes() {
        assert_eq!(sanitize_identifier("get-sum"), "get_sum");
        assert_eq!(sanitize_identifier("dotted.name"), "dotted_name");
        assert_eq!(sanitize_identifier("2fa"), "_2fa");
        assert_eq!(sanitize_identifier(""), "_");
        assert_eq!(sanitize_identifier("delete"), "delete_");
        assert_eq!(sanitize_identifier("then"), "then_");
        assert_eq!(sanitize_identifier("__proto__"), "__proto___");
        assert_eq!(sanitize_identifier("$ok"), "$ok");
        assert_eq!(sanitize_identifier("héllo"), "h_llo");
    }

    #[test]
    fn collisions_do_not_depend_on_order() {
        let forward = assign_unique(["get-sum", "get_sum", "get.sum"], &[]);
        let backward = assign_unique(["get.sum", "get_sum", "get-sum"], &[]);
        assert_eq!(forward, backward);
        assert_eq!(forward["get_sum"], "get_sum");
        assert_eq!(forward["get-sum"], "get_sum_2");
        assert_eq!(forward["get.sum"], "get_sum_3");
    }

    #[test]
    fn suffixes_skip_names_in_use() {
        let names = assign_unique(["a-b", "a.b", "a_b_2"], &[]);
        assert_eq!(names["a_b_2"], "a_b_2");
        assert_eq!(names["a-b"], "a_b");
        assert_eq!(names["a.b"], "a_b_3");
    }

    #[test]
    fn guest_names_are_assigned_per_server_over_whole_lists() {
        let servers = ["my-server".to_owned(), "my_server".to_owned()];
        let names = GuestNames::assign(
            &servers,
            [
                ("my-server", "get-sum"),
                ("my-server", "get_sum"),
                ("my_server", "get-sum"),
                ("extra", "x"),
            ],
        );
        assert_eq!(names.server("my_server"), "my_server");
        assert_eq!(names.server("my-server"), "my_server_2");
        assert_eq!(names.server("extra"), "extra");
        assert_eq!(names.tool("my-server", "get-sum"), "get_sum_2");
        assert_eq!(names.tool("my_server", "get-sum"), "get_sum");
        assert_eq!(names.tool("elsewhere", "a-b"), "a_b");
        assert_eq!(
            names.tools().collect::<Vec<_>>(),
            [
                ["my-server", "my_server_2", "get-sum", "get_sum_2"],
                ["my-server", "my_server_2", "get_sum", "get_sum"],
                ["my_server", "my_server", "get-sum", "get_sum"],
                ["extra", "extra", "x", "x"],
            ]
        );
    }
}
