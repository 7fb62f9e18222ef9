//! What the tests share: a gateway with host functions as tools, served by a `ToolweaveServer`
//! over `tokio::io::duplex` to an rmcp client in the same process.

mod in_process;

use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use serde_json::{Value, json};
use toolweave_core::{ClosureProvider, Gateway, Isolation, Policy};
use toolweave_server::ToolweaveServer;
use toolweave_server::stdio::StdioTransport;

/// `math`: `multiply` answers the product of `a` and `b`, `fail` always fails, `secret` is kept
/// out by the gateway's policy (a deny rule).
fn math() -> ClosureProvider {
    let numbers = json!({
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"]
    });
    ClosureProvider::new("math")
        .tool(
            "multiply",
            "Multiplies two numbers.",
            numbers,
            |arguments, _context| {
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
        .tool(
            "secret",
            "Reads the secret.",
            json!({"type": "object"}),
            |_arguments, _context| async { Ok::<_, String>(json!("the secret")) },
        )
}

/// A gateway (engine threads, no worker processes) whose tools are [`math`]'s, `math.secret`
/// denied.
pub(crate) fn gateway() -> Arc<Gateway> {
    let policy = Policy::new(&[], &["math.secret".to_owned()]).expect("a deny rule");
    Gateway::builder()
        .isolation(Isolation::InProcess)
        .policy(policy)
        .provider(math())
        .build()
        .expect("a gateway")
}

/// A client connected to a `ToolweaveServer` of `gateway`, over in-memory pipes with the
/// server's own stdio transport on its side.
pub(crate) async fn connect(gateway: Arc<Gateway>) -> RunningService<RoleClient, ()> {
    let (client_side, server_side) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server_side);
    let server = ToolweaveServer::new(gateway);
    tokio::spawn(async move {
        let running = server
            .serve(StdioTransport::new(server_read, server_write))
            .await
            .expect("the server initializes");
        let _ = running.waiting().await;
    });
    ().serve(client_side).await.expect("the client initializes")
}

/// Calls `tool` with `arguments` (an object).
pub(crate) async fn call(
    client: &RunningService<RoleClient, ()>,
    tool: &str,
    arguments: Value,
) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object");
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
        .expect("the call is answered")
}

/// The text of `result`'s first content block.
pub(crate) fn text(result: &CallToolResult) -> &str {
    result
        .content
        .first()
        .and_then(|block| block.as_text())
        .map(|text| text.text.as_str())
        .expect("a text block")
}
