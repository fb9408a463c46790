//! `grep`: lines matching a regex (or a literal) in a file or a tree, with ripgrep's own matcher
//! and searcher, in path order. Honours `.gitignore` inside a git repository only (as ripgrep
//! does), shows hidden files, never follows links; every file is opened through the root handle,
//! without blocking, and only regular files are searched (special files are skipped in a tree).

use std::path::Path;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::overrides::OverrideBuilder;
use ignore::WalkBuilder;

use super::open::{open_regular, OpenError, Use};
use super::root::{is_escape, link_outside, Root};
use super::truncate::{
    truncate_head, truncate_line, ListingResult, GREP_MAX_LINE_LENGTH, MAX_BYTES, NO_LINE_LIMIT,
};
use super::{check_abort, limit_arg, number, search_args, string, text_result};
use crate::host::AbortSignal;
use crate::json::{json, Json};

const DEFAULT_LIMIT: usize = 100;
/// The longest line grep holds in memory (a longer one ends the search of its file).
const MAX_LINE_BUFFER: usize = 16 << 20;

/// The listing being built, and when to stop.
struct Output {
    limit: usize,
    context: u64,
    lines: Vec<String>,
    line_count: usize,
    bytes: usize,
    matches: usize,
    limit_hit: bool,
    limit_reached: bool,
    lines_truncated: bool,
    trailing_end: u64,
    done: bool,
}

impl Output {
    fn push(&mut self, path: &str, number: u64, text: &[u8], is_match: bool) {
        let text = String::from_utf8_lossy(text);
        let text = text.strip_suffix('\n').unwrap_or(&text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        let (text, cut) = truncate_line(text);
        self.lines_truncated |= cut;
        let line = if is_match {
            format!("{path}:{number}: {text}")
        } else {
            format!("{path}-{number}- {text}")
        };
        let size = line.len() + 1;
        if self.bytes <= MAX_BYTES + 1 {
            self.lines.push(line);
        }
        self.bytes += size;
        self.line_count += 1;
    }

    /// One line from the searcher (a match or context); false once the listing is complete.
    fn line(&mut self, path: &str, number: u64, text: &[u8], is_match: bool) -> bool {
        if !self.limit_hit {
            self.push(path, number, text, is_match);
            if is_match {
                self.matches += 1;
                if self.matches >= self.limit {
                    self.limit_hit = true;
                    self.trailing_end = number + self.context;
                }
            }
            return true;
        }
        let in_window = number <= self.trailing_end;
        if in_window {
            self.push(path, number, text, false);
        }
        if is_match {
            self.limit_reached = true;
        }
        if self.limit_reached && !(in_window && number < self.trailing_end) {
            self.done = true;
            return false;
        }
        true
    }
}

struct FileSink<'a> {
    path: &'a str,
    out: &'a mut Output,
    signal: &'a AbortSignal,
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let first = found.line_number().unwrap_or(0);
        let mut keep_going = true;
        for (i, line) in found.lines().enumerate() {
            keep_going = self.out.line(self.path, first + i as u64, line, true);
            if !keep_going {
                break;
            }
        }
        Ok(keep_going && !self.signal.is_aborted())
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, Self::Error> {
        let number = context.line_number().unwrap_or(0);
        Ok(self.out.line(self.path, number, context.bytes(), false) && !self.signal.is_aborted())
    }
}

pub fn run(root: &Root, args: &Json, signal: &AbortSignal) -> Result<Json, String> {
    let (pattern, search) = search_args(args);
    let resolved = root.resolve(search)?;
    let is_directory = match root.dir().metadata(&resolved.rel) {
        Ok(metadata) => metadata.is_dir(),
        Err(error) if is_escape(&error) => return Err(link_outside(search)),
        Err(_) => return Err(format!("Path not found: {}", resolved.display)),
    };
    let context = match number(args, "context") {
        Some(c) if c > 0.0 && c.is_finite() => c.floor() as u64,
        _ => 0,
    };
    let limit = limit_arg(args, DEFAULT_LIMIT);
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(args.get("ignoreCase") == Some(&Json::Bool(true)))
        .fixed_strings(args.get("literal") == Some(&Json::Bool(true)))
        .line_terminator(Some(b'\n'))
        .build(pattern)
        .map_err(|error| {
            // ripgrep reports the pattern as given; the matcher's own error shows it wrapped.
            regex::Regex::new(pattern)
                .err()
                .map(|error| error.to_string())
                .unwrap_or_else(|| error.to_string())
        })?;
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .before_context(context as usize)
        .after_context(context as usize)
        // Binary files are skipped in a tree; a file named directly is searched anyway (as
        // ripgrep does).
        .binary_detection(if is_directory {
            BinaryDetection::quit(0)
        } else {
            BinaryDetection::none()
        })
        // A line longer than this is skipped rather than held in memory whole.
        .heap_limit(Some(MAX_LINE_BUFFER))
        .build();
    let mut out = Output {
        limit,
        context,
        lines: Vec::new(),
        line_count: 0,
        bytes: 0,
        matches: 0,
        limit_hit: false,
        limit_reached: false,
        lines_truncated: false,
        trailing_end: 0,
        done: false,
    };
    // Opened through the root handle (a link swapped in mid-run cannot lead out) and never
    // blocking. A file that cannot be searched is skipped in a tree, as ripgrep skips special
    // files; named on its own, libagent's refusal (a special file, several links) is the result.
    let mut search_file = |rel: &Path, shown: &str, out: &mut Output| -> Result<(), String> {
        let named = if is_directory { shown } else { search };
        let file = match open_regular(root, rel, named, Use::Search) {
            Ok((file, _)) => file,
            Err(OpenError::Refused(message)) if !is_directory => return Err(message),
            Err(_) => return Ok(()),
        };
        let sink = FileSink {
            path: shown,
            out,
            signal,
        };
        let _ = searcher.search_file(&matcher, &file, sink);
        check_abort(signal)
    };
    if is_directory {
        let base = root.path().join(&resolved.rel);
        super::fresh_order();
        let mut walk = WalkBuilder::new(&base);
        walk.hidden(false)
            .follow_links(false)
            .require_git(true)
            .parents(true)
            .sort_by_file_path(super::files_first);
        if let Some(glob) = string(args, "glob") {
            let glob = strip_dot_slash(glob);
            let mut overrides = OverrideBuilder::new(&base);
            overrides.add(&glob).map_err(|error| error.to_string())?;
            walk.overrides(overrides.build().map_err(|error| error.to_string())?);
        }
        for entry in walk.build() {
            check_abort(signal)?;
            let Ok(entry) = entry else { continue };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Ok(relative) = entry.path().strip_prefix(&base) else {
                continue;
            };
            let shown = relative.to_string_lossy().replace('\\', "/");
            search_file(&resolved.rel.join(relative), &shown, &mut out)?;
            if out.done {
                break;
            }
        }
    } else {
        let shown = Path::new(&resolved.display)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        search_file(&resolved.rel, &shown, &mut out)?;
    }
    if out.matches == 0 {
        return Ok(text_result("No matches found", None));
    }
    let mut truncation = truncate_head(&out.lines.join("\n"), NO_LINE_LIMIT, MAX_BYTES);
    truncation.total_lines = out.line_count;
    truncation.total_bytes = out.bytes - 1;
    let mut result = ListingResult::new(&truncation);
    if out.limit_reached {
        let text = format!(
            "{limit} matches limit reached. Use limit={} for more, or refine pattern",
            limit * 2
        );
        result.notice(text, "matchLimitReached", json!(limit));
    }
    result.byte_limit(&truncation);
    if out.lines_truncated {
        let text = format!(
            "Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines"
        );
        result.notice(text, "linesTruncated", json!(true));
    }
    Ok(result.finish())
}

fn strip_dot_slash(glob: &str) -> String {
    let (negated, mut rest) = match glob.strip_prefix('!') {
        Some(rest) => ("!", rest),
        None => ("", glob),
    };
    while let Some(stripped) = rest.strip_prefix("./") {
        rest = stripped;
    }
    format!("{negated}{rest}")
}
