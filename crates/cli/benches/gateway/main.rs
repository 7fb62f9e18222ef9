//! The gateway's benchmarks, in one binary (one build and link instead of four):
//! `cargo bench -p toolweave --bench gateway -- NAME [ARGS]`, NAME one of `e2e` (end to end over
//! stdio), `http` (`serve --http`), `scale` (catalogs, servers, result sizes, memory) and `tokens`
//! (what answers cost in tokens). Without a name, all four run in turn. Each module says what it
//! measures.

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
