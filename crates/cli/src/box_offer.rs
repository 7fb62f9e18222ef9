//! `init --box` and `trust --box`: boxes for the stdio servers toolweave fronts, shown, then
//! written to toolweave's settings file (never to the clients' files, which are theirs).
//!
//! Each server gets a box from its entry: the folders and files its arguments name are granted
//! (the server was given them to work on); a server whose entry looks like it uses the network
//! (a credential variable, a URL among its arguments) is left unboxed with the key to write,
//! since which hosts it needs cannot be read from its entry. `"sandbox": true` boxes every other
//! server, including ones added later.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::{Map, Value, json};
use toolweave_config::{Expanded, ServerConfig, Transport};

/// What `--box` and the person decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Offer {
    /// Show the boxes and ask.
    Ask,
    /// Write them without asking (`--box`).
    Write,
    /// Show them with the flag that writes them (`--yes` without `--box`).
    Show,
}

/// The box one server would get.
enum Proposal {
    /// Its `"boxes"` entry (`Value::Bool(true)` for the defaults).
    Boxed(Value),
    /// Left unboxed, and why.
    Unboxed(String),
}

/// Offers boxes to `servers` that have none, and writes them when told to. Declining is no
/// failure: the command it follows has done its job.
pub(crate) fn offer(
    out: &mut impl Write,
    servers: &[&ServerConfig],
    settings: Option<&Path>,
    offer: Offer,
) -> Result<()> {
    let unboxed: Vec<(&str, Proposal)> = servers
        .iter()
        .filter_map(|server| match &server.transport {
            Transport::Stdio {
                sandbox: None,
                sandbox_written: false,
                args,
                env,
                ..
            } => Some((server.name.as_str(), propose(args, env))),
            _ => None,
        })
        .collect();
    if unboxed.is_empty() {
        return Ok(());
    }
    let settings = settings
        .map(Path::to_path_buf)
        .or_else(crate::rules::default_settings_path)
        .context("cannot tell where toolweave's settings file is: neither HOME nor XDG_CONFIG_HOME is set")?;
    writeln!(
        out,
        "\nThese stdio servers run unboxed, with everything you may (your files, the network, your environment's variables). In a box, a server sees only what it needs to start and what its box grants: no other file of your home folder, no network, none of your variables."
    )?;
    let width = unboxed
        .iter()
        .map(|(name, _)| name.len())
        .max()
        .unwrap_or(0);
    for (name, proposal) in &unboxed {
        let shown = match proposal {
            Proposal::Boxed(Value::Bool(true)) => "box: the defaults".to_owned(),
            Proposal::Boxed(value) => format!("box: {value}"),
            Proposal::Unboxed(why) => format!("unboxed: {why}"),
        };
        writeln!(out, "  {name:<width$}  {shown}")?;
    }
    let mut file = read_settings_value(&settings)?;
    let changed = add_boxes(&mut file, &unboxed)?;
    writeln!(
        out,
        "To write into {}: {}",
        settings.display(),
        serde_json::to_string(&changed)?
    )?;
    out.flush()?;
    let write = match offer {
        Offer::Write => true,
        Offer::Show => {
            writeln!(out, "Run again with --box to write them.")?;
            return Ok(());
        }
        Offer::Ask => crate::prompt::confirm(out, "Box them?", "box them (or --box)")?,
    };
    if !write {
        writeln!(out, "No box written.")?;
        return Ok(());
    }
    if let Some(folder) = settings.parent() {
        std::fs::create_dir_all(folder)
            .with_context(|| format!("cannot create {}", folder.display()))?;
    }
    let mut text = serde_json::to_string_pretty(&file)?;
    text.push('\n');
    toolweave_config::replace_file(&settings, text.as_bytes(), None, 0o600)
        .with_context(|| format!("cannot write {}", settings.display()))?;
    writeln!(
        out,
        "Wrote {}. A server that reaches past its box gets an error naming the key to change there; `toolweave doctor` shows what each may do.",
        settings.display()
    )?;
    Ok(())
}

/// The box a server's entry suggests.
fn propose(args: &[Expanded], env: &std::collections::BTreeMap<String, Expanded>) -> Proposal {
    let credential = env.keys().find(|name| {
        let upper = name.to_ascii_uppercase();
        ["TOKEN", "KEY", "SECRET", "PASSWORD", "URL", "HOST"]
            .iter()
            .any(|word| upper.contains(word))
    });
    let url = args
        .iter()
        .map(Expanded::value)
        .find(|arg| arg.contains("://"));
    if let Some(sign) = credential.map(String::as_str).or(url) {
        return Proposal::Unboxed(format!(
            "it seems to use the network ({sign}); list the hosts it needs, \"host:port\", under its \"network\" in \"boxes\" to box it"
        ));
    }
    let paths: Vec<String> = args
        .iter()
        .map(Expanded::value)
        .filter_map(|arg| {
            // `--db-path=notes.db` names its path after the `=`.
            let path = arg.rsplit_once('=').map_or(arg, |(_, path)| path);
            let path = PathBuf::from(path);
            (path.is_absolute() && path.exists() && !is_program(&path))
                .then(|| path.display().to_string())
        })
        .collect();
    if paths.is_empty() {
        Proposal::Boxed(Value::Bool(true))
    } else {
        Proposal::Boxed(json!({ "write": paths }))
    }
}

/// A script the command runs: its box grants its install already.
fn is_program(path: &Path) -> bool {
    path.is_file()
        && path
            .extension()
            .and_then(|extension| extension.to_str())
            .is_some_and(|extension| ["js", "mjs", "cjs", "ts", "py", "jar"].contains(&extension))
}

/// The settings file's JSON, or an empty object when there is none yet.
fn read_settings_value(path: &Path) -> Result<Value> {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            // Read as toolweave reads it, so a file it would refuse is not written over.
            toolweave_config::load_settings(path)?;
            Ok(serde_json::from_str(&text)?)
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(json!({})),
        Err(error) => Err(error).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Adds `"sandbox": true` (when the file has no `"sandbox"`) and each server's `"boxes"` entry
/// to `file`; returns what was added.
fn add_boxes(file: &mut Value, servers: &[(&str, Proposal)]) -> Result<Value> {
    let top = file
        .as_object_mut()
        .context("the settings file is not a JSON object")?;
    let mut added = Map::new();
    let every = !top.contains_key("sandbox");
    if every {
        top.insert("sandbox".to_owned(), Value::Bool(true));
        added.insert("sandbox".to_owned(), Value::Bool(true));
    }
    let boxes = top
        .entry("boxes")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .context("\"boxes\" in the settings file is not an object")?;
    let mut added_boxes = Map::new();
    for (name, proposal) in servers {
        let value = match proposal {
            // With "sandbox": true, a server with the defaults needs no entry of its own.
            Proposal::Boxed(Value::Bool(true)) if every => continue,
            Proposal::Boxed(value) => value.clone(),
            Proposal::Unboxed(_) => Value::Bool(false),
        };
        boxes.insert((*name).to_owned(), value.clone());
        added_boxes.insert((*name).to_owned(), value);
    }
    if boxes.is_empty() {
        top.remove("boxes");
    }
    if !added_boxes.is_empty() {
        added.insert("boxes".to_owned(), Value::Object(added_boxes));
    }
    Ok(Value::Object(added))
}
