//! A server speaking MCP 2026-07-28 that needs something from the client (elicitation,
//! sampling, roots) answers the call with an `InputRequiredResult`, or a task of its waits for
//! input, instead of sending the client a request. Each question is passed on to the client
//! session whose code made the call, as a request from the server would be (`requests.rs`): the
//! server crate asks a 2026-07-28 client in a round of its own multi round-trip request, and a
//! 2025-11-25 client with a request. The answers go back in the retried call (or `tasks/update`).
//! rmcp drives rounds only through a connection's own client handler, which cannot tell whose
//! call a question belongs to (docs/rmcp.md, section 7).

// Sampling and roots are deprecated by SEP-2577 for the newest protocol version; servers still
// ask for them as input requests.
#![allow(deprecated)]

use rmcp::model::{InputRequest, InputRequests, InputResponses};
use tokio_util::sync::CancellationToken;

use crate::notices::Listener;
use crate::requests::{ForwardedAnswer, ForwardedRequest, Refusal, RequestKind, Route, forward};
use crate::{Error, Result};

/// The most rounds of input toolweave answers for one call before it gives up on it: rmcp's
/// own bound for a client that drives the rounds.
pub(crate) const MAX_INPUT_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

/// The call whose server asks: for errors, and where its questions go.
pub(crate) struct Asking<'a> {
    pub(crate) server: &'a str,
    pub(crate) tool: &'a str,
    /// The caller's listener, which names the client session to ask.
    pub(crate) listener: Option<&'a Listener>,
    /// Cancelled when the call is: the questions are withdrawn at the client.
    pub(crate) cancel: &'a CancellationToken,
}

/// Asks the client every question of `requests` at once, and gives back their answers, by key.
/// A question the client cannot or does not answer fails the call, saying why.
pub(crate) async fn answer(asking: &Asking<'_>, requests: InputRequests) -> Result<InputResponses> {
    let questions = requests.into_iter().map(|(key, request)| async move {
        let (kind, forwarded) = forwarded(asking, request)?;
        let unanswered = |refusal: Refusal| Error::InputUnanswered {
            server: asking.server.to_owned(),
            tool: asking.tool.to_owned(),
            method: kind.method(),
            cause: refusal.to_string(),
        };
        let client = asking
            .listener
            .and_then(Listener::client)
            .cloned()
            .ok_or(Refusal::NoClient)
            .map_err(unanswered)?;
        let route = Route {
            client,
            cancel: asking.cancel.child_token(),
            limit: None,
        };
        // Nothing withdraws a question but the call's end: the server asks nothing in between.
        let answer = forward(asking.server, forwarded, route, CancellationToken::new())
            .await
            .map_err(|refusal| {
                tracing::warn!(server = %asking.server, method = kind.method(), "an input request of the server was not answered by a client: {refusal}");
                unanswered(refusal)
            })?;
        let value = match answer {
            ForwardedAnswer::Elicitation(answer) => serde_json::to_value(answer),
            ForwardedAnswer::Sampling(answer) => serde_json::to_value(answer),
            ForwardedAnswer::Roots(answer) => serde_json::to_value(answer),
        }
        .map_err(|error| Error::InputUnanswered {
            server: asking.server.to_owned(),
            tool: asking.tool.to_owned(),
            method: kind.method(),
            cause: format!("the client's answer could not be written again: {error}"),
        })?;
        Ok::<_, Error>((key, value))
    });
    let answers = futures::future::try_join_all(questions).await?;
    Ok(answers.into_iter().collect())
}

/// The request from the server that `request` stands for.
fn forwarded(
    asking: &Asking<'_>,
    request: InputRequest,
) -> Result<(RequestKind, ForwardedRequest)> {
    match request {
        InputRequest::Elicitation(request) => Ok((
            RequestKind::Elicitation,
            ForwardedRequest::Elicitation(request.params),
        )),
        InputRequest::CreateMessage(request) => Ok((
            RequestKind::Sampling,
            ForwardedRequest::Sampling(request.params),
        )),
        InputRequest::ListRoots(_) => Ok((RequestKind::Roots, ForwardedRequest::Roots)),
        // rmcp reads only the three kinds the protocol allows; a fourth would be a new one.
        _ => Err(Error::CallFailed {
            server: asking.server.to_owned(),
            tool: asking.tool.to_owned(),
            message: "the server asked for a kind of input toolweave does not know".to_owned(),
        }),
    }
}
