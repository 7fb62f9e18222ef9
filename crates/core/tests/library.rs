//! toolweave-core as a library: the embedding example run as CI runs it, and host functions as
//! tools through the real execution path (validation, the policy, approval, budgets, the audit
//! log, search and typings), on engine threads and in worker processes.

#![allow(
    clippy::too_many_lines,
    reason = "a test reads top to bottom as one scenario"
)]
#![expect(
    clippy::expect_used,
    reason = "a test stops at what it cannot go on without"
)]

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use toolweave_core::{
    AuditLog, AuditOptions, BuildError, CallContext, CallToolResult, ClosureProvider,
    ExecuteOptions, ExecutionReport, Flavor, Gateway, GatewayBuilder, Isolation, Language, Limits,
    Listener, Notice, Policy, ProviderError, Tool, ToolAnnotations, ToolDefinition, ToolProvider,
    WORKER_ARGUMENT, WorkerCommand, WorkerKind,
};

/// The example, built by `cargo test` (and `cargo build --examples`) in `target/<profile>/examples`.
/// It is also the worker program of these tests: its `main` runs a worker when asked.
fn example_binary() -> PathBuf {
    let current = std::env::current_exe().expect("the test's path");
    let path = current
        .ancestors()
        .nth(2)
        .expect("target/<profile>")
        .join("examples")
        .join(format!("embed{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.is_file(),
        "{} is missing: run `cargo build -p toolweave-core --examples` (cargo test builds it unless a test target is named)",
        path.display()
    );
    path
}

const ISOLATIONS: [Isolation; 2] = [Isolation::InProcess, Isolation::Worker];

/// A builder of `isolation`, whose workers are the example program re-entered.
fn builder(isolation: Isolation) -> GatewayBuilder {
    Gateway::builder()
        .isolation(isolation)
        .worker(WorkerCommand {
            program: example_binary(),
            args: vec![WORKER_ARGUMENT.into()],
            env: Vec::new(),
        })
}

fn object(schema: Value) -> Arc<serde_json::Map<String, Value>> {
    Arc::new(schema.as_object().cloned().expect("a schema object"))
}

/// `math`: `multiply` (counted in `calls`), `fail` (always an error), `erase` (destructive),
/// `slow` (reports progress, then answers).
fn math(calls: Arc<AtomicUsize>) -> ClosureProvider {
    let numbers = json!({
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"]
    });
    let erase = Tool::new(
        "erase",
        "Erases everything.",
        object(json!({"type": "object"})),
    )
    .annotate(ToolAnnotations::new().destructive(true));
    let erased = calls.clone();
    ClosureProvider::new("math")
        .tool(
            "multiply",
            "Multiplies two numbers.",
            numbers,
            move |arguments, _context| {
                calls.fetch_add(1, Ordering::SeqCst);
                let product = arguments["a"].as_f64().unwrap_or_default()
                    * arguments["b"].as_f64().unwrap_or_default();
                async move { Ok::<_, String>(json!(product)) }
            },
        )
        .tool(
            "fail",
            "Always fails.",
            json!({"type": "object"}),
            |_arguments, _context| async { Err::<Value, _>("the disk is full") },
        )
        .with_tool(erase, move |_arguments, _context| {
            erased.fetch_add(100, Ordering::SeqCst);
            async { Ok::<_, String>(json!("erased")) }
        })
        .tool(
            "slow",
            "Reports progress, then answers.",
            json!({"type": "object"}),
            |_arguments, context| async move {
                context.progress(1.0, Some(2.0), Some("half way".to_owned()));
                Ok::<_, String>(json!("done"))
            },
        )
}

async fn run(gateway: &Arc<Gateway>, code: &str, language: Language) -> ExecutionReport {
    gateway
        .execute(code, language, ExecuteOptions::default())
        .await
}

fn value(report: ExecutionReport) -> Value {
    match report.result {
        Ok(value) => value,
        Err(error) => panic!("the program failed: {error}"),
    }
}

#[test]
fn the_example_calls_a_closure_and_an_mcp_server_together() {
    let fixture = toolweave_testkit::fixture_binary();
    for isolation in ["in-process", "worker", "remote"] {
        let output = std::process::Command::new(example_binary())
            .arg(isolation)
            .arg(&fixture)
            .output()
            .expect("the example runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{isolation}: {}\n{stdout}{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(stdout.trim(), r#"{"product":42,"sum":"5"}"#, "{isolation}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closure_tools_are_called_with_validated_arguments() {
    for isolation in ISOLATIONS {
        let calls = Arc::new(AtomicUsize::new(0));
        let gateway = builder(isolation)
            .provider(math(calls.clone()))
            .build()
            .expect("a gateway");
        // JavaScript runs in workers with worker isolation; Python always does, with a worker
        // command.
        let pools: Vec<WorkerKind> = gateway.workers().iter().map(|count| count.kind).collect();
        let expected = match isolation {
            Isolation::InProcess => vec![WorkerKind::Python],
            Isolation::Worker => vec![WorkerKind::JavaScript, WorkerKind::Python],
        };
        assert_eq!(pools.len(), expected.len(), "{isolation:?}: {pools:?}");
        assert!(
            expected.iter().all(|kind| pools.contains(kind)),
            "{pools:?}"
        );
        let both = "await Promise.all([tools.math.multiply({ a: 6, b: 7 }), tools.math.multiply({ a: 2, b: 3 })])";
        assert_eq!(
            value(run(&gateway, both, Language::TypeScript).await),
            json!([42, 6])
        );
        let python = "await tools.math.multiply(a=2, b=5)";
        // Python keeps the function's float.
        assert_eq!(
            value(run(&gateway, python, Language::Python).await),
            json!(10.0)
        );
        assert_eq!(calls.load(Ordering::SeqCst), 3, "{isolation:?}");

        let invalid =
            "try { await tools.math.multiply({ a: 'six', b: 7 }) } catch (error) { error.message }";
        let message = value(run(&gateway, invalid, Language::JavaScript).await);
        let message = message.as_str().unwrap_or_default();
        assert!(
            message.starts_with("invalid arguments for math.multiply:\n  - /a: "),
            "{isolation:?}: {message}"
        );
        assert!(
            message.ends_with(
                "expected: tools.math.multiply(args: { a: number; b: number }): Promise<unknown>"
            ),
            "{isolation:?}: {message}"
        );
        assert_eq!(
            calls.load(Ordering::SeqCst),
            3,
            "invalid arguments reached the function"
        );

        let failing = "try { await tools.math.fail({}) } catch (error) { error.message }";
        assert_eq!(
            value(run(&gateway, failing, Language::JavaScript).await),
            json!("math.fail returned an error: the disk is full"),
            "{isolation:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_approval_and_budgets_hold_for_closure_tools() {
    for isolation in ISOLATIONS {
        let calls = Arc::new(AtomicUsize::new(0));
        let gateway = builder(isolation)
            .provider(math(calls.clone()))
            .policy(Policy::new(&[], &["math.fail".to_owned()]).expect("a policy"))
            .limits(Limits {
                max_calls_per_tool: 2,
                ..Limits::default()
            })
            .build()
            .expect("a gateway");
        let denied = "try { await tools.math.fail({}) } catch (error) { error.message }";
        let message = value(run(&gateway, denied, Language::JavaScript).await);
        assert!(
            message
                .as_str()
                .unwrap_or_default()
                .starts_with("math.fail may not be called: toolweave's policy keeps it from code"),
            "{isolation:?}: {message}"
        );

        let destructive = "try { await tools.math.erase({}) } catch (error) { error.message }";
        let message = value(run(&gateway, destructive, Language::JavaScript).await);
        assert!(
            message
                .as_str()
                .unwrap_or_default()
                .contains("--approve math.erase"),
            "{isolation:?}: {message}"
        );

        let three = "for (const a of [1, 2, 3]) await tools.math.multiply({ a, b: 1 })";
        let report = run(&gateway, three, Language::TypeScript).await;
        let error = report
            .result
            .expect_err("the third call is over the budget");
        assert_eq!(error.kind(), "ToolCallLimit", "{isolation:?}: {error}");
        assert_eq!(report.stats.calls_by_tool.get("math.multiply"), Some(&2));
        assert_eq!(
            calls.load(Ordering::SeqCst),
            2,
            "{isolation:?}: a refused call reached its function"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closure_tools_are_searched_described_typed_and_audited() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let path = directory.path().join("audit.jsonl");
    for isolation in ISOLATIONS {
        let audit = AuditLog::open(AuditOptions {
            path: path.clone(),
            max_bytes: 1 << 20,
            contents: true,
        })
        .expect("an audit log");
        let (listener, mut notices) = Listener::new();
        let gateway = builder(isolation)
            .provider(math(Arc::new(AtomicUsize::new(0))).instructions("Numbers are f64."))
            .audit(audit)
            .build()
            .expect("a gateway");
        let code = "[await tools.math.multiply({ a: 3, b: 4 }), await tools.math.slow({})]";
        let options = ExecuteOptions {
            listener: Some(listener),
            session: "test".to_owned(),
            ..ExecuteOptions::default()
        };
        let report = gateway.execute(code, Language::TypeScript, options).await;
        assert_eq!(value(report), json!([12, "done"]));
        let Ok(Notice::Progress {
            server,
            tool,
            progress,
            ..
        }) = notices.try_recv()
        else {
            panic!("{isolation:?}: no progress from math.slow");
        };
        assert_eq!(
            (server.as_str(), tool.as_str(), progress),
            ("math", "slow", 1.0)
        );

        let found = gateway
            .search("multiply two numbers".to_owned(), 3, Flavor::TypeScript)
            .await
            .expect("a search");
        assert_eq!(found.results[0].name, "math.multiply");
        assert_eq!(
            found.results[0].signature,
            "tools.math.multiply(args: { a: number; b: number }): Promise<unknown>"
        );
        let described = gateway
            .describe(vec!["math.multiply".to_owned()], Flavor::Python, false)
            .await
            .expect("a description");
        assert!(
            described.tools[0]
                .declaration
                .contains("Multiplies two numbers."),
            "{}",
            described.tools[0].declaration
        );
        let whole = gateway
            .describe(vec!["math".to_owned()], Flavor::TypeScript, false)
            .await
            .expect("a description");
        assert_eq!(whole.instructions[0].instructions, "Numbers are f64.");
        assert_eq!(whole.tools.len(), 4);
        let declarations = gateway.declarations(Flavor::TypeScript).await;
        for tool in ["multiply", "fail", "erase", "slow"] {
            assert!(
                declarations.contains(&format!("{tool}(")),
                "{tool}: {declarations}"
            );
        }
        gateway.shutdown().await;
    }
    let log = std::fs::read_to_string(&path).expect("the audit log");
    let lines: Vec<Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), 2, "{log}");
    for line in lines {
        let names: Vec<&str> = line["toolCalls"]
            .as_array()
            .expect("tool calls")
            .iter()
            .filter_map(|call| call["name"].as_str())
            .collect();
        assert_eq!(names, ["math.multiply", "math.slow"], "{line}");
        assert_eq!(line["toolCalls"][0]["result"], json!(12.0), "{line}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unusable_definitions_are_refused_naming_what_to_change() {
    let one = ClosureProvider::new("math");
    let two = ClosureProvider::new("math");
    let error = Gateway::builder()
        .provider(one)
        .provider(two)
        .build()
        .err()
        .expect("two providers named math");
    assert_eq!(
        error,
        BuildError::DuplicateNamespace {
            namespace: "math".to_owned()
        }
    );
    let error = Gateway::builder()
        .isolation(Isolation::Worker)
        .build()
        .err()
        .expect("workers without a worker program");
    assert_eq!(error, BuildError::NoWorkerCommand);

    // A schema nested more deeply than the catalog keeps (it is parsed again whenever read).
    let mut deep = json!({"type": "string"});
    for _ in 0..toolweave_core::MAX_SCHEMA_DEPTH {
        deep = json!({"type": "object", "properties": {"inner": deep}});
    }
    let broken = ClosureProvider::new("broken")
        .tool(
            "list",
            "Lists.",
            json!("object"),
            |_arguments, _context| async { Ok::<_, String>(json!([])) },
        )
        .tool(
            "find",
            "Finds.",
            json!({"type": "nonsense"}),
            |_arguments, _context| async { Ok::<_, String>(json!([])) },
        )
        .tool("nest", "Nests.", deep, |_arguments, _context| async {
            Ok::<_, String>(json!([]))
        });
    let gateway = Gateway::builder()
        .provider(broken)
        .build()
        .expect("a gateway");
    let unavailable = gateway.unavailable();
    assert_eq!(unavailable.len(), 1);
    assert_eq!(
        unavailable[0].reason,
        "the tools of \"broken\" cannot be offered: tool \"list\" has an inputSchema that is not \
         a JSON object (\"object\"); give it one such as {\"type\": \"object\", \"properties\": \
         {}}; tool \"find\" has an inputSchema that is not valid JSON Schema: \"nonsense\" is \
         not valid under any of the schemas listed in the 'anyOf' keyword; tool \"nest\" \
         cannot be kept: the schema nests more than 120 levels of objects and arrays"
    );
    let call = "try { await tools.broken.list({}) } catch (error) { error.message }";
    let message = value(run(&gateway, call, Language::JavaScript).await);
    assert_eq!(
        message,
        json!(format!(
            "cannot call broken.list: {}",
            unavailable[0].reason
        ))
    );
}

/// A provider of its own: its tools change when it says so.
struct Shelf {
    version: tokio::sync::watch::Sender<u64>,
    tools: std::sync::Mutex<Vec<ToolDefinition>>,
}

impl Shelf {
    fn add(&self, name: &'static str) {
        let tool = Tool::new(
            name,
            "A tool on the shelf.",
            object(json!({"type": "object"})),
        );
        let tool = toolweave_core::definition("shelf", tool).expect("a shallow schema");
        self.tools.lock().expect("the shelf").push(tool);
        self.version.send_modify(|version| *version += 1);
    }
}

impl ToolProvider for Shelf {
    fn namespace(&self) -> &str {
        "shelf"
    }

    fn tools(&self) -> BoxFuture<'_, Result<Vec<ToolDefinition>, ProviderError>> {
        let tools = self.tools.lock().expect("the shelf").clone();
        Box::pin(std::future::ready(Ok(tools)))
    }

    fn call(
        &self,
        tool: &str,
        _arguments: serde_json::Map<String, Value>,
        _context: CallContext,
    ) -> BoxFuture<'_, Result<CallToolResult, ProviderError>> {
        let text = rmcp::model::ContentBlock::text(format!("{tool} called"));
        Box::pin(std::future::ready(Ok(CallToolResult::success(vec![text]))))
    }

    fn changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        Some(self.version.subscribe())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_catalog_follows_a_provider_whose_tools_change() {
    let shelf = Arc::new(Shelf {
        version: tokio::sync::watch::channel(0).0,
        tools: std::sync::Mutex::new(Vec::new()),
    });
    shelf.add("first");
    let gateway = Gateway::builder()
        .shared_provider(shelf.clone())
        .build()
        .expect("a gateway");
    let first = "await tools.shelf.first({})";
    assert_eq!(
        value(run(&gateway, first, Language::JavaScript).await),
        json!("first called")
    );
    assert!(
        !gateway
            .declarations(Flavor::TypeScript)
            .await
            .contains("second(")
    );
    shelf.add("second");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !gateway
        .declarations(Flavor::TypeScript)
        .await
        .contains("second(")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the catalog did not take the new tool"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let second = "await tools.shelf.second({})";
    assert_eq!(
        value(run(&gateway, second, Language::JavaScript).await),
        json!("second called")
    );
}

/// In both isolations, a session's state carries store values between executions (and between
/// languages), a result past `max_result_bytes` becomes a handle read back in exact pieces, and
/// another session's state sees none of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_state_carries_values_and_large_results_between_executions() {
    for isolation in ISOLATIONS {
        let gateway = builder(isolation)
            .limits(Limits {
                max_result_bytes: 1000,
                ..Limits::default()
            })
            .build()
            .expect("a gateway");
        let state = gateway.session_state();
        let run_in = |state: &Arc<toolweave_core::SessionState>, code: &str, language| {
            let options = ExecuteOptions {
                state: Some(state.clone()),
                ..ExecuteOptions::default()
            };
            let gateway = gateway.clone();
            let code = code.to_owned();
            async move { gateway.execute(code, language, options).await }
        };
        let set = run_in(
            &state,
            "await store.set('k', [1, 'two']); 1",
            Language::TypeScript,
        );
        assert_eq!(value(set.await), json!(1), "{isolation:?}");
        let got = run_in(&state, "await store.get('k')", Language::Python);
        assert_eq!(value(got.await), json!([1, "two"]), "{isolation:?}");

        let large = run_in(&state, "'0123456789'.repeat(500)", Language::TypeScript).await;
        assert_eq!(
            large.warnings.len(),
            1,
            "{isolation:?}: {:?}",
            large.warnings
        );
        let described = value(large);
        assert_eq!(described["bytes"], json!(5002), "{isolation:?}");
        assert_eq!(described["shape"], json!("string(5000)"), "{isolation:?}");
        let handle = described["handle"].as_str().expect("a handle").to_owned();
        let mut joined = String::new();
        for offset in (0..5000).step_by(900) {
            let code = format!("await results.get('{handle}', {{ offset: {offset}, limit: 900 }})");
            let piece = value(run_in(&state, &code, Language::TypeScript).await);
            joined.push_str(piece.as_str().expect("a string"));
        }
        assert_eq!(joined, "0123456789".repeat(500), "{isolation:?}");

        let other = gateway.session_state();
        let code = format!(
            "[await store.get('k'), await results.get('{handle}').catch((e) => e.message)]"
        );
        let seen = value(run_in(&other, &code, Language::TypeScript).await);
        assert_eq!(seen[0], Value::Null, "{isolation:?}");
        assert!(
            seen[1]
                .as_str()
                .is_some_and(|message| message.starts_with("no result handle")),
            "{isolation:?}: {seen}"
        );
    }
}
