//! What the gateway tells whoever measures it, as it happens: an interface, so this crate knows
//! no metrics exporter (the server's metrics implement it), and the target of the spans traces
//! are made of.

use std::time::Duration;

/// The `tracing` target of the spans exported as traces (an execution, each of its tool calls,
/// each upstream request). They are `TRACE` spans: unless an exporter asks for them, the log
/// filter leaves them disabled and they cost a level check each.
pub use toolweave_upstream::SPAN_TARGET;

/// How one tool call of guest code ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    /// The tool answered, and its result went to the code.
    Ok,
    /// The call failed: unknown tool, invalid arguments, the server failed or timed out, the
    /// tool returned an error, a limit.
    Error,
    /// toolweave's policy kept it from the tool, or the approval it needed was withheld.
    Denied,
}

impl CallOutcome {
    /// `ok`, `error` or `denied`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Denied => "denied",
        }
    }
}

/// Told about the gateway's work (see [`Gateway::observe`](crate::Gateway::observe)).
pub trait Observer: Send + Sync {
    /// One tool call of guest code ended: the configured server its name resolved to (`None`
    /// when it names none), how it ended, and how long it took.
    fn tool_call(&self, server: Option<&str>, outcome: CallOutcome, duration: Duration);
}

/// Worker processes of one kind, at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerCount {
    /// Which guest language they run.
    pub kind: toolweave_process::WorkerKind,
    /// Started and waiting for a job of any session.
    pub waiting: usize,
    /// Waiting for the next job of the session they ran one for.
    pub kept: usize,
    /// Running an execution.
    pub busy: usize,
}
