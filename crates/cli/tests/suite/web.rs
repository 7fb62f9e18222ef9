//! The web platform's globals of toolweave's JavaScript (`crates/sandbox/src/javascript/web.js`) against
//! Node's own: URL parsing and serialisation, URLSearchParams, TextEncoder and TextDecoder, and
//! number formatting as Intl does it, compared by `tests/web/compare_with_node.mjs`. The guest
//! cases (`tests/cases/js/web__*.js`) check the same globals inside the sandbox.

use std::process::Command;

use super::repo_root;

#[test]
fn web_globals_agree_with_node() {
    let script = repo_root().join("tests/web/compare_with_node.mjs");
    let web = repo_root().join("crates/sandbox/src/javascript/web.js");
    let output = match Command::new("node").arg(&script).arg(&web).output() {
        Ok(output) => output,
        Err(error) => {
            toolweave_testkit::skip::missing_prerequisite(
                "web_globals_agree_with_node",
                &format!("node could not be run: {error}"),
            );
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout.trim(), "fails 0", "{stderr}");
}
