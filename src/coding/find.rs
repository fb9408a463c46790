//! `find`: files and directories whose name (or, for a pattern with `/`, whose path relative to
//! the search directory) matches a glob, in path order. Honours `.gitignore` even outside a git
//! repository (as fd with `--no-require-git`), shows hidden files, never follows links.

use globset::GlobBuilder;
use ignore::WalkBuilder;

use super::root::{is_escape, link_outside, Root};
use super::truncate::{truncate_head, ListingResult, MAX_BYTES, NO_LINE_LIMIT};
use super::{check_abort, limit_arg, search_args, text_result};
use crate::host::AbortSignal;
use crate::json::{json, Json};

const DEFAULT_LIMIT: usize = 1000;

pub fn run(root: &Root, args: &Json, signal: &AbortSignal) -> Result<Json, String> {
    let (pattern, search) = search_args(args);
    let resolved = root.resolve(search)?;
    let limit = limit_arg(args, DEFAULT_LIMIT);
    match root.dir().metadata(&resolved.rel) {
        Ok(metadata) if metadata.is_dir() => {}
        Err(error) if is_escape(&error) => return Err(link_outside(search)),
        _ => {
            return Err(format!(
                "[fd error]: Search path '{}' is not a directory.\n[fd error]: No valid search paths given.",
                resolved.display
            ))
        }
    }
    let mut pattern = pattern.to_string();
    while let Some(rest) = pattern.strip_prefix("./") {
        pattern = rest.to_string();
    }
    let path_pattern = pattern.contains('/');
    // Smart case: an all-lowercase pattern matches regardless of case.
    let ignore_case = pattern == pattern.to_lowercase();
    let absolute_pattern = pattern.starts_with('/');
    let glob = GlobBuilder::new(&pattern)
        .literal_separator(path_pattern)
        .case_insensitive(ignore_case)
        .backslash_escape(true)
        .build()
        .map_err(|error| format!("[fd error]: {error}"))?
        .compile_matcher();
    let base = root.path().join(&resolved.rel);
    super::fresh_order();
    let walker = WalkBuilder::new(&base)
        .hidden(false)
        .follow_links(false)
        .require_git(false)
        .parents(true)
        .sort_by_file_path(super::files_first)
        .build();
    let mut results: Vec<String> = Vec::new();
    let mut count = 0;
    let mut bytes = 0;
    let mut limit_reached = false;
    for entry in walker {
        check_abort(signal)?;
        let Ok(entry) = entry else { continue };
        if entry.depth() == 0 {
            continue;
        }
        let Ok(relative) = entry.path().strip_prefix(&base) else {
            continue;
        };
        let relative = relative.to_string_lossy().replace('\\', "/");
        let matched = if absolute_pattern {
            glob.is_match(entry.path())
        } else if path_pattern {
            glob.is_match(&relative)
        } else {
            glob.is_match(entry.file_name())
        };
        if !matched {
            continue;
        }
        if count == limit {
            limit_reached = true;
            break;
        }
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        let shown = if is_dir {
            format!("{relative}/")
        } else {
            relative
        };
        count += 1;
        // Only what can be shown is kept; the rest is counted.
        if bytes <= MAX_BYTES + 1 {
            bytes += shown.len() + 1;
            results.push(shown);
        } else {
            bytes += shown.len() + 1;
        }
    }
    if count == 0 {
        return Ok(text_result("No files found matching pattern", None));
    }
    let mut truncation = truncate_head(&results.join("\n"), NO_LINE_LIMIT, MAX_BYTES);
    truncation.total_lines = count;
    truncation.total_bytes = bytes - 1;
    let mut result = ListingResult::new(&truncation);
    if limit_reached {
        let text = format!(
            "{limit} results limit reached. Use limit={} for more, or refine pattern",
            limit * 2
        );
        result.notice(text, "resultLimitReached", json!(limit));
    }
    result.byte_limit(&truncation);
    Ok(result.finish())
}
