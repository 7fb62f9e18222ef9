//! Upstream servers as users meet them, through the real binary: what a server says about using
//! it (its instructions) reaches the model, and a remote server that comes up after toolweave
//! answers once it is there.

use std::time::{Duration, Instant};

use serde_json::json;
use toolweave_testkit::fixture_http::RemoteFixture;
use toolweave_testkit::harness::Toolweave;
use toolweave_testkit::http::HttpToolweave;

use super::toolweave;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describing_a_server_shows_its_instructions_before_its_tools() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({ "mcpServers": {
            "fixture": {
                "command": toolweave_testkit::fixture_binary(),
                "args": ["--instructions", "Call add for sums.\nNever call crash."],
            },
            "plain": { "command": toolweave_testkit::fixture_binary() },
            "hiding": {
                "command": toolweave_testkit::fixture_binary(),
                "args": ["--instructions", "Be brief.\u{200b}\u{e0072}\u{e006d}"],
            },
        } })
        .to_string(),
    )
    .unwrap();
    let server = Toolweave::start(toolweave(), &config, &[]).await.unwrap();
    // Characters that do not show are written as escapes: what the model reads, a person sees.
    let described = server
        .call("describe_tools", json!({ "names": ["hiding"] }))
        .await
        .unwrap();
    let text = described.content[0].as_text().unwrap().text.clone();
    assert!(
        text.starts_with(
            "Instructions from server \"hiding\":\nBe brief.\\u{200b}\\u{e0072}\\u{e006d}\n\n"
        ),
        "{text:?}"
    );
    let described = server
        .call("describe_tools", json!({ "names": ["fixture"] }))
        .await
        .unwrap();
    let text = described.content[0].as_text().unwrap().text.clone();
    assert!(
        text.starts_with(
            "Instructions from server \"fixture\":\nCall add for sums.\nNever call crash.\n\n"
        ),
        "{text}"
    );
    assert!(text.contains("add(args"), "the declarations follow: {text}");
    // Like the declarations, they are in the text only.
    let structured = described.structured_content.unwrap();
    assert!(structured["instructions"].is_null(), "{structured}");
    assert!(
        structured["tools"]
            .as_array()
            .is_some_and(|tools| !tools.is_empty())
    );

    // Not for a single tool, nor for a server that gave none.
    for names in [json!(["fixture.add"]), json!(["plain"])] {
        let described = server
            .call("describe_tools", json!({ "names": names }))
            .await
            .unwrap();
        let text = described.content[0].as_text().unwrap().text.clone();
        assert!(!text.contains("Instructions from server"), "{text}");
        assert!(text.contains("add(args"), "{text}");
    }
    server.stop().await.unwrap();
}

/// A server's instructions are part of the describe answer's size: next to the same tools
/// without instructions, fewer tools fit in `--max-result-bytes`, and the ones left out are named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_s_instructions_count_in_the_size_of_its_description() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    let instructions = "Read this first. ".repeat(400);
    std::fs::write(
        &config,
        json!({ "mcpServers": {
            "wordy": {
                "command": toolweave_testkit::fixture_binary(),
                "args": ["--instructions", instructions],
            },
            "plain": { "command": toolweave_testkit::fixture_binary() },
        } })
        .to_string(),
    )
    .unwrap();
    let server = Toolweave::start(toolweave(), &config, &["--max-result-bytes", "8000"])
        .await
        .unwrap();
    let mut described = Vec::new();
    for name in ["plain", "wordy"] {
        let answer = server
            .call("describe_tools", json!({ "names": [name] }))
            .await
            .unwrap();
        let structured = answer.structured_content.unwrap();
        let tools = structured["tools"].as_array().unwrap().len();
        let omitted = structured["omitted"]
            .as_array()
            .map_or(0, |omitted| omitted.len());
        described.push((tools, omitted));
    }
    let [(plain_tools, plain_omitted), (wordy_tools, wordy_omitted)] = described[..] else {
        panic!("{described:?}");
    };
    assert_eq!(plain_tools + plain_omitted, wordy_tools + wordy_omitted);
    assert!(
        wordy_tools > 0 && wordy_tools < plain_tools,
        "{described:?}: the instructions take room the tools had"
    );
    server.stop().await.unwrap();
}

/// What a server says about itself finds its tools: words only its instructions have
/// ("currencies", "yen") find its tools and no other server's, and weigh less than what a tool
/// says itself (the echo tools, which say "send back", come before the other tools of the
/// server whose instructions say it too).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_s_instructions_find_its_tools() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({ "mcpServers": {
            "alpha": {
                "command": toolweave_testkit::fixture_binary(),
                "args": ["--instructions", "This server converts currencies: yen, euros and pounds. Every answer is text sent back to you."],
            },
            "beta": { "command": toolweave_testkit::fixture_binary() },
        } })
        .to_string(),
    )
    .unwrap();
    let server = Toolweave::start(toolweave(), &config, &[]).await.unwrap();
    let search = async |query: &str| {
        let found = server
            .call("search_tools", json!({ "query": query, "limit": 8 }))
            .await
            .unwrap();
        let results = found.structured_content.unwrap()["results"].clone();
        results
            .as_array()
            .unwrap()
            .iter()
            .map(|result| result["name"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    let found = search("convert yen to euros").await;
    assert!(!found.is_empty(), "nothing found");
    assert!(
        found.iter().all(|name| name.starts_with("alpha.")),
        "{found:?}"
    );
    let found = search("send text back").await;
    let mut first_two = found[..2].to_vec();
    first_two.sort();
    assert_eq!(first_two, ["alpha.echo", "beta.echo"], "{found:?}");
    server.stop().await.unwrap();
}

/// A free port on the loopback address, for a server that is not listening yet.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `toolweave serve --http` and a remote server started at the same moment: toolweave's first
/// connection is refused, and once the server listens a call answers within one backoff (the
/// first is 1 s), without restarting toolweave.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_server_that_comes_up_late_answers_within_one_backoff() {
    let dir = tempfile::tempdir().unwrap();
    let address = format!("127.0.0.1:{}", free_port());
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({ "mcpServers": { "web": { "type": "http", "url": format!("http://{address}/mcp") } } })
            .to_string(),
    )
    .unwrap();
    let late = tokio::spawn({
        let address = address.clone();
        async move {
            let fixture =
                RemoteFixture::start(&["--http", &address, "--start-delay-ms", "4000"]).await;
            (fixture, Instant::now())
        }
    });
    let gateway = HttpToolweave::start(toolweave(), &config, &[], &[])
        .await
        .unwrap();
    let client = gateway.connect(None).await.unwrap();
    let code = "try { return await tools.web.add({ a: 2, b: 5 }) } catch (e) { return String(e) }";

    let before = client.execute(code, "javascript").await.unwrap();
    if late.is_finished() {
        eprintln!("SKIPPED the check before the server listens: this machine took 4 s to get here");
    } else {
        let text = before
            .value()
            .unwrap()
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(text.contains("the connection was refused"), "{text}");
    }

    let (fixture, listening) = late.await.unwrap();
    let _fixture = fixture.unwrap();
    let answered = loop {
        let run = client.execute(code, "javascript").await.unwrap();
        if run.value().unwrap() == &json!("7") {
            break listening.elapsed();
        }
        assert!(
            listening.elapsed() < Duration::from_secs(6),
            "no answer {} ms after the server listened: {}",
            listening.elapsed().as_millis(),
            run.text
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    eprintln!(
        "answered {} ms after the server listened",
        answered.as_millis()
    );
}
