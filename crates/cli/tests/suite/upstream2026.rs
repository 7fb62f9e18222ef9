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
