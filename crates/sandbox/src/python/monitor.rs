//! The engine's eye on a running guest: `print` output and the decision to stop.
//!
//! Monty has no interrupt callback, but its dispatch loop calls the print writer's `poll_flush`
//! every 255 instructions (the hook exists so a buffering writer can flush while the guest
//! computes in silence). [`Monitor`] is that print writer: each poll reads the cancel flag and the
//! clock, which gives the engine a check inside busy loops. When it decides to stop, it first
//! raises `KeyboardInterrupt` (a `BaseException`, so `except Exception` does not swallow it and
//! the VM unwinds its own frames); a guest that catches even that and keeps running is stopped at
//! the next poll by a Rust unwind ([`StopUnwind`]) that the engine catches around every call into
//! Monty (this needs `panic = "unwind"`, which the workspace's profiles set). Either way the
//! engine, not the guest, decides why the run ended.

use std::borrow::Cow;
use std::time::Instant;

use monty_types::{ExcType, MontyException, PrintWriterCallback};

use crate::{CancelFlag, EngineEvent, LogStream};

/// Why the engine stopped the guest. Set only by the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
    /// The wall-clock deadline passed.
    Timeout,
    /// The cancel flag was set or the host sent `Cancel`.
    Cancelled,
    /// `print` output passed its bound.
    LogLimit,
    /// One tool call more than allowed.
    ToolCallLimit,
    /// Too many `search_tools`/`describe_tools` calls.
    DiscoveryLimit,
}

/// The payload of the unwind that stops a guest which caught the engine's `KeyboardInterrupt`.
pub(super) struct StopUnwind;

/// Print writer, log bound and stop decisions for one execution.
pub(super) struct Monitor<'a> {
    emit: &'a mut dyn FnMut(EngineEvent),
    cancel: &'a CancelFlag,
    deadline: Instant,
    max_log_bytes: usize,
    log_bytes: usize,
    /// The current line of `print` output, until its newline.
    line: String,
    stop: Option<Stop>,
    /// Whether the guest has already been sent the stop as an exception.
    told: bool,
}

impl<'a> Monitor<'a> {
    pub(super) fn new(
        emit: &'a mut dyn FnMut(EngineEvent),
        cancel: &'a CancelFlag,
        deadline: Instant,
        max_log_bytes: usize,
    ) -> Self {
        Self {
            emit,
            cancel,
            deadline,
            max_log_bytes,
            log_bytes: 0,
            line: String::new(),
            stop: None,
            told: false,
        }
    }

    /// Hands one event to the host.
    pub(super) fn emit(&mut self, event: EngineEvent) {
        (self.emit)(event);
    }

    /// Records why the guest must stop; the first reason wins.
    pub(super) fn stop(&mut self, reason: Stop) {
        if self.stop.is_none() {
            self.stop = Some(reason);
        }
    }

    /// Reads the cancel flag and the clock; returns the stop reason, if any.
    pub(super) fn observe(&mut self) -> Option<Stop> {
        if self.stop.is_none() {
            if self.cancel.is_cancelled() {
                self.stop(Stop::Cancelled);
            } else if Instant::now() >= self.deadline {
                self.stop(Stop::Timeout);
            }
        }
        self.stop
    }

    /// Bytes of `print` output so far.
    pub(super) fn log_bytes(&self) -> usize {
        self.log_bytes
    }

    /// Emits the last line when the program ended without a newline.
    pub(super) fn flush_line(&mut self) {
        if !self.line.is_empty() {
            let text = std::mem::take(&mut self.line);
            self.emit(EngineEvent::Log {
                stream: LogStream::Log,
                text,
            });
        }
    }

    /// Lets the guest run on, or makes it stop: an exception the first time; at a dispatch
    /// checkpoint (`at_checkpoint`) after that, an unwind. Monty is between two instructions
    /// there, with nothing half done, which is why no other place unwinds.
    fn enforce(&mut self, at_checkpoint: bool) -> Result<(), MontyException> {
        let Some(reason) = self.stop else {
            return Ok(());
        };
        if self.told && at_checkpoint {
            std::panic::resume_unwind(Box::new(StopUnwind));
        }
        self.told = true;
        let why = match reason {
            Stop::Timeout => "the time limit was reached",
            Stop::Cancelled => "the execution was cancelled",
            Stop::LogLimit => "print output exceeded its limit",
            Stop::ToolCallLimit => "too many tool calls",
            Stop::DiscoveryLimit => "too many search_tools/describe_tools calls",
        };
        Err(MontyException::new(
            ExcType::KeyboardInterrupt,
            Some(format!("toolweave stopped the program: {why}")),
        ))
    }

    fn write(&mut self, text: &str) -> Result<(), MontyException> {
        self.enforce(false)?;
        let total = self.log_bytes.saturating_add(text.len());
        if total > self.max_log_bytes {
            self.stop(Stop::LogLimit);
            return self.enforce(false);
        }
        self.log_bytes = total;
        let mut rest = text;
        while let Some(end) = rest.find('\n') {
            self.line.push_str(&rest[..end]);
            let line = std::mem::take(&mut self.line);
            self.emit(EngineEvent::Log {
                stream: LogStream::Log,
                text: line,
            });
            rest = &rest[end + 1..];
        }
        self.line.push_str(rest);
        Ok(())
    }
}

impl PrintWriterCallback for Monitor<'_> {
    fn stdout_write(&mut self, output: Cow<'_, str>) -> Result<(), MontyException> {
        self.write(&output)
    }

    fn stdout_push(&mut self, end: char) -> Result<(), MontyException> {
        self.write(end.encode_utf8(&mut [0; 4]))
    }

    fn poll_flush(&mut self) -> Result<(), MontyException> {
        self.observe();
        self.enforce(true)
    }
}
