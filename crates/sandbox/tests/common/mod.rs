//! What the engine tests share: a host that submits a job to a pool and answers its calls.

use std::sync::mpsc;
use std::time::Duration;

use toolweave_sandbox::{
    EngineEvent, EnginePool, ExecuteRequest, HostReply, HostRequest, Job, Outcome,
};

enum Message {
    Event(EngineEvent),
    Finished(Outcome),
}

/// Runs `request` on `pool`, answering every call with `answer`, and waits for the outcome.
pub fn run_on_pool(
    pool: &EnginePool,
    request: ExecuteRequest,
    answer: impl Fn(&HostRequest) -> Result<serde_json::Value, String>,
) -> Outcome {
    let (messages_tx, messages) = mpsc::channel();
    let events = messages_tx.clone();
    let execution = pool.submit(Job {
        request,
        emit: Box::new(move |event| {
            let _ = events.send(Message::Event(event));
        }),
        finished: Box::new(move |outcome| {
            let _ = messages_tx.send(Message::Finished(outcome));
        }),
    });
    loop {
        match messages.recv_timeout(Duration::from_secs(10)) {
            Ok(Message::Event(EngineEvent::Call(call))) => execution.reply(HostReply::Result {
                id: call.id,
                outcome: answer(&call.request),
            }),
            Ok(Message::Event(_)) => {}
            Ok(Message::Finished(outcome)) => return outcome,
            Err(error) => panic!("no outcome: {error}"),
        }
    }
}
