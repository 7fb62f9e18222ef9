//! Programs as models write them against real servers from the registries (`tests/real/`, in
//! the case-file format of `tests/cases/`), through the real binary: `mcp-server-time`,
//! `mcp-server-git` on a repository the test makes, `mcp-server-fetch` on an HTTP server the test
//! starts on 127.0.0.1, `mcp-server-sqlite` on a database the test seeds and `redis-mcp-server`
//! on a Debian `redis-server` the test starts and fills. Each case's expectation is what the test
//! put there (`{{HEAD}}` is the id of the commit it made), never what a run answered.
//!
//! The time, git and fetch servers come from the virtual environment of `.ci/run`
//! (`target/servers-venv`, or `TOOLWEAVE_TEST_SERVERS_VENV`); the sqlite and Redis servers are
//! built on the MCP Python SDK 1.x, which that environment's FastMCP 4 cannot share, and come
//! from `target/sdk1-servers-venv` (or `TOOLWEAVE_TEST_SDK1_SERVERS_VENV`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolweave_testkit::cases::{self, CASE_LIMITS, Case};
use toolweave_testkit::harness::Toolweave;
use toolweave_testkit::skip::missing_prerequisite;

use super::cases::check_case;
use super::{repo_root, toolweave, venv_program};

/// How long one case may run: a real server's first call waits for it to start, and Python
/// servers take seconds to start on a loaded machine.
const REAL_TIMEOUT_MS: &str = "30000";

/// The commands of the real servers and Redis, or why one is missing.
struct Programs {
    time: PathBuf,
    git: PathBuf,
    fetch: PathBuf,
    sqlite: PathBuf,
    redis: PathBuf,
    /// The Python of the sqlite server's environment, which seeds the database.
    python: PathBuf,
    redis_server: PathBuf,
}

impl Programs {
    fn find() -> Result<Self, String> {
        let servers = |program| {
            venv_program(
                "TOOLWEAVE_TEST_SERVERS_VENV",
                "target/servers-venv",
                program,
            )
        };
        let sdk1 = |program| {
            venv_program(
                "TOOLWEAVE_TEST_SDK1_SERVERS_VENV",
                "target/sdk1-servers-venv",
                program,
            )
        };
        let on_path = |program: &str| {
            std::env::var_os("PATH")
                .into_iter()
                .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
                .map(|folder| folder.join(program))
                .find(|path| path.is_file())
                .ok_or_else(|| {
                    format!("{program} is not on PATH (Debian's redis-server package has it)")
                })
        };
        Ok(Self {
            time: servers("mcp-server-time")?,
            git: servers("mcp-server-git")?,
            fetch: servers("mcp-server-fetch")?,
            sqlite: sdk1("mcp-server-sqlite")?,
            redis: sdk1("redis-mcp-server")?,
            python: sdk1("python")?,
            redis_server: on_path("redis-server")?,
        })
    }
}

/// An HTTP server on 127.0.0.1 answering each path of `pages` with its content type and body,
/// and 404 otherwise; its port.
async fn http_server(pages: HashMap<&'static str, (&'static str, &'static str)>) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let pages = pages.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buffer = [0u8; 1024];
                while !head.windows(4).any(|window| window == b"\r\n\r\n") {
                    match stream.read(&mut buffer).await {
                        Ok(0) | Err(_) => return,
                        Ok(read) => head.extend_from_slice(&buffer[..read]),
                    }
                }
                let head = String::from_utf8_lossy(&head);
                let path = head.split_whitespace().nth(1).unwrap_or("/");
                let (status, (content_type, body)) = match pages.get(path) {
                    Some(page) => ("200 OK", *page),
                    None => ("404 Not Found", ("text/plain", "no such page")),
                };
                let answer = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(answer.as_bytes()).await;
            });
        }
    });
    port
}

/// Runs `git` in `repository` as Ada; its standard output.
fn git(repository: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .args(args)
        .current_dir(repository)
        .env("GIT_AUTHOR_NAME", "Ada")
        .env("GIT_AUTHOR_EMAIL", "ada@example.com")
        .env("GIT_COMMITTER_NAME", "Ada")
        .env("GIT_COMMITTER_EMAIL", "ada@example.com")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", repository)
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// A repository with two commits on `main`, a second branch, a modified file and an untracked
/// one; the id of its newest commit.
fn make_repository(repository: &Path) -> String {
    std::fs::create_dir_all(repository).unwrap();
    git(repository, &["init", "--quiet", "--initial-branch", "main"]);
    std::fs::write(repository.join("notes.txt"), "first notes\n").unwrap();
    git(repository, &["add", "notes.txt"]);
    git(repository, &["commit", "--quiet", "-m", "Add the notes"]);
    std::fs::write(
        repository.join("parser.py"),
        "def parse(text):\n    return text.split()\n",
    )
    .unwrap();
    git(repository, &["add", "parser.py"]);
    git(repository, &["commit", "--quiet", "-m", "Add the parser"]);
    git(repository, &["branch", "release"]);
    std::fs::write(repository.join("notes.txt"), "changed notes\n").unwrap();
    std::fs::write(repository.join("todo.txt"), "todo\n").unwrap();
    git(repository, &["rev-parse", "HEAD"]).trim().to_owned()
}

/// An orders table: Ada's 12.5 and 7.5, Grace's 30.
fn seed_database(python: &Path, database: &Path) {
    let status = std::process::Command::new(python)
        .arg("-c")
        .arg(
            "import sqlite3, sys\n\
             db = sqlite3.connect(sys.argv[1])\n\
             db.execute('CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT, amount REAL)')\n\
             db.executemany('INSERT INTO orders VALUES (?, ?, ?)', [(1, 'Ada', 12.5), (2, 'Grace', 30), (3, 'Ada', 7.5)])\n\
             db.commit()\n",
        )
        .arg(database)
        .status()
        .unwrap();
    assert!(status.success(), "seeding {}", database.display());
}

/// A `redis-server` on 127.0.0.1 that keeps nothing on disk, holding a string, a list and a
/// hash; the child (killed when dropped) and its port.
async fn start_redis(redis_server: &Path, dir: &Path) -> (tokio::process::Child, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = tokio::process::Command::new(redis_server)
        .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
        .args(["--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(dir)
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stream = None;
    for _ in 0..100 {
        match tokio::net::TcpStream::connect(("127.0.0.1", port)).await {
            Ok(connected) => {
                stream = Some(connected);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    let mut stream = stream.unwrap_or_else(|| panic!("redis-server did not listen within 5 s"));
    // Inline commands, one a line; each answers one line (+OK, :3, :2).
    stream
        .write_all(
            b"SET greeting hello\r\nRPUSH queue a b c\r\nHSET user:1 name Ada city London\r\n",
        )
        .await
        .unwrap();
    let mut answers = Vec::new();
    let mut buffer = [0u8; 256];
    while answers.iter().filter(|byte| **byte == b'\n').count() < 3 {
        let read = stream.read(&mut buffer).await.unwrap();
        assert!(read > 0, "redis-server closed: {answers:?}");
        answers.extend_from_slice(&buffer[..read]);
    }
    assert_eq!(answers, b"+OK\r\n:3\r\n:2\r\n");
    (child, port)
}

/// The limits the case files are written against, with a longer timeout.
fn real_limits() -> Vec<&'static str> {
    let mut limits = CASE_LIMITS.to_vec();
    let timeout = limits
        .iter()
        .position(|flag| *flag == "--timeout-ms")
        .unwrap_or_else(|| panic!("the case limits set no timeout: {limits:?}"));
    limits[timeout + 1] = REAL_TIMEOUT_MS;
    limits
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn programs_against_real_servers() {
    let test = "programs_against_real_servers";
    let programs = match Programs::find() {
        Ok(programs) => programs,
        Err(why) => return missing_prerequisite(test, &why),
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let repository = root.join("repository");
    let head = make_repository(&repository);
    let database = root.join("shop.sqlite");
    seed_database(&programs.python, &database);
    let (_redis, redis_port) = start_redis(&programs.redis_server, &root).await;
    let web = http_server(HashMap::from([
        (
            "/index.html",
            (
                "text/html",
                "<html><head><title>Harbour Library</title></head><body><h1>Opening hours</h1><p>Monday to Friday, 9 to 17.</p><ul><li>Saturday: 10 to 14</li><li>Sunday: closed</li></ul></body></html>",
            ),
        ),
        (
            "/books.json",
            (
                "application/json",
                r#"{"books": [{"title": "Dune", "copies": 3}, {"title": "Emma", "copies": 1}]}"#,
            ),
        ),
    ]))
    .await;

    let config = root.join("mcp.json");
    std::fs::write(
        &config,
        json!({ "mcpServers": {
            "time": { "command": programs.time },
            "git": { "command": programs.git, "args": ["--repository", &repository] },
            "fetch": { "command": programs.fetch, "args": ["--ignore-robots-txt", "--allow-private-ips"] },
            "sqlite": { "command": programs.sqlite, "args": ["--db-path", &database] },
            "redis": { "command": programs.redis, "args": ["--url", format!("redis://127.0.0.1:{redis_port}/0")] },
        } })
        .to_string(),
    )
    .unwrap();
    let server = Toolweave::start(toolweave(), &config, &real_limits())
        .await
        .unwrap();

    let real = repo_root().join("tests/real");
    let files = cases::files_in(&["js", "py"].map(|folder| real.join(folder))).unwrap();
    let variables = [
        ("REPO", repository.display().to_string()),
        ("URL", format!("http://127.0.0.1:{web}")),
        ("HEAD", head),
    ];
    // Every server is called by at least one case in each language.
    for server_name in ["time", "git", "fetch", "sqlite", "redis"] {
        for extension in ["js", "py"] {
            assert!(
                files.iter().any(|path| {
                    path.extension().is_some_and(|found| found == extension)
                        && path
                            .file_name()
                            .is_some_and(|name| name.to_string_lossy().starts_with(server_name))
                }),
                "no {extension} case calls {server_name} in {}",
                real.display()
            );
        }
    }
    let mut failures = Vec::new();
    for path in &files {
        let case = Case::read_with(path, &variables).unwrap();
        failures.extend(check_case(&server, case).await);
    }
    server.stop().await.unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} programs against real servers failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}
