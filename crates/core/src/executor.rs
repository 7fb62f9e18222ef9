//! Where guest code runs, as the gateway sees it: the [`Executor`] trait and the executions it
//! hands the gateway ([`Running`]). The local executor is [`Engines`](crate::Engines) (engine
//! threads of this process, or confined worker processes, `engines.rs`); the remote runner is
//! the other (`runner/`). The gateway drives each execution in `execution.rs`.

use std::sync::Arc;

use futures::future::BoxFuture;
use toolweave_config::Limits;
use toolweave_process::{FromEngine, SessionKey};
use toolweave_sandbox::{EngineError, ExecuteRequest, HostReply, Manifest, Outcome};

/// Where guest code runs. The gateway hands an executor each execution's program, language,
/// limits and manifest (names only), and drives what it gets back; everything outside the
/// guest (tools, policy, budgets, the deadline) stays the gateway's. Three are made here:
/// [`Engines`] runs code on engine threads of this process or in local confined worker
/// processes (by its [`Isolation`]), and [`RemoteRunner`](crate::RemoteRunner) on a
/// `toolweave runner` elsewhere. The messages are those of `docs/protocol.md`.
pub trait Executor: Send + Sync + std::fmt::Debug + 'static {
    /// Starts `request`, run for `session` when it belongs to one (an executor may run the
    /// executions of one session in the same confined process, one after another, and never
    /// those of two). One that cannot start is a [`Running`] whose first message says why
    /// ([`failed`]).
    fn start(
        &self,
        request: ExecuteRequest,
        session: Option<SessionKey>,
    ) -> BoxFuture<'_, Box<dyn Running>>;

    /// The manifest the next executions will most likely have, so what prepares engines ahead
    /// can set their tools up before the job comes.
    fn expect(&self, manifest: &Arc<Manifest>) {
        let _ = manifest;
    }

    /// This machine's worker processes waiting and busy, per kind (none when code runs
    /// elsewhere).
    fn workers(&self) -> Vec<crate::WorkerCount> {
        Vec::new()
    }
}

/// One execution as the gateway drives it: where its events and outcome come from and where
/// its replies go.
pub trait Running: Send {
    /// The next event, or the outcome (the last message); `None` once the execution is gone
    /// without one. Cancel safe: the gateway polls it beside other work.
    fn next(&mut self) -> BoxFuture<'_, Option<FromEngine>>;

    /// Delivers one reply to the guest.
    fn reply(&mut self, reply: HostReply) -> BoxFuture<'_, ()>;

    /// Stops the guest now. The gateway stops waiting for it at the deadline either way.
    fn cancel(&mut self);

    /// Why the execution ended without an outcome, once [`next`](Self::next) gave `None`.
    fn ended_early(&mut self) -> BoxFuture<'_, EngineError>;
}

/// The part of the gateway's `limits` an engine enforces itself, as every job carries it.
pub(crate) fn engine_limits(limits: &Limits) -> toolweave_sandbox::EngineLimits {
    toolweave_sandbox::EngineLimits {
        timeout: limits.timeout,
        memory_bytes: limits.memory_bytes,
        stack_bytes: limits.stack_bytes,
        max_log_bytes: limits.max_log_bytes,
        // A result past --max-result-bytes becomes a handle; the engine refuses only one that no
        // handle could hold.
        max_result_bytes: limits.max_result_bytes.max(limits.max_handle_bytes),
        max_tool_calls: limits.max_tool_calls,
    }
}

/// An execution that could not start: its only message is its outcome, `error`.
pub fn failed(error: EngineError) -> Box<dyn Running> {
    Box::new(Failed(Some(error)))
}

/// An execution that could not start; its error is taken once, as its outcome.
#[derive(Debug)]
struct Failed(Option<EngineError>);

impl Running for Failed {
    fn next(&mut self) -> BoxFuture<'_, Option<FromEngine>> {
        let message = self.0.take().map(|error| {
            FromEngine::Finished(Outcome {
                result: Err(error),
                stats: Default::default(),
            })
        });
        Box::pin(async move { message })
    }

    fn reply(&mut self, _reply: HostReply) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    fn cancel(&mut self) {}

    fn ended_early(&mut self) -> BoxFuture<'_, EngineError> {
        Box::pin(async {
            EngineError::Internal {
                message: "the execution ended without an outcome".to_owned(),
            }
        })
    }
}
