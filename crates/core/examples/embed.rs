//! toolweave as a library: a Rust function and an MCP server's tool, called together from one
//! TypeScript program.
//!
//! `cargo run -p toolweave-core --example embed -- [worker|in-process|remote] [MCP server program]`;
//! the server is the fixture server built beside it (`cargo build -p toolweave-testkit`) unless
//! named. `remote` runs the code on a runner: this program again, started with `runner`, serving
//! the runner protocol on its stdin and stdout as `toolweave runner` does.

use std::error::Error;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::{Value, json};
use toolweave_core::{
    ClosureProvider, ExecuteOptions, Gateway, Isolation, Language, Limits, Runner, RunnerService,
};

// Workers are this program re-entered; in one, this allocator holds the guest's memory limit.
#[global_allocator]
static ALLOCATOR: toolweave_core::WorkerAllocator = toolweave_core::WorkerAllocator;

#[allow(clippy::print_stdout)] // The example's answer.
fn main() -> Result<ExitCode, Box<dyn Error>> {
    if let Some(code) = toolweave_core::run_worker_if_asked() {
        return Ok(code);
    }
    let mut arguments = std::env::args().skip(1);
    let place = arguments.next().unwrap_or_default();
    let runtime = tokio::runtime::Runtime::new()?;
    if place == "runner" {
        let worker = toolweave_core::worker_command()?;
        runtime.block_on(async {
            let runner = Arc::new(RunnerService::new(worker, Limits::default(), None));
            runner.serve(tokio::io::stdin(), tokio::io::stdout()).await
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    let server = match arguments.next() {
        Some(server) => server.into(),
        None => std::env::current_exe()?.with_file_name("../toolweave-fixture"),
    };
    let value = runtime.block_on(run(&place, server))?;
    println!("{value}");
    Ok(ExitCode::SUCCESS)
}

async fn run(place: &str, server: PathBuf) -> Result<Value, Box<dyn Error>> {
    let math = ClosureProvider::new("math").tool(
        "multiply",
        "Multiplies two numbers.",
        json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
        |arguments: Value, _context| async move {
            let (a, b) = (arguments["a"].as_f64(), arguments["b"].as_f64());
            Ok::<_, String>(json!(a.unwrap_or_default() * b.unwrap_or_default()))
        },
    );
    let servers = json!({"mcpServers": {"fixture": {"command": server}}}).to_string();
    let builder =
        Gateway::builder()
            .provider(math)
            .mcp_servers(&toolweave_core::config::parse_str(
                &servers,
                "embed.json".as_ref(),
            )?);
    let builder = match place {
        "remote" => builder.runner(Runner::command(std::env::current_exe()?, ["runner"])),
        "in-process" => builder.isolation(Isolation::InProcess),
        _ => builder.isolation(Isolation::Worker),
    };
    let gateway = builder.worker(toolweave_core::worker_command()?).build()?;
    let code = "const [product, sum] = await Promise.all([
        tools.math.multiply({ a: 6, b: 7 }),
        tools.fixture.add({ a: 2, b: 3 }),
    ]);
    ({ product, sum })";
    let report = gateway
        .execute(code, Language::TypeScript, ExecuteOptions::default())
        .await;
    gateway.shutdown().await;
    Ok(report.result?)
}
