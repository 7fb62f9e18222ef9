//! Test support: a fixture MCP server with known tools, a harness that drives the real toolweave
//! binary, and the way a test that cannot run here says so ([`skip`]).
//!
//! The fixture server is the `toolweave-fixture` binary of this package (`src/bin/fixture.rs`); tests
//! of other packages find it with [`fixture_binary`]. It is built by `cargo build`, and by
//! `cargo test` of this package (its own tests spawn it).

#![cfg_attr(
    test,
    allow(
        clippy::too_many_lines,
        reason = "a test reads top to bottom as one scenario"
    )
)]

pub mod cases;
pub mod faults;
pub mod fixture;
pub mod fixture_http;
pub mod fixture_oauth;
pub mod harness;
pub mod http;
pub mod listen;
pub mod skip;
pub mod synthetic;

use std::path::{Path, PathBuf};

/// The path of the built `toolweave-fixture` executable.
///
/// Tests and benches run from `target/<profile>/deps/`; the binaries of the workspace sit in
/// `target/<profile>/`. `TOOLWEAVE_FIXTURE` overrides the search.
///
/// # Panics
///
/// When the executable is not there, with a message saying what to run: it is built by `cargo
/// build` (or `cargo build -p toolweave-testkit`), which the tests of another package do not do
/// by themselves. This is test support: without the fixture the test cannot go on.
pub fn fixture_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("TOOLWEAVE_FIXTURE") {
        return PathBuf::from(path);
    }
    let executable = format!("toolweave-fixture{}", std::env::consts::EXE_SUFFIX);
    let current = std::env::current_exe().unwrap_or_default();
    let candidates: Vec<PathBuf> = current
        .ancestors()
        .skip(1)
        .take(2)
        .map(|folder: &Path| folder.join(&executable))
        .collect();
    match candidates.iter().find(|path| path.is_file()) {
        Some(path) => path.clone(),
        None => panic!(
            "the fixture MCP server is not built (looked for {}): run `cargo build -p toolweave-testkit` \
             (or `cargo build`) first, with the same profile as the tests",
            candidates
                .iter()
                .map(|path| path.display().to_string())
                .collect::<Vec<_>>()
                .join(" and ")
        ),
    }
}

/// A binary of this workspace built with the same profile as the running bench or test
/// (`target/<profile>/<name>`); `TOOLWEAVE_BENCH_BINARY` stands in for `toolweave` itself, to
/// measure another build (A/B).
///
/// # Panics
///
/// When it is not built, with a message saying what to run: a benchmark cannot go on without it.
pub fn built_binary(name: &str) -> PathBuf {
    if name == "toolweave"
        && let Some(path) = std::env::var_os("TOOLWEAVE_BENCH_BINARY")
    {
        return PathBuf::from(path);
    }
    let executable = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    let current = std::env::current_exe().unwrap_or_default();
    // Benches and tests run from target/<profile>/deps; the binaries sit one level up.
    let path = current
        .parent()
        .and_then(Path::parent)
        .map(|folder| folder.join(&executable))
        .unwrap_or_default();
    assert!(
        path.is_file(),
        "{} is missing: run `cargo build --release` first",
        path.display()
    );
    path
}
