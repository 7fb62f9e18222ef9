//! The Python engine: Monty (a Python interpreter written in Rust), one fresh interpreter per
//! execution, behind the same messages as the JavaScript engine.
//!
//! Monty runs a program until it needs its host and then suspends: for a name it cannot resolve
//! (`NameLookup`: `tools`, `call_tool`, ...), a call of a host function (`FunctionCall`: a tool
//! call, which the engine sends to the host and resumes as a pending future), an OS operation
//! (`OsCall`: denied, except reading the clock), or when every task awaits a host future
//! (`ResolveFutures`: the engine waits for replies and resumes with those that arrived, so calls
//! gathered with `asyncio.gather` are all outstanding at once). The loop in [`execute`] drives these
//! suspensions, and decides how the run ended.
//!
//! Every limit is the engine's observation, never the guest's claim:
//! - the deadline: Monty's own time limit (uncatchable) stops busy code, re-armed to the time left
//!   at every tool call because it only counts interpreter time; the [`monitor`] reads the clock
//!   every 255 instructions too, and the wait for replies stops at the deadline;
//! - cancellation: the monitor reads the cancel flag at the same checks, and the wait for replies
//!   wakes on the host's `Cancel`;
//! - memory: Monty's `max_memory`, enforced by the `monty-alloc` global allocator where the
//!   process installs it (the worker process), and silently not enforced elsewhere;
//! - recursion: Monty's recursion depth, derived from the stack limit; only a `RecursionError`
//!   the interpreter raised counts as a stack overflow;
//! - `print` output, tool calls and the result size: counted here.

mod api;
mod errors;
mod monitor;
mod values;

use std::collections::{HashMap, HashSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use monty::{FunctionCall, MontyRun, RunProgress};
use monty_types::{
    CompileOptions, ExcType, ExtFunctionResult, MontyDate, MontyDateTime, MontyException,
    MontyObject, OsFunctionCall, PrintWriter, ResourceLimits, ResourceTracker,
};
use serde_json::Value;

use self::api::{Call, GuestApi};
use self::errors::{PRELUDE, Raiser, SCRIPT_NAME, guest_error, raiser, syntax_error};
use self::monitor::{Monitor, Stop, StopUnwind};
use self::values::{ValuePath, from_json, to_json};
use crate::{
    CancelFlag, EngineError, EngineEvent, EngineLimits, ExecuteRequest, HostCall, HostReply,
    Language, MAX_CODE_BYTES, Manifest, Outcome, Replies, Stats, program,
};

/// Requests other than tool calls (`search_tools`, `describe_tools`) one execution may make.
const MAX_DISCOVERY_CALLS: u32 = 1000;
/// Guest stack bytes per level of Python recursion: the recursion depth is the stack limit
/// divided by this (512 KiB allow 1024 levels, CPython's default is 1000).
const STACK_BYTES_PER_LEVEL: usize = 512;
/// Bounds of the recursion depth. Python calls do not recurse on the native stack in Monty, but
/// `repr`, comparisons and conversions of nested values do, one native frame per level: the
/// upper bound keeps that far inside the engine thread's stack (see `ENGINE_THREAD_HEADROOM`).
const MIN_RECURSION_DEPTH: usize = 100;
const MAX_RECURSION_DEPTH: usize = 10_000;
/// The longest the engine waits for replies before it looks at the cancel flag again.
const WAIT_SLICE: Duration = Duration::from_millis(20);
/// The messages of the interpreter's own limit errors.
const RECURSION_MESSAGE: &str = "maximum recursion depth exceeded";
const MEMORY_MESSAGE_PREFIX: &str = "memory limit exceeded:";

/// Runs one Python program to its outcome on the calling thread.
///
/// `emit` receives events as they happen; `replies` carries the host's answers (and a wake-up on
/// cancel); `cancel` stops the guest within milliseconds from any thread.
pub(crate) fn execute(
    request: ExecuteRequest,
    emit: &mut dyn FnMut(EngineEvent),
    replies: &dyn Replies,
    cancel: &CancelFlag,
) -> Outcome {
    let started = Instant::now();
    let ExecuteRequest {
        code,
        limits,
        manifest,
        ..
    } = request;
    let mut engine = Engine {
        limits,
        deadline: started + limits.timeout,
        recursion_depth: (limits.stack_bytes / STACK_BYTES_PER_LEVEL)
            .clamp(MIN_RECURSION_DEPTH, MAX_RECURSION_DEPTH),
        cancel,
        monitor: Monitor::new(emit, cancel, started + limits.timeout, limits.max_log_bytes),
        api: GuestApi::new(manifest),
        outstanding: HashSet::new(),
        arrived: HashMap::new(),
        tool_calls: 0,
        discovery_calls: 0,
        progress: crate::ProgressGate::default(),
    };
    let result = engine.execute(&code, replies);
    engine.monitor.flush_line();
    engine.release_progress();
    Outcome {
        result,
        stats: Stats {
            duration: started.elapsed(),
            host_calls: engine.tool_calls + engine.discovery_calls,
            log_bytes: engine.monitor.log_bytes(),
            // Monty's heap is measured by its allocator only where the process installs it.
            memory_peak_bytes: 0,
        },
    }
}

/// How one call into Monty ended when it did not return the next suspension.
enum Failure {
    /// The program raised (or the interpreter raised a limit error in it).
    Raised(MontyException),
    /// The monitor unwound a guest that ignored the engine's stop.
    Stopped,
    /// Monty itself panicked.
    Panicked(String),
}

/// The state of one execution.
struct Engine<'a> {
    limits: EngineLimits,
    deadline: Instant,
    recursion_depth: usize,
    cancel: &'a CancelFlag,
    monitor: Monitor<'a>,
    api: GuestApi,
    /// Host calls sent and not answered, by Monty's call id (which is also the host call id).
    outstanding: HashSet<u32>,
    /// Answers that arrived before Monty asked for them.
    arrived: HashMap<u32, Result<Value, String>>,
    tool_calls: u32,
    discovery_calls: u32,
    /// `progress(...)` reported faster than the host is told of it.
    progress: crate::ProgressGate,
}

impl Engine<'_> {
    /// Sends the progress held back, before the engine waits for the host or ends.
    fn release_progress(&mut self) {
        if let Some(event) = self.progress.release() {
            self.monitor.emit(event);
        }
    }
}

impl Engine<'_> {
    /// Parses and runs the program; every suspension is answered here.
    fn execute(&mut self, code: &str, replies: &dyn Replies) -> Result<Value, EngineError> {
        if code.len() > MAX_CODE_BYTES {
            return Err(EngineError::CodeTooLarge {
                size: code.len(),
                limit: MAX_CODE_BYTES,
            });
        }
        let code = program::without_fence(code);
        // An entry function defined and never called is called, on a line after the program.
        let source = match program::python_entry_call(&code) {
            Some(call) => format!("{PRELUDE}{code}\n{call}\n"),
            None => format!("{PRELUDE}{code}"),
        };
        let program = MontyRun::new(source, SCRIPT_NAME, Vec::new(), CompileOptions::default())
            .map_err(|exception| syntax_error(&exception, &code))?;
        self.monitor.emit(EngineEvent::Started);
        let tracker = ResourceTracker::new(ResourceLimits {
            max_duration: Some(self.limits.timeout),
            max_memory: Some(self.limits.memory_bytes),
            gc_interval: None,
            max_recursion_depth: self.recursion_depth,
            // Monty only stores this budget for its host; the engine's own budgets (tool calls,
            // discovery calls, the deadline) bound the suspensions instead.
            max_suspensions: usize::MAX,
        });
        let mut step = self.step(|print| program.start(Vec::new(), tracker, print));
        loop {
            let progress = match step {
                Ok(progress) => progress,
                Err(failure) => return Err(self.failure(failure)),
            };
            // Every suspension is a check: a stop decided meanwhile ends the run here, and the
            // suspended interpreter is dropped without running another instruction.
            if let Some(reason) = self.monitor.observe() {
                return Err(self.stop_error(reason));
            }
            step = match progress {
                RunProgress::Complete(value) => {
                    self.warn_of_what_the_value_does_not_tell(&code, &value);
                    return self.complete(&value);
                }
                RunProgress::NameLookup(lookup) => {
                    let answer = self.api.lookup(&lookup.name, lookup.object_id());
                    self.step(|print| lookup.resume(answer, print))
                }
                RunProgress::FunctionCall(call) => self.call(call),
                RunProgress::OsCall(call) => {
                    let answer = os_call(&call.function_call, self.api.manifest());
                    self.step(|print| call.resume(answer, print))
                }
                RunProgress::ResolveFutures(state) => {
                    let results = self.wait(state.pending_call_ids(), replies)?;
                    self.step(|print| state.resume(results, print))
                }
            };
        }
    }

    /// Runs one step of the interpreter with the monitor as its print writer, catching the
    /// monitor's stop unwind (and any panic of Monty's).
    fn step(
        &mut self,
        step: impl FnOnce(PrintWriter<'_>) -> Result<RunProgress, MontyException>,
    ) -> Result<RunProgress, Failure> {
        let monitor = &mut self.monitor;
        match catch_unwind(AssertUnwindSafe(|| step(PrintWriter::Callback(monitor)))) {
            Ok(Ok(progress)) => Ok(progress),
            Ok(Err(exception)) => Err(Failure::Raised(exception)),
            Err(payload) if payload.is::<StopUnwind>() => Err(Failure::Stopped),
            Err(payload) => Err(Failure::Panicked(
                payload
                    .downcast_ref::<&str>()
                    .map(|text| (*text).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".to_owned()),
            )),
        }
    }

    /// A call of one of the engine's functions: sent to the host as a pending future, or
    /// answered here when it is malformed or over a budget.
    fn call(&mut self, mut call: FunctionCall) -> Result<RunProgress, Failure> {
        let request = match self.api.request(
            &call.function_name,
            call.object_id,
            &call.args,
            &call.kwargs,
        ) {
            Call::Host(request) => request,
            Call::Progress(progress) => {
                if let Some(event) = self.progress.offer(progress) {
                    self.monitor.emit(event);
                }
                return self.step(|print| {
                    call.resume(ExtFunctionResult::Return(MontyObject::None), print)
                });
            }
            Call::Raise(exception) => {
                return self.step(|print| call.resume(ExtFunctionResult::Error(exception), print));
            }
            Call::NotFound => {
                let name = call.function_name.clone();
                return self.step(|print| call.resume(ExtFunctionResult::NotFound(name), print));
            }
        };
        if request.reaches_server() {
            self.tool_calls += 1;
            if self.tool_calls > self.limits.max_tool_calls {
                self.monitor.stop(Stop::ToolCallLimit);
                return Err(Failure::Stopped);
            }
        } else {
            self.discovery_calls += 1;
            if self.discovery_calls > MAX_DISCOVERY_CALLS {
                self.monitor.stop(Stop::DiscoveryLimit);
                return Err(Failure::Stopped);
            }
        }
        // Monty's clock counts only interpreter time, not time waiting for the host: give it
        // what is left of the wall-clock budget, so its own limit stops busy code at the deadline.
        call.tracker_mut()
            .set_max_duration(self.deadline.saturating_duration_since(Instant::now()));
        self.outstanding.insert(call.call_id);
        self.monitor.emit(EngineEvent::Call(HostCall {
            id: u64::from(call.call_id),
            request,
        }));
        self.step(|print| call.resume_pending(print))
    }

    /// Waits until the host answered at least one of the calls Monty waits for; returns every
    /// answer already there, so a batch that arrived together resumes together.
    fn wait(
        &mut self,
        pending: &[u32],
        replies: &dyn Replies,
    ) -> Result<Vec<(u32, ExtFunctionResult)>, EngineError> {
        loop {
            while let Some(reply) = replies.try_recv() {
                self.receive(reply);
            }
            if self.cancel.is_cancelled() {
                return Err(EngineError::Cancelled);
            }
            let ready: Vec<(u32, ExtFunctionResult)> = pending
                .iter()
                .filter_map(|id| Some((*id, answer(self.arrived.remove(id)?))))
                .collect();
            if !ready.is_empty() {
                return Ok(ready);
            }
            if !pending.iter().any(|id| self.outstanding.contains(id)) {
                // Monty waits for futures the host was never asked for.
                return Err(EngineError::NeverSettles);
            }
            let now = Instant::now();
            if now >= self.deadline {
                return Err(self.stop_error(Stop::Timeout));
            }
            self.release_progress();
            // Wake now and then: the cancel flag alone (without the host's `Cancel`) ends the
            // wait within a slice.
            match replies.recv_timeout((self.deadline - now).min(WAIT_SLICE)) {
                Ok(reply) => self.receive(reply),
                Err(RecvTimeoutError::Timeout) => {}
                // The host is gone: nothing can answer the outstanding calls.
                Err(RecvTimeoutError::Disconnected) => return Err(EngineError::Cancelled),
            }
        }
    }

    fn receive(&mut self, reply: HostReply) {
        match reply {
            HostReply::Result { id, outcome } => {
                if let Ok(id) = u32::try_from(id)
                    && self.outstanding.remove(&id)
                {
                    self.arrived.insert(id, outcome);
                }
            }
            HostReply::Cancel => self.cancel.cancel(),
        }
    }

    /// Warnings for a program that ended with tool calls still running (never awaited), or with
    /// no value although it printed nothing. (A call never awaited that failed before the end
    /// goes unseen: Monty takes every answer and keeps a failure for an `await` that never
    /// comes.)
    fn warn_of_what_the_value_does_not_tell(&mut self, code: &str, value: &MontyObject) {
        let running = self.outstanding.len();
        if running > 0 {
            self.monitor.emit(EngineEvent::Warning {
                text: program::calls_still_running_warning(Language::Python, running),
            });
        }
        if matches!(value, MontyObject::None)
            && self.monitor.log_bytes() == 0
            && let Some(ending) = program::python_ending(code)
        {
            self.monitor.emit(EngineEvent::Warning {
                text: program::no_value_warning(Language::Python, &ending),
            });
        }
    }

    /// The program's value as JSON, within the result bound.
    fn complete(&mut self, value: &MontyObject) -> Result<Value, EngineError> {
        if let Some(reason) = self.monitor.observe() {
            return Err(self.stop_error(reason));
        }
        let value = to_json(value, &mut ValuePath::new("the result"))
            .map_err(|message| EngineError::Unserializable { message })?;
        let size = serde_json::to_string(&value)
            .map_err(|error| EngineError::Unserializable {
                message: error.to_string(),
            })?
            .len();
        if size > self.limits.max_result_bytes {
            return Err(EngineError::ResultTooLarge {
                size,
                limit: self.limits.max_result_bytes,
            });
        }
        Ok(value)
    }

    /// Maps how the interpreter stopped to the error the host reports: the engine's own stop
    /// first, then the interpreter's limit errors, then the guest's exception.
    fn failure(&mut self, failure: Failure) -> EngineError {
        if let Some(reason) = self.monitor.observe() {
            return self.stop_error(reason);
        }
        let exception = match failure {
            Failure::Raised(exception) => exception,
            // Only the monitor unwinds, and only after deciding to stop.
            Failure::Stopped => return EngineError::Cancelled,
            Failure::Panicked(message) => {
                return EngineError::Internal {
                    message: format!("the Python interpreter panicked: {message}"),
                };
            }
        };
        let message = exception.message().unwrap_or_default();
        match exception.exc_type() {
            // Monty's time limit fires only past the deadline (it was armed with the time left),
            // and the deadline check above has already caught that.
            ExcType::MemoryError
                if message.starts_with(MEMORY_MESSAGE_PREFIX)
                    && raiser(&exception) != Raiser::Guest =>
            {
                EngineError::MemoryLimit {
                    limit: self.limits.memory_bytes,
                }
            }
            ExcType::RecursionError
                if message == RECURSION_MESSAGE
                    && match raiser(&exception) {
                        Raiser::Interpreter => true,
                        // A guest raising its own RecursionError is its own error, however deep.
                        Raiser::Guest => false,
                        // Passing one on from an `except` at the limit's depth: the
                        // interpreter's.
                        Raiser::Reraise => exception.traceback().len() >= self.recursion_depth,
                    } =>
            {
                EngineError::StackOverflow
            }
            _ => guest_error(&exception, self.api.manifest()),
        }
    }

    fn stop_error(&self, reason: Stop) -> EngineError {
        match reason {
            Stop::Timeout => EngineError::Timeout {
                limit: self.limits.timeout,
            },
            Stop::Cancelled => EngineError::Cancelled,
            Stop::LogLimit => EngineError::LogLimit {
                limit: self.limits.max_log_bytes,
            },
            Stop::ToolCallLimit => EngineError::ToolCallLimit {
                limit: self.limits.max_tool_calls,
            },
            Stop::DiscoveryLimit => EngineError::Guest {
                name: "RuntimeError".to_owned(),
                message: format!(
                    "more than {MAX_DISCOVERY_CALLS} search_tools/describe_tools calls in one \
                     execution"
                ),
                line: None,
                column: None,
                stack: None,
            },
        }
    }
}

/// A host answer as Monty takes it: a value, or a `RuntimeError` carrying the host's message.
fn answer(outcome: Result<Value, String>) -> ExtFunctionResult {
    match outcome {
        Ok(value) => ExtFunctionResult::Return(from_json(value)),
        Err(message) => {
            ExtFunctionResult::Error(MontyException::new(ExcType::RuntimeError, Some(message)))
        }
    }
}

/// The answer to an OS operation: the clock is read (UTC), everything else is denied, naming
/// the tools of `manifest` that may do it.
fn os_call(call: &OsFunctionCall, manifest: &Manifest) -> ExtFunctionResult {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    match call {
        OsFunctionCall::DateToday => {
            let (year, month, day) = civil_date(now.as_secs() as i64 / 86_400);
            ExtFunctionResult::Return(MontyObject::Date(MontyDate { year, month, day }))
        }
        OsFunctionCall::DateTimeNow(zone) => {
            let offset = zone.as_ref().map(|zone| zone.offset_seconds);
            let seconds = now.as_secs() as i64 + i64::from(offset.unwrap_or(0));
            let (year, month, day) = civil_date(seconds.div_euclid(86_400));
            let of_day = seconds.rem_euclid(86_400);
            ExtFunctionResult::Return(MontyObject::DateTime(MontyDateTime {
                year,
                month,
                day,
                hour: (of_day / 3600) as u8,
                minute: (of_day / 60 % 60) as u8,
                second: (of_day % 60) as u8,
                microsecond: now.subsec_micros(),
                offset_seconds: offset,
                timezone_name: zone.as_ref().and_then(|zone| zone.name.clone()),
            }))
        }
        other => ExtFunctionResult::Error(MontyException::new(
            ExcType::PermissionError,
            Some(crate::hints::refused_operation(
                &format!("{}()", other.name()),
                crate::Language::Python,
                manifest,
            )),
        )),
    }
}

/// The Gregorian date of a day counted from 1970-01-01.
fn civil_date(days: i64) -> (i32, u8, u8) {
    use chrono::Datelike;
    let date = i32::try_from(days)
        .ok()
        .and_then(|days| days.checked_add(DAYS_FROM_CE_TO_1970))
        .and_then(chrono::NaiveDate::from_num_days_from_ce_opt)
        .unwrap_or_default();
    // Month and day are at most 12 and 31.
    (date.year(), date.month() as u8, date.day() as u8)
}

/// Days from 0001-01-01 (day 1 of the common era, as chrono counts) to 1970-01-01.
const DAYS_FROM_CE_TO_1970: i32 = 719_163;

#[cfg(test)]
mod tests {
    use super::civil_date;

    #[test]
    fn civil_dates_are_gregorian() {
        assert_eq!(civil_date(0), (1970, 1, 1));
        assert_eq!(civil_date(19_723), (2024, 1, 1));
        assert_eq!(civil_date(19_782), (2024, 2, 29));
        assert_eq!(civil_date(-1), (1969, 12, 31));
    }
}
