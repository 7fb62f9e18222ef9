//! URL-mode elicitation through the official MCP Python SDK client: with `--approval page`, a
//! client that declares URL mode is shown the approval page's address; declining there denies
//! the call, and an approval given meanwhile lets the paused execution go on.

use toolweave_testkit::harness::{config_home, fixture_config};

use super::run_sdk_script;

#[test]
fn a_client_with_url_elicitation_is_shown_the_approval_page() {
    let (dir, config) = fixture_config(&["fixture"]).unwrap();
    let runtime = dir.path().join("run");
    std::fs::create_dir(&runtime).unwrap();
    let audit = dir.path().join("audit.jsonl");
    let home = config_home();
    run_sdk_script(
        "sdk_approval_url",
        &[
            config.as_os_str(),
            runtime.as_os_str(),
            home.as_os_str(),
            audit.as_os_str(),
        ],
    );
}
