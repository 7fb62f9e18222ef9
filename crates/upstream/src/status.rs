//! A snapshot of one server's state, for people (`describe`) and for code (`state`).

use crate::Error;

/// One server's state at the moment [`UpstreamManager::status`](crate::UpstreamManager::status)
/// was called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStatus {
    /// The key under `mcpServers`.
    pub name: String,
    /// How it is reached: `stdio`, `http` or `sse`.
    pub transport: &'static str,
    /// Where it stands.
    pub state: ServerState,
    /// How many times it was started: a process spawned, or a remote connection opened.
    pub starts: u32,
    /// The process id of the running process, when there is one.
    pub process_id: Option<u32>,
    /// What the server said about using it (`instructions` in its `initialize` answer), when it
    /// is ready and said something; cut to [`MAX_INSTRUCTIONS_BYTES`](crate::MAX_INSTRUCTIONS_BYTES)
    /// with a note.
    pub instructions: Option<String>,
}

/// Where one server stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    /// Starting: spawn or connect, `initialize`, `tools/list`.
    Starting,
    /// Connected, with this many tools.
    Ready {
        /// Number of tools it lists.
        tool_count: usize,
    },
    /// Not available, and why.
    Failed {
        /// Why it is not available (the message names the cause and what to change).
        error: Error,
        /// Whether a later call starts it again (after a delay that grows with each failure in a
        /// row); not once toolweave is shutting down.
        restarts_on_use: bool,
        /// Its failures in a row (starts that failed, runs that ended soon after starting).
        failures: u32,
        /// How long until a call may start it again (zero: the next call does), when one may.
        next_try_in: Option<std::time::Duration>,
    },
    /// Stopped because toolweave is shutting down.
    Stopped,
}

/// `failed: <error>`; for a server that failed more than once in a row, `failing: <the last
/// error>; 3 failures in a row, next try in 4 s (at the next call that needs it)`.
pub fn failed_text(
    error: &Error,
    failures: u32,
    next_try_in: Option<std::time::Duration>,
) -> String {
    if failures < 2 {
        return format!("failed: {error}");
    }
    let next = match next_try_in {
        Some(wait) if !wait.is_zero() => format!(
            ", next try in {} s (at the next call that needs it)",
            wait.as_secs_f64().ceil()
        ),
        Some(_) => ", next try at the next call that needs it".to_owned(),
        None => String::new(),
    };
    format!("failing: {error}; {failures} failures in a row{next}")
}

impl ServerStatus {
    /// Whether its tools can be called now.
    pub fn is_ready(&self) -> bool {
        matches!(self.state, ServerState::Ready { .. })
    }

    /// The number of tools it lists, when ready.
    pub fn tool_count(&self) -> Option<usize> {
        match self.state {
            ServerState::Ready { tool_count } => Some(tool_count),
            _ => None,
        }
    }

    /// Why it is not available, when it failed.
    pub fn error(&self) -> Option<&Error> {
        match &self.state {
            ServerState::Failed { error, .. } => Some(error),
            _ => None,
        }
    }

    /// One line for humans: `ready, 12 tools`, `starting`, `failed: ...`, `stopped`.
    pub fn describe(&self) -> String {
        match &self.state {
            ServerState::Starting => "starting".to_owned(),
            ServerState::Ready { tool_count: 1 } => "ready, 1 tool".to_owned(),
            ServerState::Ready { tool_count } => format!("ready, {tool_count} tools"),
            ServerState::Failed {
                error,
                failures,
                next_try_in,
                ..
            } => failed_text(error, *failures, *next_try_in),
            ServerState::Stopped => "stopped".to_owned(),
        }
    }
}
