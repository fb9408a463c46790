//! Edit details: the numbered display diff, the unified patch (4 lines of context) and the first
//! changed line, in the reference's formats. Lines are diffed with `similar` (Myers).

use similar::{Algorithm, ChangeTag, TextDiff};

use crate::json::{json, Json};

const CONTEXT: usize = 4;

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Same,
    Removed,
    Added,
}

/// A run of lines of one kind (each line with its newline, if it has one).
struct Part<'a> {
    kind: Kind,
    lines: Vec<&'a str>,
}

/// The line runs of a diff; between two unchanged runs, the removed lines come before the added
/// ones (as jsdiff lists them).
fn parts<'a>(old: &'a str, new: &'a str) -> Vec<Part<'a>> {
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .diff_lines(old, new);
    let mut parts: Vec<Part<'a>> = Vec::new();
    let (mut removed, mut added): (Vec<&'a str>, Vec<&'a str>) = (Vec::new(), Vec::new());
    let flush =
        |parts: &mut Vec<Part<'a>>, removed: &mut Vec<&'a str>, added: &mut Vec<&'a str>| {
            for (kind, lines) in [(Kind::Removed, removed), (Kind::Added, added)] {
                if !lines.is_empty() {
                    parts.push(Part {
                        kind,
                        lines: std::mem::take(lines),
                    });
                }
            }
        };
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Delete => removed.push(change.value()),
            ChangeTag::Insert => added.push(change.value()),
            ChangeTag::Equal => {
                flush(&mut parts, &mut removed, &mut added);
                match parts.last_mut() {
                    Some(part) if part.kind == Kind::Same => part.lines.push(change.value()),
                    _ => parts.push(Part {
                        kind: Kind::Same,
                        lines: vec![change.value()],
                    }),
                }
            }
        }
    }
    flush(&mut parts, &mut removed, &mut added);
    parts
}

/// `{diff, patch, firstChangedLine}` for an edit of `old` into `new`.
pub fn edit_details(path: &str, old: &str, new: &str) -> Json {
    let parts = parts(old, new);
    let width = (old.matches('\n').count().max(new.matches('\n').count()) + 1)
        .to_string()
        .len();
    let (diff, first_changed_line) = display_diff(&parts, width);
    let patch = unified_patch(path, &parts);
    let mut details = json!({"diff": diff, "patch": patch});
    if let (Some(line), Some(object)) = (first_changed_line, details.as_object_mut()) {
        object.insert("firstChangedLine".into(), json!(line));
    }
    details
}

fn strip_newline(line: &str) -> &str {
    line.strip_suffix('\n').unwrap_or(line)
}

/// The numbered diff: changed lines with `-`/`+`, up to 4 lines of context, `...` for the rest.
fn display_diff(parts: &[Part], width: usize) -> (String, Option<usize>) {
    let mut out: Vec<String> = Vec::new();
    let mut old_line = 1;
    let mut new_line = 1;
    let mut first_changed = None;
    let mut last_was_change = false;
    let skip = format!(" {} ...", " ".repeat(width));
    for (index, part) in parts.iter().enumerate() {
        let lines: Vec<&str> = part.lines.iter().map(|l| strip_newline(l)).collect();
        if part.kind != Kind::Same {
            first_changed.get_or_insert(new_line);
            for line in lines {
                if part.kind == Kind::Added {
                    out.push(format!("+{new_line:>width$} {line}"));
                    new_line += 1;
                } else {
                    out.push(format!("-{old_line:>width$} {line}"));
                    old_line += 1;
                }
            }
            last_was_change = true;
            continue;
        }
        let next_is_change = parts.get(index + 1).is_some_and(|p| p.kind != Kind::Same);
        let show =
            |out: &mut Vec<String>, range: &[&str], old_line: &mut usize, new_line: &mut usize| {
                for line in range {
                    out.push(format!(" {:>width$} {line}", *old_line));
                    *old_line += 1;
                    *new_line += 1;
                }
            };
        let n = lines.len();
        if last_was_change && next_is_change {
            if n <= CONTEXT * 2 {
                show(&mut out, &lines, &mut old_line, &mut new_line);
            } else {
                show(&mut out, &lines[..CONTEXT], &mut old_line, &mut new_line);
                out.push(skip.clone());
                old_line += n - 2 * CONTEXT;
                new_line += n - 2 * CONTEXT;
                show(
                    &mut out,
                    &lines[n - CONTEXT..],
                    &mut old_line,
                    &mut new_line,
                );
            }
        } else if last_was_change {
            let shown = n.min(CONTEXT);
            show(&mut out, &lines[..shown], &mut old_line, &mut new_line);
            if n > shown {
                out.push(skip.clone());
                old_line += n - shown;
                new_line += n - shown;
            }
        } else if next_is_change {
            let skipped = n.saturating_sub(CONTEXT);
            if skipped > 0 {
                out.push(skip.clone());
                old_line += skipped;
                new_line += skipped;
            }
            show(&mut out, &lines[skipped..], &mut old_line, &mut new_line);
        } else {
            old_line += n;
            new_line += n;
        }
        last_was_change = false;
    }
    (out.join("\n"), first_changed)
}

/// A unified patch with file headers only, as jsdiff formats it.
fn unified_patch(path: &str, parts: &[Part]) -> String {
    struct Hunk {
        old_start: usize,
        old_lines: usize,
        new_start: usize,
        new_lines: usize,
        lines: Vec<String>,
    }
    let mut hunks: Vec<Hunk> = Vec::new();
    let mut current: Option<(usize, usize, Vec<String>)> = None;
    let (mut old_line, mut new_line) = (1usize, 1usize);
    let context = |lines: &[&str]| lines.iter().map(|l| format!(" {l}")).collect::<Vec<_>>();
    for (index, part) in parts.iter().enumerate() {
        if part.kind != Kind::Same {
            let (_, _, range) = current.get_or_insert_with(|| {
                let previous: Vec<String> = match index.checked_sub(1).map(|i| &parts[i]) {
                    Some(prev) => context(&prev.lines[prev.lines.len().saturating_sub(CONTEXT)..]),
                    None => Vec::new(),
                };
                (
                    old_line - previous.len(),
                    new_line - previous.len(),
                    previous,
                )
            });
            let sign = if part.kind == Kind::Added { '+' } else { '-' };
            range.extend(part.lines.iter().map(|l| format!("{sign}{l}")));
            if part.kind == Kind::Added {
                new_line += part.lines.len();
            } else {
                old_line += part.lines.len();
            }
            continue;
        }
        if let Some((old_start, new_start, mut range)) = current.take() {
            let is_last = index + 1 == parts.len();
            if part.lines.len() <= CONTEXT * 2 && !is_last {
                range.extend(context(&part.lines));
                current = Some((old_start, new_start, range));
            } else {
                let size = part.lines.len().min(CONTEXT);
                range.extend(context(&part.lines[..size]));
                hunks.push(Hunk {
                    old_start,
                    old_lines: old_line - old_start + size,
                    new_start,
                    new_lines: new_line - new_start + size,
                    lines: range,
                });
            }
        }
        old_line += part.lines.len();
        new_line += part.lines.len();
    }
    if let Some((old_start, new_start, range)) = current.take() {
        hunks.push(Hunk {
            old_start,
            old_lines: old_line - old_start,
            new_start,
            new_lines: new_line - new_start,
            lines: range,
        });
    }
    let mut out = vec![format!("--- {path}"), format!("+++ {path}")];
    for hunk in hunks {
        let old_start = if hunk.old_lines == 0 {
            hunk.old_start - 1
        } else {
            hunk.old_start
        };
        let new_start = if hunk.new_lines == 0 {
            hunk.new_start - 1
        } else {
            hunk.new_start
        };
        out.push(format!(
            "@@ -{old_start},{} +{new_start},{} @@",
            hunk.old_lines, hunk.new_lines
        ));
        for line in hunk.lines {
            match line.strip_suffix('\n') {
                Some(line) => out.push(line.to_string()),
                None => {
                    out.push(line);
                    out.push("\\ No newline at end of file".into());
                }
            }
        }
    }
    out.join("\n") + "\n"
}
