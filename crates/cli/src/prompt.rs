//! Asking the person at the terminal before changing their files.

use std::io::{BufRead, IsTerminal, Write};

use anyhow::{Result, bail};

/// Asks `question` on the terminal and reads a y/N answer; without a terminal, an error saying
/// to pass `--yes` to `action`.
pub(crate) fn confirm(out: &mut impl Write, question: &str, action: &str) -> Result<bool> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        bail!("standard input is not a terminal, so toolweave cannot ask: pass --yes to {action}");
    }
    write!(out, "{question} [y/N] ")?;
    out.flush()?;
    let mut answer = String::new();
    stdin.lock().read_line(&mut answer)?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}
