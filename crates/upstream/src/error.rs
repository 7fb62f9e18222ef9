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

    /// A remote server wants an OAuth login toolweave does not have, or no longer has: the person
    /// running toolweave logs in from a terminal (the gateway never opens a browser itself).
    #[error(
        "server \"{server}\" needs a login: {cause}. Run `toolweave login {server}` in a terminal, then call again"
    )]
    LoginNeeded {
        /// The server's name.
        server: String,
        /// Why: no login, one the server refused and that could not be renewed, or more access
        /// than it grants.
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

    /// One call took longer than its timeout; it was abandoned (and cancelled upstream). Where the
    /// time went says whether the server was slow or toolweave was too busy to send the call.
    #[error("{}", describe_timeout(server, tool, *limit, *limit_from, delivery))]
    CallTimeout {
        /// The server's name.
        server: String,
        /// The tool called.
        tool: String,
        /// The timeout that was hit.
        limit: Duration,
        /// What set it.
        limit_from: LimitFrom,
        /// How far the call got, and how long each part took.
        delivery: Delivery,
    },

    /// The server answered the call with a message toolweave cannot read.
    #[error(
        "server \"{server}\" answered the call to \"{tool}\" with a message toolweave cannot read: {malformed}. The server is at fault, not the call: the same call will likely fail the same way (use another tool, or tell the server's maintainers); the server keeps serving other calls"
    )]
    UnreadableAnswer {
        /// The server's name.
        server: String,
        /// The tool called.
        tool: String,
        /// What is wrong with the answer.
        malformed: Malformed,
    },

    /// The server did not start, and it had sent messages toolweave could not read (that could
    /// not be tied to a request): they are the likely cause.
    #[error(
        "server \"{server}\" failed to start ({outcome}); it sent {} toolweave could not read, the first: {first}. It does not speak MCP as toolweave expects: check its \"command\" and \"args\" in the config file, or tell its maintainers{}",
        if *count == 1 { "1 message".to_owned() } else { format!("{count} messages") },
        stderr_suffix(stderr)
    )]
    UnreadableAtStart {
        /// The server's name.
        server: String,
        /// How the start ended, e.g. `it did not finish starting within 1000 ms
        /// (--startup-timeout-ms) and was stopped`.
        outcome: String,
        /// How many messages could not be read.
        count: usize,
        /// What was wrong with the first.
        first: Box<Malformed>,
        /// The last lines the process wrote to stderr.
        stderr: String,
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

    /// The server asked for more input (MCP 2026-07-28: an `InputRequiredResult`, or a task
    /// waiting for input) and the client whose code made the call did not answer it.
    #[error(
        "server \"{server}\" asked for {method} to complete the call to \"{tool}\", and it got no answer: {cause}"
    )]
    InputUnanswered {
        /// The server's name.
        server: String,
        /// The tool called.
        tool: String,
        /// What the server asked: `elicitation/create`, `sampling/createMessage`, `roots/list`.
        method: &'static str,
        /// Why it got no answer, and what to change.
        cause: String,
    },

    /// The server kept asking for more input, round after round, past the most toolweave
    /// answers for one call.
    #[error(
        "server \"{server}\" still asked for more input after {rounds} rounds of the call to \"{tool}\"; toolweave answers at most {rounds} rounds for one call, so the call was given up (the server is likely at fault: tell its maintainers, or use another tool)"
    )]
    InputRounds {
        /// The server's name.
        server: String,
        /// The tool called.
        tool: String,
        /// The rounds answered.
        rounds: usize,
    },

    /// The server ran the call as a task (the tasks extension of MCP 2026-07-28), and the task
    /// ended without a result: it failed or was cancelled at the server.
    #[error("server \"{server}\" ran the call to \"{tool}\" as task {task}, which {outcome}")]
    TaskEnded {
        /// The server's name.
        server: String,
        /// The tool called.
        tool: String,
        /// The task's id at the server.
        task: String,
        /// How it ended: `failed: <the server's error>`, `was cancelled at the server`.
        outcome: String,
    },

    /// Code asked a server for resources or prompts it does not offer.
    #[error(
        "server \"{server}\" offers no {what} (its initialize answer does not declare the \"{what}\" capability); use its tools instead"
    )]
    NotOffered {
        /// The server's name.
        server: String,
        /// What it does not offer: `resources` or `prompts`.
        what: &'static str,
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

impl Error {
    /// A failed start as its server, how it ended (`it exited: exit status: 1`) and its stderr,
    /// for a message that explains it further; any other error is given back.
    pub(crate) fn into_failed_start(self) -> std::result::Result<(String, String, String), Self> {
        match self {
            Self::ExitedDuringStartup {
                server,
                status,
                stderr,
            } => Ok((server, format!("it exited: {status}"), stderr)),
            Self::StartFailed {
                server,
                message,
                stderr,
            } => Ok((server, message, stderr)),
            Self::StartTimeout {
                server,
                limit,
                stderr,
            } => Ok((
                server,
                format!(
                    "it did not finish starting within {} ms (--startup-timeout-ms) and was \
                     stopped",
                    limit.as_millis()
                ),
                stderr,
            )),
            Self::Unreachable {
                server,
                transport,
                url,
                cause,
            } => Ok((
                server,
                format!("{transport} at {url}: {cause}"),
                String::new(),
            )),
            other => Err(other),
        }
    }
}

/// What is wrong with a message an upstream server sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    /// Bytes that are not UTF-8.
    #[error("invalid UTF-8 at byte {offset}")]
    InvalidUtf8 {
        /// Where the first invalid byte is.
        offset: usize,
    },
    /// Not JSON: cut short, or not JSON at all.
    #[error("invalid JSON ({detail})")]
    InvalidJson {
        /// The parser's message, with the line and column.
        detail: String,
    },
    /// A message longer than toolweave reads.
    #[error(
        "a message longer than {limit_mib} MiB, which toolweave does not accept (a tool result that large: ask the tool for less)"
    )]
    TooLarge {
        /// The bound, in MiB.
        limit_mib: usize,
    },
    /// Objects and arrays nested deeper than toolweave reads.
    #[error("a message nested {depth} levels deep, deeper than the {limit} toolweave reads")]
    TooDeep {
        /// How deep the message nests.
        depth: usize,
        /// How deep a message may nest.
        limit: usize,
    },
    /// Not JSON-RPC 2.0.
    #[error(
        "not JSON-RPC 2.0 ({})",
        match version {
            Some(version) => format!("its \"jsonrpc\" is {version}"),
            None => "it has no \"jsonrpc\": \"2.0\"".to_owned(),
        }
    )]
    NotJsonRpc {
        /// Its `jsonrpc` member as JSON, when it has one.
        version: Option<String>,
    },
    /// A JSON-RPC error without a message, or one whose message is not a string.
    #[error("a JSON-RPC error without a message")]
    ErrorWithoutMessage,
    /// JSON of some other shape than a JSON-RPC message.
    #[error("not a JSON-RPC message ({detail})")]
    NotAMessage {
        /// What it is instead.
        detail: String,
    },
    /// An answer whose result is not of the kind its request asked for.
    #[error(
        "an answer to {method} that is not {} ({detail})",
        expected_result(method)
    )]
    InvalidResult {
        /// The request's method, e.g. `tools/call`.
        method: &'static str,
        /// Why the result is not that kind.
        detail: String,
    },
    /// An answer whose id has the value of a request toolweave sent, but another JSON type (the
    /// string `"7"` for the number `7`): an answer to something else.
    #[error(
        "an answer whose id is {id}, where toolweave's request had the id {sent} (ids match only in type and value, so it answers no request of toolweave's)"
    )]
    IdOfAnotherType {
        /// The answer's id, as JSON.
        id: String,
        /// The id toolweave sent, as JSON.
        sent: String,
    },
    /// An answer to a request toolweave never sent.
    #[error("an answer to request {id}, which toolweave did not send")]
    UnknownId {
        /// The answer's id, as JSON.
        id: String,
    },
}

/// What an answer to `method` must be, for messages.
fn expected_result(method: &str) -> &'static str {
    match method {
        "tools/call" => "a tool result",
        "tools/list" => "a tool list",
        "initialize" => "an initialize result",
        _ => "what the request asked for",
    }
}

/// How far a call that timed out got, and how long each part took (see [`Error::CallTimeout`]).
/// Time in toolweave runs from when the gateway took the call (once its server was ready) to
/// when the request was written to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// The request never reached the connection: it waited in toolweave the whole time.
    Queued {
        /// How long it waited.
        waited: Duration,
    },
    /// The connection had the request but could not write it: the server did not read its input.
    Unwritten {
        /// How long it waited in toolweave before the connection had it.
        waited: Duration,
        /// How long the write then waited for the server.
        blocked: Duration,
    },
    /// The request was written to the server.
    Sent {
        /// How long it waited in toolweave first.
        waited: Duration,
        /// How long the server then had, without answering.
        upstream: Duration,
    },
}

/// The message of [`Error::CallTimeout`]: a slow server is blamed only when the time went to it.
fn describe_timeout(
    server: &str,
    tool: &str,
    limit: Duration,
    limit_from: LimitFrom,
    delivery: &Delivery,
) -> String {
    let limit = limit.as_millis();
    let busy = format!(
        "toolweave itself was too busy (too many executions at once, or executions busy \
         computing), so the server is not the likely cause. Retry when toolweave is less busy, run \
         fewer executions at once, or raise {limit_from}"
    );
    match *delivery {
        Delivery::Queued { waited } => format!(
            "the call to \"{tool}\" on server \"{server}\" was not answered within {limit} ms \
             ({limit_from}) because it was never sent: it waited {} ms in toolweave. {busy}",
            waited.as_millis()
        ),
        Delivery::Sent { waited, upstream } if waited >= upstream => format!(
            "the call to \"{tool}\" on server \"{server}\" was not answered within {limit} ms \
             ({limit_from}), most of it spent in toolweave: it waited {} ms before it was \
             sent, and the server then had {} ms. {busy}",
            waited.as_millis(),
            upstream.as_millis()
        ),
        Delivery::Sent { waited, upstream } => format!(
            "server \"{server}\" did not answer the call to \"{tool}\" within {limit} ms \
             ({limit_from}): it had {} ms from when the call was sent (toolweave sent it {} ms \
             after taking it); the call was cancelled. Ask for less in one call, or raise {limit_from}",
            upstream.as_millis(),
            waited.as_millis()
        ),
        Delivery::Unwritten { waited, blocked } => format!(
            "server \"{server}\" did not take the call to \"{tool}\" within {limit} ms \
             ({limit_from}): it stopped reading its input, and the call could not be \
             written to it for {} ms (after {} ms in toolweave); the call was cancelled. The \
             server is stuck or overloaded: check it, or restart toolweave to restart it",
            blocked.as_millis(),
            waited.as_millis()
        ),
    }
}

/// What set a call's timeout, named as the person running toolweave changes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitFrom {
    /// `--tool-timeout-ms`, for every tool without a timeout of its own or of its server.
    Flag,
    /// The server's `timeout` in its config entry.
    ServerConfig,
    /// The tool's entry in its server's `toolTimeouts`, in the server's config entry.
    ToolConfig,
    /// The caller of [`UpstreamManager::call_tool`](crate::UpstreamManager::call_tool).
    Caller,
}

impl std::fmt::Display for LimitFrom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LimitFrom::Flag => "--tool-timeout-ms",
            LimitFrom::ServerConfig => "the server's \"timeout\" in its config entry",
            LimitFrom::ToolConfig => {
                "the tool's entry in \"toolTimeouts\" in the server's config entry"
            }
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
        let timeout = |delivery| Error::CallTimeout {
            server: "fixture".into(),
            tool: "slow".into(),
            limit: Duration::from_millis(300),
            limit_from: LimitFrom::Flag,
            delivery,
        };
        let millis = Duration::from_millis;
        let own = Error::CallTimeout {
            server: "reports".into(),
            tool: "export".into(),
            limit: Duration::from_secs(120),
            limit_from: LimitFrom::ToolConfig,
            delivery: Delivery::Sent {
                waited: millis(1),
                upstream: millis(120_000),
            },
        };
        assert_eq!(
            own.to_string(),
            "server \"reports\" did not answer the call to \"export\" within 120000 ms (the tool's \
             entry in \"toolTimeouts\" in the server's config entry): it had 120000 ms from when \
             the call was sent (toolweave sent it 1 ms after taking it); the call was cancelled. \
             Ask for less in one call, or raise the tool's entry in \"toolTimeouts\" in the \
             server's config entry"
        );
        assert_eq!(
            timeout(Delivery::Sent {
                waited: millis(2),
                upstream: millis(301)
            })
            .to_string(),
            "server \"fixture\" did not answer the call to \"slow\" within 300 ms (--tool-timeout-ms): \
             it had 301 ms from when the call was sent (toolweave sent it 2 ms after taking it); the call was \
             cancelled. Ask for less in one call, or raise --tool-timeout-ms"
        );
        let busy = "toolweave itself was too busy (too many executions at once, or executions busy \
                    computing), so the server is not the likely cause. Retry when toolweave is less \
                    busy, run fewer executions at once, or raise --tool-timeout-ms";
        assert_eq!(
            timeout(Delivery::Sent {
                waited: millis(250),
                upstream: millis(60)
            })
            .to_string(),
            format!(
                "the call to \"slow\" on server \"fixture\" was not answered within 300 ms \
                 (--tool-timeout-ms), most of it spent in toolweave: it waited 250 ms before it was \
                 sent, and the server then had 60 ms. {busy}"
            )
        );
        assert_eq!(
            timeout(Delivery::Queued {
                waited: millis(320)
            })
            .to_string(),
            format!(
                "the call to \"slow\" on server \"fixture\" was not answered within 300 ms \
                 (--tool-timeout-ms) because it was never sent: it waited 320 ms in toolweave. {busy}"
            )
        );
        assert!(
            timeout(Delivery::Unwritten {
                waited: millis(1),
                blocked: millis(299)
            })
            .to_string()
            .starts_with(
                "server \"fixture\" did not take the call to \"slow\" within 300 ms \
                 (--tool-timeout-ms): it stopped reading its input"
            )
        );
        let error = Error::CallTimeout {
            server: "reports".into(),
            tool: "export".into(),
            limit: Duration::from_secs(120),
            limit_from: LimitFrom::ServerConfig,
            delivery: Delivery::Sent {
                waited: Duration::from_millis(1),
                upstream: Duration::from_millis(120_001),
            },
        };
        assert_eq!(
            error.to_string(),
            "server \"reports\" did not answer the call to \"export\" within 120000 ms (the server's \"timeout\" in its config entry): \
             it had 120001 ms from when the call was sent (toolweave sent it 1 ms after taking it); the call was cancelled. \
             Ask for less in one call, or raise the server's \"timeout\" in its config entry"
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
