//! The engine on its own, with a small host of canned tools answering its messages: results,
//! concurrency, console capture, and every limit, each observed by the engine itself.

use super::common::{self, Run, limits};

use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolweave_sandbox::{
    CancelFlag, EngineError, EngineLimits, ExecuteRequest, HostRequest, Language, LogStream,
    Manifest, Namespace, Outcome, ServerAsk,
};

fn run_with(code: &str, language: Language, limits: EngineLimits, cancel: &CancelFlag) -> Run {
    common::run_code(code, language, limits, cancel)
}

fn run_js(code: &str) -> Run {
    run_with(code, Language::JavaScript, limits(), &CancelFlag::new())
}

fn run_ts(code: &str) -> Run {
    run_with(code, Language::TypeScript, limits(), &CancelFlag::new())
}

#[test]
fn values_follow_the_contract() {
    assert_eq!(run_js("return 1 + 1").value(), &json!(2));
    assert_eq!(
        run_js("const a = [1, 2];\na.map((x) => x * 2)").value(),
        &json!([2, 4])
    );
    assert_eq!(run_js("const x = 1;").value(), &Value::Null);
    assert_eq!(run_js("undefined").value(), &Value::Null);
    assert_eq!(run_js("'text'").value(), &json!("text"));
    assert_eq!(
        run_js("({ a: undefined, b: new Date(0), c: [undefined] })").value(),
        &json!({ "b": "1970-01-01T00:00:00.000Z", "c": [null] })
    );
    assert_eq!(
        run_ts("const n: number = await Promise.resolve(41);\nn + 1").value(),
        &json!(42)
    );
}

#[test]
fn tool_calls_run_concurrently_and_settle_in_order() {
    let run = run_js(
        "const [a, b, c] = await Promise.all([t_slow(60), t_slow(30), tools.t.add({ a: 1, b: 2 })]);
         function t_slow(ms) { return tools.t.slow({ ms }); }
         return [a, b, c];",
    );
    assert_eq!(run.value(), &json!([60, 30, 3]));
    assert_eq!(run.most_outstanding, 3);
    assert_eq!(run.calls.len(), 3);
}

#[test]
fn tool_errors_reject_and_can_be_caught() {
    let run = run_js(
        "try { await tools.t.fail({}); return 'no' } catch (e) { return [e instanceof Error, e.message] }",
    );
    assert_eq!(
        run.value(),
        &json!([true, "t.fail returned an error: broken"])
    );
}

#[test]
fn namespaces_of_servers_not_ready_ask_the_host() {
    let run = run_js("await tools.later.anything({ x: 1 })");
    assert_eq!(run.value(), &json!({ "x": 1 }));
    assert_eq!(
        run.calls,
        [HostRequest::Tool {
            name: "later.anything".into(),
            args: json!({ "x": 1 }),
            raw: false
        }]
    );
}

#[test]
fn every_name_code_writes_reaches_the_host_and_listing_names_only_known_tools() {
    // Unknown tools, unknown servers, a server left out, original spellings: each is a call the
    // host answers (here: "unknown tool").
    let run = run_js(
        "const outcomes = [];
         for (const call of [
           () => tools.t.ad({ a: 1 }),
           () => tools.fs.add({ a: 1 }),
           () => tools.add({ a: 1 }),
           () => tools.t['get-sum']({ a: 1 }),
         ]) {
           try { outcomes.push(await call()); } catch (error) { outcomes.push(error.message); }
         }
         return outcomes;",
    );
    assert_eq!(
        run.value(),
        &json!([
            "unknown tool \"t.ad\"",
            "unknown tool \"fs.add\"",
            "unknown tool \"add\"",
            "unknown tool \"t.get-sum\"",
        ])
    );
    // Listing is truthful: the servers, a ready server's tools, nothing for one starting or
    // unknown; `in` agrees; everything reads as frozen.
    let run = run_js(
        "[Object.keys(tools), Object.keys(tools.t), Object.keys(tools.later), Object.keys(tools.fs),
          'add' in tools.t, 'ad' in tools.t, 'fs' in tools, 't' in tools, 'anything' in tools.later,
          Object.isFrozen(tools), Object.isFrozen(tools.t), Object.isFrozen(tools.fs),
          tools.t.add === tools.t.add, typeof tools.t.ad, tools.t.add.name]",
    );
    assert_eq!(
        run.value(),
        &json!([
            ["t", "later"],
            ["add", "slow", "fail", "echo"],
            [],
            [],
            true,
            false,
            false,
            true,
            false,
            true,
            true,
            true,
            true,
            "function",
            "t.add"
        ])
    );
    // What the language reads on any object is no tool: `await` on a namespace gives it back, and
    // JSON leaves `tools` out as the function it also is (callable, so that a call that leaves
    // the server out reaches the host).
    let run = run_js(
        "const t = await tools.t;
         [t === tools.t, tools.t.then, tools.toJSON, JSON.stringify(tools), Object.getPrototypeOf(tools.t)]",
    );
    assert_eq!(run.value(), &json!([true, null, null, null, null]));
    assert!(run.calls.is_empty(), "{:?}", run.calls);
    // Nothing can be added, replaced or deleted, listed or not.
    let run = run_js(
        "const refused = [];
         for (const attempt of [
           () => { tools.t.add = 1; }, () => { tools.t.extra = 1; }, () => { tools.fresh = 1; },
           () => { delete tools.t.add; }, () => { Object.defineProperty(tools.t, 'x', { value: 1 }); },
           () => { Object.setPrototypeOf(tools.t, {}); },
         ]) {
           try { attempt(); refused.push(false); } catch (error) { refused.push(error instanceof TypeError); }
         }
         return [refused, Object.keys(tools.t).length, typeof Object.freeze(tools.t)];",
    );
    assert_eq!(
        run.value(),
        &json!([[true, true, true, true, true, true], 4, "function"])
    );
}

#[test]
fn raw_calls_and_call_mcp_tool_send_the_names_given() {
    let run = run_js(
        "await tools.t.echo.raw({ a: 1 });
         await callMCPTool('mcp__t__echo', { b: 2 });
         await searchTools('add', 3);
         await describeTools(['t.add']);",
    );
    assert_eq!(
        run.calls,
        [
            HostRequest::Tool {
                name: "t.echo".into(),
                args: json!({ "a": 1 }),
                raw: true
            },
            HostRequest::Tool {
                name: "mcp__t__echo".into(),
                args: json!({ "b": 2 }),
                raw: false
            },
            HostRequest::Search {
                query: "add".into(),
                limit: Some(3)
            },
            HostRequest::Describe {
                names: vec!["t.add".into()]
            },
        ]
    );
}

#[test]
fn resources_and_prompts_send_the_server_and_method_given() {
    let run = run_js(
        "const read = resources['my-server'].read;
         const answers = [
           await resources.docs.list(),
           await read('file:///a.md'),
           await resources.docs.templates(),
           await prompts.docs.list(),
           await prompts.docs.get('review', { code: 'x' }),
           await resources.docs.read(1).catch((error) => error.message),
           await prompts.docs.get('review', 'not an object').catch((error) => error.message),
         ];
         return [answers, resources.docs === resources.docs, typeof resources.then, Object.isFrozen(resources.docs)];",
    );
    assert_eq!(
        run.calls,
        [
            HostRequest::Server {
                server: "docs".into(),
                ask: ServerAsk::ListResources
            },
            HostRequest::Server {
                server: "my-server".into(),
                ask: ServerAsk::ReadResource {
                    uri: "file:///a.md".into()
                }
            },
            HostRequest::Server {
                server: "docs".into(),
                ask: ServerAsk::ListResourceTemplates
            },
            HostRequest::Server {
                server: "docs".into(),
                ask: ServerAsk::ListPrompts
            },
            HostRequest::Server {
                server: "docs".into(),
                ask: ServerAsk::GetPrompt {
                    name: "review".into(),
                    arguments: json!({ "code": "x" }).as_object().unwrap().clone()
                }
            },
        ]
    );
    let value = run.value();
    assert_eq!(
        value[0][1],
        json!({ "server": "my-server", "method": "resources/read" })
    );
    assert_eq!(
        value[0][5],
        json!("resources.docs.read(uri): uri must be a string, got 1")
    );
    assert_eq!(
        value[0][6],
        json!("a prompt's arguments are an object like { name: \"value\" }")
    );
    assert_eq!(value[1], json!(true));
    assert_eq!(value[2], json!("undefined"));
    assert_eq!(value[3], json!(true));
}

#[test]
fn arguments_that_are_not_json_reject_in_the_guest() {
    let run = run_js(
        "try { await tools.t.echo({ n: 1n }); return 'sent' } catch (e) { return e.message }",
    );
    let message = run.value().as_str().unwrap_or_default().to_owned();
    assert!(message.contains("cannot be sent as JSON"), "{message}");
    assert!(run.calls.is_empty());
    let run = run_js("try { await searchTools('x', 'many') } catch (e) { return e.message }");
    assert!(
        run.value()
            .as_str()
            .unwrap_or_default()
            .contains("searchTools"),
        "{}",
        run.value()
    );
}

#[test]
fn console_is_captured_in_order_and_bounded() {
    let run = run_js(
        "console.log('a', 1, { b: [2] }); console.warn('w'); console.error(new Error('e')); 'done'",
    );
    assert_eq!(run.value(), &json!("done"));
    assert_eq!(run.logs[0], (LogStream::Log, "a 1 {\"b\":[2]}".to_owned()));
    assert_eq!(run.logs[1], (LogStream::Warn, "w".to_owned()));
    assert!(run.logs[2].1.starts_with("Error: e"), "{:?}", run.logs[2]);

    let run = run_js("for (let i = 0; i < 100000; i++) console.log('x'.repeat(100));");
    assert_eq!(run.error(), &EngineError::LogLimit { limit: 4096 });
    let kept: usize = run.logs.iter().map(|(_, text)| text.len() + 1).sum();
    assert!(kept <= 4096, "{kept}");
}

#[test]
fn busy_loops_stop_at_the_deadline() {
    for code in [
        "while (true) {}",
        "for (;;) { try { while (true) {} } catch (e) {} }",
        "async function spin() { while (true) await null; } await spin();",
        "function spin() { Promise.resolve().then(spin); } spin(); await new Promise(() => {});",
        // Each iteration is one long built-in call: the stop must not wait for 10,000 of them.
        "for (;;) new Array(2e5).fill(1).map((x) => x + 1);",
        "const big = new Array(1e5).fill({ a: 1 }); for (;;) { try { JSON.stringify(big); } catch (e) {} }",
        // Once halted, nothing can be allocated; the stop must still be an error no catch takes.
        "for (;;) { try { 'ab'.repeat(5e4).split('').join(','); } catch (e) { if (e === null) continue; } }",
    ] {
        let started = Instant::now();
        let run = run_js(code);
        assert_eq!(
            run.error(),
            &EngineError::Timeout {
                limit: Duration::from_millis(1000)
            },
            "{code}"
        );
        // Behaviour, not speed: the stop comes at the deadline, not at some later backstop.
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{code}: {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn memory_is_bounded_and_terminal() {
    for code in [
        "const hoard = []; while (true) hoard.push(new Array(100000).fill('x'));",
        "const parts = []; while (true) parts.push('x'.repeat(1 << 20) + parts.length);",
        "const a = []; while (true) a.push(new Uint8Array(1 << 20));",
        "const o = {}; for (let i = 0; ; i++) o['k' + i] = i;",
        // Catching the out-of-memory error does not buy more room.
        "const keep = []; for (;;) { try { keep.push(new Array(1e6).fill(1)); } catch (e) {} }",
    ] {
        let run = run_js(code);
        assert_eq!(
            run.error(),
            &EngineError::MemoryLimit {
                limit: 16 * 1024 * 1024
            },
            "{code}"
        );
    }
}

#[test]
fn stack_overflow_is_the_engines_finding_not_the_guests_claim() {
    let run = run_js("function down(n) { return down(n + 1) + 1; }\ndown(0);");
    assert_eq!(run.error(), &EngineError::StackOverflow);
    let run = run_js("throw new RangeError('Maximum call stack size exceeded');");
    assert!(matches!(run.error(), EngineError::Guest { name, .. } if name == "RangeError"));
    // The guest cannot switch the detection off.
    let run = run_js(
        "Error.stackTraceLimit = 0; Error.prepareStackTrace = () => 'x';
         function down(n) { return down(n + 1) + 1; }
         down(0);",
    );
    assert_eq!(run.error(), &EngineError::StackOverflow);
    // A caught overflow is the program's business.
    let run =
        run_js("function down() { down(); }\ntry { down() } catch (e) { return 'recovered' }");
    assert_eq!(run.value(), &json!("recovered"));
    // After one, a RangeError of the guest's own is still the guest's: made later, made before,
    // or carrying the real error's stack.
    let probe = "let real; function probe() { try { return probe(); } catch (e) { real = e; return 0; } }\n";
    for forged in [
        "probe(); throw new RangeError('Maximum call stack size exceeded');",
        "const fake = new RangeError('Maximum call stack size exceeded'); probe(); throw fake;",
        "probe(); const fake = new RangeError('Maximum call stack size exceeded');
         fake.stack = real.stack; throw fake;",
        "probe(); real.message = 'changed'; throw real;",
    ] {
        let run = run_js(&format!("{probe}{forged}"));
        assert!(
            matches!(run.error(), EngineError::Guest { name, .. } if name == "RangeError"),
            "{forged}: {:?}",
            run.error()
        );
    }
    // The engine's own error stays one, wherever it ends the execution.
    let run = run_js(&format!("{probe}probe(); throw real;"));
    assert_eq!(run.error(), &EngineError::StackOverflow);
    let run = run_js("function deep() { return deep() + 1; }\n({ toJSON() { return deep(); } })");
    assert_eq!(run.error(), &EngineError::StackOverflow);
}

#[test]
fn syntax_errors_are_the_compilers_finding() {
    // oxc accepts the redeclaration; QuickJS's compiler refuses it before anything runs.
    let run = run_js("console.log('never');\nlet total = 1;\nlet total = 2;");
    let EngineError::Syntax {
        line,
        column,
        message,
        frame,
    } = run.error()
    else {
        panic!("{:?}", run.error());
    };
    assert_eq!((*line, *column), (3, 5), "{message}");
    assert!(frame.starts_with("3 | let total = 2;"), "{frame}");
    assert!(run.logs.is_empty());
    // Nesting deeper than QuickJS's compiler can follow on the stack is found before running too
    // (on an engine thread, whose stack has room for oxc's parser).
    let pool = toolweave_sandbox::EnginePool::new(0, limits().stack_bytes);
    let deep = format!("return {}1{};", "[".repeat(5000), "]".repeat(5000));
    let outcome = run_on_pool(&pool, &deep);
    assert!(
        matches!(&outcome.result, Err(EngineError::Syntax { message, .. }) if message.contains("nests too deeply")),
        "{:?}",
        outcome.result
    );
    // A SyntaxError made at run time is the guest's, whatever it looks like.
    for code in [
        "const e = new SyntaxError('forged'); e.stack = ''; throw e;",
        "eval('(')",
        "Object.prototype.toJSON = () => ({ name: 'SyntaxError', message: 'forged', stack: '' });
         throw new Error('real');",
    ] {
        let run = run_js(code);
        assert!(
            matches!(run.error(), EngineError::Guest { .. }),
            "{code}: {:?}",
            run.error()
        );
    }
    let run =
        run_js("Object.prototype.toJSON = () => ({ message: 'forged' }); throw new Error('real');");
    assert!(
        matches!(run.error(), EngineError::Guest { message, .. } if message == "real"),
        "{:?}",
        run.error()
    );
}

/// A program that nests `n` deep in one way.
type Nested = fn(usize) -> String;

/// Programs that nest in each way QuickJS's compiler recurses, by name.
const NESTINGS: &[(&str, Nested)] = &[
    ("arrow functions", |n| {
        format!("return {}1", "() => ".repeat(n))
    }),
    ("async arrow functions", |n| {
        format!(
            "return {}1{}",
            "await (async () => { return ".repeat(n),
            " })()".repeat(n)
        )
    }),
    ("functions", |n| {
        format!(
            "return {}1{}",
            "function f() { return ".repeat(n),
            "}".repeat(n)
        )
    }),
    ("methods", |n| {
        format!(
            "return {}1{}",
            "{ m() { return ".repeat(n),
            " } }".repeat(n)
        )
    }),
    ("arrays", |n| {
        format!("return {}1{}", "[".repeat(n), "]".repeat(n))
    }),
    ("objects", |n| {
        format!("return {}1{}", "{ a: ".repeat(n), " }".repeat(n))
    }),
    ("calls", |n| {
        format!(
            "const f = (...a) => a.length;\nreturn {}{}",
            "f(".repeat(n),
            ")".repeat(n)
        )
    }),
    ("templates", |n| {
        format!("return {}1{}", "`${".repeat(n), "}`".repeat(n))
    }),
    ("right-hand parentheses", |n| {
        format!("return {}1{}", "1 + (".repeat(n), ")".repeat(n))
    }),
    ("conditionals", |n| {
        format!("return {}1", "1 ? 1 : ".repeat(n))
    }),
    ("if statements", |n| {
        format!("let x = 0;\n{}x = 1;\nreturn x", "if (1) ".repeat(n))
    }),
    ("blocks", |n| {
        format!("{}{}return 1", "{".repeat(n), "}".repeat(n))
    }),
    ("try statements", |n| {
        format!("{}{}return 1", "try { ".repeat(n), "} finally {}".repeat(n))
    }),
    ("destructuring", |n| {
        format!(
            "const {}b{} = {}1{};\nreturn b",
            "{ a: ".repeat(n),
            " }".repeat(n),
            "{ a: ".repeat(n),
            " }".repeat(n)
        )
    }),
    ("assignment patterns", |n| {
        format!(
            "let b;\n{}b{} = {}1{};\nreturn b",
            "[".repeat(n),
            "]".repeat(n),
            "[".repeat(n),
            "]".repeat(n)
        )
    }),
];

#[test]
fn code_nested_past_the_cap_is_refused_where_it_goes_too_deep() {
    // One level per 2 KiB of the guest's stack past the compiler's first 8 KiB: 124 levels with
    // the 256 KiB these tests give.
    let blocks = |n: usize| format!("{}{}\nreturn 1", "{".repeat(n), "}".repeat(n));
    assert_eq!(run_js(&blocks(124)).value(), &json!(1));
    let EngineError::Syntax {
        message,
        line,
        column,
        ..
    } = run_js(&blocks(125)).error().clone()
    else {
        panic!("{:?}", run_js(&blocks(125)).error());
    };
    assert_eq!((line, column), (1, 125), "the brace that goes too deep");
    assert_eq!(
        message,
        "the program nests too deeply here: more than 124 levels of expressions and statements \
         inside one another (the limit for the 256 KiB stack, --stack-kb). Split it up: give \
         inner parts names, or build deeply nested data in a loop"
    );
    // The program QuickJS reported as "missing formal parameter".
    let mut arrows = "x".to_owned();
    for _ in 0..2000 {
        arrows = format!("() => {arrows}");
    }
    let EngineError::Syntax {
        message, column, ..
    } = run_js(&arrows).error().clone()
    else {
        panic!();
    };
    assert!(message.starts_with("the program nests too deeply here: more than 124 levels"));
    // A program that is one function is called: the `return await` it becomes is levels 1 and
    // 2, each arrow function one more: level 125 is the 123rd.
    assert_eq!(column, 1 + 6 * 122);
    // From 508 KiB of stack up, the cap is 250 whatever the stack.
    for stack_kb in [512, 4096] {
        let limits = EngineLimits {
            stack_bytes: stack_kb * 1024,
            ..limits()
        };
        let run = run_with(
            &blocks(251),
            Language::JavaScript,
            limits,
            &CancelFlag::new(),
        );
        assert!(
            matches!(run.error(), EngineError::Syntax { message, column: 251, .. }
                if message.contains("more than 250 levels of expressions and statements inside one another. Split")),
            "{:?}",
            run.error()
        );
    }
    // Chains QuickJS reads in a loop are one level however long; parentheses it never sees and
    // TypeScript types, which are stripped, are none.
    let long = 5000;
    let run = run_js(&format!("let x = 1;\nreturn {}x", "x + ".repeat(long)));
    assert_eq!(run.value(), &json!(long + 1));
    let run = run_js(&format!(
        "const o = {{ f() {{ return o }}, n: 1 }};\nreturn o{}.n",
        ".f()".repeat(long)
    ));
    assert_eq!(run.value(), &json!(1));
    let run = run_js(&format!("return {}1{}", "(".repeat(long), ")".repeat(long)));
    assert_eq!(run.value(), &json!(1));
    let run = run_ts(&format!(
        "const x: {}number{} = [];\nx.length",
        "Array<".repeat(1000),
        ">".repeat(1000)
    ));
    assert_eq!(run.value(), &json!(0));
}

#[test]
fn every_kind_of_nesting_within_the_cap_compiles() {
    // The cap is the engine's promise that QuickJS's compiler never runs out of stack (where it
    // reported arrow functions as "missing formal parameter"): the deepest program of each kind
    // that the cap lets through compiles, on the smallest stack and on the default one.
    for stack_kb in [64, 512] {
        let limits = EngineLimits {
            stack_bytes: stack_kb * 1024,
            memory_bytes: 64 * 1024 * 1024,
            ..limits()
        };
        let run = |code: &str| {
            run_with(code, Language::JavaScript, limits, &CancelFlag::new())
                .outcome
                .result
        };
        let refused = |result: &Result<Value, EngineError>| matches!(result, Err(EngineError::Syntax { message, .. }) if message.contains("nests too deeply here"));
        for (kind, program) in NESTINGS {
            // The deepest `n` the cap lets through, by bisection: 1 passes, 600 does not.
            let (mut passes, mut refused_at) = (1, 600);
            let deepest = run(&program(refused_at));
            assert!(refused(&deepest), "{kind}: {deepest:?}");
            while refused_at - passes > 1 {
                let middle = usize::midpoint(passes, refused_at);
                if refused(&run(&program(middle))) {
                    refused_at = middle;
                } else {
                    passes = middle;
                }
            }
            let result = run(&program(passes));
            assert!(
                !matches!(
                    result,
                    Err(EngineError::Syntax { .. } | EngineError::Internal { .. })
                ),
                "{kind} nested {passes} deep, on a {stack_kb} KiB stack: {result:?}"
            );
        }
    }
}

#[test]
fn typescript_enums_and_namespaces_run_and_decorators_are_refused() {
    // Any enum used to panic oxc's transformer and abort the process.
    let run = run_ts(
        "enum Phase { Start, Middle, End }\nconst enum Flag { On = 2 }\n\
         namespace Phase { export const count = 3; }\n\
         ({ name: Phase[Phase.Middle], flag: Flag.On, count: Phase.count })",
    );
    assert_eq!(
        run.value(),
        &json!({ "name": "Middle", "flag": 2, "count": 3 })
    );
    for (language, code) in [
        (Language::TypeScript, "const a = 1;\n@sealed class A {}"),
        (
            Language::JavaScript,
            "const a = 1;\nclass A { @log m() {} }",
        ),
    ] {
        let run = run_with(code, language, limits(), &CancelFlag::new());
        let EngineError::Syntax { line, message, .. } = run.error() else {
            panic!("{code}: {:?}", run.error());
        };
        assert_eq!(*line, 2, "{message}");
        assert!(message.contains("decorators ('@')"), "{message}");
    }
}

#[test]
fn a_limit_met_while_the_thrown_error_is_read_is_that_limit() {
    let started = Instant::now();
    let run = run_js(
        "const e = new Error('bait');
         Object.defineProperty(e, 'message', { get() { for (;;) {} } });
         throw e;",
    );
    assert_eq!(
        run.error(),
        &EngineError::Timeout {
            limit: Duration::from_millis(1000)
        }
    );
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[test]
fn faked_limits_stay_guest_errors() {
    for code in [
        "throw new Error('Timeout: the execution ran longer than 1 s')",
        "const e = new Error('out of memory'); e.name = 'InternalError'; throw e;",
        "throw { name: 'MemoryLimit', message: 'MemoryLimit' }",
        "throw new Error('interrupted')",
    ] {
        let run = run_js(code);
        assert!(
            matches!(run.error(), EngineError::Guest { .. }),
            "{code}: {:?}",
            run.error()
        );
    }
}

#[test]
fn never_settling_programs_end_at_once() {
    let started = Instant::now();
    let run = run_js("await new Promise(() => {});");
    assert_eq!(run.error(), &EngineError::NeverSettles);
    assert!(started.elapsed() < Duration::from_millis(900));
}

#[test]
fn timers_fire_in_order() {
    let run = run_js(
        "const order = [];
         await new Promise((done) => {
           setTimeout(() => order.push(30), 30);
           setTimeout(() => order.push(10), 10);
           const cancelled = setTimeout(() => order.push('never'), 20);
           clearTimeout(cancelled);
           setTimeout(done, 40);
         });
         order",
    );
    assert_eq!(run.value(), &json!([10, 30]));
}

#[test]
fn timers_past_the_cap_end_the_execution_naming_it() {
    // `count` timers pending at once, then one that the program awaits.
    let pending = |count: usize| {
        format!(
            "let fired = 0;
             for (let i = 0; i < {count}; i++) setTimeout(() => fired++, 1);
             await new Promise((done) => setTimeout(done, 5));
             fired"
        )
    };
    assert_eq!(run_js(&pending(9_999)).value(), &json!(9_999));
    // The one past the cap is not dropped (the program used to end as NeverSettles): it ends
    // the execution with the cap's name.
    assert_eq!(
        run_js(&pending(10_000)).error(),
        &EngineError::TimerLimit { limit: 10_000 }
    );
    // The cap counts timers pending at once: cleared and fired ones make room.
    let run = run_js(
        "const ids = [];
         for (let i = 0; i < 10000; i++) ids.push(setTimeout(() => {}, 1000));
         for (const id of ids) clearTimeout(id);
         for (let round = 0; round < 2; round++) {
           let left = 10000;
           await new Promise((done) => {
             for (let i = 0; i < 10000; i++) setTimeout(() => { if (--left === 0) done(); }, 0);
           });
         }
         'room'",
    );
    assert_eq!(run.value(), &json!("room"));
    // Caught or not, the guest cannot go on past it.
    let run = run_js(
        "try { for (let i = 0; i < 20000; i++) setTimeout(() => {}, 1) } catch (e) {}
         return 'went on'",
    );
    assert_eq!(run.error(), &EngineError::TimerLimit { limit: 10_000 });
}

#[test]
fn lone_surrogates_reach_the_host_as_the_replacement_character() {
    // What `.slice()` leaves of an emoji: its high half and its low half.
    let halves = "const high = '😀'.slice(0, 1), low = '😀'.slice(1);\n";
    let run = run_js(&format!(
        "{halves}
         console.log(high, 'x' + low, [high], {{ [low]: 1 }});
         const echoed = await tools.t.echo({{ text: 'a' + high, [high]: low }});
         const unknown = await callMCPTool('t.ec' + high, {{}}).catch((e) => e.message);
         await searchTools('find ' + low);
         await describeTools(['t.' + high]);
         return {{ high, whole: high + low, echoed, unknown, [low]: 'key' }};"
    ));
    assert_eq!(
        run.value(),
        &json!({
            "high": "\u{fffd}",
            "whole": "😀",
            "echoed": { "text": "a\u{fffd}", "\u{fffd}": "\u{fffd}" },
            "unknown": "unknown tool \"t.ec\u{fffd}\"",
            "\u{fffd}": "key",
        })
    );
    // A string argument is text; an object is shown as JSON, where a lone surrogate is its
    // escape.
    assert_eq!(
        run.lines(),
        ["\u{fffd} x\u{fffd} [\"\\ud83d\"] {\"\\ude00\":1}"]
    );
    assert_eq!(
        run.calls,
        [
            HostRequest::Tool {
                name: "t.echo".into(),
                args: json!({ "text": "a\u{fffd}", "\u{fffd}": "\u{fffd}" }),
                raw: false,
            },
            HostRequest::Tool {
                name: "t.ec\u{fffd}".into(),
                args: json!({}),
                raw: false,
            },
            HostRequest::Search {
                query: "find \u{fffd}".into(),
                limit: None,
            },
            HostRequest::Describe {
                names: vec!["t.\u{fffd}".into()],
            },
        ]
    );
    // Thrown: an error's name and message, and a thrown string, keep every other character.
    for (thrown, name, message) in [
        ("new Error('cut ' + high)", "Error", "cut \u{fffd}"),
        (
            "Object.assign(new TypeError('m'), { name: 'Bad' + low })",
            "Bad\u{fffd}",
            "m",
        ),
        ("high + low + high", "", "Uncaught 😀\u{fffd}"),
    ] {
        let run = run_js(&format!("{halves}throw {thrown};"));
        assert!(
            matches!(run.error(), EngineError::Guest { name: n, message: m, .. } if n == name && m == message),
            "{thrown}: {:?}",
            run.error()
        );
    }
    // Escapes in JSON text the guest built itself are its own: only the crossing replaces.
    let run = run_js("JSON.parse('\"\\\\ud83d\"').length");
    assert_eq!(run.value(), &json!(1));
}

#[test]
fn values_nested_past_the_bound_are_refused_naming_it() {
    let nested =
        |levels: usize| format!("let v = 1; for (let i = 0; i < {levels}; i++) v = [v];\n");
    let run = run_js(&format!("{}v", nested(100)));
    assert_eq!(
        serde_json::to_string(run.value()).unwrap(),
        format!("{}1{}", "[".repeat(100), "]".repeat(100))
    );
    let run = run_js(&format!("{}v", nested(101)));
    let EngineError::Unserializable { message } = run.error() else {
        panic!("{:?}", run.error());
    };
    assert_eq!(
        message,
        "arrays and objects nest more than 100 levels deep in the result, which cannot be sent \
         as JSON; flatten the data"
    );
    // Brackets inside strings are text.
    let run = run_js(&format!("'{}'", "[".repeat(500)));
    assert_eq!(run.value(), &json!("[".repeat(500)));
    // Tool arguments: the call is refused in the guest, which can catch it.
    let run = run_js(&format!(
        "{}try {{ await tools.t.echo({{ v }}); return 'sent' }} catch (e) {{ return e.message }}",
        nested(100)
    ));
    assert_eq!(
        run.value(),
        &json!(
            "invalid arguments to a tool call: arrays and objects nest more than 100 levels deep \
             in the arguments, which cannot be sent as JSON; flatten the data"
        )
    );
    assert!(run.calls.is_empty());
}

#[test]
fn results_are_bounded_and_must_be_json() {
    let run = run_js("'y'.repeat(100 * 1024)");
    assert!(matches!(
        run.error(),
        EngineError::ResultTooLarge { limit: 65536, .. }
    ));
    let run = run_js("const a = {}; a.self = a; a");
    assert!(
        matches!(run.error(), EngineError::Unserializable { .. }),
        "{:?}",
        run.error()
    );
    let run = run_js("({ n: 10n })");
    assert!(
        matches!(run.error(), EngineError::Unserializable { .. }),
        "{:?}",
        run.error()
    );
    let run = run_js("({ get boom() { throw new Error('getter') } })");
    let EngineError::Unserializable { message } = run.error() else {
        panic!("{:?}", run.error());
    };
    assert!(message.contains("getter"), "{message}");
}

#[test]
fn errors_point_at_the_code_as_written() {
    let run = run_ts(
        "interface A {\n  x: number;\n}\nconst a: A = { x: 1 };\nif (a.x) throw new Error('boom');",
    );
    let EngineError::Guest {
        name,
        message,
        line,
        ..
    } = run.error()
    else {
        panic!("{:?}", run.error());
    };
    assert_eq!(
        (name.as_str(), message.as_str(), *line),
        ("Error", "boom", Some(5))
    );

    let run = run_js("const data = {};\nconst count = data.items.length;\ncount");
    let EngineError::Guest { name, line, .. } = run.error() else {
        panic!("{:?}", run.error());
    };
    assert_eq!((name.as_str(), *line), ("TypeError", Some(2)));

    let run = run_js("throw 42");
    let EngineError::Guest { message, .. } = run.error() else {
        panic!("{:?}", run.error());
    };
    assert!(message.contains("42"), "{message}");
}

#[test]
fn the_tool_call_budget_is_enforced() {
    let run = run_js("for (let i = 0; i < 100; i++) tools.t.add({ a: i, b: 1 });");
    assert_eq!(run.error(), &EngineError::ToolCallLimit { limit: 20 });
    assert_eq!(run.calls.len(), 20);
}

#[test]
fn cancel_stops_a_waiting_guest() {
    let cancel = CancelFlag::new();
    let flag = cancel.clone();
    let stopper = thread::spawn(move || {
        thread::sleep(Duration::from_millis(50));
        flag.cancel();
    });
    let started = Instant::now();
    let run = run_with(
        "while (true) {}",
        Language::JavaScript,
        EngineLimits {
            timeout: Duration::from_secs(10),
            ..limits()
        },
        &cancel,
    );
    stopper.join().unwrap_or_default();
    assert_eq!(run.error(), &EngineError::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn tampering_with_builtins_does_not_reach_the_bridge() {
    let run = run_js(
        "JSON.parse = () => 'forged'; JSON.stringify = () => '{}';
         Promise.prototype.then = function () { throw new Error('hijacked') };
         Object.defineProperty(Object.prototype, 'resolve', { set() { throw new Error('trap') } });
         try { globalThis.tools = null; } catch (e) {}
         try { tools.t = null; } catch (e) {}
         return typeof tools.t.add;",
    );
    assert_eq!(run.value(), &json!("function"));
    let run = run_js(
        "JSON.parse = () => 'forged';
         Array.prototype.push = () => { throw new Error('no push') };
         const sum = await tools.t.add({ a: 1, b: 2 });
         sum",
    );
    assert_eq!(run.value(), &json!(3));
    let run = run_js(
        "try { tools.t.add = () => 'fake'; } catch (e) {}
         try { tools.t.extra = 1; } catch (e) {}
         Object.keys(tools.t)",
    );
    assert_eq!(run.value(), &json!(["add", "slow", "fail", "echo"]));
    // A toJSON on every object sees the arguments only: the call keeps its name and kind.
    let run = run_js(
        "Object.prototype.toJSON = function () { return { name: 't.fail', raw: true }; };
         await tools.t.echo({ a: 1 });
         await searchTools('q', 2);
         await describeTools(['t.add']);",
    );
    assert_eq!(
        run.calls,
        [
            HostRequest::Tool {
                name: "t.echo".into(),
                args: json!({ "name": "t.fail", "raw": true }),
                raw: false
            },
            HostRequest::Search {
                query: "q".into(),
                limit: Some(2)
            },
            HostRequest::Describe {
                names: vec!["t.add".into()]
            },
        ]
    );
    // The prelude's helpers use no method of the guest's Array.prototype.
    let run = run_js(
        "const trap = () => { throw new Error('trapped'); };
         Array.prototype.push = trap; Array.prototype.indexOf = trap;
         console.log({ a: [1, { b: 2 }] });
         await describeTools(['t.add', 't.echo']);
         await new Promise((resolve) => setTimeout((a, b) => resolve(a + b), 1, 'x', 'y'));",
    );
    assert_eq!(run.value(), &json!("xy"));
    assert_eq!(
        run.logs,
        [(LogStream::Log, "{\"a\":[1,{\"b\":2}]}".to_owned())]
    );
    assert_eq!(
        run.calls,
        [HostRequest::Describe {
            names: vec!["t.add".into(), "t.echo".into()]
        }]
    );
    // Nor does an accessor key every object inherits spoil the prelude's property descriptors.
    let run = run_js(
        "Object.prototype.get = function () { return 'trap'; };
         const echoed = await tools.later.anything({ x: 1 });
         const timer = await new Promise((resolve) => setTimeout((a) => resolve(a), 1, 'fired'));
         return [echoed.x, timer];",
    );
    assert_eq!(run.value(), &json!([1, "fired"]));
}

#[test]
fn nothing_outside_is_reachable() {
    let run = run_js(
        "[typeof require, typeof process, typeof fetch, typeof Deno, typeof std, typeof os,
          typeof globalThis.send, typeof globalThis.settle]",
    );
    assert_eq!(run.value(), &json!(vec!["undefined"; 8]));
    let run = run_js("await import('os')");
    assert!(
        matches!(run.error(), EngineError::Guest { .. }),
        "{:?}",
        run.error()
    );
    // eval-constructed code sees the same globals and nothing more.
    let run = run_js("(0, eval)('typeof tools.t.add + typeof process')");
    assert_eq!(run.value(), &json!("functionundefined"));
}

/// Runs `code` on `pool` and waits for the outcome (tool calls are answered with their args).
fn run_on_pool(pool: &toolweave_sandbox::EnginePool, code: &str) -> Outcome {
    run_on_pool_with(pool, code, one_tool("t", "echo"))
}

/// A manifest of one namespace with one tool.
fn one_tool(namespace: &str, tool: &str) -> std::sync::Arc<Manifest> {
    Manifest {
        namespaces: vec![Namespace {
            name: namespace.to_owned(),
            tools: Some(vec![tool.to_owned()]),
        }],
    }
    .into()
}

/// [`run_on_pool`] with `manifest`; a tool call is answered with its name and arguments.
fn run_on_pool_with(
    pool: &toolweave_sandbox::EnginePool,
    code: &str,
    manifest: std::sync::Arc<Manifest>,
) -> Outcome {
    let request = ExecuteRequest {
        code: code.to_owned(),
        language: Language::JavaScript,
        limits: limits(),
        manifest,
    };
    common::run_on_pool(pool, request, |request| match request {
        HostRequest::Tool { name, args, .. } if name == "t.echo" => Ok(args.clone()),
        HostRequest::Tool { name, args, .. } => Ok(json!({ "name": name, "args": args })),
        _ => Err("only tool calls here".to_owned()),
    })
}

#[test]
fn a_program_gets_the_tools_of_its_own_manifest_whatever_the_last_program_had() {
    let pool = toolweave_sandbox::EnginePool::new(1, limits().stack_bytes);
    let a = one_tool("a", "one");
    let b = one_tool("b", "two");
    let names = "const space = Object.keys(tools)[0]; [space, Object.keys(tools[space])]";
    // After each program the thread prepares its next runtime (at once: it is the only thread);
    // the pauses let it finish.
    assert_eq!(
        run_on_pool_with(&pool, names, a.clone()).result,
        Ok(json!(["a", ["one"]]))
    );
    thread::sleep(Duration::from_millis(50));
    // After `a`, given `b`.
    assert_eq!(
        run_on_pool_with(&pool, names, b.clone()).result,
        Ok(json!(["b", ["two"]]))
    );
    thread::sleep(Duration::from_millis(50));
    // A tool of `b` calls the host like any other.
    assert_eq!(
        run_on_pool_with(&pool, "await tools.b.two({ x: 1 })", b.clone()).result,
        Ok(json!({ "name": "b.two", "args": { "x": 1 } }))
    );
    thread::sleep(Duration::from_millis(50));
    // Given an equal manifest that is another value: the same tools, frozen.
    let copy = std::sync::Arc::new((*b).clone());
    assert_eq!(
        run_on_pool_with(
            &pool,
            "[Object.isFrozen(tools.b), Object.isFrozen(tools.b.two), 'a' in tools]",
            copy
        )
        .result,
        Ok(json!([true, true, false]))
    );
}

#[test]
fn the_pool_runs_each_program_in_a_fresh_runtime() {
    let pool = toolweave_sandbox::EnginePool::new(1, limits().stack_bytes);
    let first = run_on_pool(
        &pool,
        "globalThis.leak = 'secret'; Object.prototype.polluted = 1; 1",
    );
    assert_eq!(first.result, Ok(json!(1)));
    // Back to back (the thread prepares a runtime on the spot), then with pauses (it prepares
    // one while it waits).
    for pause in [0, 0, 0, 20, 20] {
        thread::sleep(Duration::from_millis(pause));
        let next = run_on_pool(
            &pool,
            "const fresh = [typeof leak, ({}).polluted === undefined]; globalThis.leak = 1; \
             Object.prototype.polluted = 1; fresh",
        );
        assert_eq!(
            next.result,
            Ok(json!(["undefined", true])),
            "pause {pause} ms"
        );
    }
    let overflow = run_on_pool(&pool, "function down() { return down() + 1 }\ndown()");
    assert_eq!(overflow.result, Err(EngineError::StackOverflow));
    let call = run_on_pool(&pool, "await tools.t.echo({ x: 1 })");
    assert_eq!(call.result, Ok(json!({ "x": 1 })));
}

#[test]
fn the_pool_runs_programs_side_by_side() {
    let pool = toolweave_sandbox::EnginePool::new(1, limits().stack_bytes);
    let started = Instant::now();
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let pool = pool.clone();
            thread::spawn(move || {
                run_on_pool(
                    &pool,
                    &format!("await new Promise((done) => setTimeout(done, 300)); {i}"),
                )
            })
        })
        .collect();
    let results: Vec<_> = handles
        .into_iter()
        .map(|handle| handle.join().map(|outcome| outcome.result).ok())
        .collect();
    assert_eq!(
        results,
        (0..4).map(|i| Some(Ok(json!(i)))).collect::<Vec<_>>()
    );
    // Four programs waiting 300 ms each, one idle thread: the pool grew instead of queueing.
    assert!(
        started.elapsed() < Duration::from_millis(1100),
        "{:?}",
        started.elapsed()
    );
}

/// The report of an uncaught error, as the model reads it.
fn traceback(run: &Run) -> String {
    match run.error() {
        EngineError::Guest {
            stack: Some(stack), ..
        } => stack.clone(),
        other => panic!("expected a guest error with a traceback, got {other:?}"),
    }
}

#[test]
fn runtime_errors_name_what_failed_and_show_where() {
    // QuickJS says "not a function": the callee is named from the source, under a caret.
    let run = run_ts("const weather: any = { sky: 'clear' };\nconst parts = weather.split(',');");
    assert_eq!(
        traceback(&run),
        "TypeError: weather.split is not a function\n    at line 2, column 23:\n      \
         2 | const parts = weather.split(',');\n                                ^"
    );
    let run = run_js("const rows = [];\nreturn rows[0].name;");
    let EngineError::Guest { message, line, .. } = run.error() else {
        panic!("{:?}", run.error());
    };
    assert_eq!(
        (message.as_str(), *line),
        (
            "cannot read property 'name' of undefined (rows[0] is undefined)",
            Some(2)
        )
    );
    // Inside a built-in (`map` calling what it was given), the operation is not the guest's.
    let run = run_js("[1, 2].map(5)");
    assert!(
        traceback(&run).starts_with("TypeError: not a function\n    at line 1, column 8:"),
        "{}",
        traceback(&run)
    );
    // A thrown error lists the calls inside the program that led to it, in the code as written
    // (types stripped before the first line that counts).
    let run = run_ts(
        "interface Row { id: number }\nfunction check(rows: Row[]): void {\n  if (rows.length === 0) throw new Error('no rows');\n}\nasync function load(): Promise<void> {\n  check([]);\n}\nawait load();",
    );
    assert_eq!(
        traceback(&run),
        format!(
            "Error: no rows\n    at check (line 3, column 36):\n      3 |   if (rows.length === 0) \
             throw new Error('no rows');\n{}^\n    at load (line 6, column 3): check([]);\n    \
             at line 8, column 7: await load();",
            " ".repeat(6 + 4 + 35)
        )
    );
    // A failed tool call points at the line that made it.
    let run = run_js("const a = 1;\nconst b = await tools.t.fail({});");
    assert!(
        traceback(&run).starts_with(
            "Error: t.fail returned an error: broken\n    at line 2, column 25:\n      2 | const b = await tools.t.fail({});"
        ),
        "{}",
        traceback(&run)
    );
}

#[test]
fn programs_run_as_models_write_them() {
    let value = |code: &str| run_ts(code).value().clone();
    // A markdown fence, whatever its info string, with blank lines around.
    assert_eq!(
        value("\n```typescript\nconst n: number = 2;\nn * 3\n```\n\n"),
        json!(6)
    );
    let run = run_ts("```ts\nconst n: number = 2;\nthrow new Error('at line 3');\n```");
    assert!(
        matches!(run.error(), EngineError::Guest { line: Some(3), .. }),
        "{:?}",
        run.error()
    );
    // A program that is one function is called.
    assert_eq!(
        value("async () => { return await tools.t.add({ a: 1, b: 2 }); }"),
        json!(3)
    );
    assert_eq!(value("(async function () { return 4; })"), json!(4));
    assert_eq!(value("async function main() { return 5; }"), json!(5));
    // So is a main or run never called, when nothing after it gives the program a value.
    assert_eq!(
        value("const x = 2;\nconst run = async () => x * 3;"),
        json!(6)
    );
    assert_eq!(
        value("async function main() { return 7; }\nconst unused = 1;"),
        json!(7)
    );
    // Not when the program calls it, names it, or has a value of its own.
    let run = run_ts(
        "let calls = 0;\nasync function main() { calls++; return calls; }\nawait main();\nreturn calls;",
    );
    assert_eq!(run.value(), &json!(1));
    assert_eq!(
        value("function main() { return 1; }\nconst f = main;"),
        json!(null)
    );
    assert_eq!(
        value("function main() { return 1; }\n'mine'"),
        json!("mine")
    );
    assert_eq!(
        value("function main() { return 1; }\nfunction run() { return 2; }\nconst x = 1;"),
        json!(null)
    );
}

#[test]
fn what_the_value_does_not_tell_is_a_warning() {
    // A program that computed something and returned nothing.
    let run = run_js("const total = await tools.t.add({ a: 1, b: 2 });");
    assert_eq!(run.value(), &json!(null));
    assert_eq!(
        run.warnings,
        [
            "the program returned nothing (its value is undefined, sent as null): it ends by \
          declaring `total`. End it with `return total` (or `total` alone on the last line)."
        ]
    );
    let run = run_js("for (const i of [1, 2]) { await tools.t.add({ a: i, b: 1 }); }");
    assert!(
        run.warnings[0].contains("it ends with a loop"),
        "{:?}",
        run.warnings
    );
    // Not for a program that printed what it found, or said it returns nothing.
    for code in [
        "console.log('found 3');\nconst x = 1;",
        "const x = 1;\nreturn;",
        "null",
    ] {
        assert!(run_js(code).warnings.is_empty(), "{code}");
    }
    // Calls still running when the program ended.
    let run = run_js(
        "[1, 2].forEach(async (i) => { await tools.t.slow({ ms: 200 }); });\nreturn 'done';",
    );
    assert_eq!(run.value(), &json!("done"));
    assert_eq!(run.warnings.len(), 1, "{:?}", run.warnings);
    assert!(
        run.warnings[0].starts_with(
            "the program ended while 2 tool calls it made were still running: they were cancelled"
        ),
        "{:?}",
        run.warnings
    );
    // A promise rejected that nothing awaited: its reason and the line that made it.
    let run = run_js("tools.t.fail({});\nawait tools.t.slow({ ms: 10 });\nreturn 1;");
    assert_eq!(run.value(), &json!(1));
    assert_eq!(
        run.warnings,
        [
            "a promise was rejected and nothing awaited it (made at line 1, column 9): Error: t.fail \
          returned an error: broken. Await it (or `.catch(...)` it when its failure does not \
          matter)."
        ]
    );
    // Caught later, or the program's own failure: no warning.
    let run = run_js(
        "const p = tools.t.fail({});\nawait tools.t.slow({ ms: 10 });\ntry { await p; } catch (e) {}\nreturn 2;",
    );
    assert!(run.warnings.is_empty(), "{:?}", run.warnings);
    let run = run_js("await tools.t.fail({});");
    assert!(run.warnings.is_empty(), "{:?}", run.warnings);
}

#[test]
fn values_json_cannot_carry_are_converted_or_refused_where_they_are() {
    // One faithful form: converted.
    assert_eq!(
        run_js("return { m: new Map([['a', 1], [2, new Set(['x'])]]), t: new Uint8Array([1, 2]), d: new Date(0) }").value(),
        &json!({ "m": { "a": 1, "2": ["x"] }, "t": [1, 2], "d": "1970-01-01T00:00:00.000Z" })
    );
    assert_eq!(
        run_js("try { await tools.t.fail({}); } catch (error) { return { error }; }").value(),
        &json!({ "error": { "name": "Error", "message": "t.fail returned an error: broken" } })
    );
    // None: refused, naming the path and what to send.
    for (code, message) in [
        (
            "return { sum: tools.t.add({}) }",
            "result.sum is a Promise (a call or an async function that was not awaited): await it",
        ),
        (
            "return [{ f() {} }].map((o) => ({ ...o }))",
            "result[0].f is a function: call it and send what it returns, or leave it out",
        ),
        (
            "const xs = []; return { 'avg value': xs.reduce((a, b) => a + b, 0) / xs.length }",
            "result[\"avg value\"] is NaN: JSON has no NaN or Infinity",
        ),
        (
            "return 2n ** 70n",
            "result is the BigInt 1180591620717411303424n: send Number(value) when it fits, or String(value)",
        ),
        (
            "return new Map([[{}, 1]])",
            "result is a Map with a key that is neither a string nor a number ({}): send [...map]",
        ),
        (
            "class Box { #v = 1; get v() { return this.#v; } }\nreturn { box: new Box() }",
            "result.box is an instance of Box with no own enumerable properties, which JSON would send as {}",
        ),
        (
            "const a = { b: {} }; a.b.back = a.b; return a",
            "result.b.back is the value at result.b again, inside itself (a cycle)",
        ),
        (
            "return new WeakMap()",
            "result is a WeakMap, WeakSet or WeakRef",
        ),
    ] {
        match run_js(code).error() {
            EngineError::Unserializable { message: actual } => {
                assert!(actual.starts_with(message), "{code}: {actual}");
            }
            other => panic!("{code}: {other:?}"),
        }
    }
    // Tool arguments the same way: converted, or the call rejects naming the path.
    let run = run_js("return await tools.t.echo({ ids: new Set([1, 2]) })");
    assert_eq!(run.value(), &json!({ "ids": [1, 2] }));
    let run =
        run_js("try { await tools.t.echo({ at: NaN }); } catch (error) { return error.message; }");
    assert_eq!(
        run.value(),
        &json!(
            "the arguments cannot be sent as JSON: args.at is NaN: JSON has no NaN or Infinity: check the computation (a division by zero, a number read from text that is not one), or send null or a string"
        )
    );
    // Console lines show what these values hold.
    let run = run_js(
        "console.log(new Map([['a', 1]]), { s: new Set([1]), n: NaN, p: Promise.resolve() })",
    );
    assert_eq!(
        run.lines(),
        ["{\"a\":1} {\"s\":[1],\"n\":\"NaN\",\"p\":\"[promise]\"}"]
    );
}

/// Submits `code` to `pool`; its events and outcome arrive on the receiver.
fn submit(
    pool: &toolweave_sandbox::EnginePool,
    code: &str,
) -> (
    toolweave_sandbox::ThreadExecution,
    std::sync::mpsc::Receiver<Result<toolweave_sandbox::EngineEvent, Outcome>>,
) {
    let (sender, receiver) = std::sync::mpsc::channel();
    let events = sender.clone();
    let execution = pool.submit(toolweave_sandbox::Job {
        request: ExecuteRequest {
            code: code.to_owned(),
            language: Language::JavaScript,
            limits: limits(),
            manifest: one_tool("t", "echo"),
        },
        emit: Box::new(move |event| {
            let _ = events.send(Ok(event));
        }),
        finished: Box::new(move |outcome| {
            let _ = sender.send(Err(outcome));
        }),
    });
    (execution, receiver)
}

#[test]
fn a_pool_at_its_most_threads_runs_the_next_program_when_a_thread_is_free() {
    let pool = toolweave_sandbox::EnginePool::with_max_threads(0, limits().stack_bytes, 1);
    // The first program holds the only thread while it waits for its tool call's answer.
    let (first, first_events) = submit(&pool, "return await tools.t.echo({ x: 1 })");
    let call = loop {
        match first_events.recv_timeout(Duration::from_secs(10)) {
            Ok(Ok(toolweave_sandbox::EngineEvent::Call(call))) => break call,
            Ok(Ok(_)) => {}
            other => panic!("the first program made no call: {other:?}"),
        }
    };
    let (_second, second_events) = submit(&pool, "return 2");
    // Without a thread of its own, the second waits (a pool without the bound runs it at once).
    let early = loop {
        match second_events.recv_timeout(Duration::from_millis(300)) {
            Ok(Ok(_)) => {}
            Ok(Err(outcome)) => break Some(outcome),
            Err(_) => break None,
        }
    };
    assert!(early.is_none(), "ran beside the first: {early:?}");
    first.reply(toolweave_sandbox::HostReply::Result {
        id: call.id,
        outcome: Ok(json!("one")),
    });
    let finished = |events: &std::sync::mpsc::Receiver<_>| loop {
        match events.recv_timeout(Duration::from_secs(10)) {
            Ok(Ok(_)) => {}
            Ok(Err(outcome)) => break outcome,
            Err(error) => panic!("no outcome: {error}"),
        }
    };
    assert_eq!(finished(&first_events).result, Ok(json!("one")));
    assert_eq!(finished(&second_events).result, Ok(json!(2)));
}

/// A string answer reaches JavaScript as that string (handed over as it is, not as JSON text the
/// guest parses back): text that reads as JSON stays text, and escapes and non-ASCII arrive
/// intact; other answers are still values.
#[test]
fn string_answers_arrive_as_the_strings_they_are() {
    let run = run_js(
        r#"const texts = ['[1, 2]', '"quoted"', 'line\nbreak \\ back\u0001', '', '{"a": 1}', 'é😀', 'null'];
        const back = [];
        for (const text of texts) back.push(await tools.t.echo(text));
        const value = await tools.t.echo({ list: [1, 'two'] });
        return [back.every((got, i) => typeof got === 'string' && got === texts[i]), value.list[1]];"#,
    );
    assert_eq!(run.value(), &json!([true, "two"]), "{:?}", run.outcome);
    assert_eq!(run.calls.len(), 8);
}
