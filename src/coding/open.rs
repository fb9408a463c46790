//! Opening a file to read it (`read`, `edit`, and every file `grep` searches). A special file
//! never blocks a tool: a named pipe's open waits for a writer and a device's read may never
//! end, so the kind is checked before opening, the open itself does not block (`O_NONBLOCK`,
//! for a file swapped in after the check) and the opened file's kind is checked again. Anything
//! but a regular file is refused with a sentence naming its kind. When the pack refuses hard
//! links, a file with more than one link is refused too: a hard link can bring a file from
//! outside the root in, and no path check can tell.

use std::fs::{File, Metadata};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use cap_std::fs::{MetadataExt as _, OpenOptions, OpenOptionsExt};

use super::root::Root;

/// Why a file was not opened.
pub enum OpenError {
    /// The system refused (missing, no permission, a directory: `EISDIR`, ...).
    Io(io::Error),
    /// libagent refused: a special file, or a file with several links when those are refused.
    Refused(String),
}

/// What the refused tool does with regular files ("read", "searched", ...), for the sentence.
#[derive(Clone, Copy)]
pub enum Use {
    Read,
    Edit,
    Search,
    Write,
}

impl Use {
    fn verb(self) -> &'static str {
        match self {
            Use::Read => "read",
            Use::Edit => "edited",
            Use::Search => "searched",
            Use::Write => "replaced by write",
        }
    }
}

/// Opens `rel` for reading: a regular file, in blocking mode, with its metadata.
pub fn open_regular(
    root: &Root,
    rel: &Path,
    user_path: &str,
    purpose: Use,
) -> Result<(File, Metadata), OpenError> {
    // Checked before opening: opening a pipe or a device can itself have effects (a writer
    // waiting on the pipe would be released, then see it closed).
    if let Ok(metadata) = root.dir().metadata(rel) {
        refuse_special(metadata.mode(), user_path, purpose).map_err(OpenError::Refused)?;
    }
    let mut options = OpenOptions::new();
    options
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    let file = match root.dir().open_with(rel, &options) {
        Ok(file) => file.into_std(),
        Err(error) => {
            // A socket cannot be opened at all (ENXIO): name its kind rather than the error.
            if let Ok(metadata) = root.dir().metadata(rel) {
                refuse_special(metadata.mode(), user_path, purpose).map_err(OpenError::Refused)?;
            }
            return Err(OpenError::Io(error));
        }
    };
    let metadata = file.metadata().map_err(OpenError::Io)?;
    refuse_special(metadata.mode(), user_path, purpose).map_err(OpenError::Refused)?;
    if metadata.is_dir() {
        return Err(OpenError::Io(io::Error::from_raw_os_error(libc::EISDIR)));
    }
    if root.refuses_hard_links() && metadata.nlink() > 1 {
        return Err(OpenError::Refused(hard_links(
            user_path,
            metadata.nlink(),
            purpose,
        )));
    }
    set_blocking(&file).map_err(OpenError::Io)?;
    Ok((file, metadata))
}

/// `Err` with libagent's sentence when `mode` (`st_mode`) is neither a regular file, a
/// directory nor a link.
pub fn refuse_special(mode: u32, user_path: &str, purpose: Use) -> Result<(), String> {
    match special_kind(mode) {
        Some(kind) => Err(format!(
            "{user_path} is {kind}, not a regular file; only regular files can be {}.",
            purpose.verb()
        )),
        None => Ok(()),
    }
}

/// What a special file is, as a sentence names it; `None` for files, directories and links.
// `mode_t` is u32 on Linux, narrower on some other systems: the casts are needed there.
#[allow(clippy::unnecessary_cast)]
fn special_kind(mode: u32) -> Option<&'static str> {
    const FORMAT: u32 = libc::S_IFMT as u32;
    const REGULAR: u32 = libc::S_IFREG as u32;
    const DIRECTORY: u32 = libc::S_IFDIR as u32;
    const LINK: u32 = libc::S_IFLNK as u32;
    const PIPE: u32 = libc::S_IFIFO as u32;
    const SOCKET: u32 = libc::S_IFSOCK as u32;
    const CHARACTER: u32 = libc::S_IFCHR as u32;
    const BLOCK: u32 = libc::S_IFBLK as u32;
    match mode & FORMAT {
        REGULAR | DIRECTORY | LINK => None,
        PIPE => Some("a named pipe"),
        SOCKET => Some("a socket"),
        CHARACTER => Some("a character device"),
        BLOCK => Some("a block device"),
        _ => Some("a special file"),
    }
}

fn hard_links(user_path: &str, links: u64, purpose: Use) -> String {
    format!(
        "{user_path} has {links} hard links, and this tool pack refuses files with more than one \
         (option refuseHardLinks): one of them may be outside the root. Only files with a single \
         link can be {}.",
        purpose.verb()
    )
}

/// Clears `O_NONBLOCK`, which only the open needed.
fn set_blocking(file: &File) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor this function's caller owns; no memory is passed.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
