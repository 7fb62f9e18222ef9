//! Writing the files toolweave keeps or edits (a client's config, the trust and pins files)
//! whole or not at all.

use std::io::Write;
use std::path::Path;

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
