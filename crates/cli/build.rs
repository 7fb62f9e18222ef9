//! Links `toolweave` as a position-dependent executable on Linux.
//!
//! Every execution in worker isolation starts the binary again, and a position-independent
//! executable of this size spends part of each start applying its relocations (how much:
//! docs/benchmarks.md, "Figures behind choices in the code"). Linked at a fixed address it needs
//! none; the libraries, heap, stacks and mappings are still placed at random. See
//! docs/security.md.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
