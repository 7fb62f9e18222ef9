//! The test modules (see `tests/all.rs`), and the logs they share.

mod faults;
mod manager;
mod oauth;
mod remote;

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// The logs of every test of this binary, at trace level, as text.
///
/// The subscriber is the process's global one, so every test logs into it: a test that checks
/// what the logs hold (no secret in them, a warning that names a server) finds the other tests'
/// lines too, and looks for its own by the names only it uses. A subscriber for one thread is not
/// enough: tracing remembers, for every place that logs, whether anyone listens, and a place first
/// reached on another test's thread would stay silent there. Every test calls this before it
/// starts anything, so that nothing is logged before the subscriber is in place.
pub(crate) fn logs() -> &'static Captured {
    static LOGS: OnceLock<Captured> = OnceLock::new();
    LOGS.get_or_init(|| {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_env_filter("trace")
            .with_ansi(false)
            .finish();
        if let Err(error) = tracing::subscriber::set_global_default(subscriber) {
            panic!("only this function sets the subscriber: {error}");
        }
        captured
    })
}

/// A `Write` into a shared buffer, for capturing logs.
#[derive(Clone, Default)]
pub(crate) struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// Everything logged so far.
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(PoisonError::into_inner)).into_owned()
    }

    /// The lines logged so far that contain every one of `parts`.
    pub(crate) fn lines_with(&self, parts: &[&str]) -> Vec<String> {
        self.text()
            .lines()
            .filter(|line| parts.iter().all(|part| line.contains(part)))
            .map(str::to_owned)
            .collect()
    }
}

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
