//! `toolweave login` and `toolweave logout`: the one place toolweave asks a person to sign in.
//!
//! A login starts from what the server says. toolweave connects as the gateway would (with the
//! login it keeps, if any); a server that refuses names what it wants in its challenge, which the
//! connection keeps in the login file, as does the gateway when a call is refused. From that
//! challenge rmcp discovers the authorization server (protected resource metadata, then OAuth or
//! OpenID metadata, then the 2025-03-26 fallbacks) and the scopes to ask for; toolweave picks the
//! client (one the entry names, a client ID metadata document, or one it registers, with the token
//! endpoint authentication the authorization server takes), rmcp makes the authorization URL
//! (PKCE, `state`, the resource indicator), the person grants it in a browser, which comes back to
//! a loopback listener, and rmcp exchanges the code. toolweave then connects again: a server that
//! now asks for more scopes (step-up) gets another authorization with them, at most three in all,
//! and only while there is something new to ask for.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::Url;
use rmcp::transport::auth::{
    AuthorizationManager, AuthorizationMetadata, CredentialStore, InMemoryCredentialStore,
    OAuthClientConfig,
};
use serde::Deserialize;
use serde_json::{Value, json};
use toolweave_config::{Config, Expanded, OAuthSettings, ServerConfig, Transport};

use super::callback::Callback;
use super::http::{OAuthHttp, read_bounded};
use super::store::{
    Challenge, Client, ClientOrigin, Grant, Login, LoginKey, Logins, StoreError, TokenEndpointAuth,
    now,
};
use super::{
    LoginError, LoginOptions, LoginOutcome, LoginStatus, LogoutOutcome, describe_auth_error,
};
use crate::remote::describe_reqwest;
use crate::{Error, Options, UpstreamManager};

/// Authorizations one `toolweave login` makes at most (the first, and step-ups).
const MAX_AUTHORIZATIONS: usize = 3;

/// The name toolweave registers under.
const CLIENT_NAME: &str = "toolweave";

/// A remote server's parts a login needs.
struct Remote<'a> {
    name: &'a str,
    url: &'a Expanded,
    settings: OAuthSettings,
    key: LoginKey,
}

impl<'a> Remote<'a> {
    fn of(server: &'a ServerConfig) -> Result<Self, LoginError> {
        let (url, headers, oauth) = match &server.transport {
            Transport::Stdio { .. } => {
                return Err(LoginError::NotRemote {
                    server: server.name.clone(),
                });
            }
            Transport::Http {
                url,
                headers,
                oauth,
            }
            | Transport::Sse {
                url,
                headers,
                oauth,
            } => (url, headers, oauth),
        };
        if headers
            .keys()
            .any(|name| name.eq_ignore_ascii_case("authorization"))
        {
            return Err(LoginError::OwnHeader {
                server: server.name.clone(),
                file: server.source.clone(),
            });
        }
        let settings = oauth.clone().unwrap_or_default();
        let key = LoginKey::new(
            url.value(),
            settings.client_id.as_ref().map(Expanded::value),
        );
        Ok(Self {
            name: &server.name,
            url,
            settings,
            key,
        })
    }

    fn failed(&self, cause: impl Into<String>) -> LoginError {
        LoginError::Failed {
            server: self.name.to_owned(),
            cause: cause.into(),
        }
    }
}

/// Logs in to `server` and keeps the login in `logins`; see the module's documentation.
pub(crate) async fn login(
    server: &ServerConfig,
    logins: &Logins,
    mut options: LoginOptions<'_>,
) -> Result<LoginOutcome, LoginError> {
    let remote = Remote::of(server)?;
    let mut asked: Vec<String> = Vec::new();
    let mut authorizations = 0;
    loop {
        let outcome = connect(server, logins, options.startup_timeout).await;
        let kept = logins
            .load(&remote.key)?
            .unwrap_or_else(|| Login::new(&remote.key));
        let tools = match outcome {
            Ok(tools) if authorizations > 0 => return Ok(logged_in(tools, kept.grant.as_ref())),
            Ok(tools) => Some(tools),
            Err(Error::LoginNeeded { cause, .. }) => {
                let wanted = kept.challenge.as_ref().map(Challenge::scopes);
                let something_new = wanted
                    .unwrap_or_default()
                    .iter()
                    .any(|scope| !asked.contains(scope));
                if authorizations > 0 && (authorizations >= MAX_AUTHORIZATIONS || !something_new) {
                    return Err(LoginError::StillRefused {
                        server: remote.name.to_owned(),
                        authorizations,
                        cause,
                    });
                }
                None
            }
            Err(other) => return Err(LoginError::Server(other)),
        };
        // A server that lets toolweave in may have refused a call for want of more scopes, or
        // be logged in to again; else it is asked only whether it takes a login at all.
        let wanted = tools.is_none() || kept.challenge.is_some() || kept.grant.is_some();
        let authorized = authorize(
            &remote,
            logins,
            kept.challenge.as_ref(),
            kept.grant.as_ref(),
            wanted,
            &mut options,
        )
        .await?;
        match (authorized, tools) {
            (Some(scopes), _) => asked = scopes,
            (None, tools) => {
                return Ok(LoginOutcome::NotNeeded {
                    tools: tools.unwrap_or_default(),
                });
            }
        }
        authorizations += 1;
    }
}

/// Connects as the gateway would, lists the tools, and disconnects.
async fn connect(
    server: &ServerConfig,
    logins: &Logins,
    startup_timeout: Duration,
) -> Result<usize, Error> {
    let config = Config {
        servers: vec![server.clone()],
        ..Config::default()
    };
    let options = Options {
        startup_timeout,
        ..Options::default()
    };
    let manager = UpstreamManager::start_with_logins(&config, options, Some(logins.clone()));
    let tools = manager.tools(&server.name).await.map(|tools| tools.len());
    manager.shutdown().await;
    tools
}

fn logged_in(tools: usize, grant: Option<&Grant>) -> LoginOutcome {
    LoginOutcome::LoggedIn {
        tools,
        scopes: grant.map(|grant| grant.scopes.clone()).unwrap_or_default(),
        expires_at: grant
            .and_then(Grant::expires_at)
            .map(|at| UNIX_EPOCH + Duration::from_secs(at)),
    }
}

/// One authorization: discovery, scopes, client, browser, code exchange; the grant is kept. The
/// scopes asked for, or `None` when a login is not `wanted` and the server publishes no
/// authorization server.
async fn authorize(
    remote: &Remote<'_>,
    logins: &Logins,
    challenge: Option<&Challenge>,
    previous: Option<&Grant>,
    wanted: bool,
    options: &mut LoginOptions<'_>,
) -> Result<Option<Vec<String>>, LoginError> {
    let http = OAuthHttp::shared().map_err(|failure| remote.failed(failure.cause))?;
    let mut manager =
        AuthorizationManager::new_with_oauth_http_client(remote.url.value(), http.clone())
            .await
            .map_err(|error| remote.failed(describe_auth_error(&error)))?;
    let credentials = InMemoryCredentialStore::new();
    manager.set_credential_store(credentials.clone());
    let Some(mut metadata) = discover(remote, &manager, &http, challenge, wanted).await? else {
        return Ok(None);
    };
    manager.set_metadata(metadata.clone());
    let scopes = scopes(remote, &manager, challenge, previous).await;

    let callback = Callback::bind(remote.settings.callback_port)
        .await
        .map_err(|error| remote.failed(error.to_string()))?;
    let redirect_uri = callback.redirect_uri();
    let client = choose_client(&http, remote, &metadata, &redirect_uri, &scopes).await?;
    // rmcp picks the token endpoint's authentication from the methods the metadata lists; the
    // client's own is the one to use.
    metadata.additional_fields.insert(
        "token_endpoint_auth_methods_supported".to_owned(),
        json!([client.method.name()]),
    );
    manager.set_metadata(metadata.clone());
    let mut config = OAuthClientConfig::new(&client.id, &redirect_uri).with_scopes(scopes.clone());
    if let (Some(secret), false) = (&client.secret, client.method == TokenEndpointAuth::None) {
        config = config.with_client_secret(secret);
    }
    manager
        .configure_client(config)
        .map_err(|error| remote.failed(describe_auth_error(&error)))?;

    let scope_names: Vec<&str> = scopes.iter().map(String::as_str).collect();
    let address = manager
        .get_authorization_url(&scope_names)
        .await
        .map_err(|error| remote.failed(describe_auth_error(&error)))?;
    let parameter = |name: &str| query_parameter(&address, name);
    let state =
        parameter("state").ok_or_else(|| remote.failed("the authorization URL has no state"))?;
    (options.open)(&address);
    let answer = callback
        .wait(&state, options.timeout)
        .await
        .map_err(|error| remote.failed(error.to_string()))?;
    let token = manager
        .exchange_code_for_token_with_issuer(&answer.code, &state, answer.issuer.as_deref())
        .await
        .map_err(|error| {
            remote.failed(format!(
                "exchanging the authorization code for a token failed: {}",
                describe_auth_error(&error)
            ))
        })?;
    let granted = match credentials.load().await {
        Ok(Some(stored)) => stored.granted_scopes,
        _ => scopes.clone(),
    };
    let grant = Grant {
        resource: parameter("resource").unwrap_or_else(|| remote.url.value().to_owned()),
        authorization_server: metadata,
        client,
        token,
        received_at: now(),
        scopes: granted,
    };
    keep(logins, &remote.key, grant).await?;
    Ok(Some(scopes))
}

/// The authorization server's metadata: from the URL the entry names, or discovered from the
/// challenge (rmcp). `None` when a login is not `wanted` and the server publishes no metadata.
async fn discover(
    remote: &Remote<'_>,
    manager: &AuthorizationManager,
    http: &OAuthHttp,
    challenge: Option<&Challenge>,
    wanted: bool,
) -> Result<Option<AuthorizationMetadata>, LoginError> {
    if let Some(url) = &remote.settings.auth_server_metadata_url {
        return fetch_metadata(http, url)
            .await
            .map(Some)
            .map_err(|cause| remote.failed(cause));
    }
    let header = challenge
        .map(|challenge| challenge.header.as_str())
        .filter(|header| !header.is_empty());
    match manager.resolve_metadata_from_challenge(header).await {
        Ok(resolution) if wanted || resolution.source.is_discovered() => {
            Ok(Some(resolution.metadata))
        }
        // Nothing asked for a login, and nothing was found: there is none to make.
        Ok(_) => Ok(None),
        Err(_) if !wanted => Ok(None),
        Err(error) => Err(remote.failed(format!(
            "finding its authorization server failed: {}",
            describe_auth_error(&error)
        ))),
    }
}

/// The scopes to ask for: the entry's, else rmcp's choice from the challenge and the metadata;
/// a server asking for more (step-up) also gets what was granted and what it asks for.
async fn scopes(
    remote: &Remote<'_>,
    manager: &AuthorizationManager,
    challenge: Option<&Challenge>,
    previous: Option<&Grant>,
) -> Vec<String> {
    let mut scopes = match &remote.settings.scopes {
        Some(scopes) => scopes.clone(),
        None => manager.select_initial_scopes(&[]).await,
    };
    if let (Some(challenge), Some(previous)) = (challenge, previous)
        && challenge.status == 403
    {
        scopes.extend(previous.scopes.iter().cloned());
    }
    scopes.extend(challenge.map(Challenge::scopes).unwrap_or_default());
    let mut unique: Vec<String> = Vec::new();
    for scope in scopes {
        if !unique.contains(&scope) {
            unique.push(scope);
        }
    }
    unique
}

/// The value of query parameter `name` in `url`.
fn query_parameter(url: &str, name: &str) -> Option<String> {
    Url::parse(url).ok().and_then(|url| {
        url.query_pairs()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned())
    })
}

/// Keeps `grant` as the login of `key`, and forgets the challenge it answers.
async fn keep(logins: &Logins, key: &LoginKey, grant: Grant) -> Result<(), StoreError> {
    let _lock = logins.lock(key).await?;
    let mut login = logins.load(key)?.unwrap_or_else(|| Login::new(key));
    login.grant = Some(grant);
    login.challenge = None;
    logins.save(key, &login)
}

/// Authorization server metadata from the URL the entry names.
async fn fetch_metadata(http: &OAuthHttp, url: &str) -> Result<AuthorizationMetadata, String> {
    let response = http.client().get(url).send().await.map_err(|error| {
        format!(
            "reading \"authServerMetadataUrl\" failed: {}",
            describe_reqwest(&error).cause
        )
    })?;
    let status = response.status();
    let body = read_bounded(response).await.map_err(|failure| {
        format!(
            "reading \"authServerMetadataUrl\" failed: {}",
            failure.cause
        )
    })?;
    if !status.is_success() {
        return Err(format!(
            "\"authServerMetadataUrl\" answered HTTP {}; check it in the config file",
            status.as_u16()
        ));
    }
    serde_json::from_slice(&body).map_err(|error| {
        format!("\"authServerMetadataUrl\" is not authorization server metadata ({error})")
    })
}

/// The methods the token endpoint takes (RFC 8414: `client_secret_basic` when it does not say).
fn supported_methods(metadata: &AuthorizationMetadata) -> Vec<String> {
    match metadata
        .additional_fields
        .get("token_endpoint_auth_methods_supported")
        .and_then(Value::as_array)
    {
        Some(methods) => methods
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        None => vec![TokenEndpointAuth::ClientSecretBasic.name().to_owned()],
    }
}

/// How a client with a secret authenticates: Basic where the server takes it, else the body.
fn method_with_secret(supported: &[String]) -> TokenEndpointAuth {
    let takes = |method: TokenEndpointAuth| supported.iter().any(|name| name == method.name());
    if !takes(TokenEndpointAuth::ClientSecretBasic) && takes(TokenEndpointAuth::ClientSecretPost) {
        TokenEndpointAuth::ClientSecretPost
    } else {
        TokenEndpointAuth::ClientSecretBasic
    }
}

/// The client of this login, in the order the MCP specification gives: one the entry names, a
/// client ID metadata document where the server takes them, or one toolweave registers.
async fn choose_client(
    http: &OAuthHttp,
    remote: &Remote<'_>,
    metadata: &AuthorizationMetadata,
    redirect_uri: &str,
    scopes: &[String],
) -> Result<Client, LoginError> {
    let supported = supported_methods(metadata);
    if let Some(id) = &remote.settings.client_id {
        let secret = remote
            .settings
            .client_secret
            .as_ref()
            .map(|secret| secret.value().to_owned());
        return Ok(Client {
            id: id.value().to_owned(),
            method: match secret {
                Some(_) => method_with_secret(&supported),
                None => TokenEndpointAuth::None,
            },
            secret,
            origin: ClientOrigin::Configured,
            redirect_uri: redirect_uri.to_owned(),
        });
    }
    let takes_documents = metadata
        .additional_fields
        .get("client_id_metadata_document_supported")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if let (Some(document), true) = (&remote.settings.client_metadata_url, takes_documents) {
        return Ok(Client {
            id: document.clone(),
            secret: None,
            method: TokenEndpointAuth::None,
            origin: ClientOrigin::MetadataDocument,
            redirect_uri: redirect_uri.to_owned(),
        });
    }
    let Some(endpoint) = &metadata.registration_endpoint else {
        return Err(remote.failed(format!(
            "its authorization server ({}) takes no client registrations, and the entry names no client; register one there with the redirect URI {redirect_uri} (fix the port with \"callbackPort\") and give its ID in \"oauth\": {{\"clientId\": ...}}",
            metadata.issuer.as_deref().unwrap_or(&metadata.authorization_endpoint)
        )));
    };
    register(http, endpoint, redirect_uri, scopes, &supported)
        .await
        .map_err(|cause| remote.failed(cause))
}

/// Dynamic client registration (RFC 7591): a native client, asking for the token endpoint
/// authentication the server takes (`none` first: a public client keeps no secret).
async fn register(
    http: &OAuthHttp,
    endpoint: &str,
    redirect_uri: &str,
    scopes: &[String],
    supported: &[String],
) -> Result<Client, String> {
    #[derive(Deserialize)]
    struct Registered {
        client_id: String,
        #[serde(default)]
        client_secret: Option<String>,
        #[serde(default)]
        token_endpoint_auth_method: Option<String>,
    }
    let requested = if supported.iter().any(|name| name == "none") {
        TokenEndpointAuth::None
    } else {
        method_with_secret(supported)
    };
    let mut request = json!({
        "client_name": CLIENT_NAME,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": requested.name(),
        "application_type": "native",
    });
    if !scopes.is_empty() {
        request["scope"] = Value::String(scopes.join(" "));
    }
    let failed = |cause: String| format!("registering toolweave as a client failed: {cause}");
    let response = http
        .client()
        .post(endpoint)
        .json(&request)
        .send()
        .await
        .map_err(|error| failed(describe_reqwest(&error).cause))?;
    let status = response.status();
    let body = read_bounded(response)
        .await
        .map_err(|failure| failed(failure.cause))?;
    if !status.is_success() {
        return Err(failed(format!(
            "the authorization server answered HTTP {}{}",
            status.as_u16(),
            oauth_error(&body)
        )));
    }
    let registered: Registered = serde_json::from_slice(&body)
        .map_err(|error| failed(format!("its answer is not a registration ({error})")))?;
    let secret = registered.client_secret.filter(|secret| !secret.is_empty());
    let method = match (
        registered
            .token_endpoint_auth_method
            .as_deref()
            .and_then(TokenEndpointAuth::named),
        &secret,
    ) {
        // A secret method without a secret cannot authenticate; the client is public then.
        (Some(method), Some(_)) | (Some(method @ TokenEndpointAuth::None), None) => method,
        (_, None) => TokenEndpointAuth::None,
        (None, Some(_)) if requested != TokenEndpointAuth::None => requested,
        (None, Some(_)) => method_with_secret(supported),
    };
    Ok(Client {
        id: registered.client_id,
        secret,
        method,
        origin: ClientOrigin::Registered,
        redirect_uri: redirect_uri.to_owned(),
    })
}

/// `: error (description)` from an OAuth error body, or nothing.
fn oauth_error(body: &[u8]) -> String {
    #[derive(Deserialize)]
    struct OAuthError {
        error: String,
        #[serde(default)]
        error_description: Option<String>,
    }
    match serde_json::from_slice::<OAuthError>(body) {
        Ok(OAuthError {
            error,
            error_description: Some(description),
        }) => format!(": {error} ({description})"),
        Ok(OAuthError { error, .. }) => format!(": {error}"),
        Err(_) => String::new(),
    }
}

/// Forgets the login of `server`, revoking its token where the authorization server takes
/// revocations (RFC 7009).
pub(crate) async fn logout(
    server: &ServerConfig,
    logins: &Logins,
) -> Result<LogoutOutcome, LoginError> {
    let remote = Remote::of(server)?;
    let _lock = logins.lock(&remote.key).await?;
    let grant = logins.load(&remote.key)?.and_then(|login| login.grant);
    let outcome = match &grant {
        None => LogoutOutcome::NotLoggedIn,
        Some(grant) => revoke(grant).await,
    };
    logins.remove(&remote.key)?;
    Ok(outcome)
}

async fn revoke(grant: &Grant) -> LogoutOutcome {
    use oauth2::TokenResponse;
    let Some(endpoint) = grant
        .authorization_server
        .additional_fields
        .get("revocation_endpoint")
        .and_then(Value::as_str)
    else {
        return LogoutOutcome::NoRevocation;
    };
    let http = match OAuthHttp::shared() {
        Ok(http) => http,
        Err(failure) => return LogoutOutcome::NotRevoked(failure.cause),
    };
    let (token, hint) = match grant.token.refresh_token() {
        Some(refresh) => (refresh.secret().clone(), "refresh_token"),
        None => (grant.bearer().to_owned(), "access_token"),
    };
    let mut form = vec![("token", token), ("token_type_hint", hint.to_owned())];
    let mut request = http.client().post(endpoint);
    match (grant.client.method, &grant.client.secret) {
        (TokenEndpointAuth::ClientSecretBasic, Some(secret)) => {
            request = request.basic_auth(form_encode(&grant.client.id), Some(form_encode(secret)));
        }
        (TokenEndpointAuth::ClientSecretPost, Some(secret)) => {
            form.push(("client_id", grant.client.id.clone()));
            form.push(("client_secret", secret.clone()));
        }
        _ => form.push(("client_id", grant.client.id.clone())),
    }
    let body = form
        .iter()
        .map(|(name, value)| format!("{name}={}", form_encode(value)))
        .collect::<Vec<_>>()
        .join("&");
    match request
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(body)
        .send()
        .await
    {
        Ok(response) if response.status().is_success() => LogoutOutcome::Revoked,
        Ok(response) => LogoutOutcome::NotRevoked(format!(
            "the authorization server answered HTTP {}",
            response.status().as_u16()
        )),
        Err(error) => LogoutOutcome::NotRevoked(describe_reqwest(&error).cause),
    }
}

/// `application/x-www-form-urlencoded` encoding of one value (also what RFC 6749 §2.3.1 asks of
/// the client ID and secret in Basic authentication).
fn form_encode(value: &str) -> String {
    let mut encoded = String::with_capacity(value.len());
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                encoded.push(char::from(byte));
            }
            b' ' => encoded.push('+'),
            other => encoded.push_str(&format!("%{other:02X}")),
        }
    }
    encoded
}

/// What toolweave keeps for `server`, without connecting.
pub(crate) fn login_status(server: &ServerConfig, logins: &Logins) -> LoginStatus {
    let Ok(remote) = Remote::of(server) else {
        return LoginStatus::NotUsed;
    };
    match logins.load(&remote.key) {
        Err(error) => LoginStatus::Unreadable(error),
        Ok(Some(Login {
            grant: Some(grant),
            challenge,
            ..
        })) => LoginStatus::LoggedIn {
            expires_at: grant
                .expires_at()
                .map(|at| UNIX_EPOCH + Duration::from_secs(at)),
            renewable: grant.renewable(),
            scopes: grant.scopes.clone(),
            authorization_server: grant.issuer().to_owned(),
            asks_for_more: challenge.is_some(),
        },
        Ok(_) => LoginStatus::None,
    }
}

/// A login's expiry, for messages: `2026-01-02 15:04 UTC`.
pub(crate) fn format_time(at: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(at)
        .format("%Y-%m-%d %H:%M UTC")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_follow_what_the_server_takes() {
        let names = |list: &[&str]| {
            list.iter()
                .map(|name| (*name).to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            method_with_secret(&names(&["client_secret_post"])),
            TokenEndpointAuth::ClientSecretPost
        );
        assert_eq!(
            method_with_secret(&names(&["client_secret_post", "client_secret_basic"])),
            TokenEndpointAuth::ClientSecretBasic
        );
        assert_eq!(
            method_with_secret(&names(&[])),
            TokenEndpointAuth::ClientSecretBasic
        );
        let metadata = AuthorizationMetadata::default();
        assert_eq!(
            supported_methods(&metadata),
            names(&["client_secret_basic"])
        );
    }

    #[test]
    fn times_and_form_values_are_written_plainly() {
        assert_eq!(
            format_time(UNIX_EPOCH + Duration::from_secs(1_767_369_840)),
            "2026-01-02 16:04 UTC"
        );
        assert_eq!(format_time(UNIX_EPOCH), "1970-01-01 00:00 UTC");
        assert_eq!(form_encode("a b:c/d+é"), "a+b%3Ac%2Fd%2B%C3%A9");
        assert_eq!(
            oauth_error(br#"{"error":"invalid_client_metadata","error_description":"bad"}"#),
            ": invalid_client_metadata (bad)"
        );
        assert_eq!(oauth_error(b"<html>"), "");
    }
}
