//! The streamable HTTP transport: rmcp's transport, over an HTTP client of toolweave's that reads
//! what the server sends as bytes and checks it before rmcp does.
//!
//! rmcp's streamable HTTP transport takes the HTTP client as a parameter
//! ([`StreamableHttpClient`]); rmcp's own client parses each answer itself, and drops an event it
//! cannot parse. [`SafeClient`] makes the `POST` of each message itself: an answer in a JSON body
//! is read by the connection's [`Wire`] (which, since the body answers that request, fails the
//! request with whatever is wrong with it), and an answer as an event stream is read event by
//! event as bytes ([`crate::events`]), each message checked by the wire and handed to rmcp as the
//! text the server sent, or written anew when the wire changed it (an error standing for an
//! unreadable answer, a tool list with bad tools left out). The `GET` stream for messages the
//! server starts and `DELETE` of the session go through rmcp's client, with the events of the
//! stream checked the same way.
//!
//! Requests carry the connection's login ([`Authorization`]) when it has one: a request the server
//! refuses with `401` is sent once more with a renewed token, and one that still fails, or that is
//! refused for want of scopes, fails naming `toolweave login`.
//!
//! A `server/discover` outside a session refused with an HTTP client error (as a server of
//! 2025-11-25 refuses it) is read as a JSON-RPC error, so that `initialize` follows: rmcp does so
//! only in its own HTTP clients (docs/rmcp.md, section 6).
//!
//! Its errors are reduced to [`HttpFailure`]: rmcp formats and logs transport errors, and
//! reqwest's would name the URL.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{
    ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue, RETRY_AFTER, WWW_AUTHENTICATE,
};
use reqwest::{Response, StatusCode};
use rmcp::model::{ClientJsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, SseError, StreamableHttpClient,
    StreamableHttpClientTransportConfig, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use toolweave_config::Expanded;

use crate::auth::Authorization;
use crate::bounded::MAX_MESSAGE_BYTES;
use crate::error::Malformed;
use crate::events::{Event, EventError, Events};
use crate::remote::{HttpFailure, describe_reqwest, header_map, http_client};
use crate::wire::Wire;

/// The session header of streamable HTTP.
const SESSION_HEADER: &str = "mcp-session-id";
/// Headers the transport sets itself, which a configured header may not replace (the protocol
/// version is set by rmcp through the same map as configured headers, and passes).
const RESERVED_HEADERS: [&str; 3] = ["accept", SESSION_HEADER, "last-event-id"];

type HttpResult<T> = Result<T, StreamableHttpError<HttpFailure>>;

/// The streamable HTTP transport to `url`, with the configured headers on every request, and the
/// login's token when there is `authorization`; what the server sends is checked by `wire`.
pub(crate) fn streamable_http_transport(
    url: &Expanded,
    headers: &BTreeMap<String, Expanded>,
    wire: Arc<Wire>,
    authorization: Option<Arc<Authorization>>,
) -> Result<StreamableHttpClientTransport<SafeClient>, HttpFailure> {
    let client = SafeClient {
        client: http_client()?,
        wire,
        authorization,
    };
    let custom_headers: HashMap<HeaderName, HeaderValue> = header_map(headers)?
        .into_iter()
        .filter_map(|(name, value)| Some((name?, value)))
        .collect();
    let config = StreamableHttpClientTransportConfig::with_uri(url.value())
        .custom_headers(custom_headers)
        .max_sse_event_size(MAX_MESSAGE_BYTES)
        .max_json_response_size(MAX_MESSAGE_BYTES);
    Ok(StreamableHttpClientTransport::with_client(client, config))
}

/// The HTTP client of one streamable HTTP connection.
#[derive(Clone)]
pub(crate) struct SafeClient {
    client: reqwest::Client,
    wire: Arc<Wire>,
    /// The login requests carry, unless the entry sends its own credentials.
    authorization: Option<Arc<Authorization>>,
}

impl StreamableHttpClient for SafeClient {
    type Error = HttpFailure;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<StreamableHttpPostResponse> {
        self.post(uri, message, session_id, auth_header, custom_headers)
            .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        _max_sse_event_size: usize,
    ) -> HttpResult<StreamableHttpPostResponse> {
        self.post(uri, message, session_id, auth_header, custom_headers)
            .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        _limits: StreamableHttpResponseLimits,
    ) -> HttpResult<StreamableHttpPostResponse> {
        // Every body and event is bounded by `MAX_MESSAGE_BYTES`, the transport's limits too.
        self.post(uri, message, session_id, auth_header, custom_headers)
            .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<()> {
        let bearer = self.bearer(auth_header).await?;
        self.client
            .delete_session(uri, session_id, bearer, custom_headers)
            .await
            .map_err(sanitize)
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            MAX_MESSAGE_BYTES,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        let mut bearer = self.bearer(auth_header).await?;
        let mut renewed = false;
        let stream = loop {
            let opened = self
                .client
                .get_stream_with_max_sse_event_size(
                    uri.clone(),
                    session_id.clone(),
                    last_event_id.clone(),
                    bearer.clone(),
                    custom_headers.clone(),
                    max_sse_event_size,
                )
                .await;
            match (opened, &self.authorization) {
                (Err(StreamableHttpError::AuthRequired(refused)), Some(authorization)) => {
                    let challenge = Some(refused.www_authenticate_header.as_str())
                        .filter(|header| !header.is_empty());
                    if renewed {
                        return Err(StreamableHttpError::Client(
                            authorization.refused_again(challenge).await,
                        ));
                    }
                    bearer = Some(
                        authorization
                            .refused(bearer.as_deref(), challenge)
                            .await
                            .map_err(StreamableHttpError::Client)?,
                    );
                    renewed = true;
                }
                (opened, _) => break opened.map_err(sanitize)?,
            }
        };
        // The stream's messages are checked like any other; its body errors are reqwest's.
        let wire = self.wire.clone();
        Ok(stream
            .filter_map(move |event| {
                let event = match event {
                    Ok(event) => Ok(check_text_event(event, &wire)),
                    Err(SseError::Body(body)) => {
                        Err(SseError::Body(Box::new(describe_boxed(&*body))))
                    }
                    Err(other) => Err(other),
                };
                std::future::ready(Some(event))
            })
            .boxed())
    }
}

impl SafeClient {
    /// Posts one message; the answer, checked by the wire.
    async fn post(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<StreamableHttpPostResponse> {
        use StreamableHttpError as E;
        let session_attached = session_id.is_some();
        let mut bearer = self.bearer(auth_header).await?;
        let mut renewed = false;
        let mut request = self.request(
            uri.clone(),
            session_id.clone(),
            bearer.clone(),
            custom_headers.clone(),
        )?;
        self.wire.sent(&message);
        let response = loop {
            let response = request
                .json(&message)
                .send()
                .await
                .map_err(|error| E::Client(describe_reqwest(&error)))?;
            match self
                .challenged(&response, bearer.as_deref(), renewed)
                .await?
            {
                Some(fresh) => {
                    bearer = Some(fresh);
                    renewed = true;
                    request = self.request(
                        uri.clone(),
                        session_id.clone(),
                        bearer.clone(),
                        custom_headers.clone(),
                    )?;
                }
                None => break response,
            }
        };
        let status = response.status();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && session_attached {
            return Err(E::SessionExpired);
        }
        // Only a request waits for an answer; whatever comes back to anything else is not read.
        let request_id = match &message {
            ClientJsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        if !status.is_success() {
            let new_session = session_of(&response);
            let failed = self.failed(response, status, request_id.as_ref()).await;
            return match (failed, request_id) {
                (Ok(message), _) => Ok(StreamableHttpPostResponse::Json(message, new_session)),
                (Err(error), Some(id)) if legacy_refusal(&message, session_attached, status) => {
                    let refusal = ServerJsonRpcMessage::error(
                        rmcp::model::ErrorData::invalid_request(
                            format!("server/discover was refused with HTTP {}", status.as_u16()),
                            None,
                        ),
                        Some(id.clone()),
                    );
                    // Read by the wire as the answer, so the request is no longer pending there.
                    let received = serde_json::to_vec(&refusal)
                        .ok()
                        .and_then(|body| self.wire.receive_answer(&body, &id));
                    match received {
                        Some(received) => {
                            Ok(StreamableHttpPostResponse::Json(received.message, None))
                        }
                        None => Err(error),
                    }
                }
                (Err(error), _) => Err(error),
            };
        }
        match request_id {
            Some(request_id) => self.answer(response, request_id).await,
            None => Ok(StreamableHttpPostResponse::Accepted),
        }
    }

    /// The token a request carries: the one rmcp was configured with, else the login's.
    async fn bearer(&self, configured: Option<String>) -> HttpResult<Option<String>> {
        match (configured, &self.authorization) {
            (Some(token), _) => Ok(Some(token)),
            (None, Some(authorization)) => authorization
                .bearer()
                .await
                .map_err(StreamableHttpError::Client),
            (None, None) => Ok(None),
        }
    }

    /// What a `401` or `403` means: a token to send the request again with (once, after a
    /// renewal), the failure that names what to do, or nothing (the answer is read as usual).
    /// Without a login of toolweave's, the challenge goes to rmcp as it is.
    async fn challenged(
        &self,
        response: &Response,
        sent: Option<&str>,
        renewed: bool,
    ) -> HttpResult<Option<String>> {
        use StreamableHttpError as E;
        let status = response.status();
        let challenge = challenge(response);
        let Some(authorization) = &self.authorization else {
            return match (status, challenge) {
                (StatusCode::UNAUTHORIZED, Some(challenge)) => {
                    Err(E::AuthRequired(AuthRequiredError::new(challenge)))
                }
                (StatusCode::FORBIDDEN, Some(challenge)) => Err(E::InsufficientScope(
                    InsufficientScopeError::new(challenge, None),
                )),
                _ => Ok(None),
            };
        };
        match status {
            StatusCode::UNAUTHORIZED if renewed => Err(E::Client(
                authorization.refused_again(challenge.as_deref()).await,
            )),
            StatusCode::UNAUTHORIZED => authorization
                .refused(sent, challenge.as_deref())
                .await
                .map(Some)
                .map_err(E::Client),
            StatusCode::FORBIDDEN => match challenge {
                Some(challenge)
                    if crate::auth::challenge_error(&challenge).as_deref()
                        == Some("insufficient_scope") =>
                {
                    Err(E::Client(authorization.needs_scope(&challenge).await))
                }
                _ => Ok(None),
            },
            _ => Ok(None),
        }
    }

    /// A `POST` to `uri` with the transport's headers.
    fn request(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<reqwest::RequestBuilder> {
        let mut request = self
            .client
            .post(uri.as_ref())
            .header(ACCEPT, "text/event-stream, application/json");
        if let Some(auth_header) = auth_header {
            request = request.bearer_auth(auth_header);
        }
        for (name, value) in custom_headers {
            if RESERVED_HEADERS.contains(&name.as_str()) {
                return Err(StreamableHttpError::ReservedHeaderConflict(
                    name.to_string(),
                ));
            }
            request = request.header(name, value);
        }
        if let Some(session_id) = &session_id {
            request = request.header(SESSION_HEADER, session_id.as_ref());
        }
        Ok(request)
    }

    /// The answer to request `id` in a successful response: an event stream, or a JSON body.
    async fn answer(
        &self,
        response: Response,
        id: RequestId,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let new_session = session_of(&response);
        match media_type(&response).as_deref() {
            Some("text/event-stream") => Ok(StreamableHttpPostResponse::Sse(
                self.answers(response, id),
                new_session,
            )),
            Some("application/json") => {
                let message = match read_body(response).await? {
                    Ok(body) => self.wire.receive_answer(&body, &id),
                    Err(malformed) => self.wire.fail(&id, malformed),
                };
                Ok(match message {
                    Some(received) => {
                        StreamableHttpPostResponse::Json(received.message, new_session)
                    }
                    // The request was given up on meanwhile: nothing waits for this.
                    None => StreamableHttpPostResponse::Accepted,
                })
            }
            _ => Err(StreamableHttpError::UnexpectedContentType(
                response
                    .headers()
                    .get(CONTENT_TYPE)
                    .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned()),
            )),
        }
    }

    /// A `POST` answered with an HTTP error: its JSON-RPC error when the body holds one for the
    /// request (rmcp reads the error as the answer), else the status.
    async fn failed(
        &self,
        response: Response,
        status: StatusCode,
        request_id: Option<&RequestId>,
    ) -> HttpResult<ServerJsonRpcMessage> {
        use StreamableHttpError as E;
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let status_error = if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            E::HttpStatus(HttpStatusError::new(status.as_u16(), retry_after))
        } else {
            E::UnexpectedServerResponse(Cow::Owned(format!("HTTP {}", status.as_u16())))
        };
        let kind = media_type(&response);
        let (Some("application/json"), Some(request_id)) = (kind.as_deref(), request_id) else {
            return Err(status_error);
        };
        let Ok(Ok(body)) = read_body(response).await else {
            return Err(status_error);
        };
        let answers = matches!(
            serde_json::from_slice::<ServerJsonRpcMessage>(&body),
            Ok(ServerJsonRpcMessage::Error(error))
                if error.id.as_ref().is_none_or(|id| id == request_id)
        );
        match answers
            .then(|| self.wire.receive_answer(&body, request_id))
            .flatten()
        {
            Some(received) => Ok(received.message),
            None => Err(status_error),
        }
    }

    /// The messages of an event stream answering request `id`, each checked by the wire. An event
    /// too long for toolweave fails that request, and ends the stream.
    fn answers(
        &self,
        response: Response,
        id: RequestId,
    ) -> BoxStream<'static, Result<Sse, SseError>> {
        let wire = self.wire.clone();
        let chunks = response
            .bytes_stream()
            .map(|chunk| chunk.map_err(|error| describe_reqwest(&error)));
        Events::new(chunks, MAX_MESSAGE_BYTES)
            .map(move |event| match event {
                Ok(event) => Ok(check_event(event, &wire)),
                Err(EventError::TooLarge { .. }) => {
                    let failed = wire.fail(&id, too_large()).map(|received| received.message);
                    Ok(Sse {
                        data: failed.and_then(|message| serde_json::to_string(&message).ok()),
                        ..Sse::default()
                    })
                }
                Err(EventError::Body(body)) => Err(SseError::Body(body)),
            })
            .boxed()
    }
}

/// An event for rmcp: a message checked by the wire (nothing, when the wire keeps it back), its
/// other fields as they are.
fn check_event(event: Event, wire: &Wire) -> Sse {
    let data = match (&event.data, event.is_message()) {
        (Some(data), true) if !data.iter().all(u8::is_ascii_whitespace) => {
            wire.receive(data).and_then(|received| {
                if received.rewritten {
                    serde_json::to_string(&received.message).ok()
                } else {
                    // The wire read it, so it is UTF-8.
                    String::from_utf8(data.clone()).ok()
                }
            })
        }
        (data, _) => data
            .as_ref()
            .map(|data| String::from_utf8_lossy(data).into_owned()),
    };
    Sse {
        event: event.event,
        data,
        id: event.id,
        retry: event.retry,
    }
}

/// [`check_event`] for an event rmcp's client already decoded as text.
fn check_text_event(event: Sse, wire: &Wire) -> Sse {
    check_event(
        Event {
            event: event.event,
            id: event.id,
            retry: event.retry,
            data: event.data.map(String::into_bytes),
        },
        wire,
    )
}

/// Whether an HTTP error answering `message` says the server does not speak MCP 2026-07-28: a
/// `server/discover` outside any session refused with a client error other than a login's (a
/// server of 2025-11-25 wants `initialize` first, and may say so in plain text). It is read as a
/// JSON-RPC error, so that `initialize` follows, as rmcp's own HTTP client does.
fn legacy_refusal(
    message: &ClientJsonRpcMessage,
    session_attached: bool,
    status: StatusCode,
) -> bool {
    let discover = matches!(
        message,
        ClientJsonRpcMessage::Request(request)
            if matches!(request.request, rmcp::model::ClientRequest::DiscoverRequest(_))
    );
    discover
        && !session_attached
        && status.is_client_error()
        && !matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN)
}

/// What a message too long for toolweave is.
fn too_large() -> Malformed {
    Malformed::TooLarge {
        limit_mib: MAX_MESSAGE_BYTES / (1024 * 1024),
    }
}

/// A JSON body of at most [`MAX_MESSAGE_BYTES`], or the fault of a longer one.
async fn read_body(response: Response) -> HttpResult<Result<Vec<u8>, Malformed>> {
    if response
        .content_length()
        .is_some_and(|length| length > MAX_MESSAGE_BYTES as u64)
    {
        return Ok(Err(too_large()));
    }
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|error| StreamableHttpError::Client(describe_reqwest(&error)))?;
        if body.len() + chunk.len() > MAX_MESSAGE_BYTES {
            return Ok(Err(too_large()));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Ok(body))
}

/// The session a response names, if it names one.
fn session_of(response: &Response) -> Option<String> {
    response
        .headers()
        .get(SESSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

/// The media type of a response, lower case, without parameters.
fn media_type(response: &Response) -> Option<String> {
    let value = response.headers().get(CONTENT_TYPE)?.to_str().ok()?;
    let kind = value.split(';').next().unwrap_or_default().trim();
    Some(kind.to_ascii_lowercase())
}

/// The `WWW-Authenticate` challenge of a response, if it has one.
fn challenge(response: &Response) -> Option<String> {
    response
        .headers()
        .get(WWW_AUTHENTICATE)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
}

/// The same error with reqwest's part reduced to its cause.
fn sanitize(error: StreamableHttpError<reqwest::Error>) -> StreamableHttpError<HttpFailure> {
    use StreamableHttpError as E;
    match error {
        E::Client(error) => E::Client(describe_reqwest(&error)),
        E::Sse(SseError::Body(body)) => E::Sse(SseError::Body(Box::new(describe_boxed(&*body)))),
        E::Sse(error) => E::Sse(error),
        E::Io(error) => E::Io(error),
        E::HttpStatus(status) => E::HttpStatus(status),
        E::UnexpectedEndOfStream => E::UnexpectedEndOfStream,
        E::UnexpectedServerResponse(text) => E::UnexpectedServerResponse(text),
        E::ResponseBodyTooLarge { max_size } => E::ResponseBodyTooLarge { max_size },
        E::UnexpectedContentType(content_type) => E::UnexpectedContentType(content_type),
        E::ServerDoesNotSupportSse => E::ServerDoesNotSupportSse,
        E::ServerDoesNotSupportDeleteSession => E::ServerDoesNotSupportDeleteSession,
        E::TokioJoinError(error) => E::TokioJoinError(error),
        E::Deserialize(error) => E::Deserialize(error),
        E::TransportChannelClosed => E::TransportChannelClosed,
        E::MissingSessionIdInResponse => E::MissingSessionIdInResponse,
        E::AuthRequired(error) => E::AuthRequired(error),
        E::InsufficientScope(error) => E::InsufficientScope(error),
        E::ReservedHeaderConflict(name) => E::ReservedHeaderConflict(name),
        E::SessionExpired => E::SessionExpired,
        E::SessionRecoveryTimeout => E::SessionRecoveryTimeout,
        E::ReinitializationFailed(error) => E::ReinitializationFailed(error),
        E::ControlRequestTimeout => E::ControlRequestTimeout,
        other => E::UnexpectedServerResponse(Cow::Owned(other.to_string())),
    }
}

/// A boxed error from inside a response stream, reduced like a reqwest error.
fn describe_boxed(error: &(dyn std::error::Error + Send + Sync + 'static)) -> HttpFailure {
    match error.downcast_ref::<reqwest::Error>() {
        Some(error) => describe_reqwest(error),
        None => match error.downcast_ref::<HttpFailure>() {
            Some(failure) => failure.clone(),
            None => HttpFailure::new(error.to_string(), true),
        },
    }
}
