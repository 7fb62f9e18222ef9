//! Tests that cannot run here say so where `cargo test` shows it, and fail in CI instead.
//!
//! libtest captures what a passing test prints with `println!` and `eprintln!` and shows it only
//! when the test fails, so a test that returns early after `eprintln!("SKIPPED ...")` reads as a
//! plain `ok`. The line is written to the process's stderr directly, which libtest does not
//! capture. Under CI (`CI` set, as CI services set it, to anything but empty, `0` or `false`) a
//! missing prerequisite fails the test: CI installs every one (`.ci/run`), so a missing one there
//! is a broken CI, not a skip.

use std::io::Write;

/// Whether this run is CI's: `CI` is set to anything but empty, `0` or `false`.
pub fn in_ci() -> bool {
    ci_says(std::env::var("CI").ok().as_deref())
}

/// Whether a value of `CI` means CI.
fn ci_says(value: Option<&str>) -> bool {
    value.is_some_and(|value| !matches!(value.trim(), "" | "0" | "false"))
}

/// Test `test` (its name, or the part of it that is skipped) cannot run because a prerequisite is
/// missing: `why` says what is missing and how to get it (`run npm ci --prefix tests/npm`).
/// Under CI this panics (the test fails); elsewhere it writes `SKIPPED <test>: <why>` where
/// `cargo test` shows it, and the caller returns.
///
/// # Panics
///
/// Under CI, by design.
pub fn missing_prerequisite(test: &str, why: &str) {
    assert!(
        !in_ci(),
        "{test} cannot run: {why}. CI must provide it (a skip in CI would pass unseen)"
    );
    announce(&format!("SKIPPED {test}: {why}"));
}

/// Test `test` does not apply to this machine (another architecture or operating system), which
/// no CI setup changes: writes `SKIPPED <test>: <why>` where `cargo test` shows it, in CI too,
/// and the caller returns.
pub fn not_applicable(test: &str, why: &str) {
    announce(&format!("SKIPPED {test}: {why}"));
}

/// Part `what` of a test is known not to pass yet (`why`), by design without failing the test:
/// writes `PENDING <what> (known not to pass yet): <why>` where `cargo test` shows it, in CI too.
pub fn pending(what: &str, why: &str) {
    announce(&format!("PENDING {what} (known not to pass yet): {why}"));
}

/// Writes one line to the process's stderr, past libtest's capture.
fn announce(line: &str) {
    let mut stderr = std::io::stderr().lock();
    // A test that cannot even write to stderr has nothing better to do than go on.
    let _ = writeln!(stderr, "{line}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// Set for the child test process, where the ignored test below does its part.
    const CHILD: &str = "TOOLWEAVE_TESTKIT_SKIP_CHILD";

    /// The test the next one runs in a child test process; on its own it is ignored (and does
    /// nothing when run with `--ignored`).
    #[test]
    #[ignore = "run by a_skip_is_shown_and_fails_under_ci, in a test process of its own"]
    fn skipping_for_want_of_a_prerequisite() {
        if std::env::var_os(CHILD).is_none() {
            return;
        }
        eprintln!("CAPTURED: libtest keeps this line of a passing test to itself");
        missing_prerequisite(
            "skipping_for_want_of_a_prerequisite",
            "the thing it needs is not installed (run `make thing`)",
        );
    }

    /// This test binary, running only the test above as `cargo test` runs it, with `CI` set to
    /// `ci` (or unset): whether it passed, and everything it wrote.
    fn run_the_skipping_test(ci: Option<&str>) -> (bool, String) {
        let mut command = Command::new(std::env::current_exe().unwrap());
        command.args([
            "--ignored",
            "--exact",
            "skip::tests::skipping_for_want_of_a_prerequisite",
        ]);
        command.env(CHILD, "1");
        match ci {
            Some(value) => command.env("CI", value),
            None => command.env_remove("CI"),
        };
        let output = command.output().unwrap();
        let shown = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        (output.status.success(), shown)
    }

    #[test]
    fn a_skip_is_shown_and_fails_under_ci() {
        let (passed, shown) = run_the_skipping_test(None);
        assert!(passed, "{shown}");
        assert!(
            shown.contains("test skip::tests::skipping_for_want_of_a_prerequisite ... ok"),
            "{shown}"
        );
        assert!(
            shown.contains(
                "SKIPPED skipping_for_want_of_a_prerequisite: the thing it needs is not installed (run `make thing`)"
            ),
            "{shown}"
        );
        assert!(!shown.contains("CAPTURED"), "{shown}");

        for ci in ["true", "1"] {
            let (passed, shown) = run_the_skipping_test(Some(ci));
            assert!(!passed, "CI={ci}: {shown}");
            assert!(
                shown.contains(
                    "skipping_for_want_of_a_prerequisite cannot run: the thing it needs is not installed (run `make thing`). CI must provide it"
                ),
                "CI={ci}: {shown}"
            );
        }
        let (passed, shown) = run_the_skipping_test(Some("false"));
        assert!(passed, "CI=false: {shown}");
    }

    #[test]
    fn ci_is_any_value_but_empty_zero_or_false() {
        for value in ["true", "1", "yes", "github"] {
            assert!(ci_says(Some(value)), "{value}");
        }
        for value in [None, Some(""), Some("0"), Some("false"), Some(" ")] {
            assert!(!ci_says(value), "{value:?}");
        }
    }
}
