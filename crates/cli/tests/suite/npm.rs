//! The official npm servers as upstreams (installed by `.ci/run` into `tests/npm/node_modules`).

use serde_json::json;
use toolweave_testkit::harness::Toolweave;
use toolweave_testkit::skip::missing_prerequisite;

use super::protocol::tools_list_tokens;
use super::{repo_root, run_sdk_script, toolweave};

/// The config for the three npm servers, or why they cannot run here.
pub(super) fn npm_config(dir: &std::path::Path) -> Result<std::path::PathBuf, String> {
    let modules = repo_root().join("tests/npm/node_modules/@modelcontextprotocol");
    let entry = |package: &str| modules.join(package).join("dist/index.js");
    for package in ["server-everything", "server-memory", "server-filesystem"] {
        if !entry(package).exists() {
            return Err(format!(
                "{} is not installed (run `npm ci --prefix tests/npm`)",
                entry(package).display()
            ));
        }
    }
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::write(files.join("hello.txt"), "hello from a file").unwrap();
    let config = json!({ "mcpServers": {
        "everything": { "command": "node", "args": [entry("server-everything"), "stdio"] },
        "memory": { "command": "node", "args": [entry("server-memory")],
                    "env": { "MEMORY_FILE_PATH": dir.join("memory.jsonl") } },
        "filesystem": { "command": "node", "args": [entry("server-filesystem"), files] },
    }});
    let path = dir.join("mcp.json");
    std::fs::write(&path, serde_json::to_vec(&config).unwrap()).unwrap();
    Ok(path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_npm_servers_through_one_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let config = match npm_config(dir.path()) {
        Ok(config) => config,
        Err(why) => {
            missing_prerequisite("three_npm_servers_through_one_gateway", &why);
            return;
        }
    };
    let server = Toolweave::start(toolweave(), &config, &[]).await.unwrap();
    let tools = server.list_tools().await.unwrap();
    assert_eq!(tools.len(), 3);
    let tokens = tools_list_tokens(&tools);
    assert!(
        tokens <= 600,
        "tools/list costs {tokens} tokens with three npm servers"
    );

    let code = r#"
        const [sum, created, listing] = await Promise.all([
          tools.everything.get_sum({ a: 2, b: 5 }),
          tools.memory.create_entities({ entities: [
            { name: "Ada", entityType: "person", observations: ["wrote the first program"] },
            { name: "Engine", entityType: "machine", observations: [] },
          ] }),
          tools.filesystem.list_allowed_directories({}),
        ]);
        const graph = await tools.memory.read_graph({});
        const people = graph.entities.filter((e: { entityType: string }) => e.entityType === "person").map((e: { name: string }) => e.name);
        const dirs = typeof listing === "string" ? listing : JSON.stringify(listing);
        return { sum, people, sawFiles: dirs.includes("files") };
    "#;
    let result = server.execute(code, "typescript").await.unwrap();
    let value = result.value().unwrap();
    assert_eq!(value["people"], json!(["Ada"]), "{}", result.text);
    assert_eq!(value["sawFiles"], json!(true), "{}", result.text);
    let sum = &value["sum"];
    // server-everything answers get-sum with text such as "The sum of 2 and 5 is 7."
    assert!(sum == &json!(7) || sum.to_string().contains('7'), "{sum}");

    // With every server ready, names as models write them: an original spelling works, and a
    // name that exists nowhere gets the closest real tools (the mistakes of the issue this
    // gateway's names were rebuilt for).
    let code = r#"
        const outcomes = { dashed: await tools.everything["get-sum"]({ a: 1, b: 1 }) };
        for (const [label, call] of [
          ["listDir", () => tools.filesystem.list_dir({ path: "." })],
          ["server", () => tools.fs.read_file({ path: "hello.txt" })],
        ]) {
          try { await call(); outcomes[label] = "called"; } catch (error) { outcomes[label] = error.message; }
        }
        return outcomes;
    "#;
    let result = server.execute(code, "javascript").await.unwrap();
    let value = result.value().unwrap();
    assert!(value["dashed"].to_string().contains('2'), "{}", result.text);
    let list_dir = value["listDir"].as_str().unwrap_or_default();
    assert!(
        list_dir.starts_with(
            "unknown tool \"filesystem.list_dir\"; did you mean filesystem.list_directory"
        ) && list_dir.contains("The tools of filesystem are read_file"),
        "{list_dir}"
    );
    let unknown_server = value["server"].as_str().unwrap_or_default();
    assert!(
        unknown_server.starts_with("unknown tool \"fs.read_file\": there is no server \"fs\"; did you mean filesystem.read_file")
            && unknown_server.contains("The servers are everything, filesystem, memory."),
        "{unknown_server}"
    );

    let found = server
        .call("search_tools", json!({ "query": "add two numbers" }))
        .await
        .unwrap();
    let first = &found.structured_content.unwrap()["results"][0]["name"];
    assert_eq!(first, "everything.get_sum");
    server.stop().await.unwrap();
}

/// server-everything's resources and prompts from code, in both languages: listed (every page),
/// read, templates, a prompt with arguments; a server that offers none says so, an unknown server
/// names the ones there are, and a deny rule over `server.prompts/*` keeps prompts out while
/// resources stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_and_prompts_from_code() {
    let dir = tempfile::tempdir().unwrap();
    let config = match npm_config(dir.path()) {
        Ok(config) => config,
        Err(why) => {
            missing_prerequisite("resources_and_prompts_from_code", &why);
            return;
        }
    };
    let log = dir.path().join("audit.jsonl");
    let server = Toolweave::start(
        toolweave(),
        &config,
        &[
            "--deny",
            "everything.prompts/get",
            "--audit-log",
            log.to_str().unwrap(),
        ],
    )
    .await
    .unwrap();
    let javascript = r#"
        const listed = await resources.everything.list();
        const document = listed.find((resource) => resource.uri.endsWith("/instructions.md"));
        const contents = await resources.everything.read(document.uri);
        const templates = await resources.everything.templates();
        const promptList = await prompts.everything.list();
        const fail = (promise) => promise.then(() => "answered", (error) => error.message);
        return {
          listed: listed.length,
          text: contents[0].text.length > 100,
          mimeType: contents[0].mimeType,
          templates: templates.map((template) => template.uriTemplate).sort(),
          prompts: promptList.map((prompt) => prompt.name).includes("args-prompt"),
          denied: await fail(prompts.everything.get("args-prompt", { city: "Paris" })),
          notOffered: await fail(resources.filesystem.list()),
          unknown: await fail(resources.nowhere.list()),
          badUri: await fail(resources.everything.read(42)),
        };
    "#;
    let python = r#"
listed = await resources.everything.list()
document = [r for r in listed if r["uri"].endswith("/instructions.md")][0]
contents = await resources.everything.read(document["uri"])
templates = await resources.everything.templates()
prompt_list = await prompts.everything.list()
try:
    await prompts.everything.get("args-prompt", {"city": "Paris"})
    denied = "answered"
except Exception as error:
    denied = str(error)
try:
    await resources.filesystem.list()
    not_offered = "answered"
except Exception as error:
    not_offered = str(error)
try:
    await resources.nowhere.list()
    unknown = "answered"
except Exception as error:
    unknown = str(error)
try:
    await resources.everything.read(42)
    bad_uri = "answered"
except TypeError as error:
    bad_uri = str(error)
{
    "listed": len(listed),
    "text": len(contents[0]["text"]) > 100,
    "mimeType": contents[0].get("mimeType"),
    "templates": sorted(t["uriTemplate"] for t in templates),
    "prompts": "args-prompt" in [p["name"] for p in prompt_list],
    "denied": denied,
    "notOffered": not_offered,
    "unknown": unknown,
    "badUri": bad_uri,
}
"#;
    for (language, code) in [("javascript", javascript), ("python", python)] {
        let result = server.execute(code, language).await.unwrap();
        let value = result
            .value()
            .unwrap_or_else(|error| panic!("{language}: {error}"));
        let context = format!("{language}: {}", result.text);
        assert!(value["listed"].as_u64().unwrap_or(0) >= 7, "{context}");
        assert_eq!(value["text"], json!(true), "{context}");
        assert_eq!(value["mimeType"], json!("text/markdown"), "{context}");
        assert_eq!(
            value["templates"],
            json!([
                "demo://resource/dynamic/blob/{resourceId}",
                "demo://resource/dynamic/text/{resourceId}"
            ]),
            "{context}"
        );
        assert_eq!(value["prompts"], json!(true), "{context}");
        let denied = value["denied"].as_str().unwrap_or_default();
        assert!(
            denied.starts_with("everything.prompts/get is not allowed by the policy: the deny rule \"everything.prompts/get\" matches it"),
            "{context}"
        );
        let not_offered = value["notOffered"].as_str().unwrap_or_default();
        assert!(
            not_offered.contains("server \"filesystem\" offers no resources"),
            "{context}"
        );
        let unknown = value["unknown"].as_str().unwrap_or_default();
        assert!(
            unknown.starts_with(
                "no server named \"nowhere\" for resources.<server>; the servers are: "
            ) && ["everything", "filesystem", "memory"]
                .iter()
                .all(|name| unknown.contains(name)),
            "{context}"
        );
        assert!(
            value["badUri"]
                .as_str()
                .unwrap_or_default()
                .contains("must be a"),
            "{context}"
        );
    }
    server.stop().await.unwrap();
    // Each request is in the audit log as server.method, the denied one as denied.
    let text = std::fs::read_to_string(&log).unwrap();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let calls: Vec<(String, String)> = first["toolCalls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| {
            (
                call["name"].as_str().unwrap_or_default().to_owned(),
                call["outcome"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    for expected in [
        ("everything.resources/list", "ok"),
        ("everything.resources/read", "ok"),
        ("everything.resources/templates/list", "ok"),
        ("everything.prompts/list", "ok"),
        ("everything.prompts/get", "denied"),
        ("filesystem.resources/list", "error"),
    ] {
        assert!(
            calls.contains(&(expected.0.to_owned(), expected.1.to_owned())),
            "{expected:?} not in {calls:?}"
        );
    }
}

/// Search over the real servers: filesystem's `read_file` ("DEPRECATED: Use read_text_file
/// instead.") comes after the tool that replaces it and says so; a query no tool answers gets
/// "No strong match" and its closest tools marked weak; the structured copy leaves the
/// signatures to the text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_demotes_deprecated_tools_and_marks_weak_matches() {
    let dir = tempfile::tempdir().unwrap();
    let config = match npm_config(dir.path()) {
        Ok(config) => config,
        Err(why) => {
            missing_prerequisite(
                "search_demotes_deprecated_tools_and_marks_weak_matches",
                &why,
            );
            return;
        }
    };
    let server = Toolweave::start(toolweave(), &config, &[]).await.unwrap();
    // Every server ready before searching.
    let ready = server
        .execute(
            "await tools.filesystem.list_allowed_directories({}); await tools.memory.read_graph({}); return await tools.everything.echo({ message: 'up' })",
            "javascript",
        )
        .await
        .unwrap();
    assert!(!ready.is_error, "{}", ready.text);

    let found = server
        .call("search_tools", json!({ "query": "read file contents" }))
        .await
        .unwrap();
    let text = found.content[0].as_text().unwrap().text.clone();
    let structured = found.structured_content.unwrap();
    let names: Vec<&str> = structured["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| hit["name"].as_str().unwrap())
        .collect();
    let position = |name: &str| names.iter().position(|found| *found == name);
    assert!(
        position("filesystem.read_text_file") < position("filesystem.read_file"),
        "{names:?}"
    );
    let read_file = &structured["results"][position("filesystem.read_file").unwrap()];
    assert_eq!(
        read_file,
        &json!({
            "name": "filesystem.read_file",
            "description": "Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead.",
            "deprecated": true,
        })
    );
    assert!(text.contains("tools.filesystem.read_file(args: { path: string; tail?: number; head?: number }): Promise<{ content: string }>\n  Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead.\n"), "{text}");
    assert!(!text.starts_with("No strong match"), "{text}");
    assert_eq!(names.len(), toolweave_catalog::DEFAULT_SEARCH_LIMIT);

    let found = server
        .call(
            "search_tools",
            json!({ "query": "send an email to my boss" }),
        )
        .await
        .unwrap();
    let text = found.content[0].as_text().unwrap().text.clone();
    assert!(
        text.starts_with("No strong match for \"send an email to my boss\": no tool says it does that. The closest share a word or two with it:\ntools."),
        "{text}"
    );
    let results = found.structured_content.unwrap()["results"].clone();
    assert!(!results.as_array().unwrap().is_empty());
    for hit in results.as_array().unwrap() {
        assert_eq!(hit["weak"], json!(true), "{hit}");
        assert!(hit.get("signature").is_none(), "{hit}");
    }
    server.stop().await.unwrap();
}

/// server-everything serving `transport` (`streamableHttp` or `sse`) on a free loopback port, once
/// it accepts connections; killed when dropped. `Err` says why it cannot run here.
async fn everything_over_http(transport: &str) -> Result<(tokio::process::Child, u16), String> {
    let entry = repo_root()
        .join("tests/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if !entry.exists() {
        return Err(format!(
            "{} is not installed (run `npm ci --prefix tests/npm`)",
            entry.display()
        ));
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map_err(|error| format!("no free port: {error}"))?
        .port();
    let child = tokio::process::Command::new("node")
        .arg(&entry)
        .arg(transport)
        .env("PORT", port.to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|error| format!("node could not be started: {error}"))?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "server-everything ({transport}) did not listen on port {port} within 20 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    Ok((child, port))
}

/// server-everything over streamable HTTP and over the legacy SSE transport, as remote upstreams
/// of the real binary; the token in a header comes from a variable of toolweave's environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn npm_server_over_streamable_http_and_sse() {
    let servers = match (
        everything_over_http("streamableHttp").await,
        everything_over_http("sse").await,
    ) {
        (Ok(http), Ok(sse)) => (http, sse),
        (Err(why), _) | (_, Err(why)) => {
            missing_prerequisite("npm_server_over_streamable_http_and_sse", &why);
            return;
        }
    };
    let ((_http, http_port), (_sse, sse_port)) = servers;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    let headers = json!({ "Authorization": "Bearer ${TOOLWEAVE_TEST_TOKEN}" });
    let text = json!({ "mcpServers": {
        "web": { "type": "http", "url": format!("http://127.0.0.1:{http_port}/mcp"), "headers": headers },
        "legacy": { "type": "sse", "url": format!("http://127.0.0.1:{sse_port}/sse"), "headers": headers },
    }});
    std::fs::write(&config, text.to_string()).unwrap();
    let server = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        Toolweave::start_with_env(
            toolweave(),
            &config,
            &[],
            &[("TOOLWEAVE_TEST_TOKEN", "t-123")],
        ),
    )
    .await
    .expect("toolweave started within 60 s")
    .unwrap();
    let code = r#"
        const [web, legacy] = await Promise.all([
          tools.web.get_sum({ a: 2, b: 5 }),
          tools.legacy.get_sum({ a: 30, b: 12 }),
        ]);
        return { web, legacy };
    "#;
    let result = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        server.execute(code, "typescript"),
    )
    .await
    .expect("the execution finished within 60 s")
    .unwrap();
    let value = result
        .value()
        .unwrap_or_else(|error| panic!("{error}: {}", result.text));
    // server-everything answers get-sum with text such as "The sum of 2 and 5 is 7."
    for (key, sum) in [("web", 7), ("legacy", 42)] {
        let answer = &value[key];
        assert!(
            answer == &json!(sum) || answer.to_string().contains(&sum.to_string()),
            "{key}: {}",
            result.text
        );
    }
    server.stop().await.unwrap();
}

/// Runs `tests/python/<script>` with the official Python SDK (installed by `.ci/run` into
/// `target/venv`) against `toolweave serve` fronting the npm servers, and checks it printed
/// `<name>: ok`. Skipped, loudly, where the SDK or the servers are missing (never in CI).
fn run_python_sdk_script(script: &str, name: &str) {
    let dir = tempfile::tempdir().unwrap();
    match npm_config(dir.path()) {
        Ok(config) => run_sdk_script(name, &[config.as_os_str()]),
        Err(why) => missing_prerequisite(script, &why),
    }
}

/// The official Python SDK as the client.
#[test]
fn official_python_sdk_as_client() {
    run_python_sdk_script("sdk_client.py", "sdk_client");
}

/// server-everything's elicitation, sampling and roots requests, made while guest code calls its
/// tools, reach the Python SDK client's callbacks and their answers come back; its instructions
/// are shown; a roots change the client announces reaches it.
#[test]
fn server_requests_reach_the_official_python_sdk_client() {
    run_python_sdk_script("sdk_requests.py", "sdk_requests");
}
