//! The modules of the engines' test binary.

mod common;
mod engine;
mod python;
