//! Limits on one execution, with defaults a user can change.

use std::time::Duration;

/// Limits applied to every execution. Hitting one ends the execution with an error that names
/// the limit and the flag that raises it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock time for the whole execution, tool calls included (`--timeout-ms`).
    pub timeout: Duration,
    /// Heap the guest may allocate (`--memory-mb`).
    pub memory_bytes: usize,
    /// Guest stack (`--stack-kb`): bounds recursion depth.
    pub stack_bytes: usize,
    /// Console output kept per execution (`--max-log-bytes`); more is cut with a marker.
    pub max_log_bytes: usize,
    /// Size of the result as JSON (`--max-result-bytes`), and of a search or describe answer.
    /// The default, 24 KiB (some 6,000 tokens), keeps one answer from filling the model's
    /// context: a program filters in code and returns what the task needs.
    pub max_result_bytes: usize,
    /// Tool calls one execution may make (`--max-tool-calls`).
    pub max_tool_calls: u32,
    /// Calls of any one tool one execution may make (`--max-calls-per-tool`).
    pub max_calls_per_tool: u32,
    /// Bytes of tool results one execution may receive from upstream servers
    /// (`--max-upstream-bytes`).
    pub max_upstream_bytes: u64,
    /// Time one upstream tool call may take (`--tool-timeout-ms`).
    pub tool_call_timeout: Duration,
    /// Time a call waits for its upstream server to finish starting (`--startup-timeout-ms`).
    pub startup_timeout: Duration,
    /// Bytes of keys and values (as JSON) one MCP session's store may hold
    /// (`--max-store-bytes`).
    pub max_store_bytes: usize,
    /// Keys one MCP session's store may hold (`--max-store-keys`).
    pub max_store_keys: usize,
    /// Bytes of values (as JSON) one MCP session keeps behind result handles
    /// (`--max-handle-bytes`); the oldest handles are dropped to make room for a new one.
    pub max_handle_bytes: usize,
    /// How long a result handle is kept after it is made (`--handle-ttl-ms`).
    pub handle_ttl: Duration,
    /// How long a session named by handles (over HTTP without an MCP session) is kept unused,
    /// and how long each of its handles is valid (`--session-ttl-ms`).
    pub session_ttl: Duration,
    /// Content blocks (images, audio, ...) one execution's answer may carry
    /// (`--max-emitted-blocks`).
    pub max_emitted_blocks: usize,
    /// Bytes of those blocks, base64 data as sent (`--max-emitted-bytes`).
    pub max_emitted_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(60),
            memory_bytes: 64 * 1024 * 1024,
            stack_bytes: 512 * 1024,
            max_log_bytes: 64 * 1024,
            max_result_bytes: 24 * 1024,
            max_tool_calls: 200,
            max_calls_per_tool: 200,
            max_upstream_bytes: 64 * 1024 * 1024,
            tool_call_timeout: Duration::from_secs(30),
            startup_timeout: Duration::from_secs(30),
            max_store_bytes: 4 * 1024 * 1024,
            max_store_keys: 1000,
            max_handle_bytes: 64 * 1024 * 1024,
            handle_ttl: Duration::from_secs(15 * 60),
            session_ttl: Duration::from_secs(60 * 60),
            max_emitted_blocks: 8,
            max_emitted_bytes: 4 * 1024 * 1024,
        }
    }
}
