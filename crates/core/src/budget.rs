//! What one execution may take from upstream servers beyond its call count: calls per tool and
//! bytes of results, and no result larger than the guest can hold. The bridge draws on it for
//! each call; the executor ends the execution once it is overdrawn, and reports what was used in
//! the execution's stats.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::error::ExecutionError;

/// One execution's budget.
#[derive(Debug)]
pub(crate) struct Budget {
    per_tool: u32,
    max_bytes: u64,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    calls: BTreeMap<String, u32>,
    bytes: u64,
    overdrawn: Option<ExecutionError>,
}

impl Budget {
    pub(crate) fn new(per_tool: u32, max_bytes: u64) -> Self {
        Self {
            per_tool,
            max_bytes,
            state: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The counters stay whole whatever panicked while the lock was held.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a call of `tool` (`server.tool`), before it is made; `Err` when that is one too many.
    pub(crate) fn take_call(&self, tool: &str) -> Result<(), ExecutionError> {
        let mut state = self.lock();
        let calls = state.calls.entry(tool.to_owned()).or_insert(0);
        if *calls >= self.per_tool {
            let error = ExecutionError::ToolCallLimitPerTool {
                tool: tool.to_owned(),
                limit: self.per_tool,
            };
            state.overdrawn.get_or_insert(error.clone());
            return Err(error);
        }
        *calls += 1;
        Ok(())
    }

    /// Counts `bytes` of a result; `Err` once the total is past the limit.
    pub(crate) fn take_bytes(&self, bytes: u64) -> Result<(), ExecutionError> {
        let mut state = self.lock();
        state.bytes = state.bytes.saturating_add(bytes);
        if state.bytes > self.max_bytes {
            let error = ExecutionError::UpstreamBytesLimit {
                limit: self.max_bytes,
            };
            state.overdrawn.get_or_insert(error.clone());
            return Err(error);
        }
        Ok(())
    }

    /// Ends the execution with `error`, a limit one call went past that the bridge found itself;
    /// the error is also the call's.
    pub(crate) fn refuse(&self, error: ExecutionError) -> ExecutionError {
        self.lock().overdrawn.get_or_insert(error.clone());
        error
    }

    /// The first limit the execution went past, once it has.
    pub(crate) fn overdrawn(&self) -> Option<ExecutionError> {
        self.lock().overdrawn.clone()
    }

    /// Calls per tool and bytes received so far.
    pub(crate) fn used(&self) -> (BTreeMap<String, u32>, u64) {
        let state = self.lock();
        (state.calls.clone(), state.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_per_tool_and_bytes_are_bounded() {
        let budget = Budget::new(2, 100);
        assert!(budget.take_call("a.x").is_ok());
        assert!(budget.take_call("a.x").is_ok());
        assert!(budget.take_call("a.y").is_ok());
        let error = budget.take_call("a.x").unwrap_err().to_string();
        assert!(error.contains("call a.x more than 2 times"), "{error}");
        assert!(budget.take_bytes(60).is_ok());
        assert!(budget.take_bytes(60).is_err());
        // The first limit passed is the one reported.
        assert!(matches!(
            budget.overdrawn(),
            Some(ExecutionError::ToolCallLimitPerTool { .. })
        ));
        let (calls, bytes) = budget.used();
        assert_eq!(calls.get("a.x"), Some(&2));
        assert_eq!(bytes, 120);
    }
}
