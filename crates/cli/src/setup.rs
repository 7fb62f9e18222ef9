//! Where the servers come from: `--config`, or discovery in the files MCP clients write;
//! `toolweave config` (what was found), `toolweave init` (register toolweave in a client) and
//! `toolweave trust` (start the servers a project's own files name, and accept the tool
//! definitions held since they changed: `pins.rs`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::machine::Machine;
use crate::prompt::confirm;
use anyhow::{Context, Result, bail};
use clap::Args;
use toolweave_config::{
    Client, Discovery, EntryChange, FoundServer, Install, Places, SourceState, Status, Trusted,
};

#[derive(Debug, Args)]
pub(crate) struct ConfigArgs {
    /// Show this MCP config file instead (as `--config` on the other commands: discovery is
    /// then off).
    #[arg(long, short = 'c', value_name = "FILE", env = "TOOLWEAVE_CONFIG")]
    config: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// toolweave's settings file, whose rules are checked against the tools last pinned; by
    /// default ~/.config/toolweave/settings.json when it exists.
    #[arg(long, value_name = "FILE", env = "TOOLWEAVE_SETTINGS")]
    settings: Option<PathBuf>,
}

/// `toolweave config`: every server, where it came from, what overrode what, what was skipped,
/// and the rules that match none of the tools last pinned.
pub(crate) fn config(args: ConfigArgs) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    let config = if let Some(path) = &args.config {
        config_file(&mut out, path, args.json)?
    } else {
        let discovery = Machine::here()?.discover();
        if args.json {
            discovery_json(&mut out, &discovery)?;
        } else {
            discovery_text(&mut out, &discovery)?;
        }
        discovery.config
    };
    let unmatched = unmatched_pinned(args.settings.as_deref(), &config)?;
    if args.json {
        for line in &unmatched {
            eprintln!("toolweave: {line}");
        }
    } else if !unmatched.is_empty() {
        writeln!(
            out,
            "\nRules that match none of the tools last pinned (`toolweave doctor` checks them against the servers as they are now):"
        )?;
        for line in &unmatched {
            writeln!(out, "  {line}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Each rule of the settings file (and its identities) that matches none of the tools pinned
/// for the servers of `config`; a server with no pins yet is not checked.
fn unmatched_pinned(
    settings: Option<&Path>,
    config: &toolweave_config::Config,
) -> Result<Vec<String>> {
    let settings = crate::rules::settings_file(settings)?;
    let policy = crate::rules::policy_of(&settings)?;
    let identities = crate::rules::identity_rules(&settings)?;
    let Some(folder) = crate::machine::pins_folder().map(toolweave_config::PinsFolder::new) else {
        return Ok(Vec::new());
    };
    if policy.names_no_tool() && identities.is_empty() {
        return Ok(Vec::new());
    }
    let servers: Vec<String> = config
        .servers
        .iter()
        .map(|server| server.name.clone())
        .collect();
    let mut tools = Vec::new();
    for server in &servers {
        let pins = match folder.load(server) {
            Ok(pins) => pins,
            Err(error) => {
                // The rest is still worth showing; `doctor` and a gateway report the file too.
                eprintln!("toolweave: server \"{server}\"'s rules are not checked: {error}");
                continue;
            }
        };
        if pins.pinned().next().is_none() {
            continue;
        }
        let listed = pins
            .pinned()
            .filter_map(|tool| pins.pin(tool)?.definition().ok())
            .filter_map(|definition| serde_json::from_value(definition).ok())
            .filter_map(|tool| toolweave_upstream::definition(server, tool).ok())
            .collect();
        tools.push((server.clone(), listed));
    }
    Ok(toolweave_core::unmatched_rules_among(
        &servers,
        tools,
        &policy,
        &identities,
    ))
}

/// `toolweave config --config FILE`: the servers of that file alone.
fn config_file(out: &mut impl Write, path: &Path, json: bool) -> Result<toolweave_config::Config> {
    let config = toolweave_config::load_file(path)?;
    let servers: Vec<_> = config
        .servers
        .iter()
        .map(|server| {
            serde_json::json!({
                "name": server.name,
                "transport": server.transport.kind(),
                "path": server.source,
            })
        })
        .collect();
    if json {
        let report = serde_json::json!({
            "mode": "file",
            "file": path,
            "servers": servers,
            "disabled": config.disabled,
            "notes": config.notes,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        writeln!(
            out,
            "--config {} is given: only it is read (discovery is off)",
            path.display()
        )?;
        for server in &config.servers {
            writeln!(
                out,
                "  {:<20} used ({}{}{})",
                server.name,
                server.transport.kind(),
                crate::login::kept_login(server),
                tool_timeout_note(server)
            )?;
            for note in config
                .notes
                .iter()
                .filter(|note| note.server == server.name)
            {
                writeln!(out, "  {:<20}   note: {}", "", note.text)?;
            }
        }
        for name in &config.disabled {
            writeln!(out, "  {name:<20} disabled")?;
        }
    }
    Ok(config)
}

/// `toolweave config --json` with discovery: the servers, the sources read, every entry found.
fn discovery_json(out: &mut impl Write, discovery: &Discovery) -> Result<()> {
    let servers: Vec<_> = discovery
        .config
        .servers
        .iter()
        .map(|server| {
            let from = discovery
                .entries
                .iter()
                .find(|entry| {
                    entry.name == server.name && matches!(entry.status, Status::Used { .. })
                })
                .map(|entry| entry.source);
            serde_json::json!({
                "name": server.name,
                "transport": server.transport.kind(),
                "path": server.source,
                "from": from,
            })
        })
        .collect();
    let report = serde_json::json!({
        "mode": "discovery",
        "servers": servers,
        "sources": discovery.sources,
        "entries": discovery.entries,
        "problems": discovery.problems(),
    });
    writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    Ok(())
}

/// `toolweave config` with discovery: each source in precedence order with its entries, then
/// the servers used.
fn discovery_text(out: &mut impl Write, discovery: &Discovery) -> Result<()> {
    writeln!(
        out,
        "No --config given: toolweave reads these files, highest precedence first (a name found twice is taken from the higher one):"
    )?;
    for (index, source) in discovery.sources.iter().enumerate() {
        let state = match &source.state {
            SourceState::Missing => "not found".to_owned(),
            SourceState::NoServers => format!("no {}", source.key),
            SourceState::Read { .. } => source.key.clone(),
            SourceState::Unreadable { error } => format!("SKIPPED: {error}"),
        };
        writeln!(
            out,
            "{}. {}: {} ({state})",
            index + 1,
            source.kind.describe(),
            source.path.display()
        )?;
        for entry in discovery
            .entries
            .iter()
            .filter(|entry| entry.source == source.kind)
        {
            let what = entry_status(entry, discovery);
            writeln!(out, "   {:<20} {what}", entry.name)?;
            for note in &entry.notes {
                writeln!(out, "   {:<20}   note: {note}", "")?;
            }
        }
    }
    let names = discovery.config.names();
    if names.is_empty() {
        writeln!(
            out,
            "No servers found: add some to one of these files, or pass --config FILE."
        )?;
    } else {
        writeln!(
            out,
            "{} server{}: {}",
            names.len(),
            if names.len() == 1 { "" } else { "s" },
            names.join(", ")
        )?;
    }
    Ok(())
}

/// What became of one entry discovery found, as `toolweave config` says it.
fn entry_status(entry: &FoundServer, discovery: &Discovery) -> String {
    match &entry.status {
        Status::Used { fronted } => {
            let server = discovery
                .config
                .servers
                .iter()
                .find(|server| server.name == entry.name);
            let kind = match server {
                Some(server) => format!(
                    "{}{}",
                    server.transport.kind(),
                    crate::login::kept_login(server)
                ),
                None => "?".to_owned(),
            };
            let timeout = server.map(tool_timeout_note).unwrap_or_default();
            if *fronted {
                format!("used ({kind}{timeout}; disabled for the client: toolweave fronts it)")
            } else {
                format!("used ({kind}{timeout})")
            }
        }
        Status::Overridden { by } => format!("overridden by {}", by.describe()),
        Status::Disabled => "skipped: disabled".to_owned(),
        Status::SwitchedOff => {
            "skipped: Claude Code does not run it here (disabledMcpjsonServers in its settings)"
                .to_owned()
        }
        Status::SelfReference => "skipped: this is toolweave itself".to_owned(),
        Status::NotTrusted { changed, runs, .. } => format!(
            "skipped: {}; `toolweave trust` starts it ({runs})",
            if *changed {
                "changed since you trusted it"
            } else {
                "not trusted yet: this project's file names it"
            }
        ),
        Status::Unsupported { reason } => format!("skipped, unsupported: {reason}"),
        Status::Invalid { reason } => format!("skipped, invalid: {reason}"),
    }
}

/// `, tool calls time out after 120000 ms` for a server whose entry sets `timeout`.
fn tool_timeout_note(server: &toolweave_config::ServerConfig) -> String {
    server
        .tool_timeout
        .map(|limit| format!(", tool calls time out after {} ms", limit.as_millis()))
        .unwrap_or_default()
}

/// A client `init` can write to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ClientArg {
    /// ~/.claude.json (every project)
    ClaudeCode,
    /// ~/.cursor/mcp.json (every project)
    Cursor,
    /// .vscode/mcp.json in this directory
    Vscode,
    /// Claude Desktop's claude_desktop_config.json
    ClaudeDesktop,
    /// .mcp.json in this directory
    Project,
}

impl From<ClientArg> for Client {
    fn from(client: ClientArg) -> Self {
        match client {
            ClientArg::ClaudeCode => Client::ClaudeCode,
            ClientArg::Cursor => Client::Cursor,
            ClientArg::Vscode => Client::VsCode,
            ClientArg::ClaudeDesktop => Client::ClaudeDesktop,
            ClientArg::Project => Client::Project,
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct InitArgs {
    /// The client whose config file gets toolweave's entry. Default: the first of claude-code,
    /// cursor, vscode, claude-desktop, project whose file exists.
    #[arg(long, value_enum, value_name = "CLIENT")]
    client: Option<ClientArg>,
    /// Write without asking.
    #[arg(long, short = 'y')]
    yes: bool,
    /// Have the client start `toolweave serve --config FILE` instead of discovering servers.
    #[arg(long, short = 'c', value_name = "FILE")]
    config: Option<PathBuf>,
    /// Mark the servers toolweave now fronts "disabled": true in the client's file, so the client
    /// stops starting them itself (toolweave still uses them).
    #[arg(long)]
    disable_fronted: bool,
    #[command(flatten)]
    boxes: BoxArgs,
}

/// Boxes for the stdio servers toolweave fronts, offered by `init` and `trust`.
#[derive(Debug, Args)]
pub(crate) struct BoxArgs {
    /// Box the unboxed stdio servers as shown, in toolweave's settings file ("sandbox" and
    /// "boxes"), without asking. Without it you are asked; with --yes they are only shown.
    #[arg(long = "box")]
    write: bool,
    /// toolweave's settings file to write the boxes to; by default
    /// ~/.config/toolweave/settings.json.
    #[arg(long, value_name = "FILE", env = "TOOLWEAVE_SETTINGS")]
    settings: Option<PathBuf>,
}

impl BoxArgs {
    /// Offers boxes to the stdio servers of `config` that the settings file does not box yet.
    fn offer(
        &self,
        out: &mut impl Write,
        config: &toolweave_config::Config,
        yes: bool,
    ) -> Result<()> {
        let settings = crate::rules::settings_file(self.settings.as_deref())?;
        let mut config = config.clone();
        config.give_boxes(&settings.boxes);
        let servers: Vec<&toolweave_config::ServerConfig> = config
            .servers
            .iter()
            .filter(|server| !settings.boxes.by_server.contains_key(&server.name))
            .collect();
        let offer = match (self.write, yes) {
            (true, _) => crate::box_offer::Offer::Write,
            (false, true) => crate::box_offer::Offer::Show,
            (false, false) => crate::box_offer::Offer::Ask,
        };
        crate::box_offer::offer(out, &servers, self.settings.as_deref(), offer)
    }
}

/// `toolweave init`: show what was found, then (confirmed) register toolweave in a client.
pub(crate) fn init(args: InitArgs) -> Result<ExitCode> {
    let machine = Machine::here()?;
    let places = machine.places();
    let client = chosen_client(&args, &places)?;
    let program = machine
        .program
        .as_deref()
        .context("cannot find the path of this program to write into the client's config")?;
    let program = program.canonicalize().unwrap_or(program.to_path_buf());
    let config = match &args.config {
        Some(path) => Some(
            path.canonicalize()
                .with_context(|| format!("--config {}: cannot find it", path.display()))?,
        ),
        None => None,
    };
    // A file the client could not start toolweave with is better found now.
    let given = match &config {
        Some(path) => Some(toolweave_config::load_file(path)?),
        None => None,
    };
    let config_servers: Vec<String> = given
        .iter()
        .flat_map(|given| given.servers.iter().map(|server| server.name.clone()))
        .collect();
    let discovery = machine.discover();
    let fronted = given.as_ref().unwrap_or(&discovery.config);
    let plan = toolweave_config::plan(
        &Install {
            client,
            places,
            program: &program,
            config: config.as_deref(),
            config_servers: &config_servers,
            disable_fronted: args.disable_fronted,
        },
        &discovery,
    )?;

    let mut out = std::io::stdout().lock();
    describe_found(&mut out, &discovery, client, config.as_deref())?;
    if !plan.changes_anything() {
        let disabled = if args.disable_fronted && !plan.fronted.is_empty() {
            " and the servers it fronts are disabled there"
        } else {
            ""
        };
        let (path, entry) = (plan.path.display(), &plan.entry_name);
        writeln!(
            out,
            "{path} already has toolweave's entry \"{entry}\"{disabled}: nothing to change."
        )?;
        args.boxes.offer(&mut out, fronted, args.yes)?;
        return Ok(ExitCode::SUCCESS);
    }
    describe_plan(&mut out, &plan, &program, config.as_deref())?;
    out.flush()?;

    if !args.yes
        && !confirm(
            &mut out,
            "Write it?",
            &format!("write {}", plan.path.display()),
        )?
    {
        writeln!(out, "Nothing written.")?;
        return Ok(ExitCode::FAILURE);
    }
    let backup = toolweave_config::apply(&plan, std::time::SystemTime::now())?;
    writeln!(out, "Wrote {}.", plan.path.display())?;
    if let Some(backup) = backup {
        writeln!(out, "The original is saved as {}.", backup.display())?;
    }
    if !args.disable_fronted && !plan.fronted.is_empty() {
        writeln!(
            out,
            "{} still starts {} itself as well; run again with --disable-fronted to leave them to toolweave.",
            client.name(),
            plan.fronted.join(", ")
        )?;
    }
    writeln!(out, "Restart the client to pick it up.")?;
    args.boxes.offer(&mut out, fronted, args.yes)?;
    Ok(ExitCode::SUCCESS)
}

/// The client `--client` names, or else the first whose config file exists.
fn chosen_client(args: &InitArgs, places: &Places<'_>) -> Result<Client> {
    Ok(match args.client {
        Some(client) => client.into(),
        None => Client::ALL
            .into_iter()
            .find(|client| client.path(places).is_some_and(|path| path.exists()))
            .with_context(|| {
                "no MCP client config found (~/.claude.json, ~/.cursor/mcp.json, .vscode/mcp.json, Claude Desktop's, .mcp.json); pass --client to say which file to create"
            })?,
    })
}

/// What `init` found: the MCP config files, and the servers toolweave will front.
fn describe_found(
    out: &mut impl Write,
    discovery: &Discovery,
    client: Client,
    config: Option<&Path>,
) -> Result<()> {
    writeln!(out, "MCP config files, highest precedence first:")?;
    write!(out, "{}", discovery.places_text())?;
    let names = discovery.config.names();
    match config {
        Some(path) => writeln!(
            out,
            "{} will start `toolweave serve --config {}`.",
            client.name(),
            path.display()
        )?,
        None if names.is_empty() => writeln!(
            out,
            "No servers found yet: toolweave will serve the ones you add to these files."
        )?,
        None => writeln!(
            out,
            "toolweave will front {} server{}: {}",
            names.len(),
            if names.len() == 1 { "" } else { "s" },
            names.join(", ")
        )?,
    }
    for problem in discovery.problems() {
        writeln!(out, "  note: {problem}")?;
    }
    Ok(())
}

/// What `init` is about to write, and to which file.
fn describe_plan(
    out: &mut impl Write,
    plan: &toolweave_config::Plan,
    program: &Path,
    config: Option<&Path>,
) -> Result<()> {
    let action = match plan.entry {
        EntryChange::Added => "add",
        EntryChange::Updated | EntryChange::Unchanged => "update",
    };
    writeln!(
        out,
        "\nTo write: {} ({})",
        plan.path.display(),
        plan.client.name()
    )?;
    writeln!(
        out,
        "  {action} \"{}\": {} {}",
        plan.entry_name,
        program.display(),
        match config {
            Some(path) => format!("serve --config {}", path.display()),
            None => "serve".to_owned(),
        }
    )?;
    if !plan.newly_disabled.is_empty() {
        writeln!(
            out,
            "  mark \"disabled\": true (toolweave fronts them): {}",
            plan.newly_disabled.join(", ")
        )?;
    }
    if plan.client == Client::ClaudeCode {
        writeln!(
            out,
            "  (Claude Code keeps its state in this file and may write it again while it runs: quit it first)"
        )?;
    }
    if plan.original.is_some() {
        writeln!(
            out,
            "  first copy the file to {}.toolweave-backup-<time>",
            plan.path.display()
        )?;
    } else {
        writeln!(out, "  (the file does not exist yet: it is created)")?;
    }
    Ok(())
}

#[derive(Debug, Args)]
pub(crate) struct TrustArgs {
    /// Review only the held tools of these servers (`server`) or these tools (`server.tool`).
    #[arg(value_name = "NAME", conflicts_with = "forget")]
    names: Vec<String>,
    /// Trust and accept without asking.
    #[arg(long, short = 'y')]
    yes: bool,
    /// Take back what is trusted in this folder: its project servers no longer start.
    #[arg(long, conflicts_with = "yes")]
    forget: bool,
    #[command(flatten)]
    boxes: BoxArgs,
}

/// `toolweave trust`: show the servers this folder's own files name that are not trusted yet,
/// and (confirmed) trust them as they are now; then show the tools held because their
/// definitions changed since toolweave pinned them, and (confirmed) accept the new definitions.
/// With names, only those held tools.
pub(crate) fn trust(args: TrustArgs) -> Result<ExitCode> {
    let machine = Machine::here()?;
    let mut out = std::io::stdout().lock();
    let mut declined = false;
    if args.forget || args.names.is_empty() {
        let trusted = trust_entries(&machine, &args, &mut out)?;
        if args.forget {
            return Ok(ExitCode::SUCCESS);
        }
        declined |= !trusted;
    }
    match &machine.pins_folder {
        Some(path)
            if !args.names.is_empty()
                || toolweave_config::PinsFolder::new(path.clone()).exists() =>
        {
            writeln!(out)?;
            declined |= !crate::pins::review(path, &args.names, args.yes, &mut out)?;
        }
        Some(_) => {}
        None if !args.names.is_empty() => bail!(
            "cannot tell where toolweave keeps tool pins: neither HOME nor XDG_CONFIG_HOME is set"
        ),
        None => {}
    }
    Ok(if declined {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The project entries part of `toolweave trust` (and `--forget`); `Ok(false)` when the person
/// declined.
fn trust_entries(machine: &Machine, args: &TrustArgs, out: &mut impl Write) -> Result<bool> {
    let path = machine.trust_file.clone().context(
        "cannot tell where to keep trusted servers: neither HOME nor XDG_CONFIG_HOME is set",
    )?;
    let mut trusted = Trusted::load(&path)?;
    let folder = machine.cwd.display();
    if args.forget {
        let before = trusted.clone();
        trusted.set_folder(&machine.cwd, std::collections::BTreeMap::new());
        if trusted == before {
            writeln!(out, "Nothing is trusted in {folder}: nothing to forget.")?;
        } else {
            trusted.save(&path)?;
            writeln!(
                out,
                "Forgot the servers trusted in {folder}: toolweave no longer starts them."
            )?;
        }
        return Ok(true);
    }

    let discovery = machine.discover();
    let waiting = discovery.untrusted();
    if waiting.is_empty() {
        writeln!(
            out,
            "Nothing to trust in {folder}: every server its .mcp.json, .cursor/mcp.json and .vscode/mcp.json name is trusted already, or there is none."
        )?;
        return Ok(true);
    }
    writeln!(
        out,
        "{folder} names these servers in its own files. A repository can name any command there, so toolweave starts them only once you trust them:"
    )?;
    for entry in &waiting {
        let Status::NotTrusted { changed, runs, .. } = &entry.status else {
            continue;
        };
        writeln!(
            out,
            "  {:<20} {}{}\n  {:<20} runs: {runs}",
            entry.name,
            entry.path.display(),
            if *changed {
                " (changed since you trusted it)"
            } else {
                ""
            },
            ""
        )?;
    }
    writeln!(
        out,
        "Read those files first if you did not write them. Once trusted, each starts whenever toolweave runs in this folder, until its entry changes."
    )?;
    out.flush()?;
    if !args.yes && !confirm(out, "Trust them?", "trust them")? {
        writeln!(out, "Nothing trusted.")?;
        return Ok(false);
    }
    trusted.accept_waiting(&machine.cwd, &discovery);
    trusted.save(&path)?;
    writeln!(
        out,
        "Trusted (kept in {}; `toolweave trust --forget` in this folder takes it back). A toolweave already running here starts them once restarted.",
        path.display()
    )?;
    // The servers just trusted, as toolweave now reads them.
    let names: Vec<&str> = waiting.iter().map(|entry| entry.name.as_str()).collect();
    let mut now = machine.discover().config;
    now.servers
        .retain(|server| names.contains(&server.name.as_str()));
    args.boxes.offer(out, &now, args.yes)?;
    Ok(true)
}
