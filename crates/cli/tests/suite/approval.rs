//! Tools their servers mark destructive: called only when an allow rule names them or the
//! person at the client approves the call (MCP elicitation); a client that cannot be asked gets
//! a refusal that says how to allow the tool.

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, Implementation,
};
use rmcp::service::RequestContext;
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::{Value, json};
use toolweave_testkit::harness::{Execution, Toolweave, fixture_config, serve_with};

use super::toolweave;

const REMOVE: &str =
    "try { return await tools.fixture.remove({ name: NAME }) } catch (e) { return String(e) }";

fn remove(name: &str) -> String {
    REMOVE.replace("NAME", &format!("{name:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_cannot_be_asked_gets_a_refusal_unless_a_rule_allows() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = Toolweave::start(toolweave(), &config, &[]).await.unwrap();
    let refused = server.execute(&remove("x"), "javascript").await.unwrap();
    let message = refused.value().unwrap().as_str().unwrap().to_owned();
    assert!(
        message.contains("fixture.remove was not called"),
        "{message}"
    );
    assert!(message.contains("marks it destructive"), "{message}");
    assert!(
        message.contains("does not support elicitation"),
        "{message}"
    );
    assert!(message.contains("--allow fixture.remove"), "{message}");
    // Tools not marked destructive need no approval.
    let fine = server
        .execute(
            "return await tools.fixture.add({ a: 1, b: 2 })",
            "javascript",
        )
        .await
        .unwrap();
    assert_eq!(fine.value().unwrap(), &json!(3));
    server.stop().await.unwrap();

    let server = Toolweave::start(toolweave(), &config, &["--allow", "fixture.*"])
        .await
        .unwrap();
    let allowed = server.execute(&remove("x"), "javascript").await.unwrap();
    assert_eq!(allowed.value().unwrap(), &json!("removed x"));
    server.stop().await.unwrap();
}

/// A client that supports elicitation and approves only items named `ok-…`, keeping what it
/// was asked.
#[derive(Clone, Default)]
struct Approving {
    asked: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Approving {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(ElicitationCapability::new());
        ClientConfig::new(
            capabilities,
            Implementation::new("approving-test-client", "0"),
        )
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams { message, .. } = request else {
            return Ok(ElicitResult::new(ElicitationAction::Cancel));
        };
        let approve = message.contains("\"ok-");
        self.asked.lock().unwrap().push(message);
        Ok(if approve {
            ElicitResult::new(ElicitationAction::Accept).with_content(json!({ "approve": true }))
        } else {
            ElicitResult::new(ElicitationAction::Decline)
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_supports_elicitation_is_asked_for_each_call() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let approving = Approving::default();
    let (client, _) = serve_with(toolweave(), &config, &[], &[], approving.clone())
        .await
        .unwrap();
    let execute = async |code: &str| -> Value {
        let Value::Object(arguments) = json!({ "code": code, "language": "javascript" }) else {
            unreachable!("a literal object");
        };
        let result = client
            .call_tool(CallToolRequestParams::new("execute_code").with_arguments(arguments))
            .await
            .unwrap();
        Execution::from_result(result)
            .unwrap()
            .value()
            .unwrap()
            .clone()
    };
    assert_eq!(execute(&remove("ok-1")).await, json!("removed ok-1"));
    let declined = execute(&remove("keep-2")).await;
    let declined = declined.as_str().unwrap();
    assert!(declined.contains("declined this call"), "{declined}");
    let asked = approving.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked[0].contains("fixture.remove"), "{}", asked[0]);
    assert!(
        asked[0].contains("\"ok-1\""),
        "the arguments are shown: {}",
        asked[0]
    );
    client.cancel().await.unwrap();
}
