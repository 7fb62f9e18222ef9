//! Discovery, `toolweave config`, `toolweave init` and `toolweave trust`, run as the real binary with `HOME` and the
//! current directory set to a fake machine holding each client's file as that client writes it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::toolweave;

/// A home directory and a project directory under one temporary root.
struct Machine {
    _root: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    project: PathBuf,
}

impl Machine {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let home = root.join("home/me");
        let project = home.join("src/app");
        std::fs::create_dir_all(&project).unwrap();
        Self {
            _root: dir,
            root,
            home,
            project,
        }
    }

    fn write(&self, path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// toolweave in the project directory of this machine, with none of the caller's settings.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(toolweave());
        command
            .args(args)
            .current_dir(&self.project)
            .env("HOME", &self.home)
            .env_remove("TOOLWEAVE_CONFIG")
            .env_remove("TOOLWEAVE_LOG")
            .env_remove("XDG_CONFIG_HOME");
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).stdin(Stdio::null()).output().unwrap()
    }

    /// Runs toolweave with a terminal for its stdin, stdout and stderr, typing `typed`; returns
    /// its exit code and what the terminal showed (with the terminal's `\r\n` line ends).
    fn run_at_terminal(&self, args: &[&str], typed: &str) -> (Option<i32>, String) {
        use std::io::{Read, Write};
        let pty = nix::pty::openpty(None, None).unwrap();
        let terminal = std::fs::File::from(pty.slave);
        let mut child = self
            .command(args)
            .stdin(terminal.try_clone().unwrap())
            .stdout(terminal.try_clone().unwrap())
            .stderr(terminal)
            .spawn()
            .unwrap();
        // The terminal holds the typed line until the program reads it.
        let mut keyboard = std::fs::File::from(pty.master);
        keyboard.write_all(typed.as_bytes()).unwrap();
        let mut shown = Vec::new();
        let mut buffer = [0u8; 4096];
        // Reading ends with EIO once the program, the last holder of the terminal, has exited.
        while let Ok(read) = keyboard.read(&mut buffer) {
            if read == 0 {
                break;
            }
            shown.extend_from_slice(&buffer[..read]);
        }
        let status = child.wait().unwrap();
        (status.code(), String::from_utf8_lossy(&shown).into_owned())
    }

    /// Text with the temporary root and this binary's path replaced, for snapshots.
    fn redact(&self, text: &str) -> String {
        let program = toolweave().canonicalize().unwrap();
        text.replace(&program.display().to_string(), "[TOOLWEAVE]")
            .replace(&self.root.display().to_string(), "[ROOT]")
            .replace(
                &toolweave_config::claude_desktop_config(Path::new(""))
                    .display()
                    .to_string(),
                "[CLAUDE DESKTOP CONFIG]",
            )
    }

    fn claude_json(&self) -> PathBuf {
        self.home.join(".claude.json")
    }

    /// Claude Code's file (with the fixture server in this project's local scope), a project
    /// `.mcp.json`, Cursor's global file, VS Code's project file and Claude Desktop's file, with
    /// names that overlap and entries discovery must skip.
    fn realistic(&self) {
        let fixture = toolweave_testkit::fixture_binary();
        self.write(
            &self.claude_json(),
            &serde_json::to_string_pretty(&serde_json::json!({
                "numStartups": 41,
                "installMethod": "native",
                "autoUpdates": true,
                "tipsHistory": {"new-user-warmup": 1},
                "projects": {
                    self.project.display().to_string(): {
                        "allowedTools": [],
                        "history": [],
                        "mcpContextUris": [],
                        "mcpServers": {
                            "fixture": {"type": "stdio", "command": fixture, "args": ["--name", "local"], "env": {}}
                        },
                        "enabledMcpjsonServers": [],
                        "disabledMcpjsonServers": [],
                        "hasTrustDialogAccepted": true
                    }
                },
                "mcpServers": {
                    "memory": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "env": {}}
                },
                "userID": "0f3a9c"
            }))
            .unwrap(),
        );
        self.write(
            &self.project.join(".mcp.json"),
            &serde_json::to_string_pretty(&serde_json::json!({"mcpServers": {
                "fixture": {"command": fixture, "args": ["--name", "project"]},
                "docs": {"type": "http", "url": "https://mcp.example.com/docs/mcp"}
            }}))
            .unwrap(),
        );
        self.write(
            &self.home.join(".cursor/mcp.json"),
            r#"{
  "mcpServers": {
    "memory": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-memory"]
    },
    "context7": {
      "url": "https://mcp.example.com/context7/mcp"
    }
  }
}
"#,
        );
        self.write(
            &self.project.join(".vscode/mcp.json"),
            "{\n\t\"inputs\": [\n\t\t{\"type\": \"promptString\", \"id\": \"perplexity-key\", \"description\": \"Perplexity API Key\", \"password\": true}\n\t],\n\t\"servers\": {\n\t\t\"perplexity\": {\"type\": \"stdio\", \"command\": \"npx\", \"args\": [\"-y\", \"server-perplexity-ask\"], \"env\": {\"PERPLEXITY_API_KEY\": \"${input:perplexity-key}\"}}\n\t}\n}\n",
        );
        self.write(
            &toolweave_config::claude_desktop_config(&self.home),
            &serde_json::to_string_pretty(&serde_json::json!({
                "mcpServers": {
                    "toolweave": {"command": toolweave(), "args": ["serve"]},
                    "old": {"command": "old-server", "disabled": true}
                },
                "globalShortcut": ""
            }))
            .unwrap(),
        );
    }
}

/// The names under `servers` in a `--json` report.
fn server_names(report: &serde_json::Value) -> Vec<&str> {
    report["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|server| server["name"].as_str().unwrap())
        .collect()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn config_prints_precedence_origins_overrides_and_skips() {
    let machine = Machine::new();
    machine.realistic();
    let output = machine.run(&["config"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    insta::assert_snapshot!("config_text", machine.redact(&text(&output.stdout)));

    let output = machine.run(&["config", "--json"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let servers: Vec<(&str, &str)> = report["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|server| {
            (
                server["name"].as_str().unwrap(),
                server["from"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        servers,
        [
            ("context7", "cursor-user"),
            ("fixture", "claude-code-local"),
            ("memory", "claude-code-user"),
        ]
    );
    let statuses: Vec<String> = report["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| format!("{} {} {}", entry["name"], entry["source"], entry["status"]))
        .collect();
    assert_eq!(
        statuses,
        [
            r#""fixture" "claude-code-local" "used""#,
            r#""fixture" "project" "overridden""#,
            r#""docs" "project" "not-trusted""#,
            r#""memory" "claude-code-user" "used""#,
            r#""memory" "cursor-user" "overridden""#,
            r#""context7" "cursor-user" "used""#,
            r#""perplexity" "vs-code" "unsupported""#,
            r#""toolweave" "claude-desktop" "self-reference""#,
            r#""old" "claude-desktop" "disabled""#,
        ]
    );
}

/// The fixture in Cursor's file with a `timeout` of a second and the `autoApprove` list Cline
/// writes; and in VS Code's, with a `dev` block and a misspelt key.
fn clients_with_their_own_keys(machine: &Machine) {
    let fixture = toolweave_testkit::fixture_binary();
    machine.write(
        &machine.home.join(".cursor/mcp.json"),
        &serde_json::to_string_pretty(&serde_json::json!({"mcpServers": {
            "patient": {"command": fixture, "args": ["--name", "patient"], "timeout": 1000,
                        "autoApprove": ["add"]}
        }}))
        .unwrap(),
    );
    machine.write(
        &machine.home.join(".claude.json"),
        &serde_json::json!({"mcpServers": {
            "editor": {"type": "stdio", "command": fixture, "args": ["--name", "editor"],
                       "dev": {"watch": "src/**/*.ts"}, "envfile": ".env"}
        }})
        .to_string(),
    );
}

#[test]
fn keys_a_client_writes_for_itself_keep_its_entry_with_a_note_and_its_timeout_is_used() {
    let machine = Machine::new();
    clients_with_their_own_keys(&machine);
    let output = machine.run(&["config"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let shown = text(&output.stdout);
    // Each entry, then the keys ignored in it.
    let lines: Vec<&str> = shown.lines().map(str::trim).collect();
    let at = |line: &str| {
        lines
            .iter()
            .position(|shown| *shown == line)
            .unwrap_or_else(|| panic!("no line {line:?} in:\n{shown}"))
    };
    let editor = at("editor               used (stdio)");
    assert_eq!(
        at("note: \"dev\" is ignored: it is VS Code's development mode (watch and debug)"),
        editor + 1
    );
    assert_eq!(
        at("note: \"envfile\" is ignored: toolweave does not know it (did you mean \"envFile\"?)"),
        editor + 2
    );
    let patient = at("patient              used (stdio, tool calls time out after 1000 ms)");
    assert_eq!(
        at(
            "note: \"autoApprove\" is ignored: it lists the tools Cline calls without asking; toolweave pre-approves destructive tools with --approve (or \"approve\" in its settings file)"
        ),
        patient + 1
    );
    at("2 servers: editor, patient");
    let output = machine.run(&["config", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let patient = report["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["name"] == "patient")
        .unwrap();
    assert_eq!(
        patient["notes"],
        serde_json::json!([
            "\"autoApprove\" is ignored: it lists the tools Cline calls without asking; toolweave pre-approves destructive tools with --approve (or \"approve\" in its settings file)"
        ])
    );

    // The entries work: both servers start, each ignored key is a warning on stderr, and the
    // timeout from Cursor's file is what a slow call meets.
    let program = machine.project.join("slow.js");
    std::fs::write(
        &program,
        "const sum = await tools.editor.add({ a: 1, b: 2 });\ntry { await tools.patient.slow({ ms: 5000 }); } catch (e) { return { sum, error: e.message }; }\n",
    )
    .unwrap();
    let output = machine.run(&["run", program.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(value["sum"], "3", "{value}");
    let error = value["error"].as_str().unwrap();
    assert!(
        error.contains(
            "did not answer the call to \"slow\" within 1000 ms (the server's \"timeout\" in its config entry)"
        ),
        "{error}"
    );
    let stderr = text(&output.stderr);
    let cursor = machine.home.join(".cursor/mcp.json");
    assert!(
        stderr.contains(&format!(
            "{}: server \"patient\": \"autoApprove\" is ignored",
            cursor.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("server \"editor\": \"envfile\" is ignored: toolweave does not know it (did you mean \"envFile\"?)"),
        "{stderr}"
    );
}

#[test]
fn a_config_file_refuses_a_misspelt_key_and_ignores_the_keys_of_other_clients() {
    let machine = Machine::new();
    let fixture = toolweave_testkit::fixture_binary();
    let config = machine.root.join("mcp.json");
    machine.write(
        &config,
        &serde_json::json!({"mcpServers": {
            "fixture": {"command": fixture, "args": ["--name", "fixture"], "envfile": ".env"}
        }})
        .to_string(),
    );
    let output = machine.run(&["config", "--config", config.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stderr).trim(),
        format!(
            "toolweave: {}: server \"fixture\": unknown key \"envfile\" (did you mean \"envFile\"?); the keys a server entry may have are type, command, args, env, envFile, cwd, url, headers, oauth, auth, disabled, toolTimeouts, sandbox, timeout",
            config.display()
        )
    );

    machine.write(
        &config,
        &serde_json::json!({"mcpServers": {
            "fixture": {"command": fixture, "args": ["--name", "fixture"], "timeout": 90000,
                        "autoApprove": ["add"]}
        }})
        .to_string(),
    );
    let output = machine.run(&["config", "--config", config.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(
        text(&output.stdout),
        format!(
            "--config {} is given: only it is read (discovery is off)\n  fixture              used (stdio, tool calls time out after 90000 ms)\n                         note: \"autoApprove\" is ignored: it lists the tools Cline calls without asking; toolweave pre-approves destructive tools with --approve (or \"approve\" in its settings file)\n",
            config.display()
        )
    );
    let output = machine.run(&["servers", "--config", config.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("server \"fixture\": \"autoApprove\" is ignored"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn commands_use_discovered_servers_and_never_themselves() {
    let machine = Machine::new();
    let fixture = toolweave_testkit::fixture_binary();
    machine.write(
        &machine.project.join(".mcp.json"),
        &serde_json::json!({"mcpServers": {
            "fixture": {"command": fixture, "args": ["--name", "fixture"]},
            // Were this loaded, toolweave would start itself as an upstream.
            "gateway": {"command": toolweave(), "args": ["serve"]}
        }})
        .to_string(),
    );
    // Approved in Claude Code (in the user's own file), so toolweave starts it too.
    machine.write(
        &machine.claude_json(),
        &serde_json::json!({"projects": {machine.project.display().to_string(): {
            "enabledMcpjsonServers": ["fixture", "gateway"]
        }}})
        .to_string(),
    );
    let output = machine.run(&["servers", "--json"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let names = server_names(&report);
    assert_eq!(names, ["fixture"], "{report}");

    let output = machine.run(&["tools", "add numbers"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("tools.fixture."),
        "{}",
        text(&output.stdout)
    );

    // `--config` given: only that file is read.
    let only = machine.root.join("only.json");
    machine.write(&only, r#"{"mcpServers": {}}"#);
    let output = machine.run(&["servers", "--config", only.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(
        text(&output.stdout),
        format!("no servers configured in {}\n", only.display())
    );
}

#[test]
fn a_project_s_own_servers_start_only_once_trusted() {
    let machine = Machine::new();
    let fixture = toolweave_testkit::fixture_binary();
    let marker = machine.root.join("started");
    let mcp_json = machine.project.join(".mcp.json");
    let entries = |touch_args: &[&str]| {
        let mut args = vec!["-c", "touch \"$0\""];
        args.extend_from_slice(touch_args);
        serde_json::json!({"mcpServers": {
            "fixture": {"command": fixture, "args": ["--name", "fixture"]},
            "setup": {"command": "sh", "args": args}
        }})
        .to_string()
    };
    machine.write(&mcp_json, &entries(&[marker.to_str().unwrap()]));
    let trust_file = machine.home.join(".config/toolweave/trusted.json");

    // Not trusted: nothing the file names is started, and the error says what to do.
    let output = machine.run(&["servers"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stdout));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("2 servers in this project's own files are not started until you trust them: fixture (.mcp.json), setup (.mcp.json)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("(2 entries were skipped)")
            && stderr.contains(
                "They are in this project's own files and wait to be trusted: `toolweave trust`"
            ),
        "{stderr}"
    );
    assert!(!marker.exists(), "an untrusted server was started");

    // Without a terminal, `trust` asks for --yes and writes nothing.
    let output = machine.run(&["trust"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("pass --yes"),
        "{}",
        text(&output.stderr)
    );
    assert!(!trust_file.exists());

    // At a terminal it asks: anything but yes trusts nothing.
    let (code, shown) = machine.run_at_terminal(&["trust"], "n\n");
    assert_eq!(code, Some(1), "{shown}");
    assert!(
        shown.contains("Trust them? [y/N] ") && shown.contains("Nothing trusted."),
        "{shown}"
    );
    assert!(!trust_file.exists());
    let (code, shown) = machine.run_at_terminal(&["trust"], "\n");
    assert_eq!(code, Some(1), "{shown}");
    assert!(!trust_file.exists());

    let output = machine.run(&["trust", "--yes"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let shown = machine.redact(&text(&output.stdout));
    assert!(
        text(&output.stdout).contains(&format!("runs: {} --name fixture", fixture.display())),
        "{shown}"
    );
    assert!(
        shown.contains(r#"runs: sh -c "touch \"$0\"" [ROOT]/started"#),
        "{shown}"
    );
    assert!(trust_file.exists());

    // Trusted: both start (the second one only touches its file and exits, which `servers`
    // reports as a failure).
    let output = machine.run(&["servers", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let names = server_names(&report);
    assert_eq!(names, ["fixture", "setup"], "{report}");
    assert!(marker.exists(), "a trusted server was not started");
    std::fs::remove_file(&marker).unwrap();

    // A changed entry is not trusted any more; the unchanged one still is.
    let other = machine.root.join("elsewhere");
    machine.write(&mcp_json, &entries(&[other.to_str().unwrap()]));
    let output = machine.run(&["config"]);
    let shown = machine.redact(&text(&output.stdout));
    assert!(
        shown.contains("fixture              used (stdio)"),
        "{shown}"
    );
    assert!(shown.contains("setup                skipped: changed since you trusted it; `toolweave trust` starts it (sh -c"), "{shown}");
    let output = machine.run(&["servers", "--json"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(!other.exists(), "a changed entry was started");

    // `--forget` takes it all back.
    let output = machine.run(&["trust", "--forget"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let output = machine.run(&["config", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["servers"], serde_json::json!([]), "{report}");
    let output = machine.run(&["trust", "--forget"]);
    assert!(
        text(&output.stdout).contains("nothing to forget"),
        "{}",
        text(&output.stdout)
    );

    // Answering yes at the terminal trusts them as --yes does.
    // Then it offers the servers it trusted boxes; declining writes none and is no failure.
    let (code, shown) = machine.run_at_terminal(&["trust"], "y\nn\n");
    assert_eq!(code, Some(0), "{shown}");
    assert!(shown.contains("Trust them? [y/N] "), "{shown}");
    assert!(
        shown.contains("These stdio servers run unboxed") && shown.contains("No box written."),
        "{shown}"
    );
    let output = machine.run(&["config", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(server_names(&report), ["fixture", "setup"], "{report}");
}

#[test]
fn finding_nothing_is_an_error_that_lists_where_toolweave_looked() {
    let machine = Machine::new();
    let output = machine.run(&["tools"]);
    assert_eq!(output.status.code(), Some(1));
    insta::assert_snapshot!("nothing_found", machine.redact(&text(&output.stderr)));
}

#[test]
fn init_writes_backs_up_and_is_idempotent() {
    let machine = Machine::new();
    machine.realistic();
    let original = std::fs::read_to_string(machine.claude_json()).unwrap();

    // Without a terminal and without --yes, nothing is written.
    let output = machine.run(&["init", "--client", "claude-code", "--disable-fronted"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("pass --yes"),
        "{}",
        text(&output.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(machine.claude_json()).unwrap(),
        original
    );
    // At a terminal it shows the change and asks; "no" writes nothing.
    let (code, shown) = machine.run_at_terminal(
        &["init", "--client", "claude-code", "--disable-fronted"],
        "no\n",
    );
    assert_eq!(code, Some(1), "{shown}");
    assert!(
        shown.contains("Write it? [y/N] ") && shown.contains("Nothing written."),
        "{shown}"
    );
    assert_eq!(
        std::fs::read_to_string(machine.claude_json()).unwrap(),
        original
    );

    let output = machine.run(&[
        "init",
        "--client",
        "claude-code",
        "--disable-fronted",
        "--yes",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    insta::assert_snapshot!(
        "init_output",
        machine
            .redact(&text(&output.stdout))
            .lines()
            .filter(|line| !line.starts_with("The original is saved as"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let written = std::fs::read_to_string(machine.claude_json()).unwrap();
    insta::assert_snapshot!("init_claude_json", machine.redact(&written));
    let made = backups(&machine.home);
    assert_eq!(made.len(), 1, "{made:?}");
    assert_eq!(std::fs::read_to_string(&made[0]).unwrap(), original);

    // The servers toolweave fronts are disabled for Claude Code, and still toolweave's.
    let output = machine.run(&["config", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let names = server_names(&report);
    assert_eq!(names, ["context7", "fixture", "memory"]);

    // Twice: nothing changes, no second backup.
    let output = machine.run(&[
        "init",
        "--client",
        "claude-code",
        "--disable-fronted",
        "--yes",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("nothing to change"),
        "{}",
        text(&output.stdout)
    );
    assert_eq!(
        std::fs::read_to_string(machine.claude_json()).unwrap(),
        written
    );
    assert_eq!(backups(&machine.home).len(), 1);

    // Without --disable-fronted the record of what toolweave fronts stays: still nothing to do.
    let output = machine.run(&["init", "--client", "claude-code", "--yes"]);
    assert!(
        text(&output.stdout).contains("nothing to change"),
        "{}",
        text(&output.stdout)
    );
}

#[test]
fn init_keeps_vscode_layout_and_creates_missing_files() {
    let machine = Machine::new();
    machine.realistic();
    let output = machine.run(&["init", "--client", "vscode", "--yes"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let written = std::fs::read_to_string(machine.project.join(".vscode/mcp.json")).unwrap();
    insta::assert_snapshot!("init_vscode", machine.redact(&written));

    // Cursor's global file, pointed at a config file of toolweave's own.
    let config = machine.root.join("servers.json");
    machine.write(&config, r#"{"mcpServers": {}}"#);
    let output = machine.run(&[
        "init",
        "--client",
        "cursor",
        "--yes",
        "--config",
        config.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let written = std::fs::read_to_string(machine.home.join(".cursor/mcp.json")).unwrap();
    insta::assert_snapshot!("init_cursor", machine.redact(&written));
    assert_eq!(backups(&machine.home.join(".cursor")).len(), 1);

    // No client file at all: init asks which to create; the one named is created, with
    // nothing to back up.
    let empty = Machine::new();
    let output = empty.run(&["init", "--yes"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("pass --client"),
        "{}",
        text(&output.stderr)
    );
    let output = empty.run(&["init", "--client", "project", "--yes"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let written = std::fs::read_to_string(empty.project.join(".mcp.json")).unwrap();
    insta::assert_snapshot!("init_project_new", empty.redact(&written));
    assert!(backups(&empty.project).is_empty());
}

/// The backups `init` made in `directory` (and its project's `.vscode`).
fn backups(directory: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(directory)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.to_string_lossy().contains(".toolweave-backup-"))
        .collect();
    found.sort();
    found
}

#[test]
fn init_offers_boxes_for_the_stdio_servers_and_writes_them_to_the_settings_file() {
    let machine = Machine::new();
    let notes = machine.home.join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    let cursor = machine.home.join(".cursor/mcp.json");
    machine.write(
        &cursor,
        &serde_json::to_string_pretty(&serde_json::json!({"mcpServers": {
            "files": {"command": "files-server", "args": [&notes]},
            "github": {"command": "github-server", "env": {"GITHUB_TOKEN": "t"}},
            "plain": {"command": "plain-server"},
            "own": {"command": "own-server", "sandbox": {"network": "loopback"}},
            "remote": {"url": "http://127.0.0.1:9/mcp"}
        }}))
        .unwrap(),
    );
    let settings = machine.home.join(".config/toolweave/settings.json");

    // At a terminal: registering toolweave is confirmed, boxing declined; nothing is boxed.
    let (code, shown) = machine.run_at_terminal(&["init", "--client", "cursor"], "y\nn\n");
    assert_eq!(code, Some(0), "{shown}");
    assert!(
        shown.contains("These stdio servers run unboxed")
            && shown.contains("files   box: {\"write\":[")
            && shown.contains("github  unboxed: it seems to use the network (GITHUB_TOKEN)")
            && shown.contains("plain   box: the defaults")
            && !shown.contains("  own ")
            && !shown.contains("  remote ")
            && shown.contains("Box them? [y/N] ")
            && shown.contains("No box written."),
        "{shown}"
    );
    assert!(!settings.exists());

    // --yes alone shows them and the flag that writes them.
    let output = machine.run(&["init", "--client", "cursor", "--yes"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("Run again with --box to write them."),
        "{}",
        text(&output.stdout)
    );
    assert!(!settings.exists());

    // --box writes them beside what the settings file already says.
    machine.write(&settings, r#"{"deny": ["*.delete_*"]}"#);
    let output = machine.run(&["init", "--client", "cursor", "--yes", "--box"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(
        written,
        serde_json::json!({
            "deny": ["*.delete_*"],
            "sandbox": true,
            "boxes": {"files": {"write": [notes]}, "github": false},
        })
    );
    // Every server is now decided: nothing more is offered, and `servers` shows the boxes.
    let output = machine.run(&["init", "--client", "cursor", "--yes"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        !text(&output.stdout).contains("run unboxed"),
        "{}",
        text(&output.stdout)
    );
    let output = machine.run(&["servers", "--startup-timeout-ms", "1000"]);
    let shown = text(&output.stdout);
    assert!(
        shown.contains(&format!(
            "may: boxed (\"boxes\".\"files\" in {}): reads only what it needs to start; writes {}",
            settings.display(),
            notes.display()
        )) && shown.contains(&format!(
            "may: boxed (\"sandbox\" in {}): reads only what it needs to start",
            settings.display()
        )) && shown.contains("may: boxed (\"sandbox\" in its entry in "),
        "{shown}"
    );
}
