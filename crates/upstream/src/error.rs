//! Why an upstream server or one of its tools is not available, in words a model can act on.
//!
//! Each message names the server, the cause and what to change (the config key or the flag). The
//! values are `Clone`: a server's failure is kept in its state and handed to every caller.

use std::time::Duration;

/// An upstream server could not be used, or one call to it failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// No server with this name is configured.
    #[error(
        "no upstream server named \"{server}\" is configured (configured: {configured}); use one of those names or add the server to the config file"
    )]
    UnknownServer {
        /// The name asked for.
        server: String,
        /// The configured names, comma-separated.
        configured: String,
    },

    /// A remote (`http`/`sse`) server could not be connected: refused, unknown host, TLS, an HTTP
    /// status such as 401 or 404, or an answer that is not MCP.
    #[error("server \"{server}\" ({transport}, {url}) could not be connected: {cause}")]
    Unreachable {
        /// The server's name.
        server: String,
        /// `http` or `sse`.
        transport: &'static str,
        /// The configured URL as written, with its `${VAR}` references unresolved.
        url: String,
        /// Why, and what to change (never a header value or a resolved secret).
        cause: String,
    },

    /// A remote server's connection closed or broke after it was ready.
    #[error(
        "server \"{server}\" lost its connection{}: {cause}; toolweave connects again on a later call",
        if *during_call { " during the call" } else { "" }
    )]
    Disconnected {
        /// The server's name.
        server: String,
        /// What happened (connection refused, the event stream ended, ...).
        cause: String,
        /// Whether a call was waiting for an answer when it happened.
        during_call: bool,
    },

    /// The program to run does not exist.
    #[error(
        "server \"{server}\" could not be started: the command \"{command}\" was not found{place}; check \"command\" in the config file"
    )]
    CommandNotFound {
        /// The server's name.
        server: String,
        /// The configured `command`.
        command: String,
        /// Where it was looked for, as the end of the sentence: ` on PATH` for a bare name, the
        /// directory a relative path is taken from, nothing for an absolute path.
        place: String,
    },

    /// The program exists but could not be run (permissions, working directory, ...).
    #[error("server \"{server}\" could not be started: running \"{command}\" failed: {message}")]
    Spawn {
        /// The server's name.
        server: String,
        /// The configured `command`.
        command: String,
        /// Why, and what to check.
        message: String,
    },

    /// The process exited before it answered `initialize` and `tools/list`.
    #[error(
        "server \"{server}\" exited during startup ({status}); check its \"command\", \"args\" and \"env\" in the config file{}",
        stderr_suffix(stderr)
    )]
    ExitedDuringStartup {
        /// The server's name.
        server: String,
        /// The exit status, e.g. `exit status: 1`.
        status: String,
        /// The last lines the process wrote to stderr.
        stderr: String,
    },

    /// The process runs but the MCP handshake or `tools/list` failed.
    #[error(
        "server \"{server}\" failed to start: {message}{}",
        stderr_suffix(stderr)
    )]
    StartFailed {
        /// The server's name.
        server: String,
        /// What went wrong in the protocol.
        message: String,
        /// The last lines the process wrote to stderr.
        stderr: String,
    },

    /// Starting took longer than the startup timeout; the process was stopped.
    #[error(
        "server \"{server}\" did not finish starting within {} ms (--startup-timeout-ms); it was stopped. Raise --startup-timeout-ms if it is only slow, or check its config entry{}",
        limit.as_millis(),
        stderr_suffix(stderr)
    )]
    StartTimeout {
        /// The server's name.
        server: String,
        /// The startup timeout.
        limit: Duration,
        /// The last lines the process wrote to stderr.
        stderr: String,
    },

    /// The process wrote lines to stdout that are not MCP messages (logs, a banner) and did not
    /// start: stdout is the MCP channel, so those lines are the likely cause.
    #[error(
        "server \"{server}\" failed to start ({outcome}); its stdout had lines that are not MCP messages, the first: {first_line:?}. stdout is the MCP channel: the server must write its logs to stderr (check its \"command\" and \"args\" in the config file; some servers need an option to serve MCP on stdio){}",
        stderr_suffix(stderr)
    )]
    NotMcpOnStdout {
        /// The server's name.
        server: String,
        /// How the start ended, e.g. `it did not finish starting within 1000 ms
        /// (--startup-timeout-ms) and was stopped`.
        outcome: String,
        /// The first line that was not an MCP message, cut short when long.
        first_line: String,
        /// The last lines the process wrote to stderr.
        stderr: String,
    },

    /// The process exited (or closed its connection) after it was ready.
    #[error(
        "server \"{server}\" exited ({status}){}; toolweave starts it again on a later call{}",
        if *during_call { " during the call" } else { "" },
        stderr_suffix(stderr)
    )]
    Exited {
        /// The server's name.
        server: String,
        /// The exit status, e.g. `exit status: 3` or `signal: 9 (SIGKILL)`.
        status: String,
        /// The last lines the process wrote to stderr.
        stderr: String,
        /// Whether a call was waiting for an answer when it happened.
        during_call: bool,
    },

    /// toolweave is shutting down; the server was stopped.
    #[error("server \"{server}\" was stopped because toolweave is shutting down")]
    Stopped {
        /// The server's name.
        server: String,
    },

    /// One call took longer than its timeout; it was abandoned (and cancelled upstream).
    #[error(
        "server \"{server}\" did not answer the call to \"{tool}\" within {} ms ({limit_from}); the call was cancelled. Ask for less in one call, or raise {limit_from}",
        limit.as_millis()
    )]
    CallTimeout {
        /// The server's name.
        server: String,
        /// The tool called.
        tool: String,
        /// The timeout that was hit.
        limit: Duration,
        /// What set it.
        limit_from: LimitFrom,
    },

    /// The caller cancelled the call before it finished.
    #[error("the call was cancelled by the client")]
    Cancelled,

    /// The server answered the call with a JSON-RPC error (unknown tool, invalid arguments, ...).
    #[error(
        "server \"{server}\" rejected the call to \"{tool}\": {message} (JSON-RPC error {code})"
    )]
    Rejected {
        /// The server's name.
        server: String,
        /// The tool called.
        tool: String,
        /// The JSON-RPC error code.
        code: i32,
        /// The server's message.
        message: String,
    },

    /// The server answered in a way this version cannot use (an input request, a task).
    #[error(
        "server \"{server}\" answered the call to \"{tool}\" with {answer}, which this version of toolweave does not support; use a tool that answers directly"
    )]
    Unsupported {
        /// The server's name.
        server: String,
        /// The tool called.
        tool: String,
        /// What it answered with, e.g. `a request for more input (input_required)`.
        answer: &'static str,
    },

    /// The call failed in the protocol or the connection (not an answer of the tool).
    #[error("the call to \"{tool}\" on server \"{server}\" failed: {message}")]
    CallFailed {
        /// The server's name.
        server: String,
        /// The tool called.
        tool: String,
        /// What went wrong.
        message: String,
    },
}

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What set a call's timeout, named as the person running toolweave changes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitFrom {
    /// `--tool-timeout-ms`, for every server without a `timeout` of its own.
    Flag,
    /// The server's `timeout` in its config entry.
    ServerConfig,
    /// The caller of [`UpstreamManager::call_tool`](crate::UpstreamManager::call_tool).
    Caller,
}

impl std::fmt::Display for LimitFrom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LimitFrom::Flag => "--tool-timeout-ms",
            LimitFrom::ServerConfig => "the server's \"timeout\" in its config entry",
            LimitFrom::Caller => "the timeout given to the call",
        })
    }
}

/// The stderr tail as the end of a message: nothing when there is none.
fn stderr_suffix(stderr: &str) -> String {
    if stderr.trim().is_empty() {
        return String::new();
    }
    let mut suffix = String::from("\nlast lines of its stderr:");
    for line in stderr.lines() {
        suffix.push_str("\n  ");
        suffix.push_str(line);
    }
    suffix
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_server_cause_and_remedy() {
        let error = Error::StartTimeout {
            server: "slow".into(),
            limit: Duration::from_millis(1500),
            stderr: "warming up\nstill warming".into(),
        };
        assert_eq!(
            error.to_string(),
            "server \"slow\" did not finish starting within 1500 ms (--startup-timeout-ms); it was stopped. \
             Raise --startup-timeout-ms if it is only slow, or check its config entry\n\
             last lines of its stderr:\n  warming up\n  still warming"
        );
        let error = Error::CallTimeout {
            server: "fixture".into(),
            tool: "slow".into(),
            limit: Duration::from_millis(300),
            limit_from: LimitFrom::Flag,
        };
        assert_eq!(
            error.to_string(),
            "server \"fixture\" did not answer the call to \"slow\" within 300 ms (--tool-timeout-ms); \
             the call was cancelled. Ask for less in one call, or raise --tool-timeout-ms"
        );
        let error = Error::CallTimeout {
            server: "reports".into(),
            tool: "export".into(),
            limit: Duration::from_secs(120),
            limit_from: LimitFrom::ServerConfig,
        };
        assert_eq!(
            error.to_string(),
            "server \"reports\" did not answer the call to \"export\" within 120000 ms (the server's \"timeout\" in its config entry); \
             the call was cancelled. Ask for less in one call, or raise the server's \"timeout\" in its config entry"
        );
        let error = Error::Exited {
            server: "good".into(),
            status: "exit status: 3".into(),
            stderr: String::new(),
            during_call: true,
        };
        assert_eq!(
            error.to_string(),
            "server \"good\" exited (exit status: 3) during the call; toolweave starts it again on a later call"
        );
        let error = Error::NotMcpOnStdout {
            server: "web".into(),
            outcome:
                "it did not finish starting within 1000 ms (--startup-timeout-ms) and was stopped"
                    .into(),
            first_line: "Listening on port 3000".into(),
            stderr: "booting".into(),
        };
        assert_eq!(
            error.to_string(),
            "server \"web\" failed to start (it did not finish starting within 1000 ms (--startup-timeout-ms) \
             and was stopped); its stdout had lines that are not MCP messages, the first: \
             \"Listening on port 3000\". stdout is the MCP channel: the server must write its logs \
             to stderr (check its \"command\" and \"args\" in the config file; some servers need an \
             option to serve MCP on stdio)\nlast lines of its stderr:\n  booting"
        );
    }
}
