//! `toolweave tools`, `types`, `servers` and `doctor` answer from a running `toolweave serve`
//! with the same config and settings, over its owner-only socket, and start servers only
//! without one (or with `--fresh`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::toolweave;

/// A folder for one test: its config (two fixture servers that write a line to a file at every
/// start), its runtime folder and its configuration home.
struct Place {
    dir: tempfile::TempDir,
    config: PathBuf,
    starts: PathBuf,
    runtime: PathBuf,
    config_home: PathBuf,
}

impl Place {
    fn new(name: &str) -> Self {
        let dir = tempfile::TempDir::new().unwrap();
        let starts = dir.path().join(format!("{name}-starts.txt"));
        let fixture = toolweave_testkit::fixture_binary();
        let server = |server: &str| {
            json!({
                "command": "sh",
                "args": ["-c", "echo started >> \"$0\"; exec \"$1\" --name \"$2\"", starts, fixture, server],
            })
        };
        let config = dir.path().join(format!("{name}.json"));
        std::fs::write(
            &config,
            json!({ "mcpServers": { "alpha": server("alpha"), "beta": server("beta") } })
                .to_string(),
        )
        .unwrap();
        let runtime = dir.path().join("run");
        std::fs::create_dir(&runtime).unwrap();
        let config_home = toolweave_testkit::harness::config_home();
        Self {
            dir,
            config,
            starts,
            runtime,
            config_home,
        }
    }

    /// Runs `toolweave ARGS --config <this config>` here.
    fn run(&self, args: &[&str]) -> Output {
        self.command(args)
            .arg("--config")
            .arg(&self.config)
            .output()
            .unwrap()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(toolweave());
        command
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env("XDG_CONFIG_HOME", &self.config_home)
            .env_remove("TOOLWEAVE_CONFIG")
            .env_remove("TOOLWEAVE_SETTINGS")
            .args(args);
        command
    }

    /// `toolweave serve` over stdio with this config, its stdin held open.
    fn serve(&self) -> Child {
        self.command(&["serve"])
            .arg("--config")
            .arg(&self.config)
            .env("TOOLWEAVE_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap()
    }

    /// How many times an upstream server of this config was started.
    fn starts(&self) -> usize {
        std::fs::read_to_string(&self.starts)
            .map(|text| text.lines().count())
            .unwrap_or(0)
    }

    /// The control sockets in the runtime folder.
    fn sockets(&self) -> Vec<PathBuf> {
        let folder = self.runtime.join("toolweave").join("gateways");
        std::fs::read_dir(folder)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .map(|entry| entry.path())
                    .filter(|path| path.extension().is_some_and(|ext| ext == "sock"))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Waits until the running gateway answers `servers` with both servers ready.
    fn wait_until_ready(&self, gateway: u32) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if self.sockets().len() == 1 {
                let output = self.run(&["servers", "--json"]);
                let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
                let ready = report["servers"]
                    .as_array()
                    .is_some_and(|servers| servers.iter().all(|server| server["state"] == "ready"));
                if report["gateway"]["pid"] == gateway && ready {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "the gateway's servers are not ready after 60 s"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Stops `child` and reaps it.
fn stop(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn the_commands_answer_from_the_running_gateway_and_start_no_server() {
    let place = Place::new("live");
    let serve = place.serve();
    let pid = serve.id();
    place.wait_until_ready(pid);
    assert_eq!(place.starts(), 2, "the gateway started each server once");
    let socket = &place.sockets()[0];
    assert_eq!(mode(socket), 0o600, "{}", socket.display());
    assert_eq!(mode(socket.parent().unwrap()), 0o700);
    let from = format!("rom the running gateway (pid {pid}, serving since ");

    let tools = place.run(&["tools", "add two numbers"]);
    let stdout = text(&tools.stdout);
    assert!(tools.status.success(), "{}", text(&tools.stderr));
    assert!(stdout.starts_with(&format!("F{from}")), "{stdout}");
    assert!(stdout.contains("alpha.add"), "{stdout}");

    let json = place.run(&["tools", "add", "--json"]);
    let results: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(
        results
            .as_array()
            .unwrap()
            .iter()
            .any(|result| result["name"] == "alpha.add"),
        "{results}"
    );
    assert!(text(&json.stderr).contains(&from), "{}", text(&json.stderr));

    let types = place.run(&["types"]);
    let declarations = text(&types.stdout);
    assert!(
        declarations.starts_with(&format!("// F{from}")),
        "{declarations}"
    );
    assert!(declarations.contains("add("), "{declarations}");
    let python = place.run(&["types", "--python"]);
    assert!(
        text(&python.stdout).starts_with(&format!("# F{from}")),
        "{}",
        text(&python.stdout)
    );

    let servers = place.run(&["servers"]);
    let stdout = text(&servers.stdout);
    assert!(servers.status.success(), "{stdout}");
    assert!(stdout.starts_with(&format!("F{from}")), "{stdout}");
    assert!(stdout.contains("\nalpha (stdio): ready, "), "{stdout}");
    assert!(stdout.contains("\nbeta (stdio): ready, "), "{stdout}");

    let doctor = place.run(&["doctor"]);
    let stdout = text(&doctor.stdout);
    assert!(stdout.contains(&format!("  f{from}")), "{stdout}");
    assert!(stdout.contains("\n  alpha (stdio): ready, "), "{stdout}");

    assert_eq!(
        place.starts(),
        2,
        "no command started a server: the running gateway answered"
    );

    // --fresh starts the servers anew, and says nothing of the gateway.
    let fresh = place.run(&["servers", "--fresh"]);
    let stdout = text(&fresh.stdout);
    assert!(fresh.status.success(), "{stdout}");
    assert!(!stdout.contains("running gateway"), "{stdout}");
    assert!(stdout.contains(" ms)"), "timed as a start: {stdout}");
    assert_eq!(place.starts(), 4, "--fresh started both servers");
    let fresh = place.run(&["tools", "add", "--fresh"]);
    assert!(!text(&fresh.stdout).contains("running gateway"));
    assert_eq!(place.starts(), 6);

    // Other rules than the gateway's: it does not answer, and the line says why.
    let denied = place.run(&["types", "--deny", "alpha.add"]);
    let stderr = text(&denied.stderr);
    assert!(
        stderr.contains(&format!("toolweave: the running gateway for this config (pid {pid}) does not answer: it was started with another config, other settings or other flags; starting the servers instead")),
        "{stderr}"
    );
    assert!(!text(&denied.stdout).contains("running gateway"));
    assert_eq!(place.starts(), 8);

    stop(serve);
}

#[test]
fn a_stale_socket_is_removed_and_a_hung_gateway_is_waited_for_two_seconds() {
    let place = Place::new("stale");
    let serve = place.serve();
    let pid = serve.id();
    place.wait_until_ready(pid);
    let socket = place.sockets()[0].clone();
    // Killed: its socket stays behind with nobody listening.
    stop(serve);
    assert!(socket.exists());
    let before = place.starts();

    let servers = place.run(&["servers"]);
    let stdout = text(&servers.stdout);
    assert!(servers.status.success(), "{stdout}");
    assert!(!stdout.contains("running gateway"), "{stdout}");
    assert!(
        text(&servers.stderr).is_empty(),
        "a stale socket is ignored without a word: {}",
        text(&servers.stderr)
    );
    assert_eq!(place.starts(), before + 2);
    assert!(!socket.exists(), "the stale socket is removed");

    // Something listens there and never answers.
    let _hung = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let started = Instant::now();
    let servers = place.run(&["servers"]);
    let stderr = text(&servers.stderr);
    assert!(servers.status.success(), "{stderr}");
    assert!(
        stderr.contains("toolweave: the running gateway for this config did not answer within 2 s; starting the servers instead"),
        "{stderr}"
    );
    assert!(started.elapsed() >= Duration::from_secs(2));
    assert_eq!(place.starts(), before + 4);
}

#[test]
fn another_configs_gateway_is_not_asked() {
    let place = Place::new("one");
    let serve = place.serve();
    place.wait_until_ready(serve.id());
    // Another config in the same runtime folder: the same servers, another file.
    let other = Place::new("other");
    let before = place.starts();
    let output = place
        .command(&["servers", "--config"])
        .arg(&other.config)
        .output()
        .unwrap();
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(!stdout.contains("running gateway"), "{stdout}");
    assert!(text(&output.stderr).is_empty(), "{}", text(&output.stderr));
    assert_eq!(other.starts(), 2, "the other config's servers were started");
    assert_eq!(place.starts(), before);
    drop(other.dir);
    stop(serve);
    drop(place.dir);
}
