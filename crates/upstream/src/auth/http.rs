//! The HTTP client of toolweave's OAuth requests (discovery, registration, token, revocation):
//! the same TLS as the MCP connections, bounded answers, and errors reduced to their cause (without
//! the URL, which may carry a key) before rmcp or a log sees them.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::StreamExt;
use oauth2::{HttpRequest, HttpResponse};
use rmcp::transport::auth::{
    OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRedirectPolicy,
    OAuthHttpRequest,
};

use crate::remote::{HttpFailure, client_builder, describe_reqwest};

/// The longest answer to an OAuth request toolweave reads (metadata, tokens).
const MAX_BODY_BYTES: usize = 1024 * 1024;
/// How long one OAuth request may take when the caller does not say.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Redirects followed where following is asked for.
const MAX_REDIRECTS: usize = 10;

/// Two clients: one that follows redirects, one that does not (rmcp says which each request
/// needs: a token request must not be redirected).
pub(crate) struct OAuthHttp {
    follow: reqwest::Client,
    stop: reqwest::Client,
}

impl OAuthHttp {
    /// The client shared by every login and renewal of this process.
    pub(crate) fn shared() -> Result<Arc<Self>, HttpFailure> {
        static CLIENT: OnceLock<Result<Arc<OAuthHttp>, String>> = OnceLock::new();
        CLIENT
            .get_or_init(|| {
                let build = |policy| {
                    client_builder()?
                        .redirect(policy)
                        .build()
                        .map_err(|error| describe_reqwest(&error).cause)
                };
                Ok(Arc::new(Self {
                    follow: build(reqwest::redirect::Policy::limited(MAX_REDIRECTS))?,
                    stop: build(reqwest::redirect::Policy::none())?,
                }))
            })
            .clone()
            .map_err(|cause| {
                HttpFailure::new(
                    format!("its HTTP client could not be set up: {cause}"),
                    false,
                )
            })
    }

    /// The client that does not follow redirects, for toolweave's own requests.
    pub(crate) fn client(&self) -> &reqwest::Client {
        &self.stop
    }

    async fn send(
        &self,
        request: HttpRequest,
        redirect_policy: OAuthHttpRedirectPolicy,
        timeout: Option<Duration>,
    ) -> Result<HttpResponse, HttpFailure> {
        let client = match redirect_policy {
            OAuthHttpRedirectPolicy::Follow => &self.follow,
            _ => &self.stop,
        };
        let mut request = reqwest::Request::try_from(request).map_err(|error| {
            HttpFailure::new(format!("the request could not be made ({error})"), false)
        })?;
        *request.timeout_mut() = Some(timeout.unwrap_or(REQUEST_TIMEOUT));
        let response = client
            .execute(request)
            .await
            .map_err(|error| describe_reqwest(&error))?;
        let mut builder = oauth2::http::Response::builder()
            .status(response.status())
            .version(response.version());
        for (name, value) in response.headers() {
            builder = builder.header(name, value);
        }
        let body = read_bounded(response).await?;
        builder
            .body(body)
            .map_err(|error| HttpFailure::new(format!("its answer was not HTTP ({error})"), false))
    }
}

impl OAuthHttpClient for OAuthHttp {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        let OAuthHttpRequest {
            request,
            redirect_policy,
            timeout,
            ..
        } = request;
        Box::pin(async move {
            self.send(request, redirect_policy, timeout)
                .await
                .map_err(|failure| Box::new(failure) as OAuthHttpClientError)
        })
    }
}

/// The body of `response`, at most [`MAX_BODY_BYTES`].
pub(crate) async fn read_bounded(response: reqwest::Response) -> Result<Vec<u8>, HttpFailure> {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|error| describe_reqwest(&error))?;
        if body.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(HttpFailure::new(
                format!(
                    "it answered with more than {} KiB, more than an OAuth answer takes",
                    MAX_BODY_BYTES / 1024
                ),
                false,
            ));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
