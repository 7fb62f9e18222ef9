//! The Python engine on its own, with a small host of canned tools answering its messages:
//! values, concurrency, `print` capture, the guest API, and every limit, each observed by the
//! engine itself.

use super::common::{self, Run, limits};

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolweave_sandbox::{
    CancelFlag, EngineError, EngineEvent, EngineLimits, ExecuteRequest, HostReply, HostRequest,
    Language, LogStream, Manifest, Namespace, Outcome, ServerAsk,
};

fn run_with(code: &str, limits: EngineLimits, cancel: &CancelFlag) -> Run {
    common::run_code(code, Language::Python, limits, cancel)
}

fn run_py(code: &str) -> Run {
    run_with(code, limits(), &CancelFlag::new())
}

fn guest(error: &EngineError) -> (&str, &str, Option<u32>) {
    match error {
        EngineError::Guest {
            name,
            message,
            line,
            ..
        } => (name.as_str(), message.as_str(), *line),
        other => panic!("expected a guest error, got {other:?}"),
    }
}

#[test]
fn values_follow_the_contract() {
    assert_eq!(run_py("1 + 1").value(), &json!(2));
    assert_eq!(run_py("x = 1").value(), &Value::Null);
    assert_eq!(run_py("None").value(), &Value::Null);
    // A top-level `return` ends the program with its value, as in JavaScript.
    assert_eq!(
        run_py("x = 2\nif x > 1:\n    return 'big'\n'small'").value(),
        &json!("big")
    );
    assert_eq!(
        run_py("a = [1, 2]\n[x * 2 for x in a]").value(),
        &json!([2, 4])
    );
    assert_eq!(
        run_py("{'s': 'ünï', 'f': 1.5, 'b': True, 'n': None, 't': (1, 'x'), 'big': 2**63}").value(),
        &json!({ "s": "ünï", "f": 1.5, "b": true, "n": null, "t": [1, "x"], "big": 9223372036854775808_u64 })
    );
    // Values from the host arrive as Python values and go back unchanged.
    let run = run_py(
        "v = await tools.t.echo(d={'k': [1, 2.5, None, True]}, s='x')\n\
         [type(v).__name__, type(v['d']['k']).__name__, v]",
    );
    assert_eq!(
        run.value(),
        &json!(["dict", "list", { "d": { "k": [1, 2.5, null, true] }, "s": "x" }])
    );
}

#[test]
fn tools_take_keywords_or_one_dict() {
    let run = run_py(
        "a = await tools.t.add(a=2, b=5)\n\
         b = await tools.t.add({'a': 1, 'b': 1})\n\
         c = await tools.t.echo({'a': 1, 'b': 2}, b=3)\n\
         d = await tools.t.echo()\n\
         [a, b, c, d]",
    );
    assert_eq!(run.value(), &json!([7.0, 2.0, { "a": 1, "b": 3 }, {}]));
    assert_eq!(
        run.calls[0],
        HostRequest::Tool {
            name: "t.add".into(),
            args: json!({ "a": 2, "b": 5 }),
            raw: false
        }
    );
}

#[test]
fn positional_arguments_are_the_hosts_to_explain() {
    // Only the host knows the tool's signature, which its refusal shows; the engine sends what
    // it was given, as a list, and code-executor-mcp's `call_mcp_tool` is `call_tool`.
    let run = run_py(
        "a = await tools.t.echo(1, 'two')\nb = await tools.t.echo([3])\nc = await call_mcp_tool('t.echo', {'d': 4})\n[a, b, c]",
    );
    assert_eq!(run.value(), &json!([[1, "two"], [[3]], { "d": 4 }]));
    assert_eq!(
        run.calls[0],
        HostRequest::Tool {
            name: "t.echo".into(),
            args: json!([1, "two"]),
            raw: false
        }
    );
}

#[test]
fn gathered_calls_are_outstanding_together() {
    let run = run_py(
        "a, b, c = await asyncio.gather(tools.t.slow(ms=300), tools.t.slow(ms=200), tools.t.add(a=1, b=2))\n\
         [a, b, c]",
    );
    assert_eq!(run.value(), &json!([300, 200, 3.0]));
    assert_eq!(run.calls.len(), 3);
    // All three were sent before the first answer came back.
    assert_eq!(run.most_outstanding, 3);
    // Run one after the other, they would take 500 ms.
    assert!(
        run.elapsed < Duration::from_millis(480),
        "{:?}",
        run.elapsed
    );

    // Tasks of async functions run concurrently too.
    let run = run_py(
        "async def twice(ms):\n\
         \x20   first = await tools.t.slow(ms=ms)\n\
         \x20   return first + await tools.t.slow(ms=ms)\n\
         await asyncio.gather(twice(100), twice(100), twice(100))",
    );
    assert_eq!(run.value(), &json!([200, 200, 200]));
    assert_eq!(run.most_outstanding, 3);
}

#[test]
fn host_errors_raise_runtime_error_with_the_hosts_message() {
    let run = run_py(
        "try:\n\
         \x20   await tools.t.fail()\n\
         except RuntimeError as error:\n\
         \x20   caught = [type(error).__name__, str(error)]\n\
         caught",
    );
    assert_eq!(
        run.value(),
        &json!(["RuntimeError", "t.fail returned an error: broken"])
    );
    // Uncaught, it is a guest error at the line of the call.
    let run = run_py("x = 1\nawait tools.t.fail()");
    assert_eq!(
        guest(run.error()),
        ("RuntimeError", "t.fail returned an error: broken", Some(2))
    );
    // One failure in a gather raises; the other call was still made.
    let run = run_py(
        "try:\n\
         \x20   await asyncio.gather(tools.t.add(a=1, b=1), tools.t.fail())\n\
         except RuntimeError as error:\n\
         \x20   message = str(error)\n\
         message",
    );
    assert_eq!(run.value(), &json!("t.fail returned an error: broken"));
    assert_eq!(run.calls.len(), 2);
}

#[test]
fn namespaces_of_servers_not_ready_ask_the_host() {
    let run = run_py(
        "a = await tools.later.anything(x=1)\n\
         f = tools.later.other\n\
         b = await f({'y': 2})\n\
         [a, b]",
    );
    assert_eq!(run.value(), &json!([{ "x": 1 }, { "y": 2 }]));
    assert_eq!(
        run.calls,
        [
            HostRequest::Tool {
                name: "later.anything".into(),
                args: json!({ "x": 1 }),
                raw: false
            },
            HostRequest::Tool {
                name: "later.other".into(),
                args: json!({ "y": 2 }),
                raw: false
            },
        ]
    );
}

#[test]
fn resources_and_prompts_send_the_server_and_method_given() {
    let run = run_py(
        r#"
read = resources.docs.read
answers = [
    await resources.docs.list(),
    await read('file:///a.md'),
    await resources.docs.templates(),
    await prompts.docs.list(),
    await prompts.docs.get('review', {'code': 'x'}),
    await prompts.docs.get(name='review'),
]
problems = []
try:
    await resources.docs.read(1)
except TypeError as error:
    problems.append(str(error))
try:
    await prompts.docs.remove('x')
except AttributeError as error:
    problems.append(str(error))
[answers[1], problems]
"#,
    );
    assert_eq!(
        run.calls,
        [
            HostRequest::Server {
                server: "docs".into(),
                ask: ServerAsk::ListResources
            },
            HostRequest::Server {
                server: "docs".into(),
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
            HostRequest::Server {
                server: "docs".into(),
                ask: ServerAsk::GetPrompt {
                    name: "review".into(),
                    arguments: serde_json::Map::new()
                }
            },
        ]
    );
    assert_eq!(
        run.value(),
        &json!([
            { "server": "docs", "method": "resources/read" },
            [
                "resources.docs.read(uri): uri must be a str, not int",
                "prompts.docs has no method 'remove'; it has list() and get(name, arguments=None)"
            ]
        ])
    );
}

#[test]
fn call_tool_search_and_describe_send_what_was_given() {
    let run = run_py(
        "await call_tool('t.echo', {'a': 1}, raw=True)\n\
         await call_tool('mcp__t__echo', args={'b': 2})\n\
         await call_tool('t.echo')\n\
         await search_tools('add', 3)\n\
         await search_tools(query='sum')\n\
         await describe_tools(['t.add'])\n\
         await describe_tools('t.echo')",
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
            HostRequest::Tool {
                name: "t.echo".into(),
                args: json!({}),
                raw: false
            },
            HostRequest::Search {
                query: "add".into(),
                limit: Some(3)
            },
            HostRequest::Search {
                query: "sum".into(),
                limit: None
            },
            HostRequest::Describe {
                names: vec!["t.add".into()]
            },
            HostRequest::Describe {
                names: vec!["t.echo".into()]
            },
        ]
    );
    assert_eq!(
        run_py("(await search_tools('add'))[0]['name']").value(),
        &json!("t.add")
    );
}

#[test]
fn arguments_that_are_not_json_raise_in_the_guest() {
    for (code, expected) in [
        (
            "tools.t.echo({'a': {'b': [1, b'x']}})",
            "the arguments of tools.t.echo()[\"a\"][\"b\"][1] is bytes",
        ),
        ("tools.t.echo(x=float('nan'))", "is the float nan"),
        ("tools.t.echo({1: 2})", "a dict with a key of type int"),
        (
            "class Point:\n    pass\ntools.t.echo(p=Point())",
            "an instance of the class Point",
        ),
        (
            "class Point:\n    pass\ntools.t.echo(p=Point())",
            "build a dict from its fields, such as {'name': item.name} (dataclasses.asdict is not \
             available)",
        ),
        ("tools.t.echo(x=2**70)", "an int beyond 64 bits"),
        ("call_tool(42)", "name must be a str"),
        ("call_tool('t.echo', [1])", "args must be a dict, not list"),
        (
            "call_tool('t.echo', {}, raw=1)",
            "raw must be True or False",
        ),
        (
            "call_tool('t.echo', nope=1)",
            "unexpected keyword argument 'nope'",
        ),
        ("search_tools(1)", "query must be a str"),
        (
            "search_tools('x', 0)",
            "limit must be a positive int, not 0",
        ),
        ("describe_tools([1])", "names must be strs"),
        (
            "x = []\nfor i in range(5000):\n    x = [x]\ntools.t.echo(x=x)",
            "nested more than 100 levels deep",
        ),
    ] {
        let run = run_py(&format!(
            "try:\n    {}\nexcept (TypeError, ValueError) as error:\n    message = str(error)\nmessage",
            code.replace('\n', "\n    ")
        ));
        let message = run.value().as_str().unwrap_or_default().to_owned();
        assert!(message.contains(expected), "{code}: {message}");
        assert!(run.calls.is_empty(), "{code}: {:?}", run.calls);
    }
}

#[test]
fn missing_names_are_the_hosts_to_explain() {
    // The host's answer (here: "unknown tool") is raised where the call is awaited.
    let run = run_py("await tools.t.nope()");
    let (name, message, line) = guest(run.error());
    assert_eq!((name, line), ("RuntimeError", Some(1)));
    assert_eq!(message, "unknown tool \"t.nope\"");
    let run = run_py("await tools.nowhere.x()");
    assert_eq!(guest(run.error()).1, "unknown tool \"nowhere.x\"");
    // A tool function returns an awaitable: using it without `await` fails where it is used.
    let run = run_py("total = tools.t.add(a=1, b=2) + 1");
    let (name, message, line) = guest(run.error());
    assert_eq!((name, line), ("TypeError", Some(1)), "{message}");
    let run = run_py("undefined_function(1)");
    assert_eq!(guest(run.error()).0, "NameError");
    assert!(run.calls.is_empty());
}

#[test]
fn print_is_captured_in_order_and_bounded() {
    let run = run_py(
        "print('a', 1, {'b': [2]})\nprint('multi\\nline')\nprint('no newline', end='')\nprint('!')\nprint('tail', end='')\n'done'",
    );
    assert_eq!(run.value(), &json!("done"));
    assert_eq!(
        run.lines(),
        ["a 1 {'b': [2]}", "multi", "line", "no newline!", "tail"]
    );
    assert!(run.logs.iter().all(|(stream, _)| *stream == LogStream::Log));

    let run = run_py("for i in range(100000):\n    print('x' * 100)");
    assert_eq!(run.error(), &EngineError::LogLimit { limit: 4096 });
    let kept: usize = run.lines().iter().map(|line| line.len() + 1).sum();
    assert!(kept <= 4096, "{kept}");
    // Catching the engine's stop does not buy more output.
    let run = run_py(
        "while True:\n    try:\n        print('x' * 100)\n    except BaseException:\n        pass",
    );
    assert_eq!(run.error(), &EngineError::LogLimit { limit: 4096 });
}

#[test]
fn busy_loops_stop_at_the_deadline() {
    for code in [
        "while True:\n    pass",
        "x = 0\nwhile True:\n    x += 1",
        // Catching the engine's stop does not keep the program alive.
        "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass",
        "def spin():\n    while True:\n        pass\ntry:\n    spin()\nexcept:\n    pass",
        // The deadline counts time spent waiting for tools, which Monty's own clock does not.
        "await tools.t.slow(ms=700)\nwhile True:\n    pass",
        "async def spin():\n    while True:\n        pass\nawait asyncio.gather(spin(), tools.t.slow(ms=10))",
        // Each iteration is one long built-in call.
        "while True:\n    sorted(range(200000), key=lambda x: -x)",
        "while True:\n    try:\n        'x' * 10000000\n    except BaseException:\n        pass",
    ] {
        let run = run_py(code);
        assert_eq!(
            run.error(),
            &EngineError::Timeout {
                limit: Duration::from_millis(1000)
            },
            "{code}"
        );
        // Behaviour, not speed: the stop comes at the deadline, not at some later backstop.
        assert!(
            run.elapsed < Duration::from_secs(3),
            "{code}: {:?}",
            run.elapsed
        );
    }
    // Waiting for a tool that answers too late.
    let run = run_py("await tools.t.slow(ms=5000)");
    assert_eq!(
        run.error(),
        &EngineError::Timeout {
            limit: Duration::from_millis(1000)
        }
    );
    assert!(
        run.elapsed < Duration::from_millis(1500),
        "{:?}",
        run.elapsed
    );
}

#[test]
fn stack_overflow_is_the_engines_finding_not_the_guests_claim() {
    let run = run_py("def down(n):\n    return down(n + 1) + 1\ndown(0)");
    assert_eq!(run.error(), &EngineError::StackOverflow);
    let run =
        run_py("def ping(n):\n    return pong(n)\ndef pong(n):\n    return ping(n + 1)\nping(0)");
    assert_eq!(run.error(), &EngineError::StackOverflow);
    let run = run_py("raise RecursionError('maximum recursion depth exceeded')");
    assert_eq!(guest(run.error()).0, "RecursionError");
    let run = run_py("def f():\n    raise RecursionError('maximum recursion depth exceeded')\nf()");
    assert_eq!(guest(run.error()).0, "RecursionError");
    // A caught overflow is the program's business.
    let run = run_py(
        "def down():\n    down()\ntry:\n    down()\nexcept RecursionError:\n    result = 'recovered'\nresult",
    );
    assert_eq!(run.value(), &json!("recovered"));
    // Recursion within the depth the stack limit allows (256 KiB: 512 levels) works.
    let run = run_py("def depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\ndepth(400)");
    assert_eq!(run.value(), &json!(400));
}

#[test]
fn faked_limits_stay_guest_errors() {
    for (code, name) in [
        (
            "raise TimeoutError('Timeout: the execution ran longer than 1 s')",
            "TimeoutError",
        ),
        (
            "raise MemoryError('memory limit exceeded: 100 bytes > 10 bytes')",
            "MemoryError",
        ),
        (
            "raise KeyboardInterrupt('toolweave stopped the program: the execution was cancelled')",
            "KeyboardInterrupt",
        ),
        ("raise RuntimeError('Timeout')", "RuntimeError"),
    ] {
        let run = run_py(code);
        assert_eq!(guest(run.error()).0, name, "{code}");
    }
}

#[test]
fn memory_errors_in_process_are_guest_errors_until_the_allocator_is_armed() {
    // In this test binary no limiting allocator is installed: Monty cannot measure its heap,
    // so the limit is not enforced here (the worker process enforces it; see python_memory.rs),
    // and the program just runs.
    let run = run_py("x = [0] * 1000000\nlen(x)");
    assert_eq!(run.value(), &json!(1000000));
}

#[test]
fn errors_point_at_the_code_as_written() {
    let run = run_py("import json\n\ndef parse(text):\n    return json.loads(text)\n\nparse('{')");
    let EngineError::Guest {
        name,
        line,
        column,
        stack,
        ..
    } = run.error()
    else {
        panic!("{:?}", run.error());
    };
    assert_eq!(
        (name.as_str(), *line, *column),
        ("json.JSONDecodeError", Some(4), Some(12))
    );
    let stack = stack.as_deref().unwrap_or_default();
    assert!(
        stack.starts_with(
            "Traceback (most recent call last):\n  File \"main.py\", line 6, in <module>\n    parse('{')\n  File \"main.py\", line 4, in parse\n    return json.loads(text)\n"
        ),
        "{stack}"
    );

    let run = run_py("data = {}\ncount = data['items']\ncount");
    assert_eq!(guest(run.error()), ("KeyError", "items", Some(2)));

    let run = run_py("raise ValueError");
    assert_eq!(guest(run.error()), ("ValueError", "", Some(1)));

    // A value that is not an exception cannot be raised: Python says so.
    let run = run_py("raise 42");
    assert_eq!(guest(run.error()).0, "TypeError");

    // Identical frames are counted, as CPython does.
    let run = run_py(
        "def down(n):\n    if n == 0:\n        raise ValueError('bottom')\n    return down(n - 1)\ndown(50)",
    );
    let EngineError::Guest { stack, .. } = run.error() else {
        panic!("{:?}", run.error());
    };
    let stack = stack.as_deref().unwrap_or_default();
    assert!(
        stack.contains("  [Previous line repeated 47 more times]\n"),
        "{stack}"
    );

    // Long tracebacks keep both ends.
    let run = run_py("def down(n):\n    return down(n + 1)\ndown(0)");
    assert_eq!(run.error(), &EngineError::StackOverflow);
    let run = run_py(
        "def a(n):\n    if n == 0:\n        raise ValueError('deep')\n    return b(n - 1)\ndef b(n):\n    return a(n)\na(200)",
    );
    let EngineError::Guest { stack, line, .. } = run.error() else {
        panic!("{:?}", run.error());
    };
    let stack = stack.as_deref().unwrap_or_default();
    assert_eq!(*line, Some(3));
    assert!(stack.contains("more entries ..."), "{stack}");
    assert!(stack.lines().count() < 100, "{stack}");
    assert!(stack.ends_with("ValueError: deep"), "{stack}");
}

#[test]
fn syntax_errors_have_a_code_frame() {
    let run = run_py("ok = 1\nbroken = 1 +\nmore = 2");
    let EngineError::Syntax {
        line,
        column,
        frame,
        ..
    } = run.error()
    else {
        panic!("{:?}", run.error());
    };
    assert_eq!(*line, 2, "{frame}");
    assert_eq!(frame, "2 | broken = 1 +\n                ^");
    assert_eq!(*column, 13);

    let run = run_py("x = 1\nclass E(Exception):\n    pass");
    let EngineError::Syntax { message, line, .. } = run.error() else {
        panic!("{:?}", run.error());
    };
    assert_eq!(*line, 2);
    assert!(
        message.starts_with("class inheritance and metaclasses: not supported"),
        "{message}"
    );
    let run = run_py("def g():\n    yield 1");
    assert!(
        matches!(run.error(), EngineError::Syntax { line: 2, message, .. } if message.starts_with("yield expressions")),
        "{:?}",
        run.error()
    );
}

#[test]
fn code_nested_past_the_cap_is_refused_naming_it() {
    // The number the message names is the cap: one level below it parses (the statement counts
    // as one), the next does not, whatever the brackets.
    let lists = |n: usize| format!("x = {}{}\nlen(x)", "[".repeat(n), "]".repeat(n));
    let EngineError::Syntax {
        message, column, ..
    } = run_py(&lists(1000)).error().clone()
    else {
        panic!("{:?}", run_py(&lists(1000)).error());
    };
    let cap: usize = message
        .strip_prefix("Source is too deeply nested: more than ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|number| number.parse().ok())
        .unwrap_or_else(|| panic!("{message}"));
    assert!(
        message.ends_with(
            "levels of statements, brackets, calls, operators or lambdas inside one another. \
             Split it up: give inner parts names, or build deeply nested data in a loop"
        ),
        "{message}"
    );
    assert!(column > 1, "{column}: at the bracket, not the start");
    let below = run_py(&lists(cap - 1));
    assert!(
        below.outcome.result.is_ok(),
        "{cap}: {:?}",
        below.outcome.result
    );
    let run = run_py(&lists(cap));
    assert!(
        matches!(run.error(), EngineError::Syntax { message: m, column, .. }
            if *m == message && *column == u32::try_from(cap).unwrap() + 4),
        "{:?}",
        run.error()
    );
    for code in [
        format!("x = {}1{}\nx", "(".repeat(1000), ")".repeat(1000)),
        format!("f = {}1\n1", "lambda: ".repeat(1000)),
        format!("x = {}1\nx", "-".repeat(1000)),
    ] {
        assert!(
            matches!(run_py(&code).error(), EngineError::Syntax { message: m, .. } if *m == message),
            "{:?}",
            run_py(&code).error()
        );
    }
}

#[test]
fn strings_cannot_hold_lone_surrogates() {
    // Python strings here are Unicode scalar values: the escape of a lone surrogate is the
    // replacement character already, and no string can carry one to the host.
    let run = run_py("s = '\\ud83d'\nprint(s)\n[s, len(s), s + '\\ude00']");
    assert_eq!(run.value(), &json!(["\u{fffd}", 1, "\u{fffd}\u{fffd}"]));
    assert_eq!(run.lines(), ["\u{fffd}"]);
}

#[test]
fn results_are_bounded_and_must_be_json() {
    let run = run_py("'y' * (100 * 1024)");
    assert!(matches!(
        run.error(),
        EngineError::ResultTooLarge { limit: 65536, .. }
    ));
    for (code, expected) in [
        ("float('inf')", "the float inf"),
        ("b'bytes'", "bytes"),
        ("a = []\na.append(a)\na", "contains itself"),
        ("{(1, 2): 'tuple key'}", "a key of type tuple"),
        ("len", "a function"),
        ("ValueError('x')", "an exception object"),
        (
            "from datetime import date\ndate(2024, 1, 2)",
            ".isoformat()",
        ),
        ("10 ** 30", "an int beyond 64 bits"),
        (
            "x = []\nfor i in range(5000):\n    x = [x]\nx",
            "nested more than 100 levels deep",
        ),
    ] {
        let run = run_py(code);
        let EngineError::Unserializable { message } = run.error() else {
            panic!("{code}: {:?}", run.error());
        };
        assert!(message.contains(expected), "{code}: {message}");
    }
}

#[test]
fn the_tool_call_budget_is_enforced() {
    let run = run_py("for i in range(100):\n    tools.t.add(a=i, b=1)");
    assert_eq!(run.error(), &EngineError::ToolCallLimit { limit: 20 });
    assert_eq!(run.calls.len(), 20);
    let run = run_py("for i in range(100):\n    await tools.t.add(a=i, b=1)");
    assert_eq!(run.error(), &EngineError::ToolCallLimit { limit: 20 });
    // Catching does not help: the budget ends the run.
    let run = run_py(
        "for i in range(100):\n    try:\n        await tools.t.add(a=i, b=1)\n    except BaseException:\n        pass",
    );
    assert_eq!(run.error(), &EngineError::ToolCallLimit { limit: 20 });
}

#[test]
fn cancel_stops_a_busy_guest_at_once() {
    for code in [
        "while True:\n    pass",
        "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass",
        "await tools.t.slow(ms=5000)",
    ] {
        let cancel = CancelFlag::new();
        let flag = cancel.clone();
        let stopper = thread::spawn(move || {
            thread::sleep(Duration::from_millis(100));
            flag.cancel();
        });
        let run = run_with(
            code,
            EngineLimits {
                timeout: Duration::from_secs(10),
                ..limits()
            },
            &cancel,
        );
        stopper.join().unwrap();
        assert_eq!(run.error(), &EngineError::Cancelled, "{code}");
        assert!(
            run.elapsed < Duration::from_millis(1000),
            "{code}: {:?}",
            run.elapsed
        );
    }
}

#[test]
fn the_hosts_cancel_message_wakes_a_waiting_guest() {
    let (replies_tx, replies_rx) = mpsc::channel();
    let started = Instant::now();
    let outcome = thread::spawn(move || {
        toolweave_sandbox::execute(
            ExecuteRequest {
                code: "await tools.t.slow(ms=5000)".to_owned(),
                language: Language::Python,
                limits: EngineLimits {
                    timeout: Duration::from_secs(10),
                    ..limits()
                },
                manifest: Manifest {
                    namespaces: vec![Namespace {
                        name: "t".to_owned(),
                        tools: Some(vec!["slow".into()]),
                    }],
                }
                .into(),
            },
            &mut |event| {
                if matches!(event, EngineEvent::Call(_)) {
                    let _ = replies_tx.send(HostReply::Cancel);
                }
            },
            &replies_rx,
            &CancelFlag::new(),
        )
    })
    .join()
    .unwrap();
    assert_eq!(outcome.result, Err(EngineError::Cancelled));
    assert!(started.elapsed() < Duration::from_millis(500));
}

#[test]
fn nothing_outside_is_reachable() {
    for code in [
        "open('/etc/passwd').read()",
        "import os\nos.getenv('HOME')",
        "import os\nos.environ",
        "from pathlib import Path\nPath('/etc/passwd').read_text()",
        "from pathlib import Path\nPath('/tmp/x').write_text('x')",
    ] {
        let run = run_py(code);
        let (name, message, _) = guest(run.error());
        assert_eq!(name, "PermissionError", "{code}");
        assert!(
            message.contains("the only way out of the sandbox is a tool call"),
            "{code}: {message}"
        );
    }
    for code in [
        "import requests",
        "import subprocess",
        "from socket import socket",
    ] {
        let run = run_py(code);
        let (name, message, _) = guest(run.error());
        assert_eq!(name, "ModuleNotFoundError", "{code}");
        assert!(
            message.contains("the only way out of the sandbox is a tool call"),
            "{code}: {message}"
        );
    }
    // The clock is not a way out: it reads like JavaScript's Date.
    let run = run_py(
        "from datetime import datetime, date, timezone\n\
         [datetime.now().year >= 2024, date.today().year >= 2024, datetime.now(timezone.utc).tzinfo is not None]",
    );
    assert_eq!(run.value(), &json!([true, true, true]));
}

#[test]
fn asyncio_needs_no_import_and_an_import_does_no_harm() {
    assert_eq!(
        run_py("await asyncio.gather(tools.t.add(a=1, b=1))").value(),
        &json!([2.0])
    );
    assert_eq!(
        run_py("import asyncio\nawait asyncio.gather(tools.t.add(a=1, b=1))").value(),
        &json!([2.0])
    );
}

/// Runs `code` on `pool` and waits for the outcome (tool calls are answered with their args).
fn run_on_pool(pool: &toolweave_sandbox::EnginePool, code: &str, language: Language) -> Outcome {
    let request = ExecuteRequest {
        code: code.to_owned(),
        language,
        limits: limits(),
        manifest: Manifest {
            namespaces: vec![Namespace {
                name: "t".to_owned(),
                tools: Some(vec!["echo".into()]),
            }],
        }
        .into(),
    };
    common::run_on_pool(pool, request, |request| match request {
        HostRequest::Tool { args, .. } => Ok(args.clone()),
        _ => Err("only tool calls here".to_owned()),
    })
}

#[test]
fn the_pool_runs_python_beside_javascript() {
    let pool = toolweave_sandbox::EnginePool::new(1, limits().stack_bytes);
    for _ in 0..3 {
        let python = run_on_pool(&pool, "await tools.t.echo(x=1)", Language::Python);
        assert_eq!(python.result, Ok(json!({ "x": 1 })));
        let javascript = run_on_pool(&pool, "await tools.t.echo({ y: 2 })", Language::JavaScript);
        assert_eq!(javascript.result, Ok(json!({ "y": 2 })));
    }
    let overflow = run_on_pool(
        &pool,
        "def down():\n    return down() + 1\ndown()",
        Language::Python,
    );
    assert_eq!(overflow.result, Err(EngineError::StackOverflow));
    // Nothing carries over from one Python program to the next.
    let first = run_on_pool(&pool, "leak = 'secret'\n1", Language::Python);
    assert_eq!(first.result, Ok(json!(1)));
    let next = run_on_pool(&pool, "leak", Language::Python);
    assert!(matches!(next.result, Err(EngineError::Guest { name, .. }) if name == "NameError"));
}

/// A namespace's tools are resolved as the program uses them, not made ahead: read and then
/// called, called at once, named with a leading underscore (which Monty never asks the host
/// about). Every other name is a call too, which the host answers (it refuses a tool its policy
/// keeps from code, and explains a name it does not know).
#[test]
fn tools_resolve_however_they_are_used() {
    let pool = toolweave_sandbox::EnginePool::new(1, limits().stack_bytes);
    let manifest: std::sync::Arc<Manifest> = Manifest {
        namespaces: vec![Namespace {
            name: "t".to_owned(),
            tools: Some(vec!["add".into(), "_private".into()]),
        }],
    }
    .into();
    let run = |code: &str| {
        let request = ExecuteRequest {
            code: code.to_owned(),
            language: Language::Python,
            limits: limits(),
            manifest: manifest.clone(),
        };
        common::run_on_pool(&pool, request, |request| match request {
            HostRequest::Tool { name, args, .. } => Ok(json!({ "name": name, "args": args })),
            _ => Err("only tool calls here".to_owned()),
        })
        .result
    };
    let called = |name: &str, args: Value| Ok(json!({ "name": name, "args": args }));
    assert_eq!(
        run("f = tools.t.add\nawait f(a=1)"),
        called("t.add", json!({ "a": 1 }))
    );
    assert_eq!(
        run("await tools.t.add(a=2)"),
        called("t.add", json!({ "a": 2 }))
    );
    assert_eq!(
        run("await tools.t._private(b=3)"),
        called("t._private", json!({ "b": 3 }))
    );
    assert_eq!(
        run("f = getattr(tools.t, '_private')\nawait f()"),
        called("t._private", json!({}))
    );
    // Names the manifest does not list reach the host: a tool kept from code, a misspelling,
    // an original spelling, read first or called at once.
    assert_eq!(
        run("await tools.t.secret(c=4)"),
        called("t.secret", json!({ "c": 4 }))
    );
    assert_eq!(run("await tools.t.ad()"), called("t.ad", json!({})));
    assert_eq!(
        run("f = getattr(tools.t, 'get-sum')\nawait f(a=1)"),
        called("t.get-sum", json!({ "a": 1 }))
    );
    // A server the manifest does not have, read once or twice, and a tool without its server.
    assert_eq!(
        run("await tools.fs.read(path='x')"),
        called("fs.read", json!({ "path": "x" }))
    );
    assert_eq!(
        run(
            "fs = tools.fs\nother = tools.other\n[await fs.a(), await other.b(), await tools.fs.c()]"
        ),
        Ok(json!([
            { "name": "fs.a", "args": {} },
            { "name": "other.b", "args": {} },
            { "name": "fs.c", "args": {} }
        ]))
    );
    assert_eq!(
        run("await tools.add(a=1)"),
        called("add", json!({ "a": 1 }))
    );
}

/// What Monty 0.0.23 does not run, each failing with a clear error (docs/python.md lists these
/// with what to use instead).
#[test]
fn unsupported_python_fails_clearly() {
    for (code, kind, expected) in [
        (
            "class A:\n    pass\nclass B(A):\n    pass",
            "Syntax",
            "class inheritance",
        ),
        ("def g():\n    yield 1", "Syntax", "yield expressions"),
        (
            "match 1:\n    case 1:\n        pass",
            "Syntax",
            "match statements",
        ),
        ("x = [1]\ndel x[0]", "Syntax", "'del' statement"),
        (
            "class A:\n    @property\n    def x(self):\n        return 1",
            "Syntax",
            "method decorators",
        ),
        (
            "'%s=%d' % ('x', 1)",
            "TypeError",
            "unsupported operand type(s) for %",
        ),
        (
            "class Box:\n    def __len__(self):\n        return 1\nlen(Box())",
            "TypeError",
            "has no len()",
        ),
        (
            "import itertools\nitertools.groupby('aab')",
            "AttributeError",
            "groupby",
        ),
        ("from dataclasses import asdict", "ImportError", "asdict"),
        (
            "from collections import OrderedDict",
            "ImportError",
            "OrderedDict",
        ),
        ("from typing import TypedDict", "ImportError", "TypedDict"),
        (
            "sorted(['b', 'A'], key=str.lower)",
            "AttributeError",
            "lower",
        ),
        (
            "try:\n    raise ValueError('a')\nexcept ValueError as e:\n    e.__cause__",
            "AttributeError",
            "__cause__",
        ),
        ("import time", "ModuleNotFoundError", "time"),
        ("import random", "ModuleNotFoundError", "random"),
        ("import string", "ModuleNotFoundError", "string"),
        ("asyncio.create_task", "AttributeError", "create_task"),
        ("asyncio.Future", "AttributeError", "Future"),
        ("asyncio.wait_for", "AttributeError", "wait_for"),
    ] {
        let run = run_py(code);
        match run.error() {
            EngineError::Syntax { message, .. } => {
                assert_eq!(kind, "Syntax", "{code}: {message}");
                assert!(message.contains(expected), "{code}: {message}");
            }
            EngineError::Guest { name, message, .. } => {
                assert_eq!(kind, name, "{code}: {message}");
                assert!(message.contains(expected), "{code}: {message}");
            }
            other => panic!("{code}: {other:?}"),
        }
    }
    // What to use instead works.
    let run = run_py(
        "from dataclasses import dataclass\n\
         @dataclass\n\
         class Item:\n\
         \x20   name: str\n\
         item = Item('pen')\n\
         x = [1, 2]\n\
         x.pop(0)\n\
         [f'{1:03d}', '{}={}'.format('x', 1), {'name': item.name}, x, sorted(['b', 'A'], key=lambda s: s.lower())]",
    );
    assert_eq!(
        run.value(),
        &json!(["001", "x=1", { "name": "pen" }, [2], ["A", "b"]])
    );
}

#[test]
fn programs_run_as_models_write_them() {
    // A markdown fence: blanked, so lines keep their numbers.
    assert_eq!(run_py("```python\nx = 2\nx * 3\n```\n").value(), &json!(6));
    let (_, _, line) = guest(run_py("```py\nx = 1\nraise ValueError('three')\n```").error());
    assert_eq!(line, Some(3));
    // An entry function defined and never called is called.
    assert_eq!(
        run_py("async def main():\n    return await tools.t.add(a=1, b=2)\n").value(),
        &json!(3.0)
    );
    assert_eq!(
        run_py("limit = 2\ndef run():\n    return limit * 5\nunused = 0").value(),
        &json!(10)
    );
    // Not when the program calls it (asyncio.run included), or has a value of its own.
    assert_eq!(
        run_py("import asyncio\ncalls = []\nasync def main():\n    calls.append(1)\n    return len(calls)\nasyncio.run(main())").value(),
        &json!(1)
    );
    assert_eq!(
        run_py("def main():\n    return 1\n'mine'").value(),
        &json!("mine")
    );
}

#[test]
fn what_the_value_does_not_tell_is_a_warning() {
    let run = run_py("total = await tools.t.add(a=1, b=2)");
    assert_eq!(run.value(), &json!(null));
    assert_eq!(
        run.warnings,
        [
            "the program returned nothing (its value is None, sent as null; a program's value is its \
          last expression): it ends by assigning `total`. End it with `total` alone on the last \
          line."
        ]
    );
    for code in ["print('found 3')\nx = 1", "None", "x = 1\nx"] {
        assert!(run_py(code).warnings.is_empty(), "{code}");
    }
    // A call never awaited, still running at the end.
    let run = run_py("tools.t.slow(ms=200)\n'done'");
    assert_eq!(run.value(), &json!("done"));
    assert!(
        run.warnings[0]
            .starts_with("the program ended while 1 tool call it made was still running"),
        "{:?}",
        run.warnings
    );
}

#[test]
fn sets_are_arrays_and_unawaited_calls_are_named() {
    assert_eq!(
        run_py("{'ids': {3}, 'frozen': frozenset([1])}").value(),
        &json!({ "ids": [3], "frozen": [1] })
    );
    let run = run_py("{'sum': tools.t.add(a=1, b=2)}");
    let EngineError::Unserializable { message } = run.error() else {
        panic!("{:?}", run.error());
    };
    assert!(
        message.starts_with("the result[\"sum\"] is a coroutine (<coroutine")
            && message
                .contains("a call that was not awaited, which cannot be sent as JSON; await it"),
        "{message}"
    );
}
