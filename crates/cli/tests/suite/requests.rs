//! Requests an upstream server sends to the client (elicitation, sampling, roots) while it works
//! on a call made by guest code: they reach the client session that ran the code, through the
//! real binary, and come back to the server; a client that cannot answer one is not asked, and
//! the server reads why.

#![allow(deprecated)] // Sampling and roots (SEP-2577).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, Implementation, ListRootsResult, Root, RootsCapabilities,
    SamplingCapability, SamplingMessage,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};
use toolweave_testkit::harness::{Execution, fixture_config, serve_with};
use toolweave_testkit::http::HttpToolweave;

use super::toolweave;

/// A client that supports elicitation, sampling and roots, answers each, and keeps what it was
/// asked. With `hang`, it never answers an elicitation, and notes when it is cancelled; with
/// `slow_roots`, it takes 600 ms to give its roots.
#[derive(Clone, Default)]
struct Answering {
    asked: Arc<Mutex<Vec<String>>>,
    prompts: Arc<Mutex<Vec<String>>>,
    roots_asked: Arc<AtomicUsize>,
    cancelled: Arc<AtomicUsize>,
    hang: bool,
    slow_roots: bool,
}

impl ClientHandler for Answering {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(ElicitationCapability::new());
        capabilities.sampling = Some(SamplingCapability::default());
        let mut roots = RootsCapabilities::default();
        roots.list_changed = Some(true);
        capabilities.roots = Some(roots);
        ClientConfig::new(
            capabilities,
            Implementation::new("answering-test-client", "0"),
        )
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams { message, .. } = request else {
            return Err(ErrorData::invalid_params("a form was expected", None));
        };
        self.asked.lock().unwrap().push(message);
        if self.hang {
            context.ct.cancelled().await;
            self.cancelled.fetch_add(1, Ordering::SeqCst);
            return Err(ErrorData::internal_error("cancelled", None));
        }
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({ "answer": "blue" })))
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let prompt = params
            .messages
            .first()
            .and_then(|message| serde_json::to_value(&message.content).ok())
            .map(|content| content["text"].as_str().unwrap_or_default().to_owned())
            .unwrap_or_default();
        self.prompts.lock().unwrap().push(prompt);
        Ok(CreateMessageResult::new(
            SamplingMessage::assistant_text("four"),
            "test-model".to_owned(),
        ))
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let asked = self.roots_asked.fetch_add(1, Ordering::SeqCst) + 1;
        if self.slow_roots {
            tokio::time::sleep(Duration::from_millis(600)).await;
        }
        Ok(ListRootsResult::new(vec![Root::new(format!(
            "file:///work/project-{asked}"
        ))]))
    }
}

/// Runs `code` as JavaScript in `client`'s session.
async fn execute<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    code: &str,
) -> Execution {
    let Value::Object(arguments) = json!({ "code": code, "language": "javascript" }) else {
        unreachable!("a literal object");
    };
    let params = CallToolRequestParams::new("execute_code").with_arguments(arguments);
    Execution::from_result(client.call_tool(params).await.unwrap()).unwrap()
}

fn audit_lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_requests_reach_the_client_whose_code_made_the_call() {
    let (dir, config) = fixture_config(&["fixture"]).unwrap();
    let log = dir.path().join("audit.jsonl");
    let answering = Answering::default();
    let (client, _) = serve_with(
        toolweave(),
        &config,
        &["--audit-log", log.to_str().unwrap()],
        &[],
        answering.clone(),
    )
    .await
    .unwrap();

    let run = execute(
        &client,
        "const asked = await tools.fixture.ask({ message: 'Favourite colour?' });
         const sampled = await tools.fixture.sample({ prompt: 'What is 2 + 2?' });
         const roots = [await tools.fixture.roots({}), await tools.fixture.roots({})];
         const declared = await tools.fixture.capabilities({});
         return { asked, sampled, roots, declared };",
    )
    .await;
    let value = run.value().unwrap();
    assert_eq!(
        value["asked"],
        json!({ "action": "accept", "content": { "answer": "blue" } })
    );
    // The person is told which server asks.
    assert_eq!(
        *answering.asked.lock().unwrap(),
        ["[fixture] Favourite colour?"]
    );
    assert_eq!(value["sampled"]["content"]["text"], "four", "{value}");
    assert_eq!(value["sampled"]["model"], "test-model");
    assert_eq!(*answering.prompts.lock().unwrap(), ["What is 2 + 2?"]);
    // The client's roots are asked once, then kept.
    let first = json!({ "roots": [{ "uri": "file:///work/project-1" }] });
    assert_eq!(value["roots"], json!([first, first]));
    assert_eq!(answering.roots_asked.load(Ordering::SeqCst), 1);
    // The server was told what the client declared, and no more but the tasks extension.
    assert_eq!(
        value["declared"],
        json!({
            "elicitation": {},
            "sampling": {},
            "roots": { "listChanged": true },
            // toolweave's own: it waits for an upstream tool that runs as a task.
            "extensions": { "io.modelcontextprotocol/tasks": {} }
        })
    );

    // Once the client says its roots changed, they are asked again.
    client.peer().notify_roots_list_changed().await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let roots = loop {
        let run = execute(&client, "return await tools.fixture.roots({})").await;
        let roots = run.value().unwrap().clone();
        if roots != first || std::time::Instant::now() > deadline {
            break roots;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        roots,
        json!({ "roots": [{ "uri": "file:///work/project-2" }] })
    );
    client.cancel().await.unwrap();

    // Each request is in the audit line of the execution it was made for, without contents.
    let lines = audit_lines(&log);
    let requests = &lines[0]["serverRequests"];
    let summary: Vec<(String, String, String)> = requests
        .as_array()
        .unwrap()
        .iter()
        .map(|request| {
            (
                request["server"].as_str().unwrap().to_owned(),
                request["kind"].as_str().unwrap().to_owned(),
                request["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("elicitation", "accept"),
        ("sampling", "ok"),
        ("roots", "ok"),
        ("roots", "ok"),
    ]
    .map(|(kind, outcome)| ("fixture".to_owned(), kind.to_owned(), outcome.to_owned()));
    assert_eq!(summary, expected);
    for request in requests.as_array().unwrap() {
        assert!(request.get("request").is_none() && request.get("answer").is_none());
        assert!(request["durationMs"].is_number());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_contents_the_audit_log_has_what_was_asked_and_answered() {
    let (dir, config) = fixture_config(&["fixture"]).unwrap();
    let log = dir.path().join("audit.jsonl");
    let (client, _) = serve_with(
        toolweave(),
        &config,
        &["--audit-log", log.to_str().unwrap(), "--audit-log-contents"],
        &[],
        Answering::default(),
    )
    .await
    .unwrap();
    let run = execute(
        &client,
        "return await tools.fixture.ask({ message: 'Name?' })",
    )
    .await;
    assert_eq!(run.value().unwrap()["action"], "accept");
    client.cancel().await.unwrap();
    let request = &audit_lines(&log)[0]["serverRequests"][0];
    assert_eq!(request["request"]["message"], "Name?");
    assert_eq!(request["answer"]["content"], json!({ "answer": "blue" }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_the_capability_is_not_asked_and_the_server_reads_why() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    // This client declares none of elicitation, sampling and roots.
    let (client, _) = serve_with(toolweave(), &config, &[], &[], ())
        .await
        .unwrap();
    let run = execute(
        &client,
        "const declared = await tools.fixture.capabilities({});
         const answers = [];
         for (const call of [() => tools.fixture.ask({ message: 'x' }), () => tools.fixture.sample({ prompt: 'x' }), () => tools.fixture.roots({})]) {
           try { answers.push(await call()) } catch (e) { answers.push(String(e)) }
         }
         return { declared, answers };",
    )
    .await;
    let value = run.value().unwrap();
    // Nothing of the client's; the tasks extension is toolweave's own.
    assert_eq!(
        value["declared"],
        json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } })
    );
    let answers = value["answers"].as_array().unwrap();
    for (answer, (method, capability)) in answers.iter().zip([
        ("elicitation/create", "elicitation"),
        ("sampling/createMessage", "sampling"),
        ("roots/list", "roots"),
    ]) {
        let text = answer.as_str().unwrap();
        assert!(
            text.contains(&format!(
                "toolweave did not pass {method} on: the MCP client toolweave serves does not \
                 support {capability} (it did not declare that capability)"
            )),
            "{text}"
        );
    }
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_ends_with_the_call_it_was_made_for() {
    let (dir, _) = fixture_config(&[]).unwrap();
    let config = dir.path().join("timeouts.json");
    std::fs::write(
        &config,
        json!({ "mcpServers": { "fixture": {
            "command": toolweave_testkit::fixture_binary(),
            "toolTimeouts": { "ask": 500 },
        } } })
        .to_string(),
    )
    .unwrap();
    let hanging = Answering {
        hang: true,
        ..Answering::default()
    };
    let (client, _) = serve_with(toolweave(), &config, &[], &[], hanging.clone())
        .await
        .unwrap();
    let run = execute(
        &client,
        "try { return await tools.fixture.ask({ message: 'Still there?' }) } catch (e) { return String(e) }",
    )
    .await;
    let text = run.value().unwrap().as_str().unwrap().to_owned();
    assert!(
        text.contains("within 500 ms (the tool's entry in \"toolTimeouts\""),
        "{text}"
    );
    // The client was asked, and told to stop when the call timed out.
    assert_eq!(*hanging.asked.lock().unwrap(), ["[fixture] Still there?"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while hanging.cancelled.load(Ordering::SeqCst) == 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(hanging.cancelled.load(Ordering::SeqCst), 1);
    client.cancel().await.unwrap();
}

/// A server asks for roots as soon as the client says they changed, whatever calls are in flight:
/// the request is not ended when such a call ends before the client answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roots_asked_after_a_change_outlive_the_call_in_flight() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let slow = Answering {
        slow_roots: true,
        ..Answering::default()
    };
    let (client, _) = serve_with(toolweave(), &config, &[], &[], slow.clone())
        .await
        .unwrap();
    // The server is up first: a server still starting is told nothing.
    let warm = execute(&client, "return await tools.fixture.add({ a: 1, b: 1 })").await;
    assert_eq!(warm.value().unwrap(), &json!("2"));
    let in_flight = execute(&client, "return await tools.fixture.slow({ ms: 200 })");
    let change = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        client.peer().notify_roots_list_changed().await.unwrap();
    };
    let (done, ()) = tokio::join!(in_flight, change);
    assert_eq!(done.value().unwrap(), &json!("done"));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let kept = loop {
        let run = execute(&client, "return await tools.fixture.roots({ kept: true })").await;
        let kept = run.value().unwrap().clone();
        // Nothing kept yet is the text "null", which reaches code as the string it is.
        if kept != "null" || std::time::Instant::now() > deadline {
            break kept;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        kept,
        json!({ "roots": [{ "uri": "file:///work/project-1" }] })
    );
    client.cancel().await.unwrap();
}

/// Over HTTP, a request goes to the session whose call the server works on; while calls of two
/// sessions are in flight to that server, nobody is asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_a_request_goes_to_the_session_that_made_the_call() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = HttpToolweave::start(toolweave(), &config, &[], &[])
        .await
        .unwrap();
    let connect = |handler: Answering| {
        let url = server.url();
        async move {
            let transport = StreamableHttpClientTransport::with_client(
                toolweave_testkit::http::client(),
                StreamableHttpClientTransportConfig::with_uri(url),
            );
            handler.serve(transport).await.unwrap()
        }
    };
    let first = Answering::default();
    let second = Answering::default();
    let first_client = connect(first.clone()).await;
    let second_client = connect(second.clone()).await;

    let ask = "try { return await tools.fixture.ask({ message: 'Who?' }) } catch (e) { return String(e) }";
    let alone = execute(&second_client, ask).await;
    assert_eq!(alone.value().unwrap()["action"], "accept");
    assert_eq!(*second.asked.lock().unwrap(), ["[fixture] Who?"]);
    // It travelled on the stream of the execute_code request, not the session's other one.
    let logged = server.stderr();
    assert!(
        !logged.contains("could not be routed to its originating stream"),
        "{logged}"
    );

    // The first session has a call in flight to the same server meanwhile.
    let busy = execute(
        &first_client,
        "return await tools.fixture.slow({ ms: 3000 })",
    );
    let crowded = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        execute(&second_client, ask).await
    };
    let (busy, crowded) = tokio::join!(busy, crowded);
    assert_eq!(busy.value().unwrap(), &json!("done"));
    let text = crowded.value().unwrap().as_str().unwrap().to_owned();
    assert!(
        text.contains(
            "toolweave did not pass elicitation/create on: calls from several client sessions \
             are in flight to this server"
        ),
        "{text}"
    );
    assert_eq!(second.asked.lock().unwrap().len(), 1);
    assert!(first.asked.lock().unwrap().is_empty());

    // Told over HTTP, where sessions come and go: everything toolweave can pass on.
    let declared = execute(&first_client, "return await tools.fixture.capabilities({})").await;
    let declared = declared.value().unwrap();
    assert!(
        declared["elicitation"]["form"].is_object() && declared["elicitation"]["url"].is_object(),
        "{declared}"
    );
    assert!(declared["sampling"].is_object() && declared["roots"]["listChanged"] == true);
}
