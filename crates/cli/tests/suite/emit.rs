//! Pictures and audio from code, and live progress and console lines, driven by the official
//! Python SDK over stdio and HTTP with worker isolation (`tests/python/sdk_emit.py`).

use toolweave_testkit::harness::fixture_config;

use super::run_sdk_script;

/// An image a tool returns arrives as an `ImageContent` with the same bytes; `emit` of an image
/// and an audio block arrive after the text in both languages; the block past
/// `--max-emitted-blocks` gets an error naming the flag; `progress(i, n)` of a 3-second
/// execution reaches the client's progress callback while it runs, rising, the last `n` of `n`;
/// console lines reach its logging callback while it runs when it gave no progress token.
#[test]
fn blocks_progress_and_console_lines_reach_the_client() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    run_sdk_script("sdk_emit", &[config.as_os_str()]);
}
