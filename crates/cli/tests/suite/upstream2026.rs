//! Upstream servers speaking MCP 2026-07-28: a FastMCP 4 server (`tests/python/fastmcp_upstream.py`,
//! from the servers' virtual environment `.ci/run` installs), over stdio and streamable HTTP,
//! through toolweave to the official Python SDK client in both its modes
//! (`tests/python/sdk_upstream2026.py`). Its tool that asks the person answers with an
//! `InputRequiredResult`, which FastMCP refuses to send on a connection of an earlier revision: it
//! passes only when toolweave speaks 2026-07-28 upstream and answers the rounds. Its task tools
//! pass only when toolweave waits for a task's result.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use toolweave_testkit::skip::missing_prerequisite;

use super::{repo_root, run_sdk_script};

/// The servers' Python, with FastMCP 4 and its tasks extension, or why it is missing.
fn servers_python() -> Result<PathBuf, String> {
    let venv = std::env::var_os("TOOLWEAVE_TEST_SERVERS_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/servers-venv"));
    let python = venv.join("bin/python");
    let found = Command::new(&python)
        .args([
            "-c",
            "import fastmcp, fastmcp_tasks; print(fastmcp.__version__)",
        ])
        .output()
        .map_err(|error| format!("{} cannot run: {error}", python.display()))?;
    let version = String::from_utf8_lossy(&found.stdout);
    if found.status.success() && version.starts_with("4.") {
        Ok(python)
    } else {
        Err(format!(
            "{} has no FastMCP 4 with fastmcp-tasks (run .ci/run, or set TOOLWEAVE_TEST_SERVERS_VENV to a virtual environment with them)",
            python.display()
        ))
    }
}

/// The FastMCP server over streamable HTTP, stopped when dropped.
struct HttpUpstream {
    child: Child,
    url: String,
}

impl HttpUpstream {
    fn start(python: &PathBuf, dir: &std::path::Path) -> Self {
        let port_file = dir.join("port");
        let child = Command::new(python)
            .arg(repo_root().join("tests/python/fastmcp_upstream.py"))
            .arg("http")
            .arg(&port_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let port = loop {
            if let Some(port) = std::fs::read_to_string(&port_file)
                .ok()
                .filter(|port| !port.is_empty())
            {
                break port;
            }
            assert!(
                Instant::now() < deadline,
                "the FastMCP server did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        while std::net::TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap())).is_err() {
            assert!(
                Instant::now() < deadline,
                "the FastMCP server did not listen"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Self {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

impl Drop for HttpUpstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run_in(mode: &str) {
    let test = format!("fastmcp_4_upstream_in_{mode}_mode");
    let python = match servers_python() {
        Ok(python) => python,
        Err(why) => {
            missing_prerequisite(&test, &why);
            return;
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let http = HttpUpstream::start(&python, dir.path());
    let timeouts = json!({ "crunch_slowly": 1500 });
    let config = json!({ "mcpServers": {
        "fastmcp": {
            "command": python,
            "args": [repo_root().join("tests/python/fastmcp_upstream.py")],
            "toolTimeouts": timeouts,
        },
        "fastmcp_http": { "type": "http", "url": http.url, "toolTimeouts": timeouts },
    }});
    let path = dir.path().join("mcp.json");
    std::fs::write(&path, serde_json::to_vec(&config).unwrap()).unwrap();
    run_sdk_script("sdk_upstream2026", &[path.as_os_str(), mode.as_ref()]);
}

/// The SDK's default mode (MCP 2026-07-28): the server's question reaches the client as a round
/// of its `execute_code` call.
#[test]
fn fastmcp_4_upstream_to_the_python_sdk_in_its_default_mode() {
    run_in("default");
}

/// `mode="legacy"` (MCP 2025-11-25): the server's question reaches the client as a request.
#[test]
fn fastmcp_4_upstream_to_the_python_sdk_in_legacy_mode() {
    run_in("legacy");
}

/// The JSON-RPC messages toolweave wrote to an upstream server's stdin, one list per process the
/// server was started as (each start writes `stdin-<its pid>.log` in `dir`).
fn stdin_logs(dir: &std::path::Path) -> Vec<Vec<serde_json::Value>> {
    let mut logs: Vec<Vec<serde_json::Value>> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("stdin-"))
        .map(|entry| {
            std::fs::read_to_string(entry.path())
                .unwrap()
                .lines()
                .map(|line| serde_json::from_str(line).unwrap())
                .collect()
        })
        .collect();
    logs.sort_by_key(Vec::len);
    logs
}

/// A server over stdio that speaks only the revisions with `initialize` (the fixture answers
/// `server/discover` with `-32601`, as a 2025-11-25 server does): toolweave asks
/// `server/discover` first, takes the error, and initializes with 2025-11-25 on the same
/// process; calls to it then carry no 2026-07-28 `_meta`. What toolweave writes to the server's
/// stdin is read back through `tee`.
#[test]
fn a_stdio_server_that_refuses_server_discover_is_initialized_on_the_same_process() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("stdin");
    std::fs::create_dir(&logs).unwrap();
    let meta = dir.path().join("meta.jsonl");
    let fixture = toolweave_testkit::fixture_binary();
    let script = format!(
        "tee \"{}/stdin-$$.log\" | exec \"{}\" --name legacy --record-meta \"{}\"",
        logs.display(),
        fixture.display(),
        meta.display()
    );
    let config = dir.path().join("mcp.json");
    let servers =
        json!({ "mcpServers": { "legacy": { "command": "sh", "args": ["-c", script] } } });
    std::fs::write(&config, serde_json::to_vec(&servers).unwrap()).unwrap();
    let output = Command::new(super::toolweave())
        .env("XDG_CONFIG_HOME", toolweave_testkit::harness::config_home())
        .args(["run", "--config"])
        .arg(&config)
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(b"return await tools.legacy.add({ a: 2, b: 3 })")?;
            child.wait_with_output()
        })
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(stdout.trim(), "\"5\"", "{output:?}");

    let starts = stdin_logs(&logs);
    assert_eq!(
        starts.len(),
        1,
        "the server was started {} times: {starts:?}",
        starts.len()
    );
    let methods: Vec<&str> = starts[0]
        .iter()
        .filter_map(|message| message["method"].as_str())
        .collect();
    assert_eq!(
        methods.get(..3),
        Some(&["server/discover", "initialize", "notifications/initialized"][..]),
        "{methods:?}"
    );
    assert!(methods.contains(&"tools/call"), "{methods:?}");
    let initialize = starts[0]
        .iter()
        .find(|message| message["method"] == "initialize")
        .unwrap();
    assert_eq!(initialize["params"]["protocolVersion"], "2025-11-25");
    let discover = &starts[0][0];
    assert_eq!(
        discover["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    // The call is of the initialized session: no 2026-07-28 _meta rides on it.
    let calls = std::fs::read_to_string(&meta).unwrap();
    assert_eq!(calls.lines().count(), 1, "{calls}");
    let call: serde_json::Value = serde_json::from_str(calls.lines().next().unwrap()).unwrap();
    assert!(
        !call
            .to_string()
            .contains("io.modelcontextprotocol/protocolVersion"),
        "{call}"
    );
}
