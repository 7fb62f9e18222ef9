//! What an error about a name the sandbox does not have adds: the way out. Models bring names
//! from Node, browsers, Python's standard library and other code-execution gateways (`require`,
//! `fetch`, `process`, `open`, `requests`, code-executor-mcp's `discoverMCPTools`); each gets a
//! sentence saying what is not here and what to use instead, and, where a tool of a ready
//! server looks like what the name was for, that tool by name.

use crate::{Language, Manifest};

/// What a missing name was for, and so what replaces it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// The network: a tool that fetches.
    Network,
    /// Files, the process, the operating system: a tool that does it.
    System,
    /// Another gateway's name for one of toolweave's own functions.
    Alias(&'static str),
    /// Something the engine lacks, with what to do instead.
    Missing(&'static str),
}

/// Words in tool names that suggest a tool does what the missing name was for.
const NETWORK_WORDS: &[&str] = &[
    "fetch", "http", "url", "download", "browse", "navigate", "scrape",
];
const SYSTEM_WORDS: &[&str] = &[
    "read_file",
    "read_text_file",
    "write_file",
    "list_directory",
    "file",
    "exec",
    "shell",
    "command",
];
/// How many matching tools a hint names at most.
const MAX_NAMED_TOOLS: usize = 3;

/// What `name` was for in `language`, when it is a name models reach for that is not here.
fn reach(name: &str, language: Language) -> Option<Reach> {
    let javascript = language.engine() == crate::Engine::QuickJs;
    Some(match name {
        "fetch" | "XMLHttpRequest" | "WebSocket" | "EventSource" | "axios" | "http" | "https"
        | "net" => Reach::Network,
        "requests" | "urllib" | "urllib3" | "httpx" | "aiohttp" | "socket" | "http.client"
            if !javascript =>
        {
            Reach::Network
        }
        "require" | "process" | "module" | "exports" | "__dirname" | "__filename" | "Deno"
        | "Bun" | "fs" | "os" | "std" | "child_process" | "path"
            if javascript =>
        {
            Reach::System
        }
        "open" | "subprocess" | "shutil" | "pathlib" | "glob" | "tempfile" | "ctypes"
        | "importlib" | "io"
            if !javascript =>
        {
            Reach::System
        }
        "discoverMCPTools" | "listMCPTools" if javascript => {
            Reach::Alias("searchTools(query) (it lists the tools that do what query says)")
        }
        "getToolSchema" if javascript => {
            Reach::Alias("describeTools([name]) (the tool's TypeScript declaration)")
        }
        "discover_mcp_tools" | "list_mcp_tools" if !javascript => {
            Reach::Alias("search_tools(query) (it lists the tools that do what query says)")
        }
        "get_tool_schema" if !javascript => {
            Reach::Alias("describe_tools([name]) (the tool's Python stub)")
        }
        "callTool" | "call_tool" | "callMcpTool" if javascript => {
            Reach::Alias("callMCPTool(name, args), or tools.<server>.<tool>(args)")
        }
        "Intl" if javascript => Reach::Missing(
            "Intl is not available in toolweave's JavaScript (no locale or time zone data): \
             format numbers with toFixed() or toLocaleString() (en-US), dates with \
             toISOString() or getUTC*(); for another time zone, use a tool that converts times, \
             if a server offers one (searchTools(\"convert time zone\"))",
        ),
        "AbortController" | "AbortSignal" if javascript => Reach::Missing(
            "AbortController is not available in toolweave's JavaScript: an execution is bounded \
             by its timeout (timeoutMs); to stop waiting for a slow call, race it with a timer: \
             Promise.race([call, new Promise((_, reject) => setTimeout(() => reject(new \
             Error(\"timed out\")), 5000))])",
        ),
        "setInterval" | "clearInterval" if javascript => Reach::Missing(
            "setInterval is not available in toolweave's JavaScript: repeat with setTimeout, or \
             loop with await new Promise((resolve) => setTimeout(resolve, ms))",
        ),
        "Buffer" if javascript => Reach::Missing(
            "Buffer is Node's and not available in toolweave's JavaScript: use TextEncoder and \
             TextDecoder for UTF-8, atob and btoa for base64, Uint8Array for bytes",
        ),
        "zoneinfo" if !javascript => Reach::Missing(
            "zoneinfo is not available in toolweave's Python (it has no time zone data): use \
             datetime.timezone.utc or a fixed offset (timezone(timedelta(hours=9))), or a tool \
             that converts times, if a server offers one (search_tools(\"convert time zone\"))",
        ),
        _ => return None,
    })
}

/// The sentence an error about the missing `name` gets, if the name is one models reach for:
/// what is not here, and what to use, naming up to three tools of `manifest` that look like
/// what the name was for.
pub(crate) fn missing_name(name: &str, language: Language, manifest: &Manifest) -> Option<String> {
    Some(match reach(name, language)? {
        Reach::Alias(instead) => {
            format!("{name} is another gateway's name: in toolweave, use {instead}")
        }
        Reach::Missing(text) => text.to_owned(),
        Reach::Network => way_out(name, language, manifest, NETWORK_WORDS, "fetch a web page"),
        Reach::System => way_out(name, language, manifest, SYSTEM_WORDS, "read a file"),
    })
}

/// The sentence an error about a module that cannot be loaded gets: `missing_name`'s for the
/// names it knows, else that the module is not here and what is.
pub(crate) fn missing_module(module: &str, language: Language, manifest: &Manifest) -> String {
    let bare = module.strip_prefix("node:").unwrap_or(module);
    let top = bare.split(['.', '/']).next().unwrap_or(bare);
    missing_name(bare, language, manifest)
        .or_else(|| missing_name(top, language, manifest))
        .unwrap_or_else(|| way_out(module, language, manifest, SYSTEM_WORDS, "what you need"))
}

/// How many of a server's tools [`server_called`] lists.
const MAX_LISTED_TOOLS: usize = 20;

/// The sentence for a server called as if it were a tool (`tools.github(...)` in Python, where
/// the engine refuses the call itself; the host answers JavaScript's): call one of its tools,
/// which `manifest` lists when the server is ready.
pub(crate) fn server_called(server: &str, manifest: &Manifest) -> String {
    let tools = manifest
        .namespaces
        .iter()
        .find(|namespace| namespace.name == server)
        .and_then(|namespace| namespace.tools.as_ref());
    let listing = match tools {
        Some(tools) if !tools.is_empty() => {
            let mut text = tools[..tools.len().min(MAX_LISTED_TOOLS)].join(", ");
            if tools.len() > MAX_LISTED_TOOLS {
                text.push_str(&format!(" and {} more", tools.len() - MAX_LISTED_TOOLS));
            }
            format!("The tools of {server} are {text}.")
        }
        _ => format!("describe_tools([\"{server}\"]) lists its tools."),
    };
    format!(
        "tools.{server} is a server, not a tool: call one of its tools, as \
         tools.{server}.<tool>(...). {listing} search_tools(\"what you need\") finds tools by \
         what they do."
    )
}

/// The sentence an OS operation the sandbox refuses (`open()`, `os.getenv()`) gets.
pub(crate) fn refused_operation(
    operation: &str,
    language: Language,
    manifest: &Manifest,
) -> String {
    way_out(operation, language, manifest, SYSTEM_WORDS, "read a file")
}

/// `name` is not here, nor anything else that reaches out of the sandbox: a tool call does,
/// such as the tools of `manifest` whose names hold one of `words`.
fn way_out(
    name: &str,
    language: Language,
    manifest: &Manifest,
    words: &[&str],
    task: &str,
) -> String {
    let (sandbox, search) = match language {
        Language::Python => (
            "toolweave's Python has part of the standard library and no network, file system, \
             environment or installed packages",
            "search_tools",
        ),
        Language::JavaScript | Language::TypeScript => (
            "toolweave's sandbox has no modules, no network and no file system",
            "searchTools",
        ),
    };
    let mut text = format!(
        "{name} is not available: {sandbox}; the only way out of the sandbox is a tool call, \
         tools.<server>.<tool>(...)"
    );
    let matching = matching_tools(manifest, words);
    if !matching.is_empty() {
        text.push_str(&format!(", such as {}", matching.join(", ")));
    }
    text.push_str(&format!(
        ". {search}(\"{task}\") finds tools by what they do"
    ));
    text
}

/// Up to [`MAX_NAMED_TOOLS`] tools of ready servers whose names hold one of `words`, the
/// earlier words first, as code calls them.
fn matching_tools(manifest: &Manifest, words: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for word in words {
        for namespace in &manifest.namespaces {
            for tool in namespace.tools.iter().flatten() {
                let call = format!("tools.{}.{tool}", namespace.name);
                if tool.to_ascii_lowercase().contains(word) && !found.contains(&call) {
                    found.push(call);
                }
                if found.len() == MAX_NAMED_TOOLS {
                    return found;
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Namespace;

    fn manifest() -> Manifest {
        Manifest {
            namespaces: vec![
                Namespace {
                    name: "fetch".to_owned(),
                    tools: Some(vec!["fetch".to_owned()]),
                },
                Namespace {
                    name: "filesystem".to_owned(),
                    tools: Some(vec!["read_text_file".to_owned(), "move_file".to_owned()]),
                },
                Namespace {
                    name: "starting".to_owned(),
                    tools: None,
                },
            ],
        }
    }

    #[test]
    fn names_models_reach_for_get_the_way_out() {
        let text = missing_name("fetch", Language::JavaScript, &manifest()).unwrap();
        assert_eq!(
            text,
            "fetch is not available: toolweave's sandbox has no modules, no network and no file \
             system; the only way out of the sandbox is a tool call, tools.<server>.<tool>(...), \
             such as tools.fetch.fetch. searchTools(\"fetch a web page\") finds tools by what \
             they do"
        );
        let text = missing_name("open", Language::Python, &manifest()).unwrap();
        assert!(
            text.contains("such as tools.filesystem.read_text_file, tools.filesystem.move_file."),
            "{text}"
        );
        assert!(text.ends_with("search_tools(\"read a file\") finds tools by what they do"));
        let none = Manifest { namespaces: vec![] };
        let text = missing_name("require", Language::TypeScript, &none).unwrap();
        assert!(
            text.contains("tools.<server>.<tool>(...). searchTools("),
            "{text}"
        );
    }

    #[test]
    fn other_gateways_names_are_answered_with_toolweaves() {
        let text = missing_name("getToolSchema", Language::JavaScript, &manifest()).unwrap();
        assert!(text.contains("use describeTools([name])"), "{text}");
        let text = missing_name("discover_mcp_tools", Language::Python, &manifest()).unwrap();
        assert!(text.contains("use search_tools(query)"), "{text}");
        let text = missing_module("node:fs", Language::JavaScript, &manifest());
        assert!(
            text.starts_with("fs is not available: toolweave's sandbox"),
            "{text}"
        );
        let text = missing_module("lodash", Language::JavaScript, &manifest());
        assert!(
            text.starts_with("lodash is not available: toolweave's sandbox"),
            "{text}"
        );
        let text = missing_module("urllib.request", Language::Python, &manifest());
        assert!(
            text.starts_with("urllib is not available: toolweave's Python"),
            "{text}"
        );
    }

    #[test]
    fn other_names_and_other_languages_get_nothing() {
        assert_eq!(missing_name("x", Language::JavaScript, &manifest()), None);
        assert_eq!(
            missing_name("open", Language::JavaScript, &manifest()),
            None
        );
        assert_eq!(missing_name("Intl", Language::Python, &manifest()), None);
    }
}
