//! The catalog's tests: one binary, one module per concern.

#![allow(
    clippy::too_many_lines,
    reason = "a test reads top to bottom as one scenario"
)]

mod suite;
