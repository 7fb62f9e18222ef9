mod approval;
mod approval_page;
mod approval_url;
mod apps;
mod audit;
mod balance;
mod boxes;
mod cancel;
mod cases;
mod cli;
mod confinement;
mod conformance;
mod conformance_next;
mod copies;
mod emit;
mod face;
mod failures;
mod handles;
mod http;
mod identities;
mod live;
mod llm;
mod modes;
mod notices;
mod npm;
mod oauth;
mod observe;
mod pins;
mod policy;
mod protocol;
mod real_servers;
mod redaction;
mod requests;
mod results;
mod returns;
mod reuse;
mod rule_names;
mod runner;
mod session_state;
mod setup;
mod shapes;
mod tasks;
mod tiers;
mod upstream2026;
mod upstreams;
mod waits;
mod web;
mod worker_protocol;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, Implementation,
};
use rmcp::service::RequestContext;
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::{Value, json};

pub use toolweave_testkit::harness::{cpu_ticks, worker_processes};

/// The binary under test.
pub fn toolweave() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_toolweave"))
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The Python with the official MCP SDK that `.ci/run` installs (`TOOLWEAVE_TEST_PYTHON`, else
/// `target/venv`), or why there is none.
pub fn sdk_python() -> Result<PathBuf, String> {
    let python = std::env::var_os("TOOLWEAVE_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/venv/bin/python"));
    if python.exists() {
        Ok(python)
    } else {
        Err(format!(
            "{} not found (run .ci/run, or set TOOLWEAVE_TEST_PYTHON to a python with `mcp` installed)",
            python.display()
        ))
    }
}

/// Runs `tests/python/<script>.py` with the official Python SDK against this toolweave binary
/// and `args` (the script's own, after the binary), and checks it succeeded and printed
/// `<script>: ok`. Skipped, loudly, where the SDK is missing (never in CI).
pub fn run_sdk_script(script: &str, args: &[&std::ffi::OsStr]) {
    let python = match sdk_python() {
        Ok(python) => python,
        Err(why) => {
            toolweave_testkit::skip::missing_prerequisite(&format!("{script}.py"), &why);
            return;
        }
    };
    let output = std::process::Command::new(&python)
        .arg(
            repo_root()
                .join("tests/python")
                .join(format!("{script}.py")),
        )
        .arg(toolweave())
        .args(args)
        .output()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", python.display()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains(&format!("{script}: ok")), "{stdout}");
}

/// A program on the `PATH`, when there is one.
pub fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|folder| folder.join(program))
            .find(|candidate| candidate.is_file())
    })
}

/// A client that supports form elicitation and answers toolweave's approval questions: it
/// approves a question `approves` accepts (with `scope` when it has one, else toolweave's
/// default), declines the others, and keeps each question and the scopes it was offered.
#[derive(Clone)]
pub struct ApprovingClient {
    scope: Option<&'static str>,
    approves: fn(&str) -> bool,
    asked: Arc<Mutex<Vec<String>>>,
    offered: Arc<Mutex<Vec<Value>>>,
}

impl ApprovingClient {
    /// Approves every question, for `scope` (`call`, `execution`, `matching:name`, `session`...).
    pub fn approving_for(scope: &'static str) -> Self {
        Self {
            scope: Some(scope),
            approves: |_| true,
            asked: Arc::default(),
            offered: Arc::default(),
        }
    }

    /// Approves the questions `approves` accepts (given the question's text), for the default
    /// scope; declines the others.
    pub fn approving_if(approves: fn(&str) -> bool) -> Self {
        Self {
            scope: None,
            approves,
            asked: Arc::default(),
            offered: Arc::default(),
        }
    }

    /// The questions asked so far, in order.
    pub fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }

    /// The scopes each question offered (its form's `scope` choices), in order.
    pub fn offered(&self) -> Vec<Value> {
        self.offered.lock().unwrap().clone()
    }
}

impl ClientHandler for ApprovingClient {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(ElicitationCapability::new());
        ClientConfig::new(
            capabilities,
            Implementation::new("approving-test-client", "0"),
        )
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            return Ok(ElicitResult::new(ElicitationAction::Cancel));
        };
        let approve = (self.approves)(&message);
        self.asked.lock().unwrap().push(message);
        let schema = serde_json::to_value(&requested_schema).unwrap();
        self.offered
            .lock()
            .unwrap()
            .push(schema["properties"]["scope"]["oneOf"].clone());
        if !approve {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        }
        let content = match self.scope {
            Some(scope) => json!({ "approve": true, "scope": scope }),
            None => json!({ "approve": true }),
        };
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(content))
    }
}

/// A program of a virtual environment (`variable`, else `default` under the repository root),
/// or why it is missing.
pub fn venv_program(variable: &str, default: &str, program: &str) -> Result<PathBuf, String> {
    let venv = std::env::var_os(variable)
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(default));
    let path = venv.join("bin").join(program);
    if path.exists() {
        Ok(path)
    } else {
        Err(format!(
            "{} not found (run .ci/run, or set {variable} to a virtual environment with it: the versions are in .ci/run)",
            path.display()
        ))
    }
}
