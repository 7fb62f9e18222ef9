//! The approval page: how a person approves a call when the client cannot ask them itself (it
//! has no form elicitation), or when toolweave is told to ask this way (`--approval page`).
//!
//! While a call waits, toolweave serves a one-time page on loopback (127.0.0.1, a port of its
//! own choosing or `--approval-port`) at `/approval/ID/TOKEN`, where TOKEN is 256 random bits
//! and the secret. The page shows the tool, why it asks, its arguments and the SHA-256 of the
//! execution's code, with Approve and Deny buttons (a plain form, no script). The answer is a
//! POST to the same address carrying the token again in its body; a request another site's page
//! sent (by `Origin` or `Sec-Fetch-Site`), or whose `Host` is not the loopback address it was
//! served on, is refused,
//! and a token answers once. Each pending call also has a file of its own (owner-only) under
//! `$XDG_RUNTIME_DIR/toolweave/approvals/` naming its address, so `toolweave approve` can list
//! and answer it from a terminal: the file is as secret as the token it holds.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use subtle::ConstantTimeEq;
use tokio::sync::oneshot;
use toolweave_core::AnsweredVia;

/// How long a call waits for an answer at the page when nothing says otherwise.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(120);

/// The most of a call's arguments the page shows.
const MAX_SHOWN_ARGUMENTS: usize = 64 * 1024;

/// The largest answer the page takes.
const MAX_ANSWER_BYTES: usize = 4096;

/// How a call in the ask tier asks the person.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ApprovalMode {
    /// Through the client's form (elicitation) when it has one, else the page.
    #[default]
    Auto,
    /// Always through the page (and `toolweave approve`).
    Page,
    /// Only through the client's form; a client without one cannot approve.
    Elicitation,
}

/// How approval asks, and how long it waits at the page.
#[derive(Debug, Clone)]
pub struct ApprovalOptions {
    /// Form elicitation, the page, or whichever the client allows.
    pub mode: ApprovalMode,
    /// The loopback port the page is served on (any free one when `None`).
    pub port: Option<u16>,
    /// How long a call waits for an answer at the page.
    pub timeout: Duration,
    /// A command run with the page's address as its last argument (a browser), if any.
    pub browser_command: Option<Vec<String>>,
    /// Where pending calls are listed for `toolweave approve` (none when `None`).
    pub runtime_dir: Option<PathBuf>,
}

impl Default for ApprovalOptions {
    fn default() -> Self {
        Self {
            mode: ApprovalMode::Auto,
            port: None,
            timeout: DEFAULT_APPROVAL_TIMEOUT,
            browser_command: None,
            runtime_dir: approvals_dir(),
        }
    }
}

/// The folder pending approvals are listed in: `$XDG_RUNTIME_DIR/toolweave/approvals`, else
/// the config folder's `toolweave/approvals`.
pub fn approvals_dir() -> Option<PathBuf> {
    let env = |name: &str| {
        std::env::var_os(name)
            .filter(|value| !value.is_empty())
            .map(PathBuf::from)
    };
    let base = env("XDG_RUNTIME_DIR")
        .or_else(|| env("XDG_CONFIG_HOME"))
        .or_else(|| env("HOME").map(|home| home.join(".config")))?;
    Some(base.join("toolweave").join("approvals"))
}

/// What the page shows about one pending call.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingCall {
    /// The short id `toolweave approve` names it by.
    pub id: String,
    /// The page's address, token included.
    pub url: String,
    /// The tool, as `server.tool`.
    pub tool: String,
    /// Why it asks.
    pub reason: String,
    /// The call's arguments.
    pub arguments: Value,
    /// The SHA-256 of the code that makes the call (none for a tool the client called directly).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code_sha256: Option<String>,
    /// The scopes the answer may take: the word, and what it covers.
    pub scopes: Vec<(String, String)>,
    /// The gateway's process id.
    pub pid: u32,
}

/// The person's answer, as the page or `toolweave approve` gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PageAnswer {
    /// Approve (else deny).
    pub(crate) approve: bool,
    /// The scope word chosen (one [`PendingCall::scopes`] offered).
    pub(crate) scope: String,
    /// Where it was given.
    pub(crate) via: AnsweredVia,
}

/// One call waiting at the page.
struct Waiting {
    token: String,
    call: PendingCall,
    answer: oneshot::Sender<PageAnswer>,
}

type Table = Arc<Mutex<HashMap<String, Waiting>>>;

/// The page server and the calls waiting at it; one per process.
#[derive(Debug)]
pub(crate) struct ApprovalPages {
    options: ApprovalOptions,
    /// Where the page is served, once it is.
    bound: tokio::sync::Mutex<Option<SocketAddr>>,
    waiting: Table,
}

impl std::fmt::Debug for Waiting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiting")
            .field("id", &self.call.id)
            .finish_non_exhaustive()
    }
}

/// A call registered at the page: its address and the answer to come. Dropping it takes the
/// call off the page and removes its file.
pub(crate) struct Ticket {
    /// The call as the page shows it.
    pub(crate) call: PendingCall,
    /// The answer, when one comes.
    pub(crate) answer: oneshot::Receiver<PageAnswer>,
    file: Option<PathBuf>,
    waiting: Table,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.call.id);
        if let Some(file) = &self.file {
            let _ = std::fs::remove_file(file);
        }
    }
}

impl ApprovalPages {
    /// Pages served as `options` say (nothing is bound until a call waits).
    pub(crate) fn new(options: ApprovalOptions) -> Self {
        Self {
            options,
            bound: tokio::sync::Mutex::default(),
            waiting: Arc::default(),
        }
    }

    /// How approval asks, and how long it waits.
    pub(crate) fn options(&self) -> &ApprovalOptions {
        &self.options
    }

    /// Registers a call (`call`'s `id`, `url` and `pid` are filled in here): serves the page
    /// if it is not served yet, and lists the call for `toolweave approve`. `Err` says why the
    /// page cannot be served.
    pub(crate) async fn register(&self, mut call: PendingCall) -> Result<Ticket, String> {
        let address = self.serve().await?;
        let token = hex(&random::<32>()?);
        call.id = hex(&random::<4>()?);
        call.url = format!("http://{address}/approval/{}/{token}", call.id);
        call.pid = std::process::id();
        let (sender, receiver) = oneshot::channel();
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                call.id.clone(),
                Waiting {
                    token,
                    call: call.clone(),
                    answer: sender,
                },
            );
        let file = self.options.runtime_dir.as_deref().and_then(|dir| {
            write_pending(dir, &call)
                .map_err(|error| {
                    tracing::warn!(dir = %dir.display(), %error, "cannot list the pending approval for `toolweave approve`; answer it at its page")
                })
                .ok()
        });
        Ok(Ticket {
            call,
            answer: receiver,
            file,
            waiting: self.waiting.clone(),
        })
    }

    /// The page server's address, binding it on first use.
    async fn serve(&self) -> Result<SocketAddr, String> {
        let mut bound = self.bound.lock().await;
        if let Some(address) = *bound {
            return Ok(address);
        }
        let wanted = SocketAddr::from(([127, 0, 0, 1], self.options.port.unwrap_or(0)));
        let listener = tokio::net::TcpListener::bind(wanted).await.map_err(|error| {
            format!(
                "toolweave cannot serve its approval page on {wanted} ({error}); choose another port with --approval-port"
            )
        })?;
        let address = listener.local_addr().map_err(|error| error.to_string())?;
        let router = axum::Router::new()
            .route(
                "/approval/{id}/{token}",
                axum::routing::get(show).post(answer),
            )
            .with_state(Server {
                address,
                waiting: self.waiting.clone(),
            });
        tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, router).await {
                tracing::warn!(%error, "the approval page stopped serving");
            }
        });
        tracing::info!(%address, "serving the approval page on loopback");
        *bound = Some(address);
        Ok(address)
    }
}

/// What the page's handlers share.
#[derive(Clone)]
struct Server {
    address: SocketAddr,
    waiting: Table,
}

impl Server {
    /// Whether `id` waits with `token` (compared in constant time).
    fn holds(&self, id: &str, token: &str) -> Option<PendingCall> {
        let waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = waiting.get(id)?;
        bool::from(entry.token.as_bytes().ct_eq(token.as_bytes())).then(|| entry.call.clone())
    }

    /// Refuses a request whose `Host` is not the page's own address (a DNS name rebound to
    /// loopback), or that another site's page sent: its `Sec-Fetch-Site` says so, or its
    /// `Origin` is another's. (The page's own form sends `Origin: null`, as its
    /// `Referrer-Policy: no-referrer` asks, with `Sec-Fetch-Site: same-origin`.)
    fn foreign(&self, headers: &HeaderMap) -> Option<Response> {
        let own = format!("http://{}", self.address);
        let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
        if host != Some(&own["http://".len()..]) {
            return Some(refusal(
                StatusCode::FORBIDDEN,
                "This page answers only at its own loopback address.",
            ));
        }
        let site = headers
            .get("sec-fetch-site")
            .map(|value| value.to_str().unwrap_or_default());
        let same_site = matches!(site, None | Some("same-origin" | "none"));
        let origin_ok = match headers.get(header::ORIGIN).map(HeaderValue::to_str) {
            None => true,
            Some(Ok(origin)) if origin == own => true,
            Some(Ok("null")) => site == Some("same-origin"),
            Some(_) => false,
        };
        if same_site && origin_ok {
            return None;
        }
        Some(refusal(
            StatusCode::FORBIDDEN,
            "An answer from another site's page is refused.",
        ))
    }
}

async fn show(
    State(server): State<Server>,
    UrlPath((id, token)): UrlPath<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if let Some(refused) = server.foreign(&headers) {
        return refused;
    }
    match server.holds(&id, &token) {
        Some(call) => page(StatusCode::OK, &question(&call, &token)),
        None => gone(),
    }
}

async fn answer(
    State(server): State<Server>,
    UrlPath((id, token)): UrlPath<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(refused) = server.foreign(&headers) {
        return refused;
    }
    if body.len() > MAX_ANSWER_BYTES {
        return refusal(StatusCode::PAYLOAD_TOO_LARGE, "The answer is too large.");
    }
    let fields: HashMap<String, String> = form_urlencoded::parse(&body).into_owned().collect();
    let given = fields.get("token").map(String::as_str).unwrap_or_default();
    // The token travels in the body too: a form another page could make the browser send
    // would need to know it.
    if !bool::from(given.as_bytes().ct_eq(token.as_bytes())) || server.holds(&id, &token).is_none()
    {
        return gone();
    }
    let approve = match fields.get("answer").map(String::as_str) {
        Some("approve") => true,
        Some("deny") => false,
        _ => {
            return refusal(
                StatusCode::BAD_REQUEST,
                "The answer must be \"approve\" or \"deny\".",
            );
        }
    };
    let Some(waiting) = server
        .waiting
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(&id)
    else {
        return gone();
    };
    let scope = fields
        .get("scope")
        .filter(|scope| waiting.call.scopes.iter().any(|(word, _)| word == *scope))
        .cloned()
        .unwrap_or_else(|| "call".to_owned());
    let via = if fields.get("via").map(String::as_str) == Some("terminal") {
        AnsweredVia::Terminal
    } else {
        AnsweredVia::Page
    };
    let tool = waiting.call.tool.clone();
    if waiting
        .answer
        .send(PageAnswer {
            approve,
            scope,
            via,
        })
        .is_err()
    {
        return gone();
    }
    let said = if approve { "Approved" } else { "Denied" };
    page(
        StatusCode::OK,
        &format!(
            "<h1>{said}</h1><p>{said}: the call of <code>{}</code>. You can close this page.</p>",
            escape(&tool)
        ),
    )
}

/// The page for `call`: what it would do, and the form that answers.
fn question(call: &PendingCall, token: &str) -> String {
    let mut arguments = serde_json::to_string_pretty(&call.arguments)
        .unwrap_or_else(|_| call.arguments.to_string());
    if toolweave_jsonrpc::text::truncate(&mut arguments, MAX_SHOWN_ARGUMENTS) {
        arguments.push_str("\n… (cut here; the call carries all of it)");
    }
    let mut html = format!(
        "<h1>Approve a call of <code>{tool}</code>?</h1>\
         <p>It asks because {reason}.</p>\
         <h2>Arguments</h2><pre id=\"arguments\">{arguments}</pre>",
        tool = escape(&call.tool),
        reason = escape(&call.reason),
        arguments = escape(&arguments),
    );
    if let Some(sha) = &call.code_sha256 {
        let _ = write!(
            html,
            "<p>The code making the call has SHA-256 <code>{}</code>.</p>",
            escape(sha)
        );
    }
    let _ = write!(
        html,
        "<form method=\"post\"><input type=\"hidden\" name=\"token\" value=\"{}\"><fieldset><legend>Approve for</legend>",
        escape(token)
    );
    for (index, (word, title)) in call.scopes.iter().enumerate() {
        let _ = write!(
            html,
            "<label><input type=\"radio\" name=\"scope\" value=\"{}\"{}> {}</label><br>",
            escape(word),
            if index == 0 { " checked" } else { "" },
            escape(title)
        );
    }
    html.push_str(
        "</fieldset><p><button type=\"submit\" name=\"answer\" value=\"approve\" id=\"approve\">Approve</button> \
         <button type=\"submit\" name=\"answer\" value=\"deny\" id=\"deny\">Deny</button></p></form>",
    );
    html
}

/// The answer for a token that waits for nothing (wrong, answered, or the call gave up).
fn gone() -> Response {
    refusal(
        StatusCode::NOT_FOUND,
        "Nothing waits for an answer at this address: it was answered already, the call stopped waiting, or the address is wrong.",
    )
}

fn refusal(status: StatusCode, text: &str) -> Response {
    page(status, &format!("<p>{}</p>", escape(text)))
}

/// An HTML page with headers that keep it from being framed, cached, scripted or referred.
fn page(status: StatusCode, body: &str) -> Response {
    let html = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>toolweave approval</title>\
         <style>body{{font-family:sans-serif;max-width:50em;margin:2em auto}}pre{{background:#f4f4f4;padding:1em;overflow:auto}}</style>\
         </head><body>{body}</body></html>"
    );
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
            ),
            (header::X_FRAME_OPTIONS, "DENY"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::CACHE_CONTROL, "no-store"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        html,
    )
        .into_response()
}

/// `text` safe inside HTML text and attribute values.
fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            c => escaped.push(c),
        }
    }
    escaped
}

fn random<const N: usize>() -> Result<[u8; N], String> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes)
        .map_err(|error| format!("no randomness for the approval page's token ({error})"))?;
    Ok(bytes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut text, byte| {
        let _ = write!(text, "{byte:02x}");
        text
    })
}

/// Writes `call`'s file in `dir` (made owner-only), readable by its owner alone.
fn write_pending(dir: &Path, call: &PendingCall) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    let path = dir.join(format!("{}.json", call.id));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&path)?;
    std::io::Write::write_all(&mut file, &serde_json::to_vec_pretty(call)?)?;
    Ok(path)
}

/// The calls waiting for approval in gateways of this machine's user, as their files list
/// them; files of gateways that are gone are removed.
pub fn pending_calls(dir: &Path) -> Vec<PendingCall> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut calls: Vec<PendingCall> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.path().extension().is_some_and(|ext| ext == "json"))
        .filter_map(|entry| {
            let call: PendingCall =
                serde_json::from_slice(&std::fs::read(entry.path()).ok()?).ok()?;
            if !alive(call.pid) {
                let _ = std::fs::remove_file(entry.path());
                return None;
            }
            Some(call)
        })
        .collect();
    calls.sort_by(|a, b| a.id.cmp(&b.id));
    calls
}

/// Whether process `pid` still runs (always assumed where `/proc` cannot tell).
fn alive(pid: u32) -> bool {
    let proc = Path::new("/proc");
    !proc.join("self").exists() || proc.join(pid.to_string()).exists()
}

/// Answers `call` from a terminal: approve (else deny) with `scope`, by a POST to its page as
/// the page's form sends. `Err` says why the gateway did not take the answer.
pub async fn answer_pending(call: &PendingCall, approve: bool, scope: &str) -> Result<(), String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let not_a_page = || format!("the listed address {} is not an approval page's", call.url);
    let rest = call.url.strip_prefix("http://").ok_or_else(not_a_page)?;
    let (host, path) = rest.split_once('/').ok_or_else(not_a_page)?;
    let address: SocketAddr = host.parse().map_err(|_| not_a_page())?;
    if !address.ip().is_loopback() {
        return Err(not_a_page());
    }
    let token = path.rsplit('/').next().unwrap_or_default();
    let body = form_urlencoded::Serializer::new(String::new())
        .append_pair("token", token)
        .append_pair("answer", if approve { "approve" } else { "deny" })
        .append_pair("scope", scope)
        .append_pair("via", "terminal")
        .finish();
    let request = format!(
        "POST /{path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(address).await?;
        stream.write_all(request.as_bytes()).await?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await?;
        Ok::<_, std::io::Error>(answer)
    };
    let answer = tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .map_err(|_| "the gateway did not answer within 10 s".to_owned())?
        .map_err(|error| format!("the gateway did not take the answer ({error})"))?;
    let status = String::from_utf8_lossy(&answer)
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    match status.as_str() {
        "200" => Ok(()),
        "404" => {
            Err("the call no longer waits: it was answered already or stopped waiting".to_owned())
        }
        _ => Err(format!("the gateway refused the answer (HTTP {status})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_escapes_what_it_shows() {
        let call = PendingCall {
            id: "ab12".to_owned(),
            url: String::new(),
            tool: "fixture.<b>".to_owned(),
            reason: "its server says \"nothing\"".to_owned(),
            arguments: serde_json::json!({ "text": "<script>alert(1)</script>" }),
            code_sha256: Some("00ff".to_owned()),
            scopes: vec![("call".to_owned(), "This call only".to_owned())],
            pid: 1,
        };
        let html = question(&call, "t0k3n");
        assert!(html.contains("fixture.&lt;b&gt;"), "{html}");
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert!(!html.contains("<script>"), "{html}");
        assert!(
            html.contains("its server says &quot;nothing&quot;"),
            "{html}"
        );
        assert!(html.contains("name=\"token\" value=\"t0k3n\""), "{html}");
        assert!(html.contains("00ff"), "{html}");
    }
}
