//! The fixture server over HTTP: streamable HTTP (rmcp's `StreamableHttpService` in axum) or the
//! legacy HTTP+SSE transport (a small axum app: `GET /sse` opens the event stream, whose
//! `endpoint` event names `/message?sessionId=ID` for the client's `POST`s).
//!
//! [`RemoteFixture`] runs the fixture binary this way for a test and reads the URL it prints.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::{Context, bail};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};
use rmcp::ServiceExt;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpListener;

use crate::fixture::{FixtureOptions, FixtureServer};
use crate::fixture_oauth::Authority;
use crate::listen::{LISTENING, Listen};

/// Serves the fixture over HTTP as `options.listen` says, until the process is stopped.
pub async fn serve_http(options: FixtureOptions) -> anyhow::Result<()> {
    let (address, sse) = match &options.listen {
        Some(Listen::Http(address)) => (address.clone(), false),
        Some(Listen::Sse(address)) => (address.clone(), true),
        None => bail!("serve_http needs --http or --sse"),
    };
    if !options.start_delay.is_zero() {
        tokio::time::sleep(options.start_delay).await;
    }
    let server = FixtureServer::new(options.name.clone(), options.page_size)
        .with_exit_after_calls(options.exit_after_calls)
        .with_record_meta(options.record_meta.clone())
        .with_instructions(options.instructions.clone())
        .with_synthetic_tools(options.synthetic_tools)
        .with_appended_descriptions(&options.appended_descriptions)
        .with_app_only(&options.app_only);
    let (app, path) = if sse {
        (sse_app(server), "/sse")
    } else {
        let service = StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        );
        (Router::new().route_service("/mcp", service), "/mcp")
    };
    let required = Arc::new(options.require_header.clone());
    let mut app = app.layer(middleware::from_fn_with_state(required, require_header));
    let listener = TcpListener::bind(&address)
        .await
        .with_context(|| format!("cannot listen on {address}"))?;
    let bound = listener.local_addr()?;
    if let Some(oauth) = &options.oauth {
        let authority = Authority::new(format!("http://{bound}"), path, oauth.clone());
        app = app
            .layer(middleware::from_fn_with_state(
                authority.clone(),
                Authority::require_token,
            ))
            .merge(authority.routes());
    }
    eprintln!("{LISTENING}http://{bound}{path}");
    axum::serve(listener, app).await?;
    Ok(())
}

/// Answers 401 (with a bearer challenge, as real servers do) without the required header.
async fn require_header(
    State(required): State<Arc<Option<(String, String)>>>,
    request: Request,
    next: Next,
) -> Response {
    if let Some((name, value)) = required.as_ref() {
        let sent = request
            .headers()
            .get(name.as_str())
            .and_then(|sent| sent.to_str().ok());
        if sent != Some(value.as_str()) {
            return (
                StatusCode::UNAUTHORIZED,
                [(
                    header::WWW_AUTHENTICATE,
                    "Bearer realm=\"toolweave-fixture\"",
                )],
                "missing or wrong credentials",
            )
                .into_response();
        }
    }
    next.run(request).await
}

/// The legacy transport's sessions: where each one's posted messages go.
#[derive(Clone, Default)]
struct Sessions {
    next: Arc<AtomicU64>,
    senders: Arc<Mutex<HashMap<u64, mpsc::Sender<ClientJsonRpcMessage>>>>,
}

fn sse_app(server: FixtureServer) -> Router {
    let sessions = Sessions::default();
    let open = {
        let sessions = sessions.clone();
        move || open_sse(server.clone(), sessions.clone())
    };
    Router::new().route("/sse", get(open)).route(
        "/message",
        post(move |uri: Uri, body: Bytes| post_message(sessions.clone(), uri, body)),
    )
}

async fn open_sse(server: FixtureServer, sessions: Sessions) -> Response {
    let id = sessions.next.fetch_add(1, Ordering::SeqCst);
    let (client_sender, client_messages) = mpsc::channel::<ClientJsonRpcMessage>(16);
    let (server_sink, server_messages) = mpsc::channel(16);
    sessions
        .senders
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(id, client_sender);
    tokio::spawn(async move {
        match server.serve((server_sink, client_messages)).await {
            Ok(service) => {
                let _ = service.waiting().await;
            }
            Err(error) => tracing::warn!(%error, "an SSE session did not start"),
        }
    });
    let endpoint = futures::stream::once(async move {
        Ok::<_, std::convert::Infallible>(
            Event::default()
                .event("endpoint")
                .data(format!("/message?sessionId={id}")),
        )
    });
    let messages = server_messages.map(|message: rmcp::model::ServerJsonRpcMessage| {
        let data = serde_json::to_string(&message).unwrap_or_default();
        Ok(Event::default().event("message").data(data))
    });
    Sse::new(endpoint.chain(messages))
        .keep_alive(KeepAlive::default())
        .into_response()
}

async fn post_message(sessions: Sessions, uri: Uri, body: Bytes) -> Response {
    let id = uri
        .query()
        .unwrap_or_default()
        .split('&')
        .find_map(|pair| pair.strip_prefix("sessionId="))
        .and_then(|id| id.parse::<u64>().ok());
    let sender = id.and_then(|id| {
        sessions
            .senders
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&id)
            .cloned()
    });
    let Some(mut sender) = sender else {
        return (StatusCode::NOT_FOUND, "unknown session").into_response();
    };
    let message: ClientJsonRpcMessage = match serde_json::from_slice(&body) {
        Ok(message) => message,
        Err(error) => return (StatusCode::BAD_REQUEST, error.to_string()).into_response(),
    };
    if sender.send(message).await.is_err() {
        return (StatusCode::NOT_FOUND, "the session ended").into_response();
    }
    (StatusCode::ACCEPTED, HeaderMap::new(), "Accepted").into_response()
}

/// The fixture binary serving over HTTP, for a test. Killed when dropped.
#[derive(Debug)]
pub struct RemoteFixture {
    child: tokio::process::Child,
    /// The URL it serves MCP at, e.g. `http://127.0.0.1:41234/mcp`.
    pub url: String,
    /// The address it listens on, e.g. `127.0.0.1:41234`: start another on it after a kill.
    pub address: String,
}

impl RemoteFixture {
    /// Runs `toolweave-fixture` with `arguments` (which say `--http ADDR` or `--sse ADDR`) and
    /// waits (at most 10 s) for the line with its URL.
    pub async fn start(arguments: &[&str]) -> anyhow::Result<Self> {
        let mut child = tokio::process::Command::new(crate::fixture_binary())
            .args(arguments)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .context("cannot start toolweave-fixture")?;
        let stderr = child.stderr.take().context("no stderr")?;
        let mut lines = BufReader::new(stderr).lines();
        let url = tokio::time::timeout(Duration::from_secs(10), async {
            while let Some(line) = lines.next_line().await? {
                if let Some(url) = line.strip_prefix(LISTENING) {
                    return Ok(url.to_owned());
                }
                eprintln!("fixture: {line}");
            }
            bail!("toolweave-fixture ended without saying where it listens")
        })
        .await
        .context("toolweave-fixture did not start listening within 10 s")??;
        // Keep reading stderr so the fixture never blocks on a full pipe.
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                eprintln!("fixture: {line}");
            }
        });
        let address = url
            .strip_prefix("http://")
            .and_then(|rest| rest.split('/').next())
            .context("unexpected URL")?
            .to_owned();
        Ok(Self {
            child,
            url,
            address,
        })
    }

    /// Sends it SIGKILL and returns at once, so a test can race a request against its death.
    pub fn start_kill(&mut self) -> anyhow::Result<()> {
        self.child.start_kill()?;
        Ok(())
    }

    /// Kills it and waits until it is gone.
    pub async fn kill(&mut self) -> anyhow::Result<()> {
        self.child.kill().await?;
        Ok(())
    }
}
