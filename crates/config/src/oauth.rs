//! The OAuth settings of a remote server entry: `"oauth"` (toolweave's key, which Claude Code
//! writes too) or Cursor's `"auth"`. Without either, toolweave logs in with what it discovers: a
//! client ID metadata document or a client it registers itself, and the scopes the server names.

use serde::Deserialize;
use serde_json::Value;

use crate::expand::Expanded;

/// How toolweave logs in to one remote server, beyond what it discovers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OAuthSettings {
    /// A client registered with the authorization server ahead of time (`clientId`, Cursor's
    /// `CLIENT_ID`); without it toolweave uses a client ID metadata document, or registers one.
    pub client_id: Option<Expanded>,
    /// That client's secret (`clientSecret`, Cursor's `CLIENT_SECRET`), for a confidential
    /// client; shown only as written.
    pub client_secret: Option<Expanded>,
    /// The scopes to ask for (`scopes`: a list, or one string of names separated by spaces);
    /// without them, the ones the server names.
    pub scopes: Option<Vec<String>>,
    /// The loopback port the login listens on (`callbackPort`), for a client whose redirect URI
    /// was registered with a fixed port; without it, any free port.
    pub callback_port: Option<u16>,
    /// The HTTPS URL of a client ID metadata document (`clientMetadataUrl`), used as the client
    /// ID where the authorization server accepts such documents.
    pub client_metadata_url: Option<String>,
    /// Where the authorization server's metadata is (`authServerMetadataUrl`), instead of
    /// discovering it from the server.
    pub auth_server_metadata_url: Option<String>,
}

/// The scopes as either client writes them.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawScopes {
    List(Vec<String>),
    Text(String),
}

/// toolweave's (and Claude Code's) `"oauth"`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawOAuth {
    client_id: Option<String>,
    client_secret: Option<String>,
    scopes: Option<RawScopes>,
    callback_port: Option<u32>,
    client_metadata_url: Option<String>,
    auth_server_metadata_url: Option<String>,
}

const OAUTH_KEYS: &str =
    "clientId, clientSecret, scopes, callbackPort, clientMetadataUrl, authServerMetadataUrl";

/// Cursor's `"auth"`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCursorAuth {
    #[serde(rename = "CLIENT_ID")]
    client_id: Option<String>,
    #[serde(rename = "CLIENT_SECRET")]
    client_secret: Option<String>,
    scopes: Option<RawScopes>,
}

const CURSOR_AUTH_KEYS: &str = "CLIENT_ID, CLIENT_SECRET, scopes";

/// Resolves an entry's `"oauth"` or `"auth"` (at most one of them); `expand` resolves a value's
/// variables, naming the key in its error. The error names the key and what to change.
pub(crate) fn resolve(
    oauth: Option<&Value>,
    auth: Option<&Value>,
    expand: &dyn Fn(&str, &str) -> Result<Expanded, String>,
) -> Result<Option<OAuthSettings>, String> {
    match (oauth, auth) {
        (None, None) => Ok(None),
        (Some(_), Some(_)) => Err(
            "both \"oauth\" and \"auth\" are given; keep one (\"auth\" is Cursor's name for \"oauth\")"
                .to_owned(),
        ),
        (Some(oauth), None) => {
            let raw: RawOAuth = read(oauth, "oauth", OAUTH_KEYS)?;
            let callback_port = raw
                .callback_port
                .map(|port| {
                    u16::try_from(port).ok().filter(|port| *port > 0).ok_or_else(|| {
                        format!("\"oauth\".callbackPort {port} is not a port; use 1 to 65535")
                    })
                })
                .transpose()?;
            let client_metadata_url = raw
                .client_metadata_url
                .map(|url| https_url(url, "\"oauth\".clientMetadataUrl", true))
                .transpose()?;
            let auth_server_metadata_url = raw
                .auth_server_metadata_url
                .map(|url| https_url(url, "\"oauth\".authServerMetadataUrl", false))
                .transpose()?;
            let settings = OAuthSettings {
                client_id: value(raw.client_id, "\"oauth\".clientId", expand)?,
                client_secret: value(raw.client_secret, "\"oauth\".clientSecret", expand)?,
                scopes: raw.scopes.map(scope_list),
                callback_port,
                client_metadata_url,
                auth_server_metadata_url,
            };
            check_client(&settings, "\"oauth\".clientSecret", "\"oauth\".clientId")?;
            Ok(Some(settings))
        }
        (None, Some(auth)) => {
            let raw: RawCursorAuth = read(auth, "auth", CURSOR_AUTH_KEYS)?;
            let settings = OAuthSettings {
                client_id: value(raw.client_id, "\"auth\".CLIENT_ID", expand)?,
                client_secret: value(raw.client_secret, "\"auth\".CLIENT_SECRET", expand)?,
                scopes: raw.scopes.map(scope_list),
                ..OAuthSettings::default()
            };
            check_client(&settings, "\"auth\".CLIENT_SECRET", "\"auth\".CLIENT_ID")?;
            Ok(Some(settings))
        }
    }
}

fn read<T: serde::de::DeserializeOwned>(value: &Value, key: &str, keys: &str) -> Result<T, String> {
    if !value.is_object() {
        return Err(format!("\"{key}\" must be an object with some of {keys}"));
    }
    serde_json::from_value(value.clone())
        .map_err(|error| format!("\"{key}\": {error}; the keys it may have are {keys}"))
}

/// A value with its variables resolved; an empty one is an error (it would be sent as is).
fn value(
    text: Option<String>,
    key: &str,
    expand: &dyn Fn(&str, &str) -> Result<Expanded, String>,
) -> Result<Option<Expanded>, String> {
    let Some(text) = text else {
        return Ok(None);
    };
    let expanded = expand(&text, key)?;
    if expanded.value().trim().is_empty() {
        return Err(format!(
            "{key} is empty{}; give the value, or remove the key",
            if expanded.uses_variables() {
                " (after its variables were resolved)"
            } else {
                ""
            }
        ));
    }
    Ok(Some(expanded))
}

/// A secret belongs to a client ID.
fn check_client(settings: &OAuthSettings, secret_key: &str, id_key: &str) -> Result<(), String> {
    if settings.client_secret.is_some() && settings.client_id.is_none() {
        return Err(format!(
            "{secret_key} is given without {id_key}; a client secret belongs to a client registered ahead of time: give its ID too"
        ));
    }
    Ok(())
}

fn scope_list(scopes: RawScopes) -> Vec<String> {
    let names: Vec<String> = match scopes {
        RawScopes::List(list) => list
            .iter()
            .flat_map(|scope| scope.split_whitespace())
            .map(str::to_owned)
            .collect(),
        RawScopes::Text(text) => text.split_whitespace().map(str::to_owned).collect(),
    };
    let mut unique = Vec::with_capacity(names.len());
    for name in names {
        if !unique.contains(&name) {
            unique.push(name);
        }
    }
    unique
}

/// An `https://` URL (`http://` on a loopback host too, for servers on this machine); with
/// `path`, one with a path beyond `/`, as a client ID metadata document's URL must have.
fn https_url(url: String, key: &str, path: bool) -> Result<String, String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| {
            url.strip_prefix("http://").filter(|rest| {
                ["localhost", "127.0.0.1", "[::1]"].iter().any(|host| {
                    rest.strip_prefix(host)
                        .is_some_and(|after| after.is_empty() || after.starts_with([':', '/']))
                })
            })
        })
        .ok_or_else(|| format!("{key} must be an https:// URL, got {url:?}"))?;
    let has_path = rest
        .split_once('/')
        .is_some_and(|(_, path)| !path.trim_end_matches(['?', '#']).is_empty());
    if path && !has_path {
        return Err(format!(
            "{key} must name the document itself (a path after the host), got {url:?}"
        ));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn expand(text: &str, key: &str) -> Result<Expanded, String> {
        match text {
            "${SECRET}" => Ok(Expanded::literal("s3cret")),
            "${UNSET}" => Err(format!("{key} uses the variable UNSET, which is not set")),
            other => Ok(Expanded::literal(other)),
        }
    }

    fn settings(
        oauth: Option<Value>,
        auth: Option<Value>,
    ) -> Result<Option<OAuthSettings>, String> {
        resolve(oauth.as_ref(), auth.as_ref(), &expand)
    }

    #[test]
    fn reads_toolweave_claude_code_and_cursor_shapes() {
        let ours = settings(
            Some(json!({"clientId": "tw", "clientSecret": "${SECRET}", "scopes": ["read", "write read"],
                "callbackPort": 8765, "clientMetadataUrl": "https://example.com/client.json"})),
            None,
        )
        .unwrap()
        .unwrap();
        assert_eq!(ours.client_id.as_ref().map(Expanded::value), Some("tw"));
        assert_eq!(
            ours.client_secret.as_ref().map(Expanded::value),
            Some("s3cret")
        );
        assert_eq!(
            ours.scopes.as_deref(),
            Some(&["read".to_owned(), "write".to_owned()][..])
        );
        assert_eq!(ours.callback_port, Some(8765));
        // Claude Code writes the scopes as one string.
        let claude = settings(
            Some(json!({"clientId": "cc", "scopes": "a b", "authServerMetadataUrl": "https://auth.example.com/.well-known/openid-configuration"})),
            None,
        )
        .unwrap()
        .unwrap();
        assert_eq!(claude.scopes, Some(vec!["a".to_owned(), "b".to_owned()]));
        let cursor = settings(
            None,
            Some(json!({"CLIENT_ID": "cu", "CLIENT_SECRET": "x", "scopes": ["openid"]})),
        )
        .unwrap()
        .unwrap();
        assert_eq!(cursor.client_id.as_ref().map(Expanded::value), Some("cu"));
        assert_eq!(cursor.scopes, Some(vec!["openid".to_owned()]));
        assert_eq!(settings(None, None), Ok(None));
    }

    #[test]
    fn mistakes_name_the_key_and_the_fix() {
        let error = |oauth: Value| settings(Some(oauth), None).unwrap_err();
        assert_eq!(
            error(json!({"clientid": "x"})),
            "\"oauth\": unknown field `clientid`, expected one of `clientId`, `clientSecret`, `scopes`, `callbackPort`, `clientMetadataUrl`, `authServerMetadataUrl`; the keys it may have are clientId, clientSecret, scopes, callbackPort, clientMetadataUrl, authServerMetadataUrl"
        );
        assert!(
            error(json!({"clientSecret": "x"}))
                .starts_with("\"oauth\".clientSecret is given without \"oauth\".clientId")
        );
        assert_eq!(
            error(json!({"callbackPort": 70000})),
            "\"oauth\".callbackPort 70000 is not a port; use 1 to 65535"
        );
        assert!(
            error(json!({"clientMetadataUrl": "http://example.com/c.json"}))
                .contains("must be an https:// URL")
        );
        assert!(
            error(json!({"clientMetadataUrl": "https://example.com/"}))
                .contains("must name the document itself")
        );
        assert!(error(json!({"clientId": ""})).starts_with("\"oauth\".clientId is empty"));
        assert!(error(json!({"clientId": "${UNSET}"})).contains("UNSET"));
        assert!(error(json!("token")).starts_with("\"oauth\" must be an object"));
        assert!(
            settings(Some(json!({})), Some(json!({})))
                .unwrap_err()
                .starts_with("both \"oauth\" and \"auth\"")
        );
        assert!(
            settings(None, Some(json!({"clientId": "x"})))
                .unwrap_err()
                .contains("CLIENT_ID, CLIENT_SECRET, scopes")
        );
    }
}
