//! The gateway's benchmarks, in one binary (one build and link instead of four):
//! `cargo bench -p toolweave --bench gateway -- NAME [ARGS]`, NAME one of `e2e` (end to end over
//! stdio), `http` (`serve --http`), `scale` (catalogs, servers, result sizes, memory) and `tokens`
//! (what answers cost in tokens). Without a name, all four run in turn. Each module says what it
//! measures.

#![allow(
    clippy::too_many_lines,
    reason = "a benchmark's scenario reads top to bottom in one function"
)]
#![expect(
    clippy::expect_used,
    reason = "a benchmark aborts on the first failure"
)]
#![expect(clippy::print_stdout, reason = "a benchmark reports on stdout")]

use std::path::PathBuf;

mod e2e;
mod http;
mod scale;
mod tokens;

const NAMES: [&str; 4] = ["e2e", "http", "scale", "tokens"];

fn main() {
    // `cargo test --benches` asks for a list; there are no unit benches here.
    if std::env::args().any(|argument| argument == "--list") {
        return;
    }
    let name = std::env::args()
        .skip(1)
        .find(|argument| !argument.starts_with('-'));
    let names = match name.as_deref() {
        None => NAMES.to_vec(),
        Some(name) if NAMES.contains(&name) => vec![name],
        Some(other) => {
            eprintln!("no benchmark named {other:?}: one of {}", NAMES.join(", "));
            std::process::exit(2);
        }
    };
    for name in names {
        match name {
            "e2e" => e2e::main(),
            "http" => http::main(),
            "scale" => scale::main(),
            _ => tokens::main(),
        }
    }
}

/// A binary of this workspace, as built for the benchmarks (`TOOLWEAVE_BENCH_BINARY` for
/// `toolweave` measures another build).
fn binary(name: &str) -> PathBuf {
    toolweave_testkit::built_binary(name)
}

/// A `kB` field of `/proc/<process_id>/status` (`"VmRSS:"`, `"VmHWM:"`), 0 when unreadable.
fn status_kib(process_id: u32, field: &str) -> u64 {
    kib_field(&format!("/proc/{process_id}/status"), field)
}

/// Resident memory (VmRSS) of a process, in KiB.
fn resident_kib(process_id: u32) -> u64 {
    status_kib(process_id, "VmRSS:")
}

/// Pss (its private pages and its share of shared ones) of a process, in KiB.
fn proportional_kib(process_id: u32) -> u64 {
    kib_field(&format!("/proc/{process_id}/smaps_rollup"), "Pss:")
}

fn kib_field(path: &str, field: &str) -> u64 {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
