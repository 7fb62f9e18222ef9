//! `toolweave-fixture`: an MCP server on stdio (or HTTP) with known tools, for tests and examples.
//!
//! See `toolweave_testkit::fixture` for the tools and flags. `toolweave-fixture browse URL` plays a
//! person's browser for `toolweave login`: it opens the URL and follows its redirects.

use std::process::ExitCode;

use toolweave_testkit::faults::serve_faults;
use toolweave_testkit::fixture::{FixtureOptions, serve_stdio};
use toolweave_testkit::fixture_http::serve_http;
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    // stdout is the MCP channel: logs go to stderr (FIXTURE_LOG=info for more).
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_env("FIXTURE_LOG").unwrap_or_else(|_| EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();

    let arguments: Vec<String> = std::env::args().skip(1).collect();
    if let [command, url] = arguments.as_slice()
        && command == "browse"
    {
        return browse(url);
    }
    let options = match FixtureOptions::parse(arguments) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("toolweave-fixture: {message}");
            return ExitCode::from(2);
        }
    };
    if options.fail_start {
        eprintln!("failing on purpose");
        return ExitCode::from(1);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("toolweave-fixture: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let serve = async move {
        if let Some(faults) = options.faults.clone() {
            serve_faults(faults, options.listen.as_ref()).await
        } else if options.listen.is_some() {
            serve_http(options).await
        } else {
            serve_stdio(options).await
        }
    };
    match runtime.block_on(serve) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("toolweave-fixture: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Opens `url` and follows its redirects, as a browser would for a login.
fn browse(url: &str) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("toolweave-fixture: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(toolweave_testkit::fixture_oauth::browse(url)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("toolweave-fixture browse: {error:#}");
            ExitCode::FAILURE
        }
    }
}
