//! The catalog's tests: one binary, one module per concern.

mod suite;
