//! Drives the real `toolweave serve --http` as a separate process, with MCP clients over
//! streamable HTTP.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::harness::Toolweave;

/// What the gateway says on stderr once it listens, before `http://ADDRESS/mcp`.
const LISTENING: &str = "toolweave: serving MCP at http://";

/// An HTTP client for loopback tests. TLS in this workspace has no default crypto provider, so
/// the first call installs ring as the process default (the client itself speaks plain HTTP).
pub fn client() -> reqwest::Client {
    // Err only means a provider is installed already.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// One raw HTTP/1.1 exchange on a fresh connection, for requests no HTTP client would send
/// (conflicting framing, bodies past a limit): the status and the body, once the server closes
/// the connection (within 20 s).
pub async fn raw_exchange(address: SocketAddr, request: &[u8]) -> Result<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address).await?;
    stream.write_all(request).await?;
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut answer))
        .await
        .context("no answer within 20 s")??;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let Some(status) = answer
        .split(' ')
        .nth(1)
        .and_then(|status| status.parse().ok())
    else {
        bail!("not an HTTP answer: {answer:?}");
    };
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    Ok((status, body.to_owned()))
}

/// A running `toolweave serve --http 127.0.0.1:0`.
pub struct HttpToolweave {
    child: Child,
    address: SocketAddr,
    stderr: Arc<Mutex<String>>,
}

impl HttpToolweave {
    /// Spawns `binary serve --http 127.0.0.1:0 --config config <extra>` with `env` added (and a
    /// configuration folder of its own unless `env` names one: [`crate::harness::config_home`]),
    /// and waits (up to 20 s) until it listens.
    pub async fn start(
        binary: &Path,
        config: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Result<Self> {
        Self::spawn(Command::new(binary), config, extra, env).await
    }

    /// [`HttpToolweave::start`] with the gateway's address space limited to `bytes`
    /// (`RLIMIT_AS`, set by util-linux's `prlimit`, which then runs the gateway in its own
    /// process), so that an allocation past it fails inside the gateway as it would on a host
    /// that limits it.
    pub async fn start_limited(
        binary: &Path,
        bytes: u64,
        config: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Result<Self> {
        let mut command = Command::new("prlimit");
        command.arg(format!("--as={bytes}")).arg("--").arg(binary);
        Self::spawn(command, config, extra, env).await
    }

    async fn spawn(
        mut command: Command,
        config: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Result<Self> {
        let mut child = command
            .args(["serve", "--http", "127.0.0.1:0", "--config"])
            .arg(config)
            .args(extra)
            .env("TOOLWEAVE_LOG", "info")
            .env("XDG_CONFIG_HOME", crate::harness::config_home())
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .context("spawning toolweave serve --http")?;
        let stderr = child.stderr.take().context("no stderr")?;
        let text = Arc::new(Mutex::new(String::new()));
        let (found, listening) = tokio::sync::oneshot::channel();
        let collected = text.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            let mut found = Some(found);
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(rest) = line.strip_prefix(LISTENING)
                    && let Some(address) = rest
                        .split('/')
                        .next()
                        .and_then(|address| address.parse::<SocketAddr>().ok())
                    && let Some(found) = found.take()
                {
                    let _ = found.send(address);
                }
                let mut text = collected.lock().unwrap_or_else(PoisonError::into_inner);
                text.push_str(&line);
                text.push('\n');
            }
        });
        let address = match tokio::time::timeout(Duration::from_secs(20), listening).await {
            Ok(Ok(address)) => address,
            _ => {
                let status = child.try_wait().ok().flatten();
                bail!(
                    "toolweave serve --http did not start listening (exit: {status:?}); stderr:\n{}",
                    text.lock().unwrap_or_else(PoisonError::into_inner)
                );
            }
        };
        Ok(Self {
            child,
            address,
            stderr: text,
        })
    }

    /// Where it listens.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Its MCP endpoint.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.address)
    }

    /// Its process id.
    pub fn process_id(&self) -> Option<u32> {
        self.child.id()
    }

    /// A new MCP session (a client of its own), sending `Authorization: Bearer token` if given.
    pub async fn connect(&self, token: Option<&str>) -> Result<Toolweave> {
        let mut config = StreamableHttpClientTransportConfig::with_uri(self.url());
        if let Some(token) = token {
            config = config.auth_header(token);
        }
        let transport = StreamableHttpClientTransport::with_client(client(), config);
        let client = ().serve(transport).await.context("initialize over HTTP")?;
        Ok(Toolweave::from_client(client, self.process_id()))
    }

    /// Its exit status, once it has exited.
    pub fn try_wait(&mut self) -> Result<Option<ExitStatus>> {
        Ok(self.child.try_wait()?)
    }

    /// What it logged so far.
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Sends SIGTERM and waits up to `limit` for it to exit.
    pub async fn terminate(&mut self, limit: Duration) -> Result<ExitStatus> {
        self.send_terminate()?;
        self.wait_exit(limit).await
    }

    /// Sends SIGTERM and returns at once.
    pub fn send_terminate(&mut self) -> Result<()> {
        let Some(process_id) = self.child.id() else {
            bail!("already exited");
        };
        let status = std::process::Command::new("kill")
            .args(["-TERM", &process_id.to_string()])
            .status()
            .context("running kill")?;
        if !status.success() {
            bail!("kill -TERM {process_id} failed");
        }
        Ok(())
    }

    /// Waits up to `limit` for it to exit.
    pub async fn wait_exit(&mut self, limit: Duration) -> Result<ExitStatus> {
        tokio::time::timeout(limit, self.child.wait())
            .await
            .with_context(|| format!("still running {} ms after SIGTERM", limit.as_millis()))?
            .context("waiting for toolweave")
    }
}
