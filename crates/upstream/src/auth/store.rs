//! Where toolweave keeps its logins: a directory of its own under toolweave's config directory
//! (`$XDG_CONFIG_HOME/toolweave/logins/`, or `~/.config/toolweave/logins/`), `0700`, with one
//! `0600` file per server URL and configured client, written whole or not at all.
//!
//! A login is keyed by the server's URL (and the client the entry names), not by the server's
//! name: the same server under two names (in two clients' files) shares one login, and a project
//! file cannot borrow a login by naming its own server like one the user logged in to. The file
//! name is a digest, so it holds nothing from the URL (which may carry a key).
//!
//! Changes to one login go through [`Logins::lock`], a file lock beside it, so that two toolweave
//! processes never renew the same login at once with a refresh token that rotates.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmcp::transport::auth::{AuthorizationMetadata, OAuthTokenResponse};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// How long a change to a login waits for another process that holds it (renewing it takes one
/// request to the authorization server).
const LOCK_WAIT: Duration = Duration::from_secs(30);
/// How often a waiting change looks again.
const LOCK_POLL: Duration = Duration::from_millis(20);

/// The directory of toolweave's logins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logins {
    dir: PathBuf,
}

/// A login store that could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// Reading or writing a file failed.
    #[error("cannot {action} {}: {detail}", path.display())]
    Io {
        /// What toolweave was doing: `read`, `write`, `remove`, `lock`.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The system's error.
        detail: String,
    },
    /// A login file that is not what toolweave writes.
    #[error(
        "{} is not a login file toolweave can read ({detail}); remove it and run `toolweave login` again",
        path.display()
    )]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        detail: String,
    },
    /// Another process held the login for too long.
    #[error(
        "another toolweave process has held the login in {} for more than {} s",
        path.display(),
        LOCK_WAIT.as_secs()
    )]
    Busy {
        /// The lock file.
        path: PathBuf,
    },
}

/// Which login a server uses: its URL and the client its entry names, if it names one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LoginKey {
    url: String,
    client_id: Option<String>,
}

impl LoginKey {
    /// The key of a server at `url` (as resolved) whose entry names `client_id`.
    pub(crate) fn new(url: &str, client_id: Option<&str>) -> Self {
        Self {
            url: url.to_owned(),
            client_id: client_id.map(str::to_owned),
        }
    }

    /// The file name's stem: the first 128 bits of the SHA-256 of URL and client, in hex.
    fn stem(&self) -> String {
        let mut hasher = Sha256::new();
        hasher.update(self.url.as_bytes());
        hasher.update(b"\n");
        hasher.update(self.client_id.as_deref().unwrap_or_default().as_bytes());
        hasher.finalize()[..16]
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }
}

/// One login file: what the person granted, and what the server last asked for that the login
/// did not have.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct Login {
    /// The server's URL, as the key has it (a file under another URL's name is ignored).
    pub(crate) server_url: String,
    /// The client the entry names, as the key has it.
    #[serde(default)]
    pub(crate) configured_client: Option<String>,
    /// What the last login got, once there was one.
    #[serde(default)]
    pub(crate) grant: Option<Grant>,
    /// The challenge of a request the login could not answer (`401`, or `403` asking for more
    /// scopes): the next `toolweave login` starts from it.
    #[serde(default)]
    pub(crate) challenge: Option<Challenge>,
}

impl Login {
    /// An empty login for `key`.
    pub(crate) fn new(key: &LoginKey) -> Self {
        Self {
            server_url: key.url.clone(),
            configured_client: key.client_id.clone(),
            grant: None,
            challenge: None,
        }
    }
}

/// What one login got: a token for a resource, from an authorization server, for a client.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct Grant {
    /// The resource indicator the token was asked for (RFC 8707), sent again on renewal.
    pub(crate) resource: String,
    /// The authorization server's metadata as discovered, with the token endpoint's
    /// authentication narrowed to the client's method.
    pub(crate) authorization_server: AuthorizationMetadata,
    /// The client the token was issued to.
    pub(crate) client: Client,
    /// The token response: access token, refresh token, lifetime, scope.
    pub(crate) token: OAuthTokenResponse,
    /// When the token arrived, in seconds since the Unix epoch.
    pub(crate) received_at: u64,
    /// The scopes granted.
    #[serde(default)]
    pub(crate) scopes: Vec<String>,
}

impl Grant {
    /// The access token.
    pub(crate) fn bearer(&self) -> &str {
        use oauth2::TokenResponse;
        self.token.access_token().secret()
    }

    /// When the access token expires, in seconds since the Unix epoch, when the server said.
    pub(crate) fn expires_at(&self) -> Option<u64> {
        use oauth2::TokenResponse;
        self.token
            .expires_in()
            .map(|lifetime| self.received_at.saturating_add(lifetime.as_secs()))
    }

    /// Whether the access token expires within `min(60 s, half its lifetime)` of `now`: then it is
    /// renewed before it is used.
    pub(crate) fn expiring(&self, now: u64) -> bool {
        use oauth2::TokenResponse;
        let (Some(expires_at), Some(lifetime)) = (self.expires_at(), self.token.expires_in())
        else {
            return false;
        };
        let margin = (lifetime.as_secs() / 2).clamp(1, 60);
        expires_at.saturating_sub(now) < margin
    }

    /// Whether the login can be renewed without the person (it has a refresh token).
    pub(crate) fn renewable(&self) -> bool {
        use oauth2::TokenResponse;
        self.token.refresh_token().is_some()
    }

    /// The issuer of the authorization server, or its token endpoint when it names none.
    pub(crate) fn issuer(&self) -> &str {
        self.authorization_server
            .issuer
            .as_deref()
            .unwrap_or(&self.authorization_server.token_endpoint)
    }
}

/// A client of the authorization server.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct Client {
    /// Its ID.
    pub(crate) id: String,
    /// Its secret, for a confidential client.
    #[serde(default)]
    pub(crate) secret: Option<String>,
    /// How it authenticates at the token endpoint.
    pub(crate) method: TokenEndpointAuth,
    /// Where it came from.
    pub(crate) origin: ClientOrigin,
    /// The redirect URI it used.
    pub(crate) redirect_uri: String,
}

/// How a client authenticates at the token endpoint (RFC 7591's `token_endpoint_auth_method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TokenEndpointAuth {
    /// A public client: its ID in the request, no secret.
    None,
    /// Its ID and secret in HTTP Basic authentication.
    ClientSecretBasic,
    /// Its ID and secret in the request body.
    ClientSecretPost,
}

impl TokenEndpointAuth {
    /// The name the metadata uses.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::ClientSecretBasic => "client_secret_basic",
            Self::ClientSecretPost => "client_secret_post",
        }
    }

    /// The method of that name.
    pub(crate) fn named(name: &str) -> Option<Self> {
        [Self::None, Self::ClientSecretBasic, Self::ClientSecretPost]
            .into_iter()
            .find(|method| method.name() == name)
    }
}

/// Where a client came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ClientOrigin {
    /// The server's entry names it (`"oauth": {"clientId": ...}`).
    Configured,
    /// A client ID metadata document: its URL is the ID.
    MetadataDocument,
    /// toolweave registered it (dynamic client registration).
    Registered,
}

/// A request's challenge toolweave could not answer with the login it had.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct Challenge {
    /// `401` or `403`.
    pub(crate) status: u16,
    /// The `WWW-Authenticate` header, or empty when the server sent none.
    pub(crate) header: String,
}

impl Challenge {
    /// The scopes the challenge names (`scope="..."`).
    pub(crate) fn scopes(&self) -> Vec<String> {
        challenge_parameter(&self.header, "scope")
            .map(|scope| scope.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default()
    }
}

/// The value of parameter `name` in a `WWW-Authenticate` header (quoted or not).
pub(crate) fn challenge_parameter(header: &str, name: &str) -> Option<String> {
    let lower = header.to_ascii_lowercase();
    let mut from = 0;
    while let Some(found) = lower[from..].find(name) {
        let start = from + found;
        from = start + name.len();
        let before = lower[..start].chars().next_back();
        if before.is_some_and(|character| character.is_ascii_alphanumeric() || character == '_') {
            continue;
        }
        let rest = header[from..].trim_start();
        let Some(rest) = rest.strip_prefix('=') else {
            continue;
        };
        let rest = rest.trim_start();
        return Some(match rest.strip_prefix('"') {
            Some(quoted) => {
                let mut value = String::new();
                let mut characters = quoted.chars();
                while let Some(character) = characters.next() {
                    match character {
                        '"' => break,
                        '\\' => value.extend(characters.next()),
                        other => value.push(other),
                    }
                }
                value
            }
            None => rest
                .split(|character: char| character == ',' || character.is_whitespace())
                .next()
                .unwrap_or_default()
                .to_owned(),
        });
    }
    None
}

/// Seconds since the Unix epoch.
pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

/// A held lock on one login; released when dropped.
pub(crate) struct LoginLock {
    _file: std::fs::File,
}

impl Logins {
    /// The logins in `dir`.
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// `$XDG_CONFIG_HOME/toolweave/logins` (when it is absolute), or `~/.config/toolweave/logins`.
    pub fn default_dir(xdg_config_home: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
        let base = match (xdg_config_home, home) {
            (Some(xdg), _) if xdg.is_absolute() => xdg.to_path_buf(),
            (_, Some(home)) => home.join(".config"),
            _ => return None,
        };
        Some(base.join("toolweave").join("logins"))
    }

    /// The logins where this process's environment puts them; `None` without `HOME` or
    /// `XDG_CONFIG_HOME`.
    pub fn from_environment() -> Option<Self> {
        let xdg = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from);
        let home = std::env::var_os("HOME").map(PathBuf::from);
        Self::default_dir(xdg.as_deref(), home.as_deref()).map(Self::at)
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, key: &LoginKey) -> PathBuf {
        self.dir.join(format!("{}.json", key.stem()))
    }

    /// The login of `key`, if there is one.
    pub(crate) fn load(&self, key: &LoginKey) -> Result<Option<Login>, StoreError> {
        let path = self.path(key);
        let text = match std::fs::read(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(io_error("read", &path, &error)),
        };
        let login: Login =
            serde_json::from_slice(&text).map_err(|error| StoreError::Unreadable {
                path: path.clone(),
                detail: error.to_string(),
            })?;
        if login.server_url != key.url || login.configured_client != key.client_id {
            return Ok(None);
        }
        Ok(Some(login))
    }

    /// Writes the login of `key`: a `0600` file in a `0700` directory, replaced whole.
    pub(crate) fn save(&self, key: &LoginKey, login: &Login) -> Result<(), StoreError> {
        self.make_dir()?;
        let path = self.path(key);
        let text = serde_json::to_vec_pretty(login).map_err(|error| StoreError::Io {
            action: "write",
            path: path.clone(),
            detail: error.to_string(),
        })?;
        toolweave_config::replace_file(&path, &text, owner_only(0o600), 0o600)
            .map_err(|error| io_error("write", &path, &error))
    }

    /// Removes the login of `key`; whether there was one.
    pub(crate) fn remove(&self, key: &LoginKey) -> Result<bool, StoreError> {
        let path = self.path(key);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(error) => Err(io_error("remove", &path, &error)),
        }
    }

    /// Waits (at most 30 s) until no other toolweave process changes the login of `key`, and
    /// keeps it so until the lock is dropped.
    pub(crate) async fn lock(&self, key: &LoginKey) -> Result<LoginLock, StoreError> {
        self.make_dir()?;
        let path = self.dir.join(format!("{}.lock", key.stem()));
        let mut options = std::fs::OpenOptions::new();
        options.create(true).truncate(false).write(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options
            .open(&path)
            .map_err(|error| io_error("lock", &path, &error))?;
        let deadline = tokio::time::Instant::now() + LOCK_WAIT;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(LoginLock { _file: file }),
                Err(std::fs::TryLockError::WouldBlock) => {
                    if tokio::time::Instant::now() >= deadline {
                        return Err(StoreError::Busy { path });
                    }
                    tokio::time::sleep(LOCK_POLL).await;
                }
                Err(std::fs::TryLockError::Error(error)) => {
                    return Err(io_error("lock", &path, &error));
                }
            }
        }
    }

    /// Creates the directory, readable by its owner only.
    fn make_dir(&self) -> Result<(), StoreError> {
        std::fs::create_dir_all(&self.dir).map_err(|error| io_error("write", &self.dir, &error))?;
        match owner_only(0o700) {
            Some(permissions) => std::fs::set_permissions(&self.dir, permissions)
                .map_err(|error| io_error("write", &self.dir, &error)),
            None => Ok(()),
        }
    }
}

/// Permissions for the owner only (`mode`); elsewhere than Unix, the user's profile directory
/// keeps the files private and nothing is changed.
fn owner_only(mode: u32) -> Option<std::fs::Permissions> {
    #[cfg(unix)]
    return Some(std::os::unix::fs::PermissionsExt::from_mode(mode));
    #[cfg(not(unix))]
    {
        let _ = mode;
        None
    }
}

fn io_error(action: &'static str, path: &Path, error: &std::io::Error) -> StoreError {
    StoreError::Io {
        action,
        path: path.to_path_buf(),
        detail: error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenge_parameters_are_read_quoted_or_not() {
        let header = r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="https://x/.well-known/oauth-protected-resource/mcp""#;
        assert_eq!(
            challenge_parameter(header, "scope").as_deref(),
            Some("mcp:basic mcp:write")
        );
        assert_eq!(
            challenge_parameter(header, "error").as_deref(),
            Some("insufficient_scope")
        );
        assert_eq!(
            challenge_parameter("Bearer scope=read, realm=\"a\\\"b\"", "realm").as_deref(),
            Some("a\"b")
        );
        assert_eq!(
            challenge_parameter("Bearer scope=read, realm=x", "scope").as_deref(),
            Some("read")
        );
        // `error` is not found inside `error_description`, nor `scope` inside `myscope`.
        assert_eq!(
            challenge_parameter("Bearer error_description=\"x\", myscope=y", "error"),
            None
        );
        assert_eq!(challenge_parameter("Bearer myscope=y", "scope"), None);
    }

    #[test]
    fn keys_are_digests_of_url_and_client() {
        let plain = LoginKey::new("https://mcp.example.com/mcp?key=SECRET", None);
        let client = LoginKey::new("https://mcp.example.com/mcp?key=SECRET", Some("tw"));
        assert_ne!(plain.stem(), client.stem());
        assert_eq!(plain.stem().len(), 32);
        assert!(!plain.stem().contains("SECRET"));
        assert_eq!(
            Logins::default_dir(Some(Path::new("/x")), Some(Path::new("/home/me"))),
            Some(PathBuf::from("/x/toolweave/logins"))
        );
        assert_eq!(
            Logins::default_dir(Some(Path::new("relative")), Some(Path::new("/home/me"))),
            Some(PathBuf::from("/home/me/.config/toolweave/logins"))
        );
        assert_eq!(Logins::default_dir(None, None), None);
    }
}
