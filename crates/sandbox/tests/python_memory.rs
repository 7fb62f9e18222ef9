//! The Python memory limit, in a test binary of its own: Monty measures its heap through the
//! `monty-alloc` global allocator, armed process-wide as a worker process arms it, so this
//! binary installs it and holds one test only.

#![allow(
    clippy::too_many_lines,
    reason = "a test reads top to bottom as one scenario"
)]

use std::sync::mpsc;
use std::time::Duration;

use serde_json::json;
use toolweave_sandbox::{
    CancelFlag, EngineError, EngineLimits, ExecuteRequest, Language, Manifest,
    THREAD_STACK_HEADROOM,
};

#[global_allocator]
static ALLOCATOR: monty_alloc::LimitedAllocator = monty_alloc::LimitedAllocator;

const MEMORY_BYTES: usize = 16 * 1024 * 1024;

fn run(code: &str) -> Result<serde_json::Value, EngineError> {
    let code = code.to_owned();
    let limits = EngineLimits {
        timeout: Duration::from_secs(5),
        memory_bytes: MEMORY_BYTES,
        stack_bytes: 256 * 1024,
        max_log_bytes: 4096,
        max_result_bytes: 64 * 1024,
        max_tool_calls: 20,
    };
    std::thread::Builder::new()
        .stack_size(limits.stack_bytes + THREAD_STACK_HEADROOM)
        .spawn(move || {
            let (_replies_tx, replies_rx) = mpsc::channel();
            toolweave_sandbox::execute(
                ExecuteRequest {
                    code,
                    language: Language::Python,
                    limits,
                    manifest: Manifest::default().into(),
                },
                &mut |_| {},
                &replies_rx,
                &CancelFlag::new(),
            )
            .result
        })
        .unwrap_or_else(|error| panic!("cannot start a thread: {error}"))
        .join()
        .unwrap_or_else(|_| panic!("the engine thread panicked"))
}

#[test]
fn memory_is_bounded_and_terminal() {
    // As a worker does before it runs its guest.
    monty_alloc::set_limit(Some(MEMORY_BYTES), false).unwrap();
    assert_eq!(run("x = [0] * 100000\nlen(x)"), Ok(json!(100000)));
    for code in [
        "hoard = []\nwhile True:\n    hoard.append([0] * 100000)",
        "parts = []\nwhile True:\n    parts.append('x' * (1 << 20) + str(len(parts)))",
        "d = {}\ni = 0\nwhile True:\n    d['k' + str(i)] = i\n    i += 1",
        // Catching the MemoryError does not buy more room.
        "keep = []\nwhile True:\n    try:\n        keep.append([1] * 1000000)\n    except BaseException:\n        pass",
        // One allocation past the limit is refused before it is made.
        "'x' * (64 * 1024 * 1024)",
    ] {
        assert_eq!(
            run(code),
            Err(EngineError::MemoryLimit {
                limit: MEMORY_BYTES
            }),
            "{code}"
        );
    }
    // The guest claiming it is not the engine's finding.
    let faked = run("raise MemoryError('memory limit exceeded: 1 bytes > 0 bytes')");
    assert!(
        matches!(&faked, Err(EngineError::Guest { name, .. }) if name == "MemoryError"),
        "{faked:?}"
    );
    // And the next program runs.
    assert_eq!(run("sum(range(10))"), Ok(json!(45)));
}
