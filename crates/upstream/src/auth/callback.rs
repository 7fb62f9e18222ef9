//! Where the browser comes back to after a login: a listener on `127.0.0.1` (a port of the
//! system's choosing unless the entry fixes one) that takes the one request to `/callback`, checks
//! its `state`, answers the browser with a page, and closes.
//!
//! Anything else that reaches the port first (a browser asking for `/favicon.ico`) gets `404`
//! and the listener keeps waiting, up to the login's time limit.

use std::time::Duration;

use reqwest::Url;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The longest request head the listener reads.
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// How long one connection may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Requests to other paths before the listener gives up.
const MAX_STRAY_REQUESTS: usize = 32;

/// The loopback listener of one login.
pub(crate) struct Callback {
    listener: TcpListener,
    port: u16,
}

/// What the browser brought back.
pub(crate) struct Answer {
    /// The authorization code.
    pub(crate) code: String,
    /// The authorization server's `iss` (RFC 9207), when it sent one.
    pub(crate) issuer: Option<String>,
}

/// Why no usable answer came.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CallbackError {
    /// The port could not be bound.
    #[error("cannot listen on 127.0.0.1:{port} for the browser's return ({detail}){}", if *port == 0 { String::new() } else { "; choose another \"callbackPort\", or free that port".to_owned() })]
    Bind {
        /// The port asked for (0: any).
        port: u16,
        /// The system's error.
        detail: String,
    },
    /// Nobody came back in time.
    #[error("nobody finished the login in the browser within {} s", limit.as_secs())]
    TimedOut {
        /// The limit.
        limit: Duration,
    },
    /// The answer carried another `state`: it is not for this login.
    #[error(
        "the answer that came back was not for this login (its state did not match the one toolweave sent)"
    )]
    WrongState,
    /// The authorization server refused, with an OAuth error.
    #[error("the authorization server did not grant it: {error}{}", description.as_ref().map(|text| format!(" ({text})")).unwrap_or_default())]
    Refused {
        /// The OAuth error code, e.g. `access_denied`.
        error: String,
        /// Its description, if it gave one.
        description: Option<String>,
    },
    /// The answer had no code.
    #[error("the answer that came back had no authorization code")]
    NoCode,
    /// The listener failed.
    #[error("the listener for the browser's return failed ({0})")]
    Io(String),
}

impl Callback {
    /// Listens on `127.0.0.1:port` (`None`: a free port).
    pub(crate) async fn bind(port: Option<u16>) -> Result<Self, CallbackError> {
        let wanted = port.unwrap_or(0);
        let listener = TcpListener::bind(("127.0.0.1", wanted))
            .await
            .map_err(|error| CallbackError::Bind {
                port: wanted,
                detail: error.to_string(),
            })?;
        let port = listener
            .local_addr()
            .map_err(|error| CallbackError::Io(error.to_string()))?
            .port();
        Ok(Self { listener, port })
    }

    /// The redirect URI: `http://127.0.0.1:PORT/callback`.
    pub(crate) fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}/callback", self.port)
    }

    /// Waits (at most `limit`) for the request to `/callback`, answers it, and closes.
    pub(crate) async fn wait(self, state: &str, limit: Duration) -> Result<Answer, CallbackError> {
        tokio::time::timeout(limit, self.serve(state))
            .await
            .map_err(|_elapsed| CallbackError::TimedOut { limit })?
    }

    async fn serve(self, state: &str) -> Result<Answer, CallbackError> {
        let mut strays = 0;
        loop {
            let (mut stream, _) = self
                .listener
                .accept()
                .await
                .map_err(|error| CallbackError::Io(error.to_string()))?;
            let target = match tokio::time::timeout(READ_TIMEOUT, read_target(&mut stream)).await {
                Ok(Some(target)) => target,
                // Not an HTTP request, or too slow: not the browser coming back.
                _ => continue,
            };
            let Some(query) = callback_query(&target) else {
                respond(&mut stream, "404 Not Found", "Not here.").await;
                strays += 1;
                if strays >= MAX_STRAY_REQUESTS {
                    return Err(CallbackError::Io(
                        "too many requests that were not the browser's return".to_owned(),
                    ));
                }
                continue;
            };
            let outcome = read_answer(&query, state);
            let page = match &outcome {
                Ok(_) => "You are logged in. You can close this tab and go back to the terminal."
                    .to_owned(),
                Err(error) => format!("The login failed: {error}. Go back to the terminal."),
            };
            let status = if outcome.is_ok() {
                "200 OK"
            } else {
                "400 Bad Request"
            };
            respond(&mut stream, status, &page).await;
            return outcome;
        }
    }
}

/// The request target of the one request on `stream` (`GET` only).
async fn read_target(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buffer = [0u8; 2048];
    while !head.windows(4).any(|window| window == b"\r\n\r\n") {
        let read = stream.read(&mut buffer).await.ok()?;
        if read == 0 || head.len() + read > MAX_HEAD_BYTES {
            return None;
        }
        head.extend_from_slice(&buffer[..read]);
    }
    let head = String::from_utf8_lossy(&head);
    let mut parts = head.lines().next()?.split_whitespace();
    (parts.next()? == "GET").then_some(())?;
    parts.next().map(str::to_owned)
}

/// The query pairs of a request to `/callback`.
fn callback_query(target: &str) -> Option<Vec<(String, String)>> {
    let url = Url::parse(&format!("http://127.0.0.1{target}")).ok()?;
    (url.path() == "/callback").then(|| url.query_pairs().into_owned().collect())
}

fn read_answer(query: &[(String, String)], state: &str) -> Result<Answer, CallbackError> {
    let find = |name: &str| {
        query
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
    };
    if find("state").as_deref() != Some(state) {
        return Err(CallbackError::WrongState);
    }
    if let Some(error) = find("error") {
        return Err(CallbackError::Refused {
            error,
            description: find("error_description"),
        });
    }
    Ok(Answer {
        code: find("code").ok_or(CallbackError::NoCode)?,
        issuer: find("iss"),
    })
}

async fn respond(stream: &mut TcpStream, status: &str, text: &str) {
    let body = format!(
        "<!doctype html><meta charset=\"utf-8\"><title>toolweave</title><p>{}</p>\n",
        escape(text)
    );
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    // The browser may have gone; the login's outcome does not depend on this page.
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(port: u16, target: &str) -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        stream
            .write_all(format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer
    }

    #[tokio::test]
    async fn takes_the_callback_with_its_state_and_closes() {
        let callback = Callback::bind(None).await.unwrap();
        let port = callback.port;
        assert_eq!(
            callback.redirect_uri(),
            format!("http://127.0.0.1:{port}/callback")
        );
        let waiting = tokio::spawn(callback.wait("s-1", Duration::from_secs(5)));
        assert!(get(port, "/favicon.ico").await.starts_with("HTTP/1.1 404"));
        let page = get(port, "/callback?code=c%2F1&state=s-1&iss=https%3A%2F%2Fas").await;
        assert!(page.starts_with("HTTP/1.1 200 OK"), "{page}");
        let answer = waiting.await.unwrap().unwrap();
        assert_eq!(answer.code, "c/1");
        assert_eq!(answer.issuer.as_deref(), Some("https://as"));
        // One request, then closed.
        assert!(TcpStream::connect(("127.0.0.1", port)).await.is_err());
    }

    #[tokio::test]
    async fn a_wrong_state_a_refusal_and_silence_fail_the_login() {
        let callback = Callback::bind(None).await.unwrap();
        let port = callback.port;
        let waiting = tokio::spawn(callback.wait("expected", Duration::from_secs(5)));
        let page = get(port, "/callback?code=c&state=forged").await;
        assert!(page.starts_with("HTTP/1.1 400"), "{page}");
        assert_eq!(
            waiting.await.unwrap().err(),
            Some(CallbackError::WrongState)
        );

        let callback = Callback::bind(None).await.unwrap();
        let port = callback.port;
        let waiting = tokio::spawn(callback.wait("s", Duration::from_secs(5)));
        get(
            port,
            "/callback?error=access_denied&error_description=No%20thanks&state=s",
        )
        .await;
        assert_eq!(
            waiting.await.unwrap().err().map(|error| error.to_string()),
            Some("the authorization server did not grant it: access_denied (No thanks)".to_owned())
        );

        let callback = Callback::bind(None).await.unwrap();
        assert_eq!(
            callback.wait("s", Duration::from_millis(50)).await.err(),
            Some(CallbackError::TimedOut {
                limit: Duration::from_millis(50)
            })
        );
    }
}
