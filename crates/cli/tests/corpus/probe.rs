//! The probe: another client's trivial executions, one every [`PACE`], timed while a case runs.
//! Any stall of the gateway's protocol thread, its runtime or its executions shows as a probe
//! that took longer than the probe takes at rest.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;

/// How often the probe starts an execution: a stall longer than this meets at least one.
const PACE: Duration = Duration::from_millis(20);
/// How much longer than at rest another execution may take while a case runs.
pub const STALL_BOUND: Duration = Duration::from_millis(100);

/// One probe execution: `Ok` when it was answered as expected.
pub type ProbeCall = Arc<dyn Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync>;

/// A probe running beside a case.
pub struct Probe {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<Vec<Result<Duration, String>>>,
}

/// What the probe saw.
#[derive(Debug)]
pub struct Probed {
    /// Executions answered.
    pub answered: usize,
    /// The longest one.
    pub longest: Duration,
    /// Executions that were not answered as expected, and why.
    pub failures: Vec<String>,
}

impl Probe {
    /// Starts probing with `call`.
    pub fn start(call: ProbeCall) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let task = tokio::spawn(async move {
            let mut seen = Vec::new();
            // The first one always runs, so a case that ends at once is still probed.
            loop {
                let started = Instant::now();
                let outcome = call().await.map(|()| started.elapsed());
                seen.push(outcome);
                if stopped.load(Ordering::SeqCst) {
                    return seen;
                }
                tokio::time::sleep(PACE.saturating_sub(started.elapsed())).await;
                if stopped.load(Ordering::SeqCst) {
                    return seen;
                }
            }
        });
        Self { stop, task }
    }

    /// Stops probing and waits for the execution in flight.
    pub async fn finish(self) -> Probed {
        self.stop.store(true, Ordering::SeqCst);
        let seen = self.task.await.unwrap_or_default();
        let mut probed = Probed {
            answered: 0,
            longest: Duration::ZERO,
            failures: Vec::new(),
        };
        for outcome in seen {
            match outcome {
                Ok(took) => {
                    probed.answered += 1;
                    probed.longest = probed.longest.max(took);
                }
                Err(why) => probed.failures.push(why),
            }
        }
        probed
    }
}

/// How long a probe execution takes at rest: the median of eleven.
pub async fn at_rest(call: &ProbeCall) -> Duration {
    let mut times = Vec::new();
    for _ in 0..11 {
        let started = Instant::now();
        if let Err(why) = call().await {
            panic!("the probe fails at rest: {why}");
        }
        times.push(started.elapsed());
    }
    times.sort();
    times[times.len() / 2]
}

impl Probed {
    /// What is wrong with what the probe saw, given its time at rest: a failed probe, or one
    /// that waited past the bound.
    pub fn problems(&self, rest: Duration) -> Vec<String> {
        self.problems_within(rest, STALL_BOUND)
    }

    /// [`problems`](Self::problems), with `bound` in place of [`STALL_BOUND`].
    pub fn problems_within(&self, rest: Duration, bound: Duration) -> Vec<String> {
        let mut problems = self.failures();
        problems.extend(self.stall(rest, bound));
        problems
    }

    /// The probe executions that were not answered as expected.
    pub fn failures(&self) -> Vec<String> {
        self.failures
            .iter()
            .map(|why| format!("another client's execution failed meanwhile: {why}"))
            .collect()
    }

    /// The stall, when a probe execution took longer than `bound` past its time at rest.
    pub fn stall(&self, rest: Duration, bound: Duration) -> Option<String> {
        (self.longest > rest + bound).then(|| {
            format!(
                "another client's execution took {:?} meanwhile ({:?} at rest, {} probed): a stall over {bound:?}",
                self.longest, rest, self.answered
            )
        })
    }
}
