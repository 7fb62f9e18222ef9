//! The three tools over MCP, in process: listing, discovery, an execution that calls a tool, a
//! guest error and a call the policy refuses, each answered as the client reads it.

use serde_json::json;
use toolweave_core::Flavor;

use super::{call, connect, gateway, text};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_lists_the_three_tools() {
    let client = connect(gateway()).await;
    let info = client.peer_info().expect("the server's initialize answer");
    let server = info
        .server_info
        .as_ref()
        .expect("the server's name and version");
    assert_eq!(server.name, "toolweave");
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|tool| tool.name.into_owned())
        .collect();
    assert_eq!(names, ["search_tools", "describe_tools", "execute_code"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_tools_finds_a_tool_by_what_it_does() {
    let gateway = gateway();
    let client = connect(gateway.clone()).await;
    let result = call(
        &client,
        "search_tools",
        json!({"query": "multiply numbers", "limit": 5}),
    )
    .await;
    assert_eq!(result.is_error, Some(false));
    let answer = gateway
        .search("multiply numbers".to_owned(), 5, Flavor::TypeScript)
        .await
        .expect("a search");
    assert_eq!(
        text(&result),
        toolweave_core::search_text("multiply numbers", &answer, &[])
    );
    assert!(
        text(&result).starts_with("tools.math.multiply(args: { a: number; b: number })"),
        "{}",
        text(&result)
    );
    // A denied tool is not in the catalog the model searches.
    let result = call(&client, "search_tools", json!({"query": "secret"})).await;
    assert!(!text(&result).contains("math.secret"), "{}", text(&result));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_tools_gives_a_declaration() {
    let client = connect(gateway()).await;
    let result = call(
        &client,
        "describe_tools",
        json!({"names": ["math.multiply"]}),
    )
    .await;
    assert_eq!(result.is_error, Some(false));
    let text = text(&result);
    assert!(text.contains("Multiplies two numbers."), "{text}");
    assert!(
        text.contains("multiply(args: { a: number; b: number })"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn execute_code_returns_the_value_of_a_tool_call() {
    let client = connect(gateway()).await;
    let result = call(
        &client,
        "execute_code",
        json!({"code": "const product = await tools.math.multiply({a: 6, b: 7});\n({product})"}),
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    let structured = result.structured_content.expect("structured content");
    assert_eq!(structured["result"], json!({"product": 42}));
    assert_eq!(structured["stats"]["toolCalls"], json!(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_error_is_an_error_result() {
    let client = connect(gateway()).await;
    let result = call(
        &client,
        "execute_code",
        json!({"code": "await tools.math.fail({});"}),
    )
    .await;
    assert_eq!(result.is_error, Some(true));
    let structured = result.structured_content.expect("structured content");
    assert_eq!(structured["error"]["kind"], "GuestError");
    assert_eq!(
        structured["error"]["message"],
        "Error: math.fail returned an error: the disk is full\n    at line 1, column 18:\n      1 | await tools.math.fail({});\n                           ^"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_the_policy_denies_is_refused_with_the_rule() {
    let client = connect(gateway()).await;
    let result = call(
        &client,
        "execute_code",
        json!({"code": "try { await tools.math.secret({}); return 'called'; } catch (error) { return error.message; }"}),
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    let structured = result.structured_content.expect("structured content");
    assert_eq!(
        structured["result"],
        "math.secret may not be called: toolweave's policy keeps it from code (the deny rule \"math.secret\" matches it). The people who run toolweave set the rules (--allow, --deny, its settings file); code cannot change them"
    );
}
