//! The login of one connection to a remote server: the bearer token each request carries, renewed
//! before it expires and when the server refuses it, one renewal at a time.
//!
//! A renewal is single-flight twice over. In this process, requests that need a renewal wait for
//! the one under way and take its token. Across processes (several gateways, each a client's),
//! the renewal holds the login's file lock and first reads the file again: a token another
//! process just got is taken as it is, so a refresh token that rotates is never used twice.
//!
//! The gateway never opens a browser. When there is no login, or the authorization server will not
//! renew it, or the server asks for more scopes than it grants, the request fails with a
//! [`HttpFailure::login`] naming why, and the server's challenge is kept in the login file for the
//! next `toolweave login`. A login made meanwhile (by `toolweave login` in a terminal) is found on
//! the next request the server refuses.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, CredentialStore, InMemoryCredentialStore, OAuthClientConfig,
    StoredCredentials,
};
use toolweave_config::{Expanded, Transport};

use super::http::OAuthHttp;
use super::store::{
    Challenge, Grant, Login, LoginKey, Logins, StoreError, TokenEndpointAuth, challenge_parameter,
    now,
};
use crate::remote::HttpFailure;

/// The login of one remote server's connection.
pub(crate) struct Authorization {
    /// The server's URL as written in the config (variables unresolved), for logs.
    url: String,
    logins: Logins,
    key: LoginKey,
    /// The grant whose token requests carry now.
    current: Mutex<Option<Grant>>,
    /// Held while a renewal is under way.
    renewing: tokio::sync::Mutex<()>,
}

/// Why a renewal failed.
enum Renewal {
    /// The authorization server refused it: only a new login helps.
    Refused(String),
    /// It could not be asked (network, its answer): a later request tries again.
    Failed(String),
}

impl Authorization {
    /// The login of a remote server reached by `transport`, from `logins`; `None` for a stdio
    /// server, and for one whose entry sends its own `Authorization` header (its credentials are
    /// the config's).
    pub(crate) fn for_transport(
        transport: &Transport,
        logins: Option<&Logins>,
    ) -> Option<Arc<Self>> {
        let (url, headers, oauth) = match transport {
            Transport::Stdio { .. } => return None,
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
        if sends_authorization(headers) {
            return None;
        }
        let logins = logins?.clone();
        let client = oauth
            .as_ref()
            .and_then(|oauth| oauth.client_id.as_ref())
            .map(Expanded::value);
        let key = LoginKey::new(url.value(), client);
        let grant = match logins.load(&key) {
            Ok(login) => login.and_then(|login| login.grant),
            Err(error) => {
                tracing::warn!("{error}");
                None
            }
        };
        Some(Arc::new(Self {
            url: url.as_written().to_owned(),
            logins,
            key,
            current: Mutex::new(grant),
            renewing: tokio::sync::Mutex::new(()),
        }))
    }

    fn current(&self) -> Option<Grant> {
        self.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn adopt(&self, grant: Grant) -> String {
        let bearer = grant.bearer().to_owned();
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = Some(grant);
        bearer
    }

    /// The token the next request carries, renewed first when it is about to expire; `None`
    /// without a login (the request goes out without one, and the server's `401` then names
    /// what to do).
    pub(crate) async fn bearer(&self) -> Result<Option<String>, HttpFailure> {
        let Some(grant) = self.current() else {
            return Ok(None);
        };
        let bearer = grant.bearer().to_owned();
        if !grant.expiring(now()) {
            return Ok(Some(bearer));
        }
        match self.renew(&bearer).await {
            Ok(fresh) => Ok(Some(fresh)),
            // Until it has expired, the token may still be taken: the server decides.
            Err(failure) if grant.expires_at().is_some_and(|at| at > now()) => {
                tracing::warn!(url = %self.url, "renewing a login before it expires failed: {}", failure.cause);
                Ok(Some(bearer))
            }
            Err(failure) => Err(failure),
        }
    }

    /// The server answered `401` to a request that carried `sent` (`challenge` is its
    /// `WWW-Authenticate`): a token to send the request again with, once, or why there is none.
    pub(crate) async fn refused(
        &self,
        sent: Option<&str>,
        challenge: Option<&str>,
    ) -> Result<String, HttpFailure> {
        let Some(sent) = sent else {
            // A login made since this connection started is on disk.
            if let Ok(Some(Login {
                grant: Some(grant), ..
            })) = self.logins.load(&self.key)
            {
                let expiring = grant.expiring(now());
                let bearer = self.adopt(grant);
                return if expiring {
                    self.renew(&bearer).await
                } else {
                    Ok(bearer)
                };
            }
            let cause = if challenge.is_some_and(|header| {
                header
                    .trim_start()
                    .to_ascii_lowercase()
                    .starts_with("bearer")
            }) {
                "it answered HTTP 401: it wants an OAuth login, and toolweave has none for it"
            } else {
                "it answered HTTP 401 without naming how to sign in, and toolweave has no login for it (a server that takes a token instead wants it in \"headers\")"
            };
            return Err(self.login_needed(cause, 401, challenge).await);
        };
        match self.renew(sent).await {
            Ok(fresh) => Ok(fresh),
            Err(failure) if failure.login => {
                Err(self.login_needed(&failure.cause, 401, challenge).await)
            }
            Err(failure) => Err(failure),
        }
    }

    /// The request sent again with a renewed token was refused too.
    pub(crate) async fn refused_again(&self, challenge: Option<&str>) -> HttpFailure {
        self.login_needed(
            "it refused toolweave's login, also once renewed",
            401,
            challenge,
        )
        .await
    }

    /// The server answered `403` asking for scopes the login does not grant.
    pub(crate) async fn needs_scope(&self, challenge: &str) -> HttpFailure {
        let cause = match challenge_parameter(challenge, "scope") {
            Some(scope) => {
                format!("it asks for more access than the login grants (scope \"{scope}\")")
            }
            None => "it asks for more access than the login grants".to_owned(),
        };
        self.login_needed(&cause, 403, Some(challenge)).await
    }

    /// A failure naming `cause`, with the challenge kept for the next `toolweave login`.
    async fn login_needed(&self, cause: &str, status: u16, header: Option<&str>) -> HttpFailure {
        let challenge = Challenge {
            status,
            header: header.unwrap_or_default().to_owned(),
        };
        if let Err(error) = self.record(challenge).await {
            tracing::warn!("keeping the server's challenge for `toolweave login` failed: {error}");
        }
        HttpFailure::login(cause)
    }

    async fn record(&self, challenge: Challenge) -> Result<(), StoreError> {
        let _lock = self.logins.lock(&self.key).await?;
        let mut login = self
            .logins
            .load(&self.key)?
            .unwrap_or_else(|| Login::new(&self.key));
        login.challenge = Some(challenge);
        self.logins.save(&self.key, &login)
    }

    /// A token to use instead of `seen`: one another request or process got meanwhile, or a
    /// renewal's.
    async fn renew(&self, seen: &str) -> Result<String, HttpFailure> {
        let _one_at_a_time = self.renewing.lock().await;
        if let Some(grant) = self.current()
            && grant.bearer() != seen
            && !grant.expiring(now())
        {
            return Ok(grant.bearer().to_owned());
        }
        let store_failure = |error: StoreError| {
            HttpFailure::new(
                format!("its login could not be read or kept: {error}"),
                false,
            )
        };
        let _lock = self.logins.lock(&self.key).await.map_err(store_failure)?;
        let mut login = self
            .logins
            .load(&self.key)
            .map_err(store_failure)?
            .unwrap_or_else(|| Login::new(&self.key));
        if let Some(grant) = &login.grant
            && grant.bearer() != seen
            && !grant.expiring(now())
        {
            return Ok(self.adopt(grant.clone()));
        }
        // A login removed from the file was logged out of: it is not renewed from memory.
        let Some(grant) = login.grant.clone() else {
            return Err(HttpFailure::login(
                "toolweave's login for it was removed (`toolweave logout`)",
            ));
        };
        if !grant.renewable() {
            return Err(HttpFailure::login(
                "toolweave's login for it expired, and the authorization server gave no refresh token to renew it with",
            ));
        }
        match refresh(&grant).await {
            Ok(renewed) => {
                login.grant = Some(renewed.clone());
                login.challenge = None;
                self.logins.save(&self.key, &login).map_err(store_failure)?;
                tracing::info!(url = %self.url, "renewed the login");
                Ok(self.adopt(renewed))
            }
            Err(Renewal::Refused(why)) => Err(HttpFailure::login(format!(
                "the authorization server would not renew toolweave's login ({why})"
            ))),
            Err(Renewal::Failed(why)) => Err(HttpFailure::new(
                format!(
                    "renewing toolweave's login for it failed ({why}); toolweave tries again on the next call"
                ),
                false,
            )),
        }
    }
}

/// Whether the configured headers carry credentials of their own.
fn sends_authorization(headers: &BTreeMap<String, Expanded>) -> bool {
    headers
        .keys()
        .any(|name| name.eq_ignore_ascii_case("authorization"))
}

/// Renews `grant` with its refresh token (rmcp's refresh: the client's authentication, the
/// resource indicator, the scope left out so the original grant is asked for).
async fn refresh(grant: &Grant) -> Result<Grant, Renewal> {
    let failed = |error: AuthError| Renewal::Failed(super::describe_auth_error(&error));
    let http = OAuthHttp::shared().map_err(|failure| Renewal::Failed(failure.cause))?;
    let mut manager =
        AuthorizationManager::new_with_oauth_http_client(grant.resource.as_str(), http)
            .await
            .map_err(failed)?;
    manager.set_metadata(grant.authorization_server.clone());
    let mut client = OAuthClientConfig::new(&grant.client.id, &grant.client.redirect_uri);
    if let (Some(secret), false) = (
        &grant.client.secret,
        grant.client.method == TokenEndpointAuth::None,
    ) {
        client = client.with_client_secret(secret);
    }
    manager.configure_client(client).map_err(failed)?;
    let credentials = InMemoryCredentialStore::new();
    credentials
        .save(
            StoredCredentials::new(
                grant.client.id.clone(),
                Some(grant.token.clone()),
                grant.scopes.clone(),
                Some(grant.received_at),
            )
            .with_issuer(grant.authorization_server.issuer.clone()),
        )
        .await
        .map_err(failed)?;
    manager.set_credential_store(credentials.clone());
    let token = match manager.refresh_token().await {
        Ok(token) => token,
        Err(error @ (AuthError::TokenRefreshRejected(_) | AuthError::AuthorizationRequired)) => {
            return Err(Renewal::Refused(super::describe_auth_error(&error)));
        }
        Err(error) => return Err(failed(error)),
    };
    let scopes = match credentials.load().await {
        Ok(Some(stored)) => stored.granted_scopes,
        _ => grant.scopes.clone(),
    };
    Ok(Grant {
        token,
        received_at: now(),
        scopes,
        ..grant.clone()
    })
}
