//! `ls`: a directory's entries sorted case-insensitively, `/` after directories, dotfiles
//! included, 500 entries by default. A link that leads out of the root is listed by name only
//! (never followed).

use super::root::{is_escape, link_outside, Root};
use super::truncate::{truncate_head, ListingResult, MAX_BYTES, NO_LINE_LIMIT};
use super::{check_abort, limit_arg, string, text_result};
use crate::host::AbortSignal;
use crate::json::{json, Json};

const DEFAULT_LIMIT: usize = 500;

pub fn run(root: &Root, args: &Json, signal: &AbortSignal) -> Result<Json, String> {
    let path = string(args, "path")
        .filter(|p| !p.is_empty())
        .unwrap_or(".");
    let resolved = root.resolve(path)?;
    let limit = limit_arg(args, DEFAULT_LIMIT);
    let dir = root.dir();
    let metadata = match dir.metadata(&resolved.rel) {
        Ok(metadata) => metadata,
        Err(error) if is_escape(&error) => return Err(link_outside(path)),
        Err(_) => return Err(format!("Path not found: {}", resolved.display)),
    };
    if !metadata.is_dir() {
        return Err(format!("Not a directory: {}", resolved.display));
    }
    let entries = dir
        .read_dir(&resolved.rel)
        .map_err(|error| format!("Cannot read directory: {error}"))?;
    let mut names: Vec<String> = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|error| format!("Cannot read directory: {error}"))?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    names.sort_by_cached_key(|name| collation_key(name));
    let mut listed: Vec<String> = Vec::new();
    let mut limit_reached = false;
    for name in names {
        check_abort(signal)?;
        if listed.len() >= limit {
            limit_reached = true;
            break;
        }
        let entry = resolved.rel.join(&name);
        let suffix = match dir.metadata(&entry) {
            Ok(metadata) if metadata.is_dir() => "/",
            Ok(_) => "",
            // A link out of the root: shown, not followed.
            Err(error) if is_escape(&error) => "",
            Err(_) => continue,
        };
        listed.push(format!("{name}{suffix}"));
    }
    if listed.is_empty() {
        return Ok(text_result("(empty directory)", None));
    }
    let truncation = truncate_head(&listed.join("\n"), NO_LINE_LIMIT, MAX_BYTES);
    let mut result = ListingResult::new(&truncation);
    if limit_reached {
        let text = format!(
            "{limit} entries limit reached. Use limit={} for more",
            limit * 2
        );
        result.notice(text, "entryLimitReached", json!(limit));
    }
    result.byte_limit(&truncation);
    Ok(result.finish())
}

/// A sort key close to the reference's `a.toLowerCase().localeCompare(b.toLowerCase())` (ICU's
/// root collation): spaces, then punctuation in ICU's order, then digits, then letters, accents
/// after the base letter; ties by the name itself.
fn collation_key(name: &str) -> (Vec<u32>, Vec<u32>, String) {
    use unicode_normalization::char::is_combining_mark;
    use unicode_normalization::UnicodeNormalization;
    const PUNCTUATION: &str = "_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$";
    let lower = name.to_lowercase();
    let mut primary = Vec::new();
    for c in lower.nfd().filter(|c| !is_combining_mark(*c)) {
        primary.push(match c {
            c if c.is_whitespace() => 1,
            c if PUNCTUATION.contains(c) => 10 + PUNCTUATION.find(c).unwrap_or(0) as u32,
            '0'..='9' => 100 + c as u32,
            'a'..='z' => 1000 + c as u32,
            c => 2000 + c as u32,
        });
    }
    let secondary = lower.nfd().map(|c| c as u32).collect();
    (primary, secondary, name.to_string())
}
