//! Reading the files toolweave keeps (the trust and pins files), and writing the files it keeps
//! or edits (those, and a client's config) whole or not at all.

use std::io::Write;
use std::path::Path;

/// Reads a JSON file toolweave keeps: its default when there is no file, else what it holds;
/// a file that does not parse is an error saying `fix` (what the user can do about it).
pub(crate) fn read_kept<T: serde::de::DeserializeOwned + Default>(
    path: &Path,
    fix: &str,
) -> crate::Result<T> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(T::default()),
        Err(source) => {
            return Err(crate::Error::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    serde_json::from_str(&text).map_err(|error| crate::Error::Syntax {
        path: path.to_path_buf(),
        message: format!("{error}; {fix}"),
    })
}

/// Puts `text` at `path` whole or not at all: it is written to a temporary file beside `path`
/// (created with `new_mode`, less the umask, then given `permissions` when there are some),
/// flushed to disk, and renamed over `path`.
pub fn replace_file(
    path: &Path,
    text: &[u8],
    permissions: Option<std::fs::Permissions>,
    new_mode: u32,
) -> std::io::Result<()> {
    let directory = path.parent().unwrap_or(Path::new("."));
    let file_name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temporary = directory.join(format!(".{file_name}.toolweave-{}.tmp", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, new_mode);
    #[cfg(not(unix))]
    let _ = new_mode;
    let written = options.open(&temporary).and_then(|mut file| {
        file.write_all(text)?;
        if let Some(permissions) = permissions {
            file.set_permissions(permissions)?;
        }
        file.sync_all()
    });
    if let Err(error) = written.and_then(|()| std::fs::rename(&temporary, path)) {
        let _ = std::fs::remove_file(&temporary);
        return Err(error);
    }
    Ok(())
}
