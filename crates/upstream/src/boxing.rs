//! What a boxed stdio server may reach, worked out from its entry: the paths it needs to start
//! (the system's programs and libraries, its command's install, its `cwd`, its package runner's
//! cache, all read-only), the paths its `"sandbox"` grants, a private home folder, and an
//! environment of only the variables it is given. `toolweave-process`'s `server_box` enters the
//! box; [`crate::proxy`] serves a box that may reach a list of hosts; [`denial_note`] tells the
//! model which key of the entry to change when a boxed server's tool reports a denial.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toolweave_config::{Expanded, Network, Sandbox};
use toolweave_process::server_box::{self, PROXY_PORT, Plan, Prepared};

/// What the system's programs need, read-only, where they exist: programs, libraries, the
/// system's configuration (certificates, name resolution, time zones), `/proc` and `/sys`
/// (Landlock keeps a boxed process from another's `/proc/<pid>/environ` and memory).
const SYSTEM_PATHS: [&str; 16] = [
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/nix/store",
    "/proc",
    "/sys",
    "/dev/urandom",
    "/dev/random",
    "/dev/zero",
    "/dev/full",
];

/// Variables of toolweave's environment every boxed server gets: where programs are, and how
/// text is written. None holds a secret.
const PASSED_VARIABLES: [&str; 5] = ["PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ"];

/// Package runners and the caches (beneath the home folder) they run packages from.
const RUNNER_CACHES: [(&str, &[&str]); 9] = [
    ("npx", &[".npm"]),
    ("npm", &[".npm"]),
    ("pnpm", &[".cache/pnpm", ".local/share/pnpm"]),
    ("pnpx", &[".cache/pnpm", ".local/share/pnpm"]),
    ("yarn", &[".cache/yarn", ".yarn"]),
    ("bunx", &[".bun"]),
    ("uvx", &[".cache/uv", ".local/share/uv"]),
    ("uv", &[".cache/uv", ".local/share/uv"]),
    ("pipx", &[".local/pipx", ".local/share/pipx"]),
];

/// A box made ready for one start of a server.
pub(crate) struct Boxing {
    /// What the child enters.
    pub(crate) prepared: Prepared,
    /// The server's own home and temporary folder, removed when the box is dropped.
    pub(crate) home: tempfile::TempDir,
    /// The complete environment of the server.
    pub(crate) environment: BTreeMap<String, String>,
}

/// The parts of a stdio entry a box is made from.
pub(crate) struct Entry<'a> {
    pub(crate) command: &'a str,
    pub(crate) args: &'a [Expanded],
    pub(crate) env: &'a BTreeMap<String, Expanded>,
    pub(crate) cwd: Option<&'a Path>,
    pub(crate) sandbox: &'a Sandbox,
}

/// Works the box out and prepares it; the error says which key or path to change.
pub(crate) fn prepare(entry: &Entry<'_>) -> Result<Boxing, String> {
    for (key, paths) in [
        ("read", &entry.sandbox.read),
        ("write", &entry.sandbox.write),
    ] {
        for (index, path) in paths.iter().enumerate() {
            if !path.exists() {
                return Err(format!(
                    "{}[{index}] ({}) grants {}, which does not exist; create it or remove it from the list",
                    entry.sandbox.key_of(key),
                    entry.sandbox.place,
                    path.display()
                ));
            }
        }
    }
    let home = tempfile::Builder::new()
        .prefix("toolweave-box-")
        .tempdir()
        .map_err(|error| format!("its private home folder could not be created: {error}"))?;
    let plan = Plan {
        read: read_paths(entry),
        write: [home.path().to_path_buf()]
            .into_iter()
            .chain(entry.sandbox.write.iter().cloned())
            .collect(),
        network: match entry.sandbox.network {
            Network::None => server_box::Network::None,
            Network::Loopback => server_box::Network::Loopback,
            Network::Hosts(_) => server_box::Network::Proxy,
        },
    };
    let prepared = Prepared::new(&plan).map_err(|error| format!("its box: {error}"))?;
    let environment = environment(entry, home.path());
    Ok(Boxing {
        prepared,
        home,
        environment,
    })
}

/// The server's whole environment: [`PASSED_VARIABLES`], those `"sandbox"."env"` names, a home
/// and temporary folder of its own, the proxy when it may reach hosts, then its entry's `env`.
fn environment(entry: &Entry<'_>, home: &Path) -> BTreeMap<String, String> {
    let mut environment = BTreeMap::new();
    for name in PASSED_VARIABLES
        .iter()
        .copied()
        .chain(entry.sandbox.env.iter().map(String::as_str))
    {
        if let Ok(value) = std::env::var(name) {
            environment.insert(name.to_owned(), value);
        }
    }
    let home = home.display().to_string();
    for name in ["HOME", "TMPDIR", "TMP", "TEMP"] {
        environment.insert(name.to_owned(), home.clone());
    }
    if matches!(entry.sandbox.network, Network::Hosts(_)) {
        let proxy = format!("http://127.0.0.1:{PROXY_PORT}");
        for name in [
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "http_proxy",
            "https_proxy",
            "ALL_PROXY",
        ] {
            environment.insert(name.to_owned(), proxy.clone());
        }
        // Node.js reads the variables above only when told to.
        environment.insert("NODE_USE_ENV_PROXY".to_owned(), "1".to_owned());
    }
    for (name, value) in entry.env {
        environment.insert(name.clone(), value.value().to_owned());
    }
    environment
}

/// Every path the server may read: the system's, what it needs to start, and its grants.
fn read_paths(entry: &Entry<'_>) -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut paths: Vec<PathBuf> = SYSTEM_PATHS
        .iter()
        .map(PathBuf::from)
        .filter(|path| path.exists())
        .collect();
    let path_variable = entry
        .env
        .get("PATH")
        .map(|path| path.value().to_owned())
        .or_else(|| std::env::var("PATH").ok());
    if let Some(program) = find_program(entry.command, path_variable.as_deref(), entry.cwd) {
        paths.extend(install_of(&program, home.as_deref()));
        // A script's interpreter (a virtual environment's Python, say, installed by pyenv).
        if let Some(interpreter) = interpreter_of(&program, path_variable.as_deref()) {
            paths.extend(install_of(&interpreter, home.as_deref()));
        }
    }
    for arg in entry.args {
        let arg = Path::new(arg.value());
        let file = match entry.cwd {
            Some(cwd) if arg.is_relative() => cwd.join(arg),
            _ => arg.to_path_buf(),
        };
        if (arg.is_absolute() || arg.starts_with(".") || entry.cwd.is_some()) && file.is_file() {
            paths.extend(install_of(&file, home.as_deref()));
        }
    }
    if let Some(cwd) = entry.cwd {
        paths.push(cwd.to_path_buf());
    }
    let runner = Path::new(entry.command)
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or_default();
    if let (Some(home), Some((_, caches))) = (
        home.as_deref(),
        RUNNER_CACHES.iter().find(|(name, _)| *name == runner),
    ) {
        paths.extend(
            caches
                .iter()
                .map(|cache| home.join(cache))
                .filter(|cache| cache.exists()),
        );
    }
    paths.extend(entry.sandbox.read.iter().cloned());
    paths.sort();
    paths.dedup();
    paths
}

/// `command` as the spawn finds it: a path (from `cwd` when relative), or a name on `PATH`.
fn find_program(command: &str, path_variable: Option<&str>, cwd: Option<&Path>) -> Option<PathBuf> {
    if command.contains('/') {
        let path = match cwd {
            Some(cwd) => cwd.join(command),
            None => PathBuf::from(command),
        };
        return path.is_file().then_some(path);
    }
    std::env::split_paths(path_variable?)
        .map(|dir| dir.join(command))
        .find(|path| path.is_file())
}

/// The program a script's `#!` line runs (through `env`, the program it names).
fn interpreter_of(script: &Path, path_variable: Option<&str>) -> Option<PathBuf> {
    use std::io::Read;
    let mut start = [0u8; 256];
    let read = std::fs::File::open(script)
        .and_then(|mut file| file.read(&mut start))
        .ok()?;
    let line = start[..read].strip_prefix(b"#!")?;
    let line = line.split(|byte| *byte == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split_whitespace();
    let interpreter = PathBuf::from(words.next()?);
    if interpreter.file_name().is_some_and(|name| name == "env") {
        let program = words.find(|word| !word.starts_with('-'))?;
        return find_program(program, path_variable, None);
    }
    Some(interpreter)
}

/// What running `file` needs, for it as named and as its links resolve: the top `node_modules`
/// folder it is in, or the install a `bin` folder belongs to (a virtual environment, a Node.js
/// version), or the folder it is in; never the home folder itself or a folder above it, where
/// only the file is granted.
fn install_of(file: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let mut installs = Vec::new();
    let resolved = std::fs::canonicalize(file).ok();
    for file in std::iter::once(file.to_path_buf()).chain(resolved) {
        let top_modules = file
            .ancestors()
            .filter(|dir| dir.file_name().is_some_and(|name| name == "node_modules"))
            .last()
            .map(Path::to_path_buf);
        let parent = file.parent().map(Path::to_path_buf);
        let install = top_modules.or_else(|| match &parent {
            Some(dir) if dir.file_name().is_some_and(|name| name == "bin") => {
                dir.parent().map(Path::to_path_buf)
            }
            _ => parent.clone(),
        });
        let too_wide = |dir: &Path| {
            dir == Path::new("/")
                || home.is_some_and(|home| {
                    home.starts_with(dir)
                        || dir == home.join(".local")
                        || dir == home.join(".cache")
                })
        };
        match install {
            Some(dir) if !too_wide(&dir) => installs.push(dir),
            _ => installs.push(file),
        }
    }
    installs
}

/// What the model reads after a boxed server's tool answered with an error that looks like the
/// box's doing: which key of the entry to change. `None` when the error shows no sign of it.
pub(crate) fn denial_note(
    server: &str,
    sandbox: &Sandbox,
    entry_env: &BTreeMap<String, Expanded>,
    text: &str,
) -> Option<String> {
    let given = |name: &str| {
        PASSED_VARIABLES.contains(&name)
            || entry_env.contains_key(name)
            || sandbox.env.iter().any(|given| given == name)
    };
    let mut notes = Vec::new();
    let lower = text.to_ascii_lowercase();
    let has = |signs: &[&str]| signs.iter().any(|sign| lower.contains(sign));
    if has(&[
        "eacces",
        "permission denied",
        "eperm",
        "operation not permitted",
        "read-only file system",
        "erofs",
    ]) {
        let (read, write) = (sandbox.key_of("read"), sandbox.key_of("write"));
        notes.push(format!(
            "it may read only the folders {read} grants (and what it needs to start) and write only beneath {write}: to let it reach a file or folder, add it to {read} or {write}"
        ));
    }
    if has(&[
        "enetunreach",
        "network is unreachable",
        "all connection attempts failed",
        "failed to connect",
        "fetch failed",
        "econnrefused",
        "connection refused",
        "eai_again",
        "enotfound",
        "name resolution",
        "name or service not known",
        "getaddrinfo",
        "may not reach",
        "403 forbidden",
        "status code 403",
        "proxy",
    ]) {
        let key = sandbox.key_of("network");
        notes.push(format!(
            "its network is {} ({key}): to let it reach a host, add \"host:port\" to {key}",
            sandbox.network.written()
        ));
    }
    let withheld: Vec<String> = std::env::vars_os()
        .filter_map(|(name, _)| name.into_string().ok())
        .filter(|name| name.len() > 2 && !given(name) && mentions_word(text, name))
        .collect();
    for name in withheld {
        notes.push(format!(
            "{name} is set in toolweave's environment but not given to it: to give it, add \"{name}\" to {}",
            sandbox.key_of("env")
        ));
    }
    if notes.is_empty() {
        return None;
    }
    Some(format!(
        "toolweave: server \"{server}\" runs in a box ({}), which may have denied this: {}",
        sandbox.written_at(),
        notes.join("; ")
    ))
}

/// Whether `word` occurs in `text` with no letter, digit or `_` on either side.
fn mentions_word(text: &str, word: &str) -> bool {
    let part_of_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(part_of_name) && !after.is_some_and(part_of_name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_install_is_its_top_node_modules_or_its_bin_folders_parent_never_the_home_folder() {
        let home = Some(Path::new("/home/ada"));
        let first = |file: &str| install_of(Path::new(file), home)[0].clone();
        assert_eq!(
            first("/srv/app/node_modules/@scope/pkg/node_modules/dep/index.js"),
            PathBuf::from("/srv/app/node_modules")
        );
        assert_eq!(first("/opt/venv/bin/python"), PathBuf::from("/opt/venv"));
        assert_eq!(first("/srv/tools/server.py"), PathBuf::from("/srv/tools"));
        assert_eq!(
            first("/home/ada/server.py"),
            PathBuf::from("/home/ada/server.py")
        );
        assert_eq!(
            first("/home/ada/.local/bin/tool"),
            PathBuf::from("/home/ada/.local/bin/tool")
        );
        assert_eq!(first("/server"), PathBuf::from("/server"));
    }

    #[test]
    fn a_denial_note_names_the_key_for_files_network_and_variables() {
        let sandbox = Sandbox {
            key: "\"sandbox\"".to_owned(),
            place: "its entry in /etc/tw/mcp.json".to_owned(),
            ..Sandbox::default()
        };
        let note = |text: &str| denial_note("files", &sandbox, &BTreeMap::new(), text);
        let files = note("Error: EACCES: permission denied, open '/home/ada/secret'").unwrap();
        assert!(files.starts_with("toolweave: server \"files\" runs in a box (\"sandbox\" in its entry in /etc/tw/mcp.json)"), "{files}");
        assert!(files.contains("add it to \"sandbox\".\"read\""), "{files}");
        let network = note("connect ENETUNREACH 10.0.0.1:443").unwrap();
        assert!(
            network.contains("its network is \"none\" (\"sandbox\".\"network\")"),
            "{network}"
        );
        assert_eq!(note("the tool is not in the mood"), None);
        // A variable of this process's environment, named in the error, that the box withheld.
        let (name, _) = std::env::vars()
            .find(|(name, _)| {
                name.len() > 3 && name.chars().all(|c| c.is_ascii_uppercase() || c == '_')
            })
            .expect("some variable in the test's environment");
        let variable = note(&format!("{name} is not set")).unwrap();
        assert!(
            variable.contains(&format!("add \"{name}\" to \"sandbox\".\"env\"")),
            "{variable}"
        );
        let entry_env = BTreeMap::from([(name.clone(), Expanded::literal("x"))]);
        let given = denial_note("files", &sandbox, &entry_env, &format!("{name} is not set"));
        assert_eq!(given, None);
        // A box the settings file gives names the settings file's key.
        let settings_box = Sandbox {
            key: "\"boxes\".\"files\"".to_owned(),
            place: "/home/ada/.config/toolweave/settings.json".to_owned(),
            ..Sandbox::default()
        };
        let denied = denial_note("files", &settings_box, &BTreeMap::new(), "EACCES").unwrap();
        assert!(
            denied.contains(
                "runs in a box (\"boxes\".\"files\" in /home/ada/.config/toolweave/settings.json)"
            ) && denied.contains("add it to \"boxes\".\"files\".\"read\""),
            "{denied}"
        );
        assert!(!mentions_word("PATHS", "PATH"));
        assert!(mentions_word("$PATH is", "PATH"));
    }
}
