//! The newest release of the official MCP conformance suite (`conformance-next` in
//! `tests/conformance/package.json`, installed next to 0.1.16) for MCP 2026-07-28, on both faces:
//! server mode against `toolweave serve --http`, client mode against toolweave's client of
//! upstream servers (driven by `tests/conformance/client.mjs`).
//!
//! Each side runs what the suite requires of a 2026-07-28 implementation (`--requirements
//! 2026-07-28`, extensions and pending scenarios included), and then any scenario the suite tags
//! 2026-07-28 that the requirement set leaves out. The suite itself fails the run when a scenario
//! or check fails that `tests/conformance/expected-failures-next.yml` does not list, or a listed
//! one passes. On top of that the test lists every scenario the suite has: each 2026-07-28 one must
//! have run and either passed or be listed; each of the others is named with the revisions it
//! belongs to, so none is left out unseen.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Instant;

use toolweave_testkit::harness::fixture_config;
use toolweave_testkit::http::HttpToolweave;

use super::conformance::{Suite, installed};
use super::toolweave;

/// The package of the newest suite, as `tests/conformance/package.json` names it.
const PACKAGE: &str = "conformance-next";

/// The revision whose scenarios run.
const REVISION: &str = "2026-07-28";

/// The file of scenarios and checks that do not apply, each with its reason.
const EXPECTED: &str = "expected-failures-next.yml";

/// One side of the suite: `server` or `client`.
#[derive(Clone, Copy)]
enum Side {
    Server,
    Client,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Self::Server => "server",
            Self::Client => "client",
        }
    }
}

/// A scenario as `conformance list` prints it: its name and the revisions (or `extension`) it
/// belongs to.
#[derive(Debug)]
struct Listed {
    name: String,
    tags: Vec<String>,
}

/// Every scenario of `side` the suite has (`conformance list --server` or `--client`).
async fn every_scenario(suite: &Suite, side: Side) -> Vec<Listed> {
    let text = suite.text(&["list", &format!("--{}", side.name())]).await;
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .map(|entry| {
            let (name, tags) = entry.split_once(" [").unwrap_or((entry, "]"));
            Listed {
                name: name.trim().to_owned(),
                tags: tags
                    .trim_end_matches(']')
                    .split(',')
                    .filter(|tag| !tag.is_empty())
                    .map(str::to_owned)
                    .collect(),
            }
        })
        .collect()
}

/// The scenarios of `side` that `--requirements 2026-07-28` runs (required, extensions, and the
/// ones reported but not scored).
async fn required_scenarios(suite: &Suite, side: Side) -> BTreeSet<String> {
    let text = suite
        .text(&[
            "list",
            &format!("--{}", side.name()),
            "--requirements",
            REVISION,
        ])
        .await;
    let mut names = BTreeSet::new();
    let mut section_side = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("Server scenarios") {
            section_side = Some("server");
        } else if trimmed.starts_with("Client scenarios") {
            section_side = Some("client");
        } else if trimmed.starts_with("Run and reported") {
            section_side = None;
        }
        let Some(entry) = trimmed.strip_prefix("- ") else {
            continue;
        };
        match entry.split_once(" [") {
            // Not scored: `- name [server]`.
            Some((name, tag)) if tag.trim_end_matches(']') == side.name() => {
                names.insert(name.to_owned());
            }
            Some(_) => {}
            None if section_side == Some(side.name()) => {
                names.insert(entry.to_owned());
            }
            None => {}
        }
    }
    names
}

/// What `expected-failures-next.yml` lists for `side`: by scenario, `None` when the whole
/// scenario may fail, else the checks that may.
fn listed_as_failing(folder: &Path, side: Side) -> BTreeMap<String, Option<BTreeSet<String>>> {
    let text = std::fs::read_to_string(folder.join(EXPECTED)).unwrap();
    let mut listed: BTreeMap<String, Option<BTreeSet<String>>> = BTreeMap::new();
    let mut in_side = false;
    for line in text.lines() {
        let content = line.split(" #").next().unwrap_or("").trim_end();
        if content.trim_start().starts_with('#') || content.is_empty() {
            continue;
        }
        if !line.starts_with(' ') {
            in_side = content == format!("{}:", side.name());
            continue;
        }
        let Some(entry) = content.trim().strip_prefix("- ") else {
            continue;
        };
        if !in_side {
            continue;
        }
        match entry.split_once(':') {
            Some((scenario, check)) => {
                let Some(checks) = listed
                    .entry(scenario.to_owned())
                    .or_insert_with(|| Some(BTreeSet::new()))
                else {
                    panic!("{EXPECTED} lists {scenario} whole and by check: keep one");
                };
                checks.insert(check.to_owned());
            }
            None => {
                listed.insert(entry.to_owned(), None);
            }
        }
    }
    listed
}

/// The checks each scenario's run reported, read from the suite's output folder: by scenario,
/// each check's id and status. A scenario's folder is `[server-]<scenario>-<time of the run>`.
fn reported(results: &Path, side: Side) -> BTreeMap<String, Vec<(String, String)>> {
    let mut found = BTreeMap::new();
    let mut folders = vec![results.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
                continue;
            }
            if path.file_name().and_then(|name| name.to_str()) != Some("checks.json") {
                continue;
            }
            let relative = path
                .parent()
                .unwrap()
                .strip_prefix(results)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            // `-2026-11-30T00-13-32-303Z`: the time of the run.
            assert!(
                relative.ends_with('Z') && relative.len() > 25,
                "unexpected result folder {relative}"
            );
            let name = &relative[..relative.len() - 25];
            let name = match side {
                Side::Server => name.strip_prefix("server-").unwrap_or(name),
                Side::Client => name,
            };
            let checks: Vec<serde_json::Value> =
                serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            let checks = checks
                .iter()
                .map(|check| {
                    (
                        check["id"].as_str().unwrap_or_default().to_owned(),
                        check["status"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect();
            found.insert(name.to_owned(), checks);
        }
    }
    found
}

/// Whether a check's status fails its scenario (the suite's baseline counts a warning as a
/// failure).
fn failing(status: &str) -> bool {
    matches!(status, "FAILURE" | "WARNING")
}

/// Holds `side`'s results to the list, for every scenario the suite has: each 2026-07-28 one
/// ran, and passed or failed only where listed (the suite checks this itself only for the scored
/// ones), and each listing still fails; the others are reported with their revisions. Returns
/// the scenarios that passed.
fn account(
    side: Side,
    every: &[Listed],
    results: &BTreeMap<String, Vec<(String, String)>>,
    listed: &BTreeMap<String, Option<BTreeSet<String>>>,
) -> BTreeSet<String> {
    let mut out_of_scope = Vec::new();
    let mut passed = BTreeSet::new();
    for scenario in every {
        let Some(checks) = results.get(&scenario.name) else {
            out_of_scope.push(format!("{} [{}]", scenario.name, scenario.tags.join(",")));
            assert!(
                !scenario.tags.iter().any(|tag| tag == REVISION),
                "{} scenario {} belongs to {REVISION} but did not run",
                side.name(),
                scenario.name
            );
            continue;
        };
        let failed: BTreeSet<&str> = checks
            .iter()
            .filter(|(_, status)| failing(status))
            .map(|(id, _)| id.as_str())
            .collect();
        let name = format!("{} scenario {}", side.name(), scenario.name);
        match listed.get(&scenario.name) {
            None => assert!(
                failed.is_empty(),
                "{name} failed {failed:?}, which tests/conformance/{EXPECTED} does not list"
            ),
            Some(None) => assert!(
                !failed.is_empty(),
                "{name} passes: take it out of tests/conformance/{EXPECTED}"
            ),
            Some(Some(allowed)) => {
                let unlisted: Vec<_> = failed.iter().filter(|id| !allowed.contains(**id)).collect();
                assert!(
                    unlisted.is_empty(),
                    "{name} failed {unlisted:?}, which tests/conformance/{EXPECTED} does not list"
                );
                let stale: Vec<_> = allowed
                    .iter()
                    .filter(|id| !failed.contains(id.as_str()))
                    .collect();
                assert!(
                    stale.is_empty(),
                    "{name}: {stale:?} pass or are gone: take them out of \
                     tests/conformance/{EXPECTED}"
                );
            }
        }
        if failed.is_empty() {
            passed.insert(scenario.name.clone());
        }
    }
    for name in listed.keys() {
        assert!(
            results.contains_key(name),
            "tests/conformance/{EXPECTED} lists {} scenario {name}, which did not run",
            side.name()
        );
    }
    eprintln!(
        "{PACKAGE} {}: {} scenarios of {REVISION} run: {} passed, {} failed as listed; not of \
         {REVISION}, so not run here: {}",
        side.name(),
        results.len(),
        passed.len(),
        results.len() - passed.len(),
        out_of_scope.join(", ")
    );
    passed
}

/// The arguments of one side's runs: the requirement set, then each 2026-07-28 scenario outside it.
fn runs(every: &[Listed], required: &BTreeSet<String>) -> Vec<Vec<String>> {
    let mut runs = vec![vec!["--requirements".to_owned(), REVISION.to_owned()]];
    for scenario in every {
        if scenario.tags.iter().any(|tag| tag == REVISION) && !required.contains(&scenario.name) {
            runs.push(vec![
                "--scenario".to_owned(),
                scenario.name.clone(),
                "--spec-version".to_owned(),
                REVISION.to_owned(),
            ]);
        }
    }
    runs
}

/// Runs every 2026-07-28 scenario of `side` with `base` (the side's command and its target) and
/// `env`, results in `results`, and holds them to the list; the scenarios that passed.
async fn run_side(
    suite: &Suite,
    side: Side,
    base: &[String],
    env: &[(&str, &str)],
    results: &Path,
) -> BTreeSet<String> {
    let every = every_scenario(suite, side).await;
    let required = required_scenarios(suite, side).await;
    let marker = match side {
        Side::Server => "=== SUMMARY ===",
        Side::Client => "=== SUITE SUMMARY ===",
    };
    for arguments in runs(&every, &required) {
        let mut command = base.to_vec();
        command.extend(arguments);
        command.extend([
            "--expected-failures".to_owned(),
            suite.folder.join(EXPECTED).display().to_string(),
            "--output-dir".to_owned(),
            results.display().to_string(),
        ]);
        suite.run(&command, env, marker).await;
    }
    let listed = listed_as_failing(&suite.folder, side);
    account(side, &every, &reported(results, side), &listed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_newest_conformance_suite_passes_for_2026_07_28_in_server_mode() {
    let test = "the_newest_conformance_suite_passes_for_2026_07_28_in_server_mode";
    let Some(suite) = installed(test, PACKAGE) else {
        return;
    };
    let started = Instant::now();
    let (dir, config) = fixture_config(&["fixture"]).unwrap();
    let server = HttpToolweave::start(toolweave(), &config, &[], &[])
        .await
        .unwrap();
    let base = ["server".to_owned(), "--url".to_owned(), server.url()];
    let passed = run_side(
        &suite,
        Side::Server,
        &base,
        &[],
        &dir.path().join("results"),
    )
    .await;
    // What toolweave serves on its own passes whole: tools/list with its caching hints, tool
    // errors, streams, the Host check, the checks of MCP's own headers, and what MCP 2026-07-28
    // asks of a stateless server (server/discover, _meta on every request, 404 for the methods
    // it removed) but for the one diagnostic tool listed.
    for scenario in [
        "tools-list",
        "tools-call-simple-text",
        "tools-call-error",
        "server-sse-multiple-streams",
        "dns-rebinding-protection",
        "http-header-validation",
    ] {
        assert!(passed.contains(scenario), "{scenario} did not pass");
    }
    eprintln!(
        "{PACKAGE} server mode took {} s",
        started.elapsed().as_secs()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_newest_conformance_suite_passes_for_2026_07_28_in_client_mode() {
    let test = "the_newest_conformance_suite_passes_for_2026_07_28_in_client_mode";
    let Some(suite) = installed(test, PACKAGE) else {
        return;
    };
    let started = Instant::now();
    let results = tempfile::tempdir().unwrap();
    let browser = format!("{} browse", toolweave_testkit::fixture_binary().display());
    let binary = toolweave().display().to_string();
    let base = [
        "client".to_owned(),
        "--command".to_owned(),
        format!("node {}", suite.folder.join("client.mjs").display()),
    ];
    let env = [
        ("TOOLWEAVE_BIN", binary.as_str()),
        ("TOOLWEAVE_BROWSER", browser.as_str()),
    ];
    let passed = run_side(&suite, Side::Client, &base, &env, results.path()).await;
    // The auth scenarios of 2026-07-28, the _meta of every request, MCP's own headers, a server's
    // multi round-trip requests answered by the client whose code made the call, and schemas
    // kept as the server gave them.
    for scenario in [
        "tools_call",
        "request-metadata",
        "auth/metadata-default",
        "auth/basic-cimd",
        "auth/scope-step-up",
        "auth/resource-mismatch",
        "auth/authorization-server-migration",
        "auth/iss-wrong-issuer",
        "auth/metadata-issuer-mismatch",
        "http-standard-headers",
        "http-invalid-tool-headers",
        "sep-2322-client-request-state",
        "json-schema-2020-12-preservation",
        "json-schema-ref-no-deref",
    ] {
        assert!(passed.contains(scenario), "{scenario} did not pass");
    }
    eprintln!(
        "{PACKAGE} client mode took {} s",
        started.elapsed().as_secs()
    );
}
