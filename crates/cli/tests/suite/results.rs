//! Large tool results: one within the limits reaches the code whole through a worker's pipes,
//! and one larger than the code could ever hold fails at once, naming the limit, in both
//! isolation modes and both languages.

use serde_json::json;
use toolweave_testkit::harness::{Toolweave, fixture_config};

use super::toolweave;

/// A program in `language` that asks the fixture for `bytes` of text and returns its length.
fn length_of_large(language: &str, bytes: usize) -> String {
    match language {
        "python" => format!("text = await tools.fixture.large(bytes={bytes})\nlen(text)"),
        _ => format!("const text = await tools.fixture.large({{ bytes: {bytes} }}); text.length"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_larger_than_the_code_can_hold_fails_at_once_naming_the_memory_limit() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    for isolation in ["worker", "in-process"] {
        // A deadline well past what handing the result over takes: a result that went to the
        // guest would end in the guest's own memory error, or at this deadline.
        let server = Toolweave::start(
            toolweave(),
            &config,
            &[
                "--isolation",
                isolation,
                "--memory-mb",
                "4",
                "--timeout-ms",
                "60000",
            ],
        )
        .await
        .unwrap();
        for language in ["javascript", "python"] {
            let bytes = 6 * 1024 * 1024;
            let large = server
                .execute(&length_of_large(language, bytes), language)
                .await
                .unwrap();
            let context = format!("{isolation}, {language}: {}", large.text);
            assert_eq!(large.error_kind(), Some("MemoryLimit"), "{context}");
            assert!(
                large.text.starts_with(&format!(
                    "MemoryLimit: fixture.large returned {} bytes (as JSON), more than the code \
                     can hold in 4 MiB (--memory-mb 4).",
                    bytes + 2
                )),
                "{context}"
            );
            // It came from upstream, and was counted.
            let used = large.structured["stats"]["upstreamBytes"].as_u64().unwrap();
            assert!(used > bytes as u64, "{context}");
            // The next execution is served as usual.
            let small = server
                .execute(&length_of_large(language, 1000), language)
                .await
                .unwrap();
            assert_eq!(
                small.value().unwrap(),
                &json!(1000),
                "{isolation}, {language}"
            );
        }
        server.stop().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_result_within_the_limits_reaches_the_code_through_a_worker() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    // A deadline generous for a loaded machine and a debug build: how long it takes is measured
    // by `scripts/large_result.py`; this checks that every byte arrives, read a pipe's worth at
    // a time by both ends.
    let server = Toolweave::start(
        toolweave(),
        &config,
        &["--memory-mb", "160", "--timeout-ms", "120000"],
    )
    .await
    .unwrap();
    let bytes = 16_000_000;
    for language in ["javascript", "python"] {
        let large = server
            .execute(&length_of_large(language, bytes), language)
            .await
            .unwrap();
        assert_eq!(
            large.value().unwrap(),
            &json!(bytes),
            "{language}: {}",
            large.text
        );
    }
    server.stop().await.unwrap();
}
