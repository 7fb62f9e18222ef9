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
    },
    /// Stopped because toolweave is shutting down.
    Stopped,
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
            ServerState::Failed { error, .. } => format!("failed: {error}"),
            ServerState::Stopped => "stopped".to_owned(),
        }
    }
}
