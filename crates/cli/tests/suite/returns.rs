//! Result types observed: a tool without an output schema, once called from code, is declared
//! with the shape of what it returned (TypeScript and Python), marked as observed; the shape is
//! kept beside the pins without any value of the result, survives a restart, goes away when the
//! tool's definition changes, and is neither kept nor shown with `--observe-returns off`.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use toolweave_testkit::harness::{Toolweave, config_home};

use super::toolweave;

/// A value of the result that must never reach the disk.
const CANARY: &str = "canary-7d41c0e9-secret";

/// A config of one fixture server named `kv`, with `arguments` added, in `dir`.
fn kv_config(dir: &Path, file: &str, arguments: &[&str]) -> PathBuf {
    let mut args = vec!["--name", "kv"];
    args.extend_from_slice(arguments);
    let path = dir.join(file);
    let config = json!({"mcpServers": {"kv": {
        "command": toolweave_testkit::fixture_binary(),
        "args": args,
    }}});
    std::fs::write(&path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
    path
}

async fn serve(home: &Path, config: &Path, extra: &[&str]) -> Toolweave {
    let home = home.to_str().unwrap();
    Toolweave::start_with_env(toolweave(), config, extra, &[("XDG_CONFIG_HOME", home)])
        .await
        .unwrap()
}

/// `describe_tools` of `kv.keep` in `language`: the declaration the model reads.
async fn declaration(server: &Toolweave, language: &str) -> String {
    let described = server
        .call(
            "describe_tools",
            json!({"names": ["kv.keep"], "language": language}),
        )
        .await
        .unwrap();
    // The text is what the model reads: the declaration, in a fenced block.
    described.content[0].as_text().unwrap().text.clone()
}

/// Every file under `folder`, read as text.
fn files_under(folder: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(folder).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            text.push_str(&files_under(&path));
        } else {
            text.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap()));
        }
    }
    text
}

/// Calls `kv.keep` from code (TypeScript or Python) with the canary as its value.
async fn keep(server: &Toolweave, language: &str) {
    let code = match language {
        "python" => format!(
            "r = await tools.kv.keep(key='k', value='{CANARY}', expire_seconds=5)\nr['mode']"
        ),
        _ => format!(
            "const r = await tools.kv.keep({{ key: 'k', value: '{CANARY}', expire_seconds: 5 }}); r.mode"
        ),
    };
    let execution = server.execute(&code, language).await.unwrap();
    assert!(!execution.is_error, "{}", execution.text);
    assert_eq!(execution.structured["result"], "plain");
}

/// Waits until the shape file of `kv` names `key` (it is written off the call's path).
async fn file_with(home: &Path, key: &str) -> Value {
    let path = home.join("toolweave/observed/kv.json");
    for _ in 0..500 {
        if let Ok(text) = std::fs::read_to_string(&path)
            && text.contains(key)
        {
            return serde_json::from_str(&text).unwrap();
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("{} never named {key}", path.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_seen_is_declared_as_observed_kept_without_values_and_dropped_on_change() {
    let dir = tempfile::tempdir().unwrap();
    let home = config_home();
    let config = kv_config(dir.path(), "kv.json", &[]);
    let server = serve(&home, &config, &[]).await;

    // Nothing seen yet: the server declares no result.
    let before = declaration(&server, "typescript").await;
    assert!(before.contains("}): Promise<unknown>;\n"), "{before}");
    assert!(!before.contains("observed"), "{before}");

    keep(&server, "typescript").await;
    keep(&server, "python").await;
    let typescript = declaration(&server, "typescript").await;
    assert!(
        typescript.contains(
            "}): Promise<{ key: string; value: string; expire_seconds: number; mode: string }>; // observed in 2 calls, not declared by the server\n"
        ),
        "{typescript}"
    );
    let python = declaration(&server, "python").await;
    assert!(
        python.contains("class KeepResult(TypedDict):\n    key: str\n    value: str\n    expire_seconds: float\n    mode: str\n"),
        "{python}"
    );
    assert!(
        python.contains(") -> KeepResult:  # observed in 2 calls, not declared by the server\n"),
        "{python}"
    );
    // Search hits carry it too.
    let found = server
        .call("search_tools", json!({"query": "keep a value under a key"}))
        .await
        .unwrap();
    // The text is what the model reads: each hit with its signature.
    let text = &found.content[0].as_text().unwrap().text;
    assert!(
        text.contains(
            ": Promise<{ key: string; value: string; expire_seconds: number; mode: string }> /* observed */"
        ),
        "{text}"
    );

    // Kept beside the pins, types and key names only: the canary is nowhere on disk.
    let kept = file_with(&home, "expire_seconds").await;
    assert_eq!(kept["server"], "kv");
    assert_eq!(
        kept["tools"]["keep"]["returns"]["properties"]["value"],
        json!({"type": "string"})
    );
    server.stop().await.unwrap();
    let on_disk = files_under(&home.join("toolweave"));
    assert!(on_disk.contains("expire_seconds"), "{on_disk}");
    assert!(!on_disk.contains(CANARY), "{on_disk}");
    assert!(!on_disk.contains("canary"), "{on_disk}");
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(home.join("toolweave/observed/kv.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // A new gateway reads it before any call.
    let server = serve(&home, &config, &[]).await;
    assert!(
        declaration(&server, "typescript")
            .await
            .contains("// observed in 2 calls"),
    );
    server.stop().await.unwrap();

    // Turned off: neither shown nor recorded.
    let kept_before = files_under(&home.join("toolweave/observed"));
    let server = serve(&home, &config, &["--observe-returns", "off"]).await;
    keep(&server, "typescript").await;
    let off = declaration(&server, "typescript").await;
    assert!(off.contains("}): Promise<unknown>;\n"), "{off}");
    server.stop().await.unwrap();
    assert_eq!(files_under(&home.join("toolweave/observed")), kept_before);

    // The server lists a changed definition (trusted as it is here): the shape no longer
    // applies until the tool is called again.
    let changed = kv_config(
        dir.path(),
        "changed.json",
        &["--append-description", "keep= Now with more."],
    );
    let server = serve(&home, &changed, &["--pin-tools", "off"]).await;
    let after = declaration(&server, "typescript").await;
    assert!(after.contains("}): Promise<unknown>;\n"), "{after}");
    keep(&server, "typescript").await;
    assert!(
        declaration(&server, "typescript")
            .await
            .contains("// observed in 1 call, not declared by the server"),
    );
    server.stop().await.unwrap();
}
