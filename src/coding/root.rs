//! The root directory every path of the file tools is confined to (bash's commands are not:
//! they run with the host process's rights).
//!
//! Paths are resolved the reference's way (relative to the root, `~` and absolute paths allowed,
//! a leading `@` dropped), then checked lexically against the root, then opened relative to the
//! root's directory handle (`cap-std`), which refuses symbolic links whose target leaves the
//! root at the moment of use: a link that appears mid-run cannot let a path out. A hard link
//! made from outside is a file inside the root to every check; a root can refuse files with
//! more than one link (`refuseHardLinks`, applied where files are opened to be read).

use std::io;
use std::path::{Component, Path, PathBuf};

use cap_std::fs::Dir;

/// An opened root directory.
pub struct Root {
    dir: Dir,
    /// The root as the host named it, made absolute (what messages show).
    path: PathBuf,
    /// Its real path (links resolved), also accepted as the prefix of absolute paths.
    real: PathBuf,
    /// Files with more than one hard link are not read.
    refuse_hard_links: bool,
}

/// A path inside the root.
pub struct Resolved {
    /// Relative to the root ("." for the root itself).
    pub rel: PathBuf,
    /// The absolute path the reference would show in messages.
    pub display: String,
}

impl Root {
    /// Opens `path`, which must be an existing directory.
    pub fn open(path: &str) -> Result<Root, String> {
        if path.is_empty() {
            return Err("The coding root must be a directory path.".into());
        }
        let absolute = std::path::absolute(path)
            .map_err(|error| format!("Cannot use {path} as the coding root: {error}."))?;
        let absolute = normalize(&absolute);
        let dir = Dir::open_ambient_dir(&absolute, cap_std::ambient_authority())
            .map_err(|error| format!("Cannot open the coding root {path}: {error}."))?;
        let real = std::fs::canonicalize(&absolute).unwrap_or_else(|_| absolute.clone());
        Ok(Root {
            dir,
            path: absolute,
            real,
            refuse_hard_links: false,
        })
    }

    /// The same root, refusing (or not) to read files with more than one hard link.
    pub fn refusing_hard_links(self, refuse: bool) -> Root {
        Root {
            refuse_hard_links: refuse,
            ..self
        }
    }

    /// Whether files with more than one hard link are refused.
    pub fn refuses_hard_links(&self) -> bool {
        self.refuse_hard_links
    }

    /// The root directory handle.
    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// The root's absolute path (the working directory of bash).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Resolves a path argument inside the root, or explains why it is outside.
    pub fn resolve(&self, user_path: &str) -> Result<Resolved, String> {
        let cleaned: String = user_path
            .strip_prefix('@')
            .unwrap_or(user_path)
            .chars()
            .map(|c| if is_unicode_space(c) { ' ' } else { c })
            .collect();
        let expanded = if cleaned == "~" || cleaned.starts_with("~/") {
            match std::env::var_os("HOME") {
                Some(home) => PathBuf::from(home)
                    .join(cleaned.trim_start_matches('~').trim_start_matches('/')),
                None => PathBuf::from(&cleaned),
            }
        } else {
            PathBuf::from(&cleaned)
        };
        let absolute = normalize(&self.path.join(&expanded));
        let rel = absolute
            .strip_prefix(&self.path)
            .or_else(|_| absolute.strip_prefix(&self.real))
            .map(Path::to_path_buf)
            .map_err(|_| outside(user_path))?;
        let display = absolute.to_string_lossy().into_owned();
        let rel = if rel.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            rel
        };
        Ok(Resolved { rel, display })
    }

    /// The display path of `rel` (relative to the root).
    pub fn display(&self, rel: &Path) -> String {
        normalize(&self.path.join(rel))
            .to_string_lossy()
            .into_owned()
    }
}

/// The error of a path that leaves the root.
pub fn outside(user_path: &str) -> String {
    format!("Path {user_path} is outside the root directory; only paths inside it can be used.")
}

/// True for the error cap-std gives a path that would leave the root (through `..` or a link).
pub fn is_escape(error: &io::Error) -> bool {
    error.to_string().contains("outside of the filesystem")
}

/// `a/./b/../c` → `a/c`, lexically (`..` at the top stays at the top, as `path.resolve` does).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("/");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

fn is_unicode_space(c: char) -> bool {
    matches!(
        c,
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}'
    )
}

/// Node's `CODE: description` for an I/O error (`ENOENT: no such file or directory`).
pub fn node_code(error: &io::Error) -> (&'static str, &'static str) {
    match error.raw_os_error() {
        Some(libc::ENOENT) => ("ENOENT", "no such file or directory"),
        Some(libc::EACCES) => ("EACCES", "permission denied"),
        Some(libc::EPERM) => ("EPERM", "operation not permitted"),
        Some(libc::ENOTDIR) => ("ENOTDIR", "not a directory"),
        Some(libc::EISDIR) => ("EISDIR", "illegal operation on a directory"),
        Some(libc::ELOOP) => ("ELOOP", "too many symbolic links encountered"),
        Some(libc::ENAMETOOLONG) => ("ENAMETOOLONG", "name too long"),
        Some(libc::EEXIST) => ("EEXIST", "file already exists"),
        Some(libc::ENOSPC) => ("ENOSPC", "no space left on device"),
        Some(libc::EROFS) => ("EROFS", "read-only file system"),
        Some(libc::EMFILE) => ("EMFILE", "too many open files"),
        _ => match error.kind() {
            io::ErrorKind::NotFound => ("ENOENT", "no such file or directory"),
            io::ErrorKind::PermissionDenied => ("EACCES", "permission denied"),
            _ => ("EIO", "i/o error"),
        },
    }
}

/// Node's message for a failed system call on a path: `ENOENT: no such file or directory,
/// access '/root/x'`. A path that would leave the root gets libagent's own sentence.
pub fn node_error(error: &io::Error, syscall: &str, user_path: &str, display: &str) -> String {
    if is_escape(error) {
        return link_outside(user_path);
    }
    let (code, description) = node_code(error);
    format!("{code}: {description}, {syscall} '{display}'")
}

/// The error of a path whose symbolic links lead out of the root.
pub fn link_outside(user_path: &str) -> String {
    format!("Path {user_path} leads outside the root directory through a symbolic link; only paths inside it can be used.")
}
