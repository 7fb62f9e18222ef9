//! Where the servers come from: this machine's home and project folders, the config files MCP
//! clients write there, and the config toolweave serves (`--config`, or what discovery finds).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use toolweave_config::{Config, Discovery, Places, Status};

/// The home directory, the current directory and this program: read here, at the top, and passed
/// down (discovery never reads the environment itself).
pub(crate) struct Machine {
    home: Option<PathBuf>,
    pub(crate) cwd: PathBuf,
    pub(crate) program: Option<PathBuf>,
    /// Where the project entries the user trusts are kept.
    pub(crate) trust_file: Option<PathBuf>,
    /// Where the tool definitions the user accepted are kept.
    pub(crate) pins_folder: Option<PathBuf>,
}

/// Where the tool definitions the user accepted are kept (the folder `pins` beside
/// `trusted.json`).
pub(crate) fn pins_folder() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")
        .filter(|home| !home.is_empty())
        .map(PathBuf::from);
    let xdg_config_home = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from);
    toolweave_config::default_pins_folder(xdg_config_home.as_deref(), home.as_deref())
}

/// Where the result types observed of tools without an output schema are kept (the folder
/// `observed` beside the pins).
pub(crate) fn observed_folder() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")
        .filter(|home| !home.is_empty())
        .map(PathBuf::from);
    let xdg_config_home = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from);
    toolweave_config::default_observed_folder(xdg_config_home.as_deref(), home.as_deref())
}

impl Machine {
    /// This machine as the environment describes it.
    pub(crate) fn here() -> Result<Self> {
        let home = std::env::var_os("HOME")
            .filter(|home| !home.is_empty())
            .map(PathBuf::from);
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let program = std::env::current_exe().ok();
        let xdg_config_home = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from);
        let trust_file =
            toolweave_config::default_trust_path(xdg_config_home.as_deref(), home.as_deref());
        Ok(Self {
            home,
            cwd,
            program,
            trust_file,
            pins_folder: pins_folder(),
        })
    }

    /// Where discovery looks.
    pub(crate) fn places(&self) -> Places<'_> {
        Places {
            home: self.home.as_deref(),
            cwd: &self.cwd,
            this_program: self.program.as_deref(),
            trust_file: self.trust_file.as_deref(),
        }
    }

    /// What discovery finds here.
    pub(crate) fn discover(&self) -> Discovery {
        toolweave_config::discover(&self.places(), &|name| std::env::var(name).ok())
    }
}

/// The servers to front: the `--config` file alone when given, else what discovery finds.
/// Skipped entries and ignored keys are logged (stderr); finding nothing usable is an error that
/// lists where toolweave looked.
pub(crate) fn load_config(path: Option<&Path>) -> Result<Config> {
    if let Some(path) = path {
        let config = toolweave_config::load_file(path)?;
        warn_ignored(&config);
        return Ok(config);
    }
    let discovery = Machine::here()?.discover();
    for problem in discovery.problems() {
        tracing::warn!("{problem}");
    }
    warn_ignored(&discovery.config);
    if discovery.config.servers.is_empty() {
        bail!("{}", nothing_found(&discovery));
    }
    for server in &discovery.config.servers {
        tracing::debug!(server = %server.name, source = %server.source.display(), "discovered");
    }
    Ok(discovery.config)
}

/// One warning per key toolweave ignores in the entries of the servers it uses.
fn warn_ignored(config: &Config) {
    for note in &config.notes {
        tracing::warn!("{note}");
    }
}

fn nothing_found(discovery: &Discovery) -> String {
    let skipped = discovery
        .entries
        .iter()
        .filter(|entry| !matches!(entry.status, Status::Used { .. }))
        .count();
    let untrusted = discovery.untrusted().len();
    format!(
        "no MCP servers found{}. Without --config, toolweave looks in these files, highest precedence first:\n{}{}Add servers to one of them, or pass --config FILE (`toolweave config` shows what was found).",
        match skipped {
            0 => String::new(),
            1 => " (1 entry was skipped)".to_owned(),
            _ => format!(" ({skipped} entries were skipped)"),
        },
        discovery.places_text(),
        if untrusted == 0 {
            String::new()
        } else {
            let (which, verb, pronoun) = match (untrusted, untrusted == skipped) {
                (1, true) => ("That entry".to_owned(), "is", "it runs"),
                (_, true) => ("They".to_owned(), "are", "they run"),
                (1, false) => ("1 of them".to_owned(), "is", "it runs"),
                (_, false) => (format!("{untrusted} of them"), "are", "they run"),
            };
            format!(
                "{which} {verb} in this project's own files and {} to be trusted: `toolweave trust` shows what {pronoun} and asks.\n",
                if verb == "is" { "waits" } else { "wait" }
            )
        }
    )
}
