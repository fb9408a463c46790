//! `write`: creates or replaces a file (and its parent directories) atomically: the content goes
//! to a temporary file beside it, which is then renamed over the target, so an abort or a crash
//! never leaves a half-written file. An existing named pipe, socket or device is refused, not
//! replaced; a file with several hard links is replaced by a new file (the other links keep the
//! old content).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use cap_std::fs::{Dir, MetadataExt as _, OpenOptions};

use super::open::{refuse_special, Use};
use super::root::{is_escape, link_outside, node_error, Root};
use super::{check_abort, string, text_result};
use crate::host::AbortSignal;
use crate::json::Json;

pub fn run(root: &Root, args: &Json, signal: &AbortSignal) -> Result<Json, String> {
    let path = string(args, "path").unwrap_or_default();
    let content = string(args, "content").unwrap_or_default();
    let resolved = root.resolve(path)?;
    check_abort(signal)?;
    if let Some(parent) = resolved.rel.parent().filter(|p| !p.as_os_str().is_empty()) {
        if let Err(error) = root.dir().metadata(parent) {
            if is_escape(&error) {
                return Err(link_outside(path));
            }
        }
        root.dir()
            .create_dir_all(parent)
            .map_err(|error| node_error(&error, "mkdir", path, &root.display(parent)))?;
    }
    // A named pipe, socket or device is not replaced by a regular file: the write is refused
    // (nothing is opened, so nothing blocks).
    if let Ok(metadata) = root.dir().metadata(&resolved.rel) {
        refuse_special(metadata.mode(), path, Use::Write)?;
    }
    check_abort(signal)?;
    write_atomically(root, &resolved.rel, content.as_bytes(), signal)
        .map_err(|error| node_error(&error, "open", path, &resolved.display))?;
    Ok(text_result(&format!("Successfully wrote to {path}"), None))
}

/// Replaces `rel` with `bytes` through a temporary file and a rename. An existing file keeps its
/// permissions; a link inside the root is written through (its target is replaced).
pub fn write_atomically(
    root: &Root,
    rel: &Path,
    bytes: &[u8],
    signal: &AbortSignal,
) -> std::io::Result<()> {
    let dir = root.dir();
    let target = match dir.symlink_metadata(rel) {
        Ok(metadata) if metadata.file_type().is_symlink() => dir.canonicalize(rel)?,
        _ => rel.to_path_buf(),
    };
    let existing = dir.metadata(&target).ok();
    if existing.as_ref().is_some_and(|m| m.is_dir()) {
        return Err(std::io::Error::from_raw_os_error(libc::EISDIR));
    }
    let temp = temp_name(&target);
    let result = write_temp(dir, &temp, bytes, signal).and_then(|()| {
        if let Some(metadata) = &existing {
            dir.set_permissions(&temp, metadata.permissions())?;
        }
        dir.rename(&temp, dir, &target)
    });
    if result.is_err() {
        let _ = dir.remove_file(&temp);
    }
    result
}

fn write_temp(dir: &Dir, temp: &Path, bytes: &[u8], signal: &AbortSignal) -> std::io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    let mut file = dir.open_with(temp, &options)?;
    for chunk in bytes.chunks(1 << 20) {
        if signal.is_aborted() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Interrupted,
                "Operation aborted",
            ));
        }
        file.write_all(chunk)?;
    }
    file.sync_all()
}

/// `dir/.name.libagent-<pid>-<n>.tmp`: unique per process and write.
fn temp_name(target: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    target.with_file_name(format!(".{name}.libagent-{}-{n}.tmp", std::process::id()))
}
