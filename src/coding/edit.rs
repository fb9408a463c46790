//! `edit`: exact text replacements (`edits: [{oldText, newText}]`), each matched once against
//! the original file, with the reference's normalized fallback match, CRLF and BOM preserved,
//! and a numbered diff, a unified patch and the first changed line in `details`.

use std::io::Read;

use super::diff::edit_details;
use super::open::{open_regular, OpenError, Use};
use super::root::{node_code, Root};
use super::write::write_atomically;
use super::{check_abort, string, text_result};
use crate::host::AbortSignal;
use crate::json::Json;

/// One replacement in LF-normalized content (byte offsets).
#[derive(Debug, Clone)]
pub struct Replacement {
    pub index: usize,
    pub length: usize,
    pub new_text: String,
}

/// The reference's `prepareArguments`: `edits` given as a JSON string or as one object, and the
/// legacy top-level `oldText`/`newText`, become the `edits` array.
pub fn prepare_arguments(args: Json) -> Json {
    let Json::Object(mut args) = args else {
        return args;
    };
    let single = |value: &Json| {
        value.is_object()
            && value.get("oldText").is_some_and(Json::is_string)
            && value.get("newText").is_some_and(Json::is_string)
    };
    match args.get("edits") {
        Some(Json::String(text)) => {
            if let Ok(parsed) = serde_json::from_str::<Json>(text) {
                if parsed.is_array() {
                    args.insert("edits".into(), parsed);
                } else if single(&parsed) {
                    args.insert("edits".into(), Json::Array(vec![parsed]));
                }
            }
        }
        Some(edit) if single(edit) => {
            let edit = edit.clone();
            args.insert("edits".into(), Json::Array(vec![edit]));
        }
        _ => {}
    }
    let legacy = (args.get("oldText").cloned(), args.get("newText").cloned());
    if let (Some(Json::String(old)), Some(Json::String(new))) = legacy {
        let mut edits = match args.get("edits") {
            Some(Json::Array(edits)) => edits.clone(),
            _ => Vec::new(),
        };
        edits.push(serde_json::json!({"oldText": old, "newText": new}));
        args.shift_remove("oldText");
        args.shift_remove("newText");
        args.insert("edits".into(), Json::Array(edits));
    }
    Json::Object(args)
}

pub fn run(root: &Root, args: &Json, signal: &AbortSignal, max_bytes: u64) -> Result<Json, String> {
    let edits: Vec<(String, String)> = match args.get("edits") {
        Some(Json::Array(edits)) if !edits.is_empty() => edits
            .iter()
            .map(|edit| {
                (
                    string(edit, "oldText").unwrap_or_default().to_string(),
                    string(edit, "newText").unwrap_or_default().to_string(),
                )
            })
            .collect(),
        _ => {
            return Err(
                "Edit tool input is invalid. edits must contain at least one replacement.".into(),
            )
        }
    };
    let path = string(args, "path").unwrap_or_default();
    let resolved = root.resolve(path)?;
    check_abort(signal)?;
    let could_not_edit = |error: &std::io::Error| {
        if super::root::is_escape(error) {
            return super::root::link_outside(path);
        }
        format!(
            "Could not edit file: {path}. Error code: {}.",
            node_code(error).0
        )
    };
    let (mut file, metadata) =
        open_regular(root, &resolved.rel, path, Use::Edit).map_err(|error| match error {
            OpenError::Refused(message) => message,
            OpenError::Io(error) => could_not_edit(&error),
        })?;
    // An edit holds the file in memory: beyond the limit it is refused, not loaded.
    if metadata.len() > max_bytes {
        return Err(format!(
            "Could not edit file: {path}. It has {} bytes; the edit limit is {max_bytes} bytes.",
            metadata.len()
        ));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|error| could_not_edit(&error))?;
    check_abort(signal)?;
    let raw = String::from_utf8_lossy(&bytes);
    let (bom, content) = match raw.strip_prefix('\u{feff}') {
        Some(rest) => ("\u{feff}", rest),
        None => ("", &raw[..]),
    };
    let normalized = normalize_to_lf(content);
    let (new_content, replacements) = apply_edits(&normalized, &edits, path)?;
    let details = edit_details(path, &normalized, &new_content);
    check_abort(signal)?;
    let body = if content == normalized {
        new_content
    } else {
        apply_to_original(content, &replacements)
    };
    let final_content = format!("{bom}{body}");
    write_atomically(root, &resolved.rel, final_content.as_bytes(), signal).map_err(|error| {
        let (code, description) = node_code(&error);
        format!("{code}: {description}, open '{}'", resolved.display)
    })?;
    Ok(text_result(
        &format!("Successfully replaced {} block(s) in {path}.", edits.len()),
        Some(details),
    ))
}

pub fn normalize_to_lf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// Text compared loosely: NFKC, trailing whitespace per line dropped, smart quotes, Unicode
/// dashes and special spaces made ASCII.
fn normalize_for_fuzzy_match(text: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let composed: String = text.nfkc().collect();
    let trimmed: Vec<&str> = composed.split('\n').map(str::trim_end).collect();
    trimmed
        .join("\n")
        .chars()
        .map(|c| match c {
            '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
            '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
            '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
            other => other,
        })
        .collect()
}

/// Where `old` is in `content`: exactly, else loosely (then in the loose content's offsets).
fn find_text(content: &str, old: &str) -> Option<(usize, usize, bool)> {
    if let Some(index) = content.find(old) {
        return Some((index, old.len(), false));
    }
    let loose_content = normalize_for_fuzzy_match(content);
    let loose_old = normalize_for_fuzzy_match(old);
    loose_content
        .find(&loose_old)
        .map(|index| (index, loose_old.len(), true))
}

fn count_occurrences(content: &str, old: &str) -> usize {
    let loose_old = normalize_for_fuzzy_match(old);
    if loose_old.is_empty() {
        return 0;
    }
    normalize_for_fuzzy_match(content)
        .matches(&loose_old)
        .count()
}

/// Applies the edits to LF-normalized content: the new content and the replacements made.
fn apply_edits(
    content: &str,
    edits: &[(String, String)],
    path: &str,
) -> Result<(String, Vec<Replacement>), String> {
    let total = edits.len();
    let edits: Vec<(String, String)> = edits
        .iter()
        .map(|(old, new)| (normalize_to_lf(old), normalize_to_lf(new)))
        .collect();
    for (index, (old, _)) in edits.iter().enumerate() {
        if old.is_empty() {
            return Err(if total == 1 {
                format!("oldText must not be empty in {path}.")
            } else {
                format!("edits[{index}].oldText must not be empty in {path}.")
            });
        }
    }
    let loose = edits
        .iter()
        .any(|(old, _)| matches!(find_text(content, old), Some((_, _, true))));
    let base = if loose {
        normalize_for_fuzzy_match(content)
    } else {
        content.to_string()
    };
    let mut matched: Vec<(usize, Replacement)> = Vec::new();
    for (index, (old, new)) in edits.iter().enumerate() {
        let Some((at, length, _)) = find_text(&base, old) else {
            return Err(if total == 1 {
                format!("Could not find the exact text in {path}. The old text must match exactly including all whitespace and newlines.")
            } else {
                format!("Could not find edits[{index}] in {path}. The oldText must match exactly including all whitespace and newlines.")
            });
        };
        let occurrences = count_occurrences(&base, old);
        if occurrences > 1 {
            return Err(if total == 1 {
                format!("Found {occurrences} occurrences of the text in {path}. The text must be unique. Please provide more context to make it unique.")
            } else {
                format!("Found {occurrences} occurrences of edits[{index}] in {path}. Each oldText must be unique. Please provide more context to make it unique.")
            });
        }
        matched.push((
            index,
            Replacement {
                index: at,
                length,
                new_text: new.clone(),
            },
        ));
    }
    matched.sort_by_key(|(_, r)| r.index);
    for pair in matched.windows(2) {
        let (previous_edit, previous) = &pair[0];
        let (current_edit, current) = &pair[1];
        if previous.index + previous.length > current.index {
            return Err(format!("edits[{previous_edit}] and edits[{current_edit}] overlap in {path}. Merge them into one edit or target disjoint regions."));
        }
    }
    let matched: Vec<Replacement> = matched.into_iter().map(|(_, r)| r).collect();
    let replacements = if loose {
        widen_to_lines(content, &base, &matched)?
    } else {
        matched
    };
    let new_content = apply(content, &replacements, 0);
    if new_content == content {
        return Err(if total == 1 {
            format!("No changes made to {path}. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected.")
        } else {
            format!("No changes made to {path}. The replacements produced identical content.")
        });
    }
    Ok((new_content, replacements))
}

/// Applies sorted, disjoint replacements (offsets relative to `offset`).
fn apply(content: &str, replacements: &[Replacement], offset: usize) -> String {
    let mut out = String::with_capacity(content.len());
    let mut position = 0;
    for replacement in replacements {
        let start = replacement.index - offset;
        out.push_str(&content[position..start]);
        out.push_str(&replacement.new_text);
        position = start + replacement.length;
    }
    out.push_str(&content[position..]);
    out
}

/// Line spans (start, end) of `content`, each line with its newline.
fn line_spans(content: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    for (index, _) in content.match_indices('\n') {
        spans.push((start, index + 1));
        start = index + 1;
    }
    if start < content.len() {
        spans.push((start, content.len()));
    }
    spans
}

/// Loose matches turned into replacements of whole original lines: the touched lines are
/// rewritten from the loose content, every other line keeps its original bytes.
fn widen_to_lines(
    original: &str,
    base: &str,
    replacements: &[Replacement],
) -> Result<Vec<Replacement>, String> {
    let original_lines = line_spans(original);
    let base_lines = line_spans(base);
    if original_lines.len() != base_lines.len() {
        return Err(
            "Cannot preserve unchanged lines because the base content has a different line count."
                .into(),
        );
    }
    let outside = || "Replacement range is outside the base content.".to_string();
    // (first line, end line, replacements)
    let mut groups: Vec<(usize, usize, Vec<Replacement>)> = Vec::new();
    for replacement in replacements {
        let start = replacement.index;
        let end = start + replacement.length;
        let first = base_lines
            .iter()
            .position(|(s, e)| start >= *s && start < *e)
            .ok_or_else(outside)?;
        let mut last = first;
        while last < base_lines.len() && base_lines[last].1 < end {
            last += 1;
        }
        if last >= base_lines.len() {
            return Err(outside());
        }
        match groups.last_mut() {
            Some(group) if first < group.1 => {
                group.1 = group.1.max(last + 1);
                group.2.push(replacement.clone());
            }
            _ => groups.push((first, last + 1, vec![replacement.clone()])),
        }
    }
    Ok(groups
        .into_iter()
        .map(|(first, end, group)| {
            let base_start = base_lines[first].0;
            let base_end = base_lines[end - 1].1;
            let original_start = original_lines[first].0;
            Replacement {
                index: original_start,
                length: original_lines[end - 1].1 - original_start,
                new_text: apply(&base[base_start..base_end], &group, base_start),
            }
        })
        .collect())
}

/// Replacements made in the LF-normalized content, applied to the original (CRLF) content:
/// untouched text keeps its bytes, new line breaks take the line ending where the range starts.
fn apply_to_original(original: &str, replacements: &[Replacement]) -> String {
    // CRLF k sits at offset `at - k` of the normalized text; an offset maps back by adding
    // the CRLFs before it.
    let normalized_positions: Vec<usize> = original
        .match_indices("\r\n")
        .enumerate()
        .map(|(k, (at, _))| at - k)
        .collect();
    let map = |offset: usize| offset + normalized_positions.partition_point(|&p| p < offset);
    let mut parts = String::with_capacity(original.len());
    let mut ends_with_cr = false;
    let mut push = |part: &str, parts: &mut String| {
        if part.is_empty() {
            return;
        }
        if ends_with_cr && part.starts_with('\n') {
            parts.push('\n');
        }
        parts.push_str(part);
        ends_with_cr = part.ends_with('\r');
    };
    let mut position = 0;
    for replacement in replacements {
        let start = map(replacement.index);
        push(&original[position..start], &mut parts);
        let ending = line_ending_at(original, start);
        if ending == "\n" {
            push(&replacement.new_text, &mut parts);
        } else {
            push(&replacement.new_text.replace('\n', ending), &mut parts);
        }
        position = map(replacement.index + replacement.length);
    }
    push(&original[position..], &mut parts);
    parts
}

/// The line ending of the line holding `offset` (that of the line before for a last line
/// without one); a lone CR only in files without any LF.
fn line_ending_at(content: &str, offset: usize) -> &'static str {
    let line_feed = content[offset..]
        .find('\n')
        .map(|i| i + offset)
        .or_else(|| content[..offset.min(content.len())].rfind('\n'));
    match line_feed {
        None => {
            if content.contains('\r') {
                "\r"
            } else {
                "\n"
            }
        }
        Some(at) if at > 0 && content.as_bytes()[at - 1] == b'\r' => "\r\n",
        Some(_) => "\n",
    }
}
