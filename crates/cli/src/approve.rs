//! `toolweave approve`: lists the calls waiting for approval in the gateways this user runs on
//! this machine, and answers one from the terminal; and the `serve` flags that say how approval
//! asks (`--approval`, `--approval-timeout-ms`, `--approval-port`,
//! `--approval-browser`).
//!
//! A gateway lists each waiting call in a file of its own, readable by its owner alone, under
//! `$XDG_RUNTIME_DIR/toolweave/approvals/`; the file names the call's approval page with its
//! one-time token, and the answer is a POST to that page, as the page's own form sends.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Result, bail};
use clap::Args;
use toolweave_server::page::{ApprovalMode, ApprovalOptions, DEFAULT_APPROVAL_TIMEOUT};

#[derive(Debug, Args)]
pub(crate) struct ApproveArgs {
    /// The waiting call to answer, by the id the list shows; without it, the waiting calls are
    /// listed.
    id: Option<String>,
    /// Approve the call.
    #[arg(long, requires = "id", conflicts_with = "deny")]
    yes: bool,
    /// Deny the call.
    #[arg(long, requires = "id")]
    deny: bool,
    /// What an approval covers: call, execution, session, matching (later calls with exactly
    /// these arguments) or matching:KEY (later calls with the same value of argument KEY), as
    /// the list offers.
    #[arg(long, value_name = "SCOPE", default_value = "call", requires = "yes")]
    scope: String,
    /// Print the list as JSON.
    #[arg(long)]
    json: bool,
}

/// `toolweave approve`.
pub(crate) async fn approve(args: ApproveArgs) -> Result<ExitCode> {
    let Some(dir) = toolweave_server::page::approvals_dir() else {
        bail!(
            "no folder to find waiting approvals in: set XDG_RUNTIME_DIR (or HOME), as the gateway has it"
        );
    };
    let calls = toolweave_server::page::pending_calls(&dir);
    let mut out = std::io::stdout().lock();
    let Some(id) = &args.id else {
        if args.json {
            writeln!(out, "{}", serde_json::to_string_pretty(&calls)?)?;
        } else if calls.is_empty() {
            writeln!(out, "No call waits for approval.")?;
        } else {
            for call in &calls {
                print_call(&mut out, call)?;
            }
        }
        return Ok(ExitCode::SUCCESS);
    };
    let Some(call) = calls.iter().find(|call| call.id == *id) else {
        bail!(
            "no call waits for approval with id {id}: run `toolweave approve` to list those that do"
        );
    };
    if !args.yes && !args.deny {
        print_call(&mut out, call)?;
        bail!("say --yes to approve it or --deny to deny it");
    }
    if args.yes && !call.scopes.iter().any(|(word, _)| *word == args.scope) {
        let offered: Vec<&str> = call.scopes.iter().map(|(word, _)| word.as_str()).collect();
        bail!(
            "--scope {}: this call offers {}",
            args.scope,
            offered.join(", ")
        );
    }
    toolweave_server::page::answer_pending(call, args.yes, &args.scope)
        .await
        .map_err(|error| anyhow::anyhow!("{id}: {error}"))?;
    writeln!(
        out,
        "{} {} ({id}).",
        if args.yes { "Approved" } else { "Denied" },
        call.tool
    )?;
    Ok(ExitCode::SUCCESS)
}

fn print_call(out: &mut impl Write, call: &toolweave_server::page::PendingCall) -> Result<()> {
    let arguments = serde_json::to_string_pretty(&call.arguments)
        .unwrap_or_else(|_| call.arguments.to_string());
    writeln!(out, "{}  {}  ({})", call.id, call.tool, call.reason)?;
    for line in arguments.lines() {
        writeln!(out, "    {line}")?;
    }
    if let Some(sha) = &call.code_sha256 {
        writeln!(out, "    code SHA-256 {sha}")?;
    }
    for (word, title) in &call.scopes {
        writeln!(out, "    --scope {word}: {title}")?;
    }
    writeln!(out, "    page: {}", call.url)?;
    Ok(())
}

/// How `serve` asks for approval.
#[derive(Debug, Args)]
pub(crate) struct ApprovalArgs {
    /// How a call in the ask tier asks the person: `elicitation` (the client's form), `page`
    /// (toolweave's one-time approval page on 127.0.0.1, and `toolweave approve`), or `auto`
    /// (the form when the client has it, else the page) [default: auto, or the settings
    /// file's "approval"].
    #[arg(long, value_enum, value_name = "MODE")]
    approval: Option<ApprovalModeArg>,
    /// How long a call waits for an answer at the approval page; then it fails, and the
    /// execution goes on [default: 120000, or the settings file's "approvalTimeoutMs"]. The
    /// execution's own --timeout-ms still bounds it.
    #[arg(long, value_name = "MS")]
    approval_timeout_ms: Option<u64>,
    /// Serve the approval page on this port of 127.0.0.1 [default: one free port, or the
    /// settings file's "approvalPort"].
    #[arg(long, value_name = "PORT")]
    approval_port: Option<u16>,
    /// Run this command with the approval page's address as its last argument (e.g.
    /// "xdg-open") [default: none, or the settings file's "approvalBrowser"].
    #[arg(long, value_name = "CMD")]
    approval_browser: Option<String>,
}

// `--approval`'s values (see `toolweave_server::page::ApprovalMode`).
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ApprovalModeArg {
    Auto,
    Page,
    Elicitation,
}

impl ApprovalArgs {
    /// The flags over the settings file's values.
    pub(crate) fn resolve(&self, settings: &toolweave_config::Settings) -> Result<ApprovalOptions> {
        let mode = match self.approval {
            Some(ApprovalModeArg::Auto) => ApprovalMode::Auto,
            Some(ApprovalModeArg::Page) => ApprovalMode::Page,
            Some(ApprovalModeArg::Elicitation) => ApprovalMode::Elicitation,
            None => match settings.approval.unwrap_or_default() {
                toolweave_config::ApprovalMode::Auto => ApprovalMode::Auto,
                toolweave_config::ApprovalMode::Page => ApprovalMode::Page,
                toolweave_config::ApprovalMode::Elicitation => ApprovalMode::Elicitation,
            },
        };
        let timeout = match self.approval_timeout_ms.or(settings.approval_timeout_ms) {
            Some(0) => bail!("--approval-timeout-ms (approvalTimeoutMs) must be greater than 0"),
            Some(ms) => Duration::from_millis(ms),
            None => DEFAULT_APPROVAL_TIMEOUT,
        };
        let browser_command = match self
            .approval_browser
            .as_ref()
            .or(settings.approval_browser.as_ref())
        {
            None => None,
            Some(line) => Some(
                shlex::split(line)
                    .filter(|words| !words.is_empty())
                    .ok_or_else(|| {
                        anyhow::anyhow!(
                            "--approval-browser {line:?}: not a command line (check its quotes)"
                        )
                    })?,
            ),
        };
        Ok(ApprovalOptions {
            mode,
            port: self.approval_port.or(settings.approval_port),
            timeout,
            browser_command,
            ..ApprovalOptions::default()
        })
    }
}
