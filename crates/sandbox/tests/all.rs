//! The engines' tests, one binary: JavaScript and TypeScript (`suite::engine`) and Python
//! (`suite::python`), each engine on its own with a small host of canned tools. The Python
//! memory limit has a binary of its own (`python_memory.rs`): it installs a global allocator.

#![allow(
    clippy::too_many_lines,
    reason = "a test reads top to bottom as one scenario"
)]

mod suite;
