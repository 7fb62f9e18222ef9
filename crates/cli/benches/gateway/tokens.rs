//! What the model pays for: tokens of real answers from the real binary, over stdio, with the
//! official npm servers (filesystem, memory, everything, sequential-thinking) behind it.
//!
//! `cargo bench -p toolweave --bench gateway -- tokens` (any profile: `--profile dev` measures the debug
//! build; the counts do not depend on it). Needs the npm servers (`npm ci --prefix tests/npm`).
//! Prints one Markdown table: for each answer, the tokens (o200k, as OpenAI's current models
//! count them) of its text, of its `structuredContent` as compact JSON, and of the whole
//! `CallToolResult` as compact JSON (what a client that forwards everything pays); then, for
//! reference, the `tools/list` of each upstream server and of toolweave in each shape (with the
//! four servers, and with the two fixture servers of `examples/mcp.json`).
//!
//! `TOOLWEAVE_BENCH_BINARY=/path/to/toolweave` measures another build of the binary (before and
//! after a change); `TOOLWEAVE_TOKENS_SHOW=1` prints each answer's text and structured content
//! after its row.

use std::path::{Path, PathBuf};

use rmcp::ServiceExt;
use rmcp::model::CallToolResult;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};
use toolweave_testkit::harness::Toolweave;

/// The npm servers, by the name the config gives them, and their package.
const SERVERS: [(&str, &str); 4] = [
    ("filesystem", "server-filesystem"),
    ("memory", "server-memory"),
    ("everything", "server-everything"),
    ("sequential-thinking", "server-sequential-thinking"),
];

fn tokens(text: &str) -> usize {
    tiktoken_rs::o200k_base_singleton()
        .encode_with_special_tokens(text)
        .len()
}

fn package_entry(package: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/npm/node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js")
}

/// The command and arguments that start `package` with its data under `dir`.
fn server_command(package: &str, dir: &Path) -> (String, Vec<String>, Vec<(String, String)>) {
    let entry = package_entry(package).display().to_string();
    match package {
        "server-filesystem" => (
            "node".to_owned(),
            vec![entry, dir.join("files").display().to_string()],
            Vec::new(),
        ),
        "server-memory" => (
            "node".to_owned(),
            vec![entry],
            vec![(
                "MEMORY_FILE_PATH".to_owned(),
                dir.join("memory.jsonl").display().to_string(),
            )],
        ),
        "server-everything" => (
            "node".to_owned(),
            vec![entry, "stdio".to_owned()],
            Vec::new(),
        ),
        _ => ("node".to_owned(), vec![entry], Vec::new()),
    }
}

/// A folder with a few files a model would look at, and the config of the four servers.
fn setup(dir: &Path) -> PathBuf {
    let files = dir.join("files");
    std::fs::create_dir_all(files.join("src")).expect("files");
    std::fs::write(
        files.join("notes.md"),
        "# Notes\n\nThe release is on Friday. Ada reviews the parser; Grace writes the docs.\n\
         Open questions: how large may a result be, and who pays for the tokens?\n",
    )
    .expect("notes");
    std::fs::write(
        files.join("src/main.rs"),
        "fn main() {\n    println!(\"hello\");\n}\n",
    )
    .expect("main.rs");
    std::fs::write(files.join("data.csv"), "name,count\nada,3\ngrace,5\n").expect("csv");
    let servers: serde_json::Map<String, Value> = SERVERS
        .iter()
        .map(|(name, package)| {
            let (command, args, env) = server_command(package, dir);
            let env: serde_json::Map<String, Value> = env
                .into_iter()
                .map(|(key, value)| (key, Value::String(value)))
                .collect();
            (
                (*name).to_owned(),
                json!({ "command": command, "args": args, "env": env }),
            )
        })
        .collect();
    let config = dir.join("mcp.json");
    std::fs::write(
        &config,
        serde_json::to_vec(&json!({ "mcpServers": servers })).expect("json"),
    )
    .expect("config");
    config
}

/// Tokens of the `tools/list` answer of `toolweave serve --config config <extra>`, once its
/// servers are ready (the single shape declares only the tools of servers that are).
async fn listed_tokens(toolweave: &Path, config: &Path, extra: &[&str]) -> usize {
    let server = Toolweave::start(toolweave, config, extra)
        .await
        .expect("toolweave starts");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let tools = server.list_tools().await.expect("tools/list");
        let text = serde_json::to_string(&json!({ "tools": tools })).expect("json");
        if !text.contains("Not available now") || std::time::Instant::now() > until {
            server.stop().await.expect("stop");
            return tokens(&text);
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// `examples/mcp.json` with its fixture command pointed at the fixture this build made.
fn example_config(dir: &Path) -> PathBuf {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/mcp.json");
    let text = std::fs::read_to_string(example).expect("examples/mcp.json");
    let fixture = toolweave_testkit::fixture_binary().display().to_string();
    let config = dir.join("example.json");
    std::fs::write(
        &config,
        text.replace("./target/release/toolweave-fixture", &fixture),
    )
    .expect("example config");
    config
}

/// One row: text, structured and whole-answer tokens.
fn row(label: &str, result: &CallToolResult) {
    let text: String = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.as_str()))
        .collect::<Vec<_>>()
        .join("\n");
    let structured = result
        .structured_content
        .as_ref()
        .map_or(0, |value| tokens(&value.to_string()));
    let whole = tokens(&serde_json::to_string(result).expect("a result is JSON"));
    let failed = if result.is_error == Some(true) {
        " (error)"
    } else {
        ""
    };
    println!(
        "| {label}{failed} | {} | {structured} | {whole} |",
        tokens(&text)
    );
    if std::env::var_os("TOOLWEAVE_TOKENS_SHOW").is_some() {
        println!("\n{text}\n");
        if let Some(structured) = &result.structured_content {
            println!("{structured}\n");
        }
    }
}

/// The programs, as a model writes them: each returns what it read, as models often do.
fn programs(files: &Path) -> Vec<(&'static str, String)> {
    let files = files.display();
    vec![
        (
            "execute: memory, create 2 entities and a relation, return the graph",
            r#"await tools.memory.create_entities({ entities: [
  { name: "Ada Lovelace", entityType: "person", observations: ["wrote the first program", "worked with Charles Babbage"] },
  { name: "Analytical Engine", entityType: "machine", observations: ["designed by Charles Babbage", "never completed"] },
] });
await tools.memory.create_relations({ relations: [{ from: "Ada Lovelace", to: "Analytical Engine", relationType: "programmed" }] });
return await tools.memory.read_graph({});"#
                .to_owned(),
        ),
        (
            "execute: filesystem, list a folder and read a file",
            format!(
                r#"const listing = await tools.filesystem.list_directory({{ path: "{files}" }});
const notes = await tools.filesystem.read_text_file({{ path: "{files}/notes.md" }});
return {{ listing, notes }};"#
            ),
        ),
        (
            "execute: everything, sum and weather, with console lines",
            r#"const sum = await tools.everything.get_sum({ a: 2, b: 5 });
const weather = await tools.everything.get_structured_content({ location: "New York" });
console.log("sum:", sum);
console.log("weather:", weather);
return { sum, weather };"#
                .to_owned(),
        ),
        (
            "execute: sequential-thinking, one thought",
            r#"return await tools.sequential_thinking.sequentialthinking({
  thought: "The answer needs the file list first, then the notes.",
  thoughtNumber: 1, totalThoughts: 2, nextThoughtNeeded: true,
});"#
                .to_owned(),
        ),
        (
            "execute: a runtime error (a method of an object)",
            format!(
                r#"const listing = await tools.filesystem.list_directory({{ path: "{files}" }});
return listing.content.map((line) => line.slice(6));"#
            ),
        ),
        (
            "execute: memory, 300 entities, return the whole graph",
            r#"const entities = Array.from({ length: 300 }, (_, i) => ({
  name: `person ${i}`, entityType: "person", observations: [`joined in ${2000 + (i % 25)}`, `works on project ${i % 7}`],
}));
await tools.memory.create_entities({ entities });
return await tools.memory.read_graph({});"#
                .to_owned(),
        ),
    ]
}

#[tokio::main(flavor = "current_thread")]
pub async fn main() {
    for (_, package) in SERVERS {
        if !package_entry(package).exists() {
            println!(
                "{} is missing: run `npm ci --prefix tests/npm`",
                package_entry(package).display()
            );
            return;
        }
    }
    let toolweave = toolweave_testkit::built_binary("toolweave");
    let dir = tempfile::tempdir().expect("temp dir");
    let config = setup(dir.path());
    let server = Toolweave::start(&toolweave, &config, &[])
        .await
        .expect("toolweave starts");
    // Every server ready before anything is measured.
    let ready = server
        .execute(
            "return await tools.sequential_thinking.sequentialthinking({ thought: 'warm up', thoughtNumber: 1, totalThoughts: 1, nextThoughtNeeded: false })",
            "typescript",
        )
        .await
        .expect("the servers start");
    assert!(!ready.is_error, "{}", ready.text);

    println!("| answer | text | structuredContent | whole result |");
    println!("|---|---:|---:|---:|");
    for (label, code) in programs(&dir.path().join("files")) {
        let result = server
            .call(
                "execute_code",
                json!({ "code": code, "language": "typescript" }),
            )
            .await
            .expect("execute_code");
        row(label, &result);
    }
    for query in [
        "read file contents",
        "create entities in the knowledge graph",
        "send an email to my boss",
        "",
    ] {
        let result = server
            .call("search_tools", json!({ "query": query }))
            .await
            .expect("search_tools");
        row(&format!("search: {query:?}"), &result);
    }
    for names in [
        json!(["filesystem.read_text_file"]),
        json!(["memory.create_entities"]),
        json!(["memory"]),
        json!(["filesystem"]),
        json!(["everything"]),
        json!([
            "memory.create_entities",
            "mcp__memory__create_entities",
            "memory"
        ]),
    ] {
        let result = server
            .call("describe_tools", json!({ "names": names }))
            .await
            .expect("describe_tools");
        row(&format!("describe: {names}"), &result);
    }
    let tools = server.list_tools().await.expect("tools/list");
    let own = tokens(&serde_json::to_string(&json!({ "tools": tools })).expect("json"));
    server.stop().await.expect("stop");

    println!();
    println!("| tools/list of | tokens |");
    println!("|---|---:|");
    for (name, package) in SERVERS {
        let (command, args, env) = server_command(package, dir.path());
        let command = tokio::process::Command::new(command).configure(|command| {
            // Its own configuration folder: a benchmark never writes the user's.
            command
                .args(&args)
                .env("XDG_CONFIG_HOME", toolweave_testkit::harness::config_home())
                .envs(env.iter().cloned());
        });
        let (transport, _) = TokioChildProcess::builder(command)
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
        let client = ().serve(transport).await.expect("initialize");
        let tools = client.list_all_tools().await.expect("tools/list");
        let upstream = tokens(&serde_json::to_string(&json!({ "tools": tools })).expect("json"));
        println!("| {name} (directly) | {upstream} |");
        client.cancel().await.expect("stop");
    }
    println!("| toolweave, with all four | {own} |");
    let single = listed_tokens(&toolweave, &config, &["--shape", "single"]).await;
    println!("| toolweave --shape single, with all four | {single} |");
    let example = example_config(dir.path());
    for (label, extra) in [
        ("toolweave, examples/mcp.json", &[][..]),
        (
            "toolweave --shape single, examples/mcp.json",
            &["--shape", "single"][..],
        ),
        (
            "toolweave --direct demo.add, examples/mcp.json",
            &["--direct", "demo.add"][..],
        ),
    ] {
        let count = listed_tokens(&toolweave, &example, extra).await;
        println!("| {label} | {count} |");
    }
}
