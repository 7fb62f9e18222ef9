//! The fixture over HTTP with `--oauth`: its MCP endpoint wants a bearer token, and the same
//! process is the authorization server that issues them, as a real remote server's is.
//!
//! - Protected resource metadata at `/.well-known/oauth-protected-resource/<path>`, authorization
//!   server metadata at `/.well-known/oauth-authorization-server` (PKCE S256, public clients).
//! - `POST /register` registers a client; `GET /authorize` grants at once (no person to ask) and
//!   redirects to the client's redirect URI with a code; `POST /token` exchanges it (PKCE checked)
//!   or a refresh token, which rotates: each refresh token works once; `POST /revoke` revokes.
//! - Access tokens last `--token-lifetime-secs` as far as the client is told (3600 by default);
//!   the server takes them until they are revoked or the test expires them all.
//! - For tests: `POST /test/expire-access-tokens` makes every access token invalid (a server that
//!   restarted or revoked them), and `GET /test/stats` counts what happened ([`OAuthStats`]).
//!
//! [`browse`] plays the person's browser for `toolweave login --browser-command`: it opens the
//! authorization URL and follows the redirects to toolweave's loopback listener.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::{Context, bail};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// How long a refresh takes: long enough that requests racing to renew overlap.
const REFRESH_DELAY: Duration = Duration::from_millis(50);

/// `--oauth` options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthOptions {
    /// `--token-lifetime-secs N`: the `expires_in` of access tokens.
    pub token_lifetime: Duration,
}

impl Default for OAuthOptions {
    fn default() -> Self {
        Self {
            token_lifetime: Duration::from_secs(3600),
        }
    }
}

/// What the authorization server did, from `GET /test/stats`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OAuthStats {
    /// Clients registered.
    pub registrations: u64,
    /// Authorization codes issued.
    pub authorizations: u64,
    /// Tokens issued for a code.
    pub logins: u64,
    /// Refreshes granted.
    pub refreshes: u64,
    /// Refreshes refused (a refresh token used twice, or revoked).
    pub refused_refreshes: u64,
    /// Revocations.
    pub revocations: u64,
    /// MCP requests refused for a missing or invalid token.
    pub refused_requests: u64,
    /// MCP requests with a valid token.
    pub accepted_requests: u64,
}

/// A code waiting to be exchanged.
struct Code {
    client: String,
    challenge: String,
    redirect_uri: String,
    scope: Option<String>,
}

#[derive(Default)]
struct Issued {
    counter: u64,
    clients: HashSet<String>,
    codes: HashMap<String, Code>,
    access: HashSet<String>,
    refresh: HashMap<String, Option<String>>,
    stats: OAuthStats,
}

/// The authorization server and resource state of one fixture.
#[derive(Clone)]
pub struct Authority {
    base: String,
    resource_path: String,
    options: OAuthOptions,
    issued: Arc<Mutex<Issued>>,
}

impl Authority {
    /// An authority at `base` (`http://127.0.0.1:PORT`) for the MCP endpoint at `resource_path`.
    pub fn new(base: String, resource_path: &str, options: OAuthOptions) -> Self {
        Self {
            base,
            resource_path: resource_path.to_owned(),
            options,
            issued: Arc::default(),
        }
    }

    fn issued(&self) -> std::sync::MutexGuard<'_, Issued> {
        self.issued.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn metadata_url(&self) -> String {
        format!(
            "{}/.well-known/oauth-protected-resource{}",
            self.base, self.resource_path
        )
    }

    /// The routes of the authorization server, the metadata and the test hooks.
    pub fn routes(&self) -> Router {
        let prm = format!(
            "/.well-known/oauth-protected-resource{}",
            self.resource_path
        );
        Router::new()
            .route(&prm, get(resource_metadata))
            .route(
                "/.well-known/oauth-authorization-server",
                get(server_metadata),
            )
            .route("/register", post(register))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .route("/revoke", post(revoke))
            .route("/test/expire-access-tokens", post(expire))
            .route("/test/stats", get(stats))
            .with_state(self.clone())
    }

    /// Refuses MCP requests without a valid access token, with a challenge naming the metadata.
    pub async fn require_token(
        State(authority): State<Self>,
        request: Request,
        next: Next,
    ) -> Response {
        let bearer = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .map(str::to_owned);
        let valid = {
            let mut issued = authority.issued();
            let valid = bearer
                .as_ref()
                .is_some_and(|token| issued.access.contains(token));
            if valid {
                issued.stats.accepted_requests += 1;
            } else {
                issued.stats.refused_requests += 1;
            }
            valid
        };
        if valid {
            return next.run(request).await;
        }
        let error = if bearer.is_some() {
            ", error=\"invalid_token\""
        } else {
            ""
        };
        (
            StatusCode::UNAUTHORIZED,
            [(
                header::WWW_AUTHENTICATE,
                format!(
                    "Bearer resource_metadata=\"{}\"{error}",
                    authority.metadata_url()
                ),
            )],
            "a valid bearer token is required",
        )
            .into_response()
    }
}

async fn resource_metadata(State(authority): State<Authority>) -> Response {
    Json(json!({
        "resource": format!("{}{}", authority.base, authority.resource_path),
        "authorization_servers": [authority.base],
        "scopes_supported": ["fixture:use"],
    }))
    .into_response()
}

async fn server_metadata(State(authority): State<Authority>) -> Response {
    let base = &authority.base;
    Json(json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "revocation_endpoint": format!("{base}/revoke"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": ["fixture:use"],
    }))
    .into_response()
}

async fn register(State(authority): State<Authority>, body: Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or_default();
    let mut issued = authority.issued();
    issued.counter += 1;
    let client = format!("client-{}", issued.counter);
    issued.clients.insert(client.clone());
    issued.stats.registrations += 1;
    (
        StatusCode::CREATED,
        Json(json!({
            "client_id": client,
            "client_name": body.get("client_name"),
            "redirect_uris": body.get("redirect_uris"),
            "token_endpoint_auth_method": "none",
        })),
    )
        .into_response()
}

fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    (
        status,
        Json(json!({ "error": error, "error_description": description })),
    )
        .into_response()
}

async fn authorize(State(authority): State<Authority>, uri: Uri) -> Response {
    let query = form_fields(uri.query().unwrap_or_default().as_bytes());
    let field = |name: &str| query.get(name).cloned().unwrap_or_default();
    let client = field("client_id");
    let mut issued = authority.issued();
    if !issued.clients.contains(&client) {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_client",
            "unknown client_id",
        );
    }
    if field("response_type") != "code" || field("code_challenge_method") != "S256" {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "response_type=code and PKCE with S256 are required",
        );
    }
    if field("resource") != format!("{}{}", authority.base, authority.resource_path) {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_target",
            "the resource parameter must name the MCP endpoint",
        );
    }
    issued.counter += 1;
    let code = format!("code-{}-{}", issued.counter, random_hex());
    let redirect_uri = field("redirect_uri");
    issued.codes.insert(
        code.clone(),
        Code {
            client,
            challenge: field("code_challenge"),
            redirect_uri: redirect_uri.clone(),
            scope: query.get("scope").cloned(),
        },
    );
    issued.stats.authorizations += 1;
    let separator = if redirect_uri.contains('?') { '&' } else { '?' };
    Redirect::to(&format!(
        "{redirect_uri}{separator}code={code}&state={}",
        form_encode(&field("state"))
    ))
    .into_response()
}

async fn token(State(authority): State<Authority>, body: Bytes) -> Response {
    let form = form_fields(&body);
    let field = |name: &str| form.get(name).cloned().unwrap_or_default();
    match field("grant_type").as_str() {
        "authorization_code" => {
            let mut issued = authority.issued();
            let Some(code) = issued.codes.remove(&field("code")) else {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "unknown or used code",
                );
            };
            let verifier = field("code_verifier");
            if code.client != field("client_id")
                || code.redirect_uri != field("redirect_uri")
                || base64url(&Sha256::digest(verifier.as_bytes())) != code.challenge
            {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "client, redirect URI or PKCE verifier do not match the code",
                );
            }
            issued.stats.logins += 1;
            let answer = issue(&authority, &mut issued, code.scope);
            answer.into_response()
        }
        "refresh_token" => {
            tokio::time::sleep(REFRESH_DELAY).await;
            let mut issued = authority.issued();
            let Some(scope) = issued.refresh.remove(&field("refresh_token")) else {
                issued.stats.refused_refreshes += 1;
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "unknown, used or revoked refresh token",
                );
            };
            issued.stats.refreshes += 1;
            issue(&authority, &mut issued, scope).into_response()
        }
        other => oauth_error(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            &format!("grant type {other:?}"),
        ),
    }
}

/// A new access token and refresh token.
fn issue(authority: &Authority, issued: &mut Issued, scope: Option<String>) -> Json {
    issued.counter += 1;
    let access = format!("at-{}-{}", issued.counter, random_hex());
    let refresh = format!("rt-{}-{}", issued.counter, random_hex());
    issued.access.insert(access.clone());
    issued.refresh.insert(refresh.clone(), scope.clone());
    let mut answer = json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": authority.options.token_lifetime.as_secs(),
        "refresh_token": refresh,
    });
    if let Some(scope) = scope {
        answer["scope"] = Value::String(scope);
    }
    Json(answer)
}

async fn revoke(State(authority): State<Authority>, body: Bytes) -> Response {
    let form = form_fields(&body);
    let token = form.get("token").cloned().unwrap_or_default();
    let mut issued = authority.issued();
    issued.access.remove(&token);
    issued.refresh.remove(&token);
    issued.stats.revocations += 1;
    StatusCode::OK.into_response()
}

async fn expire(State(authority): State<Authority>) -> Response {
    authority.issued().access.clear();
    StatusCode::NO_CONTENT.into_response()
}

async fn stats(State(authority): State<Authority>) -> Response {
    let stats = authority.issued().stats;
    Json(serde_json::to_value(stats).unwrap_or_default()).into_response()
}

/// A JSON answer (axum's own needs a feature the gateway does not use).
struct Json(Value);

impl IntoResponse for Json {
    fn into_response(self) -> Response {
        (
            [(header::CONTENT_TYPE, "application/json")],
            self.0.to_string(),
        )
            .into_response()
    }
}

/// The fields of an `application/x-www-form-urlencoded` body or a query.
fn form_fields(text: &[u8]) -> HashMap<String, String> {
    let decode = |part: &[u8]| {
        let mut bytes = Vec::with_capacity(part.len());
        let mut rest = part;
        while let Some((&first, tail)) = rest.split_first() {
            rest = tail;
            match first {
                b'+' => bytes.push(b' '),
                b'%' => {
                    let byte = tail
                        .get(..2)
                        .and_then(|hex| std::str::from_utf8(hex).ok())
                        .and_then(|hex| u8::from_str_radix(hex, 16).ok());
                    match byte {
                        Some(byte) => {
                            bytes.push(byte);
                            rest = &tail[2..];
                        }
                        None => bytes.push(b'%'),
                    }
                }
                other => bytes.push(other),
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    };
    text.split(|byte| *byte == b'&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| match pair.iter().position(|byte| *byte == b'=') {
            Some(at) => (decode(&pair[..at]), decode(&pair[at + 1..])),
            None => (decode(pair), String::new()),
        })
        .collect()
}

/// 64 random bits in hex (the process's random hasher keys).
fn random_hex() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(0);
    format!("{:016x}", hasher.finish())
}

/// Base64url without padding (RFC 7636's encoding of the S256 challenge).
fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut text = String::new();
    for chunk in bytes.chunks(3) {
        let value = chunk.iter().enumerate().fold(0u32, |value, (index, byte)| {
            value | (u32::from(*byte) << (16 - 8 * index))
        });
        for index in 0..=chunk.len() {
            text.push(char::from(
                ALPHABET[((value >> (18 - 6 * index)) & 63) as usize],
            ));
        }
    }
    text
}

fn form_encode(value: &str) -> String {
    let mut encoded = String::new();
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// The person's browser for a login: opens `url` and follows its redirects (to toolweave's
/// loopback listener), failing unless the last answer is a success.
pub async fn browse(url: &str) -> anyhow::Result<()> {
    let response = crate::http::client()
        .get(url)
        .send()
        .await
        .with_context(|| "the browser could not open the login page")?;
    let status = response.status();
    let landed = response.url().to_string();
    let page = response.text().await.unwrap_or_default();
    if !status.is_success() {
        bail!("the login ended on {landed} with HTTP {status}: {page}");
    }
    Ok(())
}

/// The fixture's OAuth statistics, read from its `/test/stats`.
pub async fn stats_of(base: &str) -> anyhow::Result<OAuthStats> {
    Ok(crate::http::client()
        .get(format!("{base}/test/stats"))
        .send()
        .await?
        .json()
        .await?)
}

/// Makes every access token the fixture at `base` issued invalid.
pub async fn expire_access_tokens(base: &str) -> anyhow::Result<()> {
    let status = crate::http::client()
        .post(format!("{base}/test/expire-access-tokens"))
        .send()
        .await?
        .status();
    if !status.is_success() {
        bail!("expiring the fixture's tokens answered {status}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64url_encodes_as_rfc_7636_says() {
        // RFC 7636, appendix B.
        let challenge = base64url(&Sha256::digest(
            b"dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
        ));
        assert_eq!(challenge, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
        assert_eq!(base64url(b"f"), "Zg");
        assert_eq!(base64url(b"fo"), "Zm8");
        assert_eq!(base64url(b"foo"), "Zm9v");
    }
}
