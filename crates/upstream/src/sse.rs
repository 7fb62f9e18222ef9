//! The legacy HTTP+SSE transport (MCP protocol 2024-11-05), client side.
//!
//! A `GET` of the configured URL opens an event stream. Its first `endpoint` event names the URL
//! (relative to the stream's) that takes the client's messages: each one is `POST`ed there as
//! JSON. The server's messages arrive as `message` events on the stream. The configured headers
//! go with every request, and only to the configured origin: an endpoint on another origin is
//! refused, since the headers often carry credentials.
//!
//! Both carry the connection's login ([`Authorization`]) when it has one: a request refused with
//! `401` is sent once more with a renewed token, and one that still fails, or that is refused for
//! want of scopes, fails naming `toolweave login`.
//!
//! Events are read as bytes ([`crate::events`]) and each message is checked by the connection's
//! [`Wire`] before rmcp sees it. One event may be at most [`MAX_MESSAGE_BYTES`]; a longer one ends
//! the connection with a reason that says so, as for stdio servers.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue, WWW_AUTHENTICATE};
use reqwest::{RequestBuilder, Response, StatusCode, Url};
use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use toolweave_config::Expanded;

use crate::auth::Authorization;
use crate::bounded::MAX_MESSAGE_BYTES;
use crate::events::{Event, EventError, Events};
use crate::remote::{HttpFailure, describe_reqwest, describe_status, header_map, http_client};
use crate::wire::{Reader, Wire};

/// Why the event stream ended, recorded by the transport for the server's error.
#[derive(Debug, Clone, Default)]
pub(crate) struct ClosedReason(Arc<Mutex<Option<HttpFailure>>>);

impl ClosedReason {
    fn set(&self, failure: HttpFailure) {
        let mut reason = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        reason.get_or_insert(failure);
    }

    /// The recorded reason, if the stream ended.
    pub(crate) fn get(&self) -> Option<HttpFailure> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// One connection to a legacy SSE server.
pub(crate) struct SseTransport {
    client: reqwest::Client,
    /// Where messages are posted (from the `endpoint` event).
    endpoint: Url,
    headers: HeaderMap,
    events: BoxStream<'static, Result<Event, EventError>>,
    closed: ClosedReason,
    wire: Arc<Wire>,
    /// Reads events' data, long ones elsewhere; kept across reads.
    reader: Reader,
    /// The login requests carry, unless the entry sends its own credentials.
    authorization: Option<Arc<Authorization>>,
}

/// Refuses an answer to the GET that is not an event stream, naming what to check.
fn check_event_stream(response: &reqwest::Response) -> Result<(), HttpFailure> {
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    if !content_type.starts_with("text/event-stream") {
        return Err(HttpFailure::new(
            format!(
                "it answered the GET with {}, not an event stream; check \"type\" (a streamable HTTP server takes \"type\": \"http\") and \"url\" (SSE endpoints often end in /sse)",
                if content_type.is_empty() {
                    "no content type".to_owned()
                } else {
                    format!("content type {content_type:?}")
                }
            ),
            false,
        ));
    }
    Ok(())
}

/// The URL the server's `endpoint` event names for messages (on the stream at `stream_url`).
async fn endpoint_event(
    events: &mut BoxStream<'static, Result<Event, EventError>>,
    stream_url: &Url,
) -> Result<Url, HttpFailure> {
    loop {
        match events.next().await {
            Some(Ok(event)) if event.event.as_deref() == Some("endpoint") => {
                let target = String::from_utf8_lossy(&event.data.unwrap_or_default()).into_owned();
                return stream_url.join(target.trim()).map_err(|error| {
                    HttpFailure::new(
                        format!("its endpoint event did not hold a usable URL ({error})"),
                        false,
                    )
                });
            }
            Some(Ok(_other)) => {}
            Some(Err(error)) => return Err(stream_failure(&error)),
            None => {
                return Err(HttpFailure::new(
                    "its event stream ended before it named the URL for messages (no \"endpoint\" event); check that \"url\" is the server's SSE endpoint and \"type\" its transport",
                    false,
                ));
            }
        }
    }
}

impl SseTransport {
    /// Opens the event stream at `url` and waits for its `endpoint` event. Why the stream ends,
    /// later, is recorded in `closed`. Requests carry the login's token when there is
    /// `authorization`.
    pub(crate) async fn connect(
        url: &Expanded,
        headers: &BTreeMap<String, Expanded>,
        closed: ClosedReason,
        wire: Arc<Wire>,
        authorization: Option<Arc<Authorization>>,
    ) -> Result<Self, HttpFailure> {
        let client = http_client()?;
        let headers = header_map(headers)?;
        let stream_url = Url::parse(url.value()).map_err(|error| {
            HttpFailure::new(
                format!("\"url\" is not a valid URL ({error}); check it in the config file"),
                false,
            )
        })?;
        let open = |bearer: Option<&str>| {
            with_bearer(
                client
                    .get(stream_url.clone())
                    .headers(headers.clone())
                    .header(ACCEPT, "text/event-stream"),
                bearer,
            )
        };
        let response = send_authorized(open, authorization.as_deref()).await?;
        let status = response.status();
        if !status.is_success() {
            return Err(HttpFailure::new(describe_status(status.as_u16()), false));
        }
        check_event_stream(&response)?;
        let bytes = response
            .bytes_stream()
            .map(|chunk| chunk.map_err(|error| describe_reqwest(&error)));
        let mut events = Events::new(bytes, MAX_MESSAGE_BYTES).boxed();
        let endpoint = endpoint_event(&mut events, &stream_url).await?;
        if endpoint.origin() != stream_url.origin() {
            return Err(HttpFailure::new(
                "it named a URL on another host for messages; toolweave sends the configured headers only to the host in \"url\"",
                false,
            ));
        }
        Ok(Self {
            client,
            endpoint,
            headers,
            events,
            closed,
            wire,
            reader: Reader::default(),
            authorization,
        })
    }
}

/// `request` with the login's token, if there is one.
fn with_bearer(request: RequestBuilder, bearer: Option<&str>) -> RequestBuilder {
    match bearer {
        Some(token) => request.bearer_auth(token),
        None => request,
    }
}

/// Sends the request `build` makes, with the login's token; sent once more with a renewed token
/// when the server refuses it. A failure that needs the person names `toolweave login`.
async fn send_authorized(
    build: impl Fn(Option<&str>) -> RequestBuilder,
    authorization: Option<&Authorization>,
) -> Result<Response, HttpFailure> {
    let mut bearer = match authorization {
        Some(authorization) => authorization.bearer().await?,
        None => None,
    };
    let mut renewed = false;
    loop {
        let response = build(bearer.as_deref())
            .send()
            .await
            .map_err(|error| describe_reqwest(&error))?;
        let Some(authorization) = authorization else {
            return Ok(response);
        };
        let challenge = response
            .headers()
            .get(WWW_AUTHENTICATE)
            .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
        match response.status() {
            StatusCode::UNAUTHORIZED if renewed => {
                return Err(authorization.refused_again(challenge.as_deref()).await);
            }
            StatusCode::UNAUTHORIZED => {
                bearer = Some(
                    authorization
                        .refused(bearer.as_deref(), challenge.as_deref())
                        .await?,
                );
                renewed = true;
            }
            StatusCode::FORBIDDEN
                if challenge
                    .as_deref()
                    .and_then(crate::auth::challenge_error)
                    .as_deref()
                    == Some("insufficient_scope") =>
            {
                let challenge = challenge.unwrap_or_default();
                return Err(authorization.needs_scope(&challenge).await);
            }
            _ => return Ok(response),
        }
    }
}

impl Transport<RoleClient> for SseTransport {
    type Error = HttpFailure;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.wire.sent(&item);
        let client = self.client.clone();
        let endpoint = self.endpoint.clone();
        let headers = self.headers.clone();
        let authorization = self.authorization.clone();
        async move {
            let post = |bearer: Option<&str>| {
                with_bearer(
                    client
                        .post(endpoint.clone())
                        .headers(headers.clone())
                        .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
                        .json(&item),
                    bearer,
                )
            };
            let response = send_authorized(post, authorization.as_deref()).await?;
            let status = response.status();
            if status.is_success() {
                Ok(())
            } else {
                Err(HttpFailure::new(
                    describe_status(status.as_u16()),
                    // The endpoint forgot the session: the server restarted.
                    status == reqwest::StatusCode::NOT_FOUND,
                ))
            }
        }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        if let Some(message) = self.reader.unfinished().await {
            return Some(message);
        }
        loop {
            match self.events.next().await {
                Some(Ok(event)) => {
                    if !event.is_message() {
                        continue;
                    }
                    let Some(mut data) = event.data else {
                        continue;
                    };
                    if data.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    let read = |wire: &Wire, data: &[u8]| wire.receive(data).map(|r| r.message);
                    if let Some(message) = self.reader.read(&self.wire, &mut data, read).await {
                        return Some(message);
                    }
                }
                Some(Err(error)) => {
                    self.closed.set(stream_failure(&error));
                    return None;
                }
                None => {
                    self.closed
                        .set(HttpFailure::new("the server closed its event stream", true));
                    return None;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Dropping the response ends the GET, which ends the session on the server.
        self.events = futures::stream::empty().boxed();
        Ok(())
    }
}

fn stream_failure(error: &EventError) -> HttpFailure {
    match error {
        EventError::Body(body) => HttpFailure::new(format!("its event stream broke: {body}"), true),
        EventError::TooLarge { .. } => HttpFailure::new(
            format!(
                "it sent a message longer than {} MiB, which toolweave does not accept (a tool result that large: ask the tool for less)",
                MAX_MESSAGE_BYTES / (1024 * 1024)
            ),
            true,
        ),
    }
}
