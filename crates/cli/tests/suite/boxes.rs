//! Real upstream servers in their boxes (`"sandbox"` in their entries): each does its job with
//! what its entry grants, and a file in the home folder, an address it was not given and a
//! variable of toolweave's environment stay out of its reach, the error naming the key to
//! change. The npm servers come from `tests/npm`, `mcp-server-git` and `mcp-server-fetch` from
//! the virtual environment `.ci/run` installs them into (`target/servers-venv`, or
//! `TOOLWEAVE_TEST_SERVERS_VENV`).

use std::path::PathBuf;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolweave_testkit::harness::Toolweave;
use toolweave_testkit::skip::{missing_prerequisite, not_applicable};

use super::{repo_root, toolweave, venv_program};

/// A variable in toolweave's environment that no box is given.
const CANARY_VARIABLE: &str = "TOOLWEAVE_BOX_CANARY";
const CANARY_SECRET: &str = "canary-secret-1c6f";

/// Whether boxes can be tested here; `test` says why not when they cannot.
fn boxes_supported(test: &str) -> bool {
    if !cfg!(target_os = "linux") {
        not_applicable(test, "boxes need Linux (Landlock and network namespaces)");
        return false;
    }
    if !landlock_available() {
        missing_prerequisite(
            test,
            "this kernel has no Landlock, so boxes confine no files",
        );
        return false;
    }
    true
}

/// Whether `toolweave doctor` finds Landlock on this kernel.
fn landlock_available() -> bool {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(&config, r#"{"mcpServers": {}}"#).unwrap();
    let output = std::process::Command::new(toolweave())
        .arg("doctor")
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).contains("Landlock: ABI")
}

/// An npm server's entry point, or why it is missing.
fn npm_server(package: &str) -> Result<PathBuf, String> {
    let entry = repo_root()
        .join("tests/npm/node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    if entry.exists() {
        Ok(entry)
    } else {
        Err(format!(
            "{} is not installed (run `npm ci --prefix tests/npm`)",
            entry.display()
        ))
    }
}

/// A program of the servers' virtual environment, or why it is missing.
fn pypi_server(program: &str) -> Result<PathBuf, String> {
    venv_program(
        "TOOLWEAVE_TEST_SERVERS_VENV",
        "target/servers-venv",
        program,
    )
}

/// A home folder for toolweave with a canary file in it, and the config's folder.
struct Machine {
    _dir: tempfile::TempDir,
    home: PathBuf,
    root: PathBuf,
}

impl Machine {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let home = root.join("home");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".ssh/id_canary"), CANARY_SECRET).unwrap();
        Self {
            _dir: dir,
            home,
            root,
        }
    }

    /// Starts toolweave with `servers` as its config, the canary variable set and this home.
    async fn start(&self, servers: Value) -> Toolweave {
        let config = self.root.join("mcp.json");
        std::fs::write(
            &config,
            serde_json::to_vec(&json!({ "mcpServers": servers })).unwrap(),
        )
        .unwrap();
        let home = self.home.display().to_string();
        // Destructive tools (a file written, an entity created) are called without asking.
        Toolweave::start_with_env(
            toolweave(),
            &config,
            &["--approve", "*"],
            &[
                (CANARY_VARIABLE, CANARY_SECRET),
                ("HOME", &home),
                ("TOOLWEAVE_BOX_GRANTED", "granted-value"),
            ],
        )
        .await
        .unwrap()
    }
}

/// Runs `code` (JavaScript) and returns its value.
async fn run(server: &Toolweave, code: &str) -> Value {
    let result = server.execute(code, "javascript").await.unwrap();
    result
        .value()
        .unwrap_or_else(|_| panic!("{}", result.text))
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_filesystem_in_its_box_works_in_its_folder_and_cannot_read_the_home_folder() {
    let test = "server_filesystem_in_its_box_works_in_its_folder_and_cannot_read_the_home_folder";
    if !boxes_supported(test) {
        return;
    }
    let entry = match npm_server("server-filesystem") {
        Ok(entry) => entry,
        Err(why) => return missing_prerequisite(test, &why),
    };
    let machine = Machine::new();
    let files = machine.root.join("files");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::write(files.join("hello.txt"), "hello from a file").unwrap();
    // The server itself is told it may use the home folder too: what stops it is the box.
    let server = machine
        .start(json!({
            "files": { "command": "node", "args": [entry, &files, &machine.home],
                       "sandbox": { "write": [&files] } },
        }))
        .await;
    let code = format!(
        r#"
        const files = {files:?};
        const hello = await tools.files.read_text_file({{ path: files + "/hello.txt" }});
        await tools.files.write_file({{ path: files + "/new.txt", content: "written in the box" }});
        const back = await tools.files.read_text_file({{ path: files + "/new.txt" }});
        let canary;
        try {{
          canary = await tools.files.read_text_file({{ path: {canary:?} }});
        }} catch (error) {{
          canary = "denied: " + error.message;
        }}
        return {{ hello, back, canary }};
        "#,
        files = files.display().to_string(),
        canary = machine.home.join(".ssh/id_canary").display().to_string(),
    );
    let value = run(&server, &code).await;
    assert!(
        value["hello"].to_string().contains("hello from a file"),
        "{value}"
    );
    assert!(
        value["back"].to_string().contains("written in the box"),
        "{value}"
    );
    assert_eq!(
        std::fs::read_to_string(files.join("new.txt")).unwrap(),
        "written in the box"
    );
    let canary = value["canary"].as_str().unwrap_or_default();
    assert!(!canary.contains(CANARY_SECRET), "{canary}");
    assert!(canary.starts_with("denied: "), "{canary}");
    assert!(
        canary.contains("toolweave: server \"files\" runs in a box")
            && canary.contains("add it to \"sandbox\".\"read\""),
        "{canary}"
    );
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_memory_in_its_box_keeps_its_file_and_server_everything_sees_only_its_variables() {
    let test =
        "server_memory_in_its_box_keeps_its_file_and_server_everything_sees_only_its_variables";
    if !boxes_supported(test) {
        return;
    }
    let (memory, everything) = match (npm_server("server-memory"), npm_server("server-everything"))
    {
        (Ok(memory), Ok(everything)) => (memory, everything),
        (Err(why), _) | (_, Err(why)) => return missing_prerequisite(test, &why),
    };
    let machine = Machine::new();
    let data = machine.root.join("memory");
    std::fs::create_dir_all(&data).unwrap();
    let memory_file = data.join("memory.jsonl");
    let server = machine
        .start(json!({
            "memory": { "command": "node", "args": [memory],
                        "env": { "MEMORY_FILE_PATH": &memory_file },
                        "sandbox": { "write": [&data] } },
            "everything": { "command": "node", "args": [everything, "stdio"],
                            "sandbox": { "env": ["TOOLWEAVE_BOX_GRANTED"] } },
        }))
        .await;
    let value = run(
        &server,
        r#"
        await tools.memory.create_entities({ entities: [
          { name: "Ada", entityType: "person", observations: ["wrote the first program"] },
        ] });
        const graph = await tools.memory.read_graph({});
        const printed = await tools.everything.get_env({});
        const env = typeof printed === "string" ? JSON.parse(printed) : printed;
        return { people: graph.entities.map((e) => e.name), env };
        "#,
    )
    .await;
    assert_eq!(value["people"], json!(["Ada"]), "{value}");
    assert!(
        std::fs::read_to_string(&memory_file)
            .unwrap()
            .contains("Ada"),
        "the memory file was not written"
    );
    let env = &value["env"];
    assert_eq!(env[CANARY_VARIABLE], Value::Null, "{env}");
    assert!(!env.to_string().contains(CANARY_SECRET), "{env}");
    assert_eq!(
        env["TOOLWEAVE_BOX_GRANTED"],
        json!("granted-value"),
        "{env}"
    );
    let home = env["HOME"].as_str().unwrap_or_default();
    assert!(
        home.contains("toolweave-box-") && !home.starts_with(machine.home.to_str().unwrap()),
        "{env}"
    );
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_boxed_server_that_needs_a_variable_it_was_not_given_gets_the_key_to_change() {
    let test = "a_boxed_server_that_needs_a_variable_it_was_not_given_gets_the_key_to_change";
    if !boxes_supported(test) {
        return;
    }
    let machine = Machine::new();
    let server = machine
        .start(json!({
            "fixture": { "command": toolweave_testkit::fixture_binary(), "sandbox": true },
        }))
        .await;
    let value = run(
        &server,
        &format!(
            r#"
            const seen = await tools.fixture.env({{ name: "{CANARY_VARIABLE}" }});
            try {{
              await tools.fixture.fail({{ message: "{CANARY_VARIABLE} is not set; export it" }});
              return {{ seen, error: "none" }};
            }} catch (error) {{
              return {{ seen, error: error.message }};
            }}
            "#
        ),
    )
    .await;
    assert_eq!(value["seen"], json!(""), "{value}");
    let error = value["error"].as_str().unwrap_or_default();
    assert!(
        error.contains(&format!(
            "{CANARY_VARIABLE} is set in toolweave's environment but not given to it: to give it, add \"{CANARY_VARIABLE}\" to \"sandbox\".\"env\""
        )),
        "{error}"
    );
    server.stop().await.unwrap();
}

/// A tiny HTTP server on 127.0.0.1 answering every request with `body`; its port.
async fn http_server(body: &'static str) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buffer = [0u8; 1024];
                while !head.windows(4).any(|window| window == b"\r\n\r\n") {
                    match stream.read(&mut buffer).await {
                        Ok(0) | Err(_) => return,
                        Ok(read) => head.extend_from_slice(&buffer[..read]),
                    }
                }
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(answer.as_bytes()).await;
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_server_fetch_in_its_box_reaches_its_host_and_no_other() {
    let test = "mcp_server_fetch_in_its_box_reaches_its_host_and_no_other";
    if !boxes_supported(test) {
        return;
    }
    let fetch = match pypi_server("mcp-server-fetch") {
        Ok(fetch) => fetch,
        Err(why) => return missing_prerequisite(test, &why),
    };
    let granted = http_server("the granted page").await;
    let other = http_server("a page it was not given").await;
    let machine = Machine::new();
    let args = ["--ignore-robots-txt", "--allow-private-ips"];
    let server = machine
        .start(json!({
            "fetch": { "command": &fetch, "args": args,
                       "sandbox": { "network": [format!("127.0.0.1:{granted}")] } },
            "offline": { "command": &fetch, "args": args, "sandbox": { "network": "none" } },
        }))
        .await;
    let code = format!(
        r#"
        const attempt = async (call) => {{
          try {{ return await call(); }} catch (error) {{ return "denied: " + error.message; }}
        }};
        return {{
          granted: await attempt(() => tools.fetch.fetch({{ url: "http://127.0.0.1:{granted}/" }})),
          other: await attempt(() => tools.fetch.fetch({{ url: "http://127.0.0.1:{other}/" }})),
          offline: await attempt(() => tools.offline.fetch({{ url: "http://127.0.0.1:{granted}/" }})),
        }};
        "#
    );
    let value = run(&server, &code).await;
    assert!(
        value["granted"].to_string().contains("the granted page"),
        "{value}"
    );
    for (name, server) in [("other", "fetch"), ("offline", "offline")] {
        let denied = value[name].as_str().unwrap_or_default();
        assert!(!denied.contains("a page it was not given"), "{denied}");
        assert!(denied.starts_with("denied: "), "{name}: {denied}");
        assert!(
            denied.contains(&format!("toolweave: server \"{server}\" runs in a box"))
                && denied.contains("add \"host:port\" to \"sandbox\".\"network\""),
            "{name}: {denied}"
        );
    }
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_server_git_in_its_box_reads_its_repository() {
    let test = "mcp_server_git_in_its_box_reads_its_repository";
    if !boxes_supported(test) {
        return;
    }
    let git = match pypi_server("mcp-server-git") {
        Ok(git) => git,
        Err(why) => return missing_prerequisite(test, &why),
    };
    let machine = Machine::new();
    let repository = machine.root.join("repository");
    std::fs::create_dir_all(&repository).unwrap();
    let git_command = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(&repository)
            .env("GIT_AUTHOR_NAME", "Ada")
            .env("GIT_AUTHOR_EMAIL", "ada@example.com")
            .env("GIT_COMMITTER_NAME", "Ada")
            .env("GIT_COMMITTER_EMAIL", "ada@example.com")
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git_command(&["init", "--quiet"]);
    std::fs::write(repository.join("notes.txt"), "first notes\n").unwrap();
    git_command(&["add", "notes.txt"]);
    git_command(&["commit", "--quiet", "-m", "The first notes"]);
    std::fs::write(repository.join("notes.txt"), "changed notes\n").unwrap();
    let server = machine
        .start(json!({
            "git": { "command": &git, "args": ["--repository", &repository],
                     "sandbox": { "write": [&repository] } },
        }))
        .await;
    let code = format!(
        r#"
        const repo_path = {repository:?};
        const log = await tools.git.git_log({{ repo_path }});
        const status = await tools.git.git_status({{ repo_path }});
        return {{ log, status }};
        "#,
        repository = repository.display().to_string(),
    );
    let value = run(&server, &code).await;
    assert!(
        value["log"].to_string().contains("The first notes"),
        "{value}"
    );
    assert!(value["status"].to_string().contains("notes.txt"), "{value}");
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_settings_file_boxes_every_server_without_a_box_of_its_own() {
    let test = "the_settings_file_boxes_every_server_without_a_box_of_its_own";
    if !boxes_supported(test) {
        return;
    }
    let machine = Machine::new();
    let settings = machine.root.join("settings.json");
    std::fs::write(
        &settings,
        serde_json::to_vec(&json!({
            "sandbox": { "env": ["TOOLWEAVE_BOX_GRANTED"] },
            "boxes": { "open": false, "absent": true },
        }))
        .unwrap(),
    )
    .unwrap();
    let config = machine.root.join("mcp.json");
    std::fs::write(
        &config,
        serde_json::to_vec(&json!({ "mcpServers": {
            "boxed": { "command": toolweave_testkit::fixture_binary() },
            "open": { "command": toolweave_testkit::fixture_binary() },
        }}))
        .unwrap(),
    )
    .unwrap();
    let home = machine.home.display().to_string();
    let server = Toolweave::start_with_env(
        toolweave(),
        &config,
        &["--settings", settings.to_str().unwrap()],
        &[
            (CANARY_VARIABLE, CANARY_SECRET),
            ("HOME", &home),
            ("TOOLWEAVE_BOX_GRANTED", "granted-value"),
        ],
    )
    .await
    .unwrap();
    let value = run(
        &server,
        &format!(
            r#"
            const boxed = await tools.boxed.env({{ name: "{CANARY_VARIABLE}" }});
            const granted = await tools.boxed.env({{ name: "TOOLWEAVE_BOX_GRANTED" }});
            const open = await tools.open.env({{ name: "{CANARY_VARIABLE}" }});
            let error = "none";
            try {{
              await tools.boxed.fail({{ message: "{CANARY_VARIABLE} is not set; export it" }});
            }} catch (caught) {{
              error = caught.message;
            }}
            return {{ boxed, granted, open, error }};
            "#
        ),
    )
    .await;
    assert_eq!(value["boxed"], json!(""), "{value}");
    assert_eq!(value["granted"], json!("granted-value"), "{value}");
    assert_eq!(value["open"], json!(CANARY_SECRET), "{value}");
    let error = value["error"].as_str().unwrap_or_default();
    assert!(
        error.contains(&format!(
            "runs in a box (\"sandbox\" in {})",
            settings.display()
        )) && error.contains(&format!(
            "to give it, add \"{CANARY_VARIABLE}\" to \"sandbox\".\"env\""
        )),
        "{error}"
    );
    server.stop().await.unwrap();

    // `servers` shows which box each server is in and where it is written.
    let output = std::process::Command::new(toolweave())
        .args(["servers", "--config"])
        .arg(&config)
        .arg("--settings")
        .arg(&settings)
        .env("HOME", &machine.home)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stdout.contains(&format!(
            "may: boxed (\"sandbox\" in {}): reads only what it needs to start",
            settings.display()
        )) && stdout.contains("may: unboxed: everything you may"),
        "{stdout}"
    );
    assert!(
        stderr.contains("\"boxes\" names \"absent\", which is no stdio server here"),
        "{stderr}"
    );
}

/// A box is built differently for a user who is not root (inside a user namespace of its own):
/// run as root, the test runs toolweave as `nobody` through `setpriv`.
#[test]
fn a_box_works_for_a_user_who_is_not_root() {
    use std::os::unix::fs::PermissionsExt;
    let test = "a_box_works_for_a_user_who_is_not_root";
    if !boxes_supported(test) {
        return;
    }
    let root = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) == 0;
    let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"]
        .into_iter()
        .find(|path| std::path::Path::new(path).exists());
    if root && setpriv.is_none() {
        return missing_prerequisite(test, "setpriv (util-linux), to run toolweave as nobody");
    }
    // Everything the unprivileged user reads is readable by all; its home is its own.
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path();
    std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o755)).unwrap();
    let home = folder.join("home");
    std::fs::create_dir(&home).unwrap();
    std::fs::write(home.join("secret"), CANARY_SECRET).unwrap();
    // The build folder may be closed to other users: the two programs are copied beside.
    let (program_path, fixture) = (folder.join("toolweave"), folder.join("toolweave-fixture"));
    std::fs::copy(toolweave(), &program_path).unwrap();
    std::fs::copy(toolweave_testkit::fixture_binary(), &fixture).unwrap();
    let config = folder.join("mcp.json");
    std::fs::write(
        &config,
        serde_json::to_vec(&json!({"mcpServers": {
            "fixture": {"command": fixture, "sandbox": true},
        }}))
        .unwrap(),
    )
    .unwrap();
    let program = folder.join("program.js");
    std::fs::write(
        &program,
        format!(
            r#"return {{ seen: await tools.fixture.env({{ name: "{CANARY_VARIABLE}" }}),
                        sum: await tools.fixture.add({{ a: 1, b: 2 }}) }};"#
        ),
    )
    .unwrap();
    let mut command = match setpriv {
        Some(setpriv) if root => {
            let nobody = "65534";
            std::os::unix::fs::chown(&home, Some(65534), Some(65534)).unwrap();
            let mut command = std::process::Command::new(setpriv);
            command
                .args(["--reuid", nobody, "--regid", nobody, "--clear-groups"])
                .arg(&program_path);
            command
        }
        _ => std::process::Command::new(&program_path),
    };
    let output = command
        .args(["run", "--pin-tools", "off", "--config"])
        .arg(&config)
        .arg(&program)
        .env("HOME", &home)
        .env(CANARY_VARIABLE, CANARY_SECRET)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let value: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(value, json!({"seen": "", "sum": "3"}), "{stdout}");
}
