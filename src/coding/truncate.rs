//! Output truncation: the reference's head and tail cuts (2000 lines / 50 KB) and its records.

use crate::json::{json, Json};

pub(crate) const MAX_LINES: usize = 2000;
pub(crate) const MAX_BYTES: usize = 50 * 1024;
/// The line cap of listings, which are cut by bytes only: JavaScript's `Number.MAX_SAFE_INTEGER`
/// (the records show it).
pub(crate) const NO_LINE_LIMIT: usize = (1 << 53) - 1;
/// Characters kept of a long grep line.
pub(crate) const GREP_MAX_LINE_LENGTH: usize = 500;

/// What a cut kept and dropped (the reference's `TruncationResult`).
#[derive(Debug, Clone)]
pub struct Truncation {
    pub content: String,
    pub truncated: bool,
    /// "lines" or "bytes".
    pub truncated_by: Option<&'static str>,
    pub total_lines: usize,
    pub total_bytes: usize,
    pub output_lines: usize,
    pub output_bytes: usize,
    pub last_line_partial: bool,
    pub first_line_exceeds_limit: bool,
    pub max_lines: usize,
    pub max_bytes: usize,
}

impl Truncation {
    pub fn to_json(&self) -> Json {
        json!({
            "content": self.content,
            "truncated": self.truncated,
            "truncatedBy": self.truncated_by,
            "totalLines": self.total_lines,
            "totalBytes": self.total_bytes,
            "outputLines": self.output_lines,
            "outputBytes": self.output_bytes,
            "lastLinePartial": self.last_line_partial,
            "firstLineExceedsLimit": self.first_line_exceeds_limit,
            "maxLines": self.max_lines,
            "maxBytes": self.max_bytes,
        })
    }

    fn whole(content: &str, lines: usize, max_lines: usize, max_bytes: usize) -> Self {
        Truncation {
            content: content.to_string(),
            truncated: false,
            truncated_by: None,
            total_lines: lines,
            total_bytes: content.len(),
            output_lines: lines,
            output_bytes: content.len(),
            last_line_partial: false,
            first_line_exceeds_limit: false,
            max_lines,
            max_bytes,
        }
    }
}

/// Lines as the reference counts them: a final newline does not start another line.
fn split_lines(content: &str) -> Vec<&str> {
    if content.is_empty() {
        return Vec::new();
    }
    let mut lines: Vec<&str> = content.split('\n').collect();
    if content.ends_with('\n') {
        lines.pop();
    }
    lines
}

/// Keeps the first whole lines that fit (read, ls, find, grep).
pub fn truncate_head(content: &str, max_lines: usize, max_bytes: usize) -> Truncation {
    let lines = split_lines(content);
    if lines.len() <= max_lines && content.len() <= max_bytes {
        return Truncation::whole(content, lines.len(), max_lines, max_bytes);
    }
    let mut cut = Truncation {
        content: String::new(),
        truncated: true,
        truncated_by: Some("bytes"),
        total_lines: lines.len(),
        total_bytes: content.len(),
        output_lines: 0,
        output_bytes: 0,
        last_line_partial: false,
        first_line_exceeds_limit: false,
        max_lines,
        max_bytes,
    };
    if lines[0].len() > max_bytes {
        cut.first_line_exceeds_limit = true;
        return cut;
    }
    let mut kept = 0;
    let mut bytes = 0;
    let mut by = "lines";
    for (index, line) in lines.iter().enumerate().take(max_lines) {
        let size = line.len() + usize::from(index > 0);
        if bytes + size > max_bytes {
            by = "bytes";
            break;
        }
        kept += 1;
        bytes += size;
    }
    if kept >= max_lines && bytes <= max_bytes {
        by = "lines";
    }
    cut.content = lines[..kept].join("\n");
    cut.truncated_by = Some(by);
    cut.output_lines = kept;
    cut.output_bytes = cut.content.len();
    cut
}

/// Keeps the last whole lines that fit, or the end of the last line (bash).
pub fn truncate_tail(content: &str, max_lines: usize, max_bytes: usize) -> Truncation {
    let total_bytes = content.len();
    let lines = split_lines(content);
    if lines.len() <= max_lines && content.len() <= max_bytes {
        return Truncation::whole(content, lines.len(), max_lines, max_bytes);
    }
    let mut kept: Vec<&str> = Vec::new();
    let mut bytes = 0;
    let mut by = "lines";
    let mut partial = None;
    for line in lines.iter().rev() {
        if kept.len() >= max_lines {
            break;
        }
        let size = line.len() + usize::from(!kept.is_empty());
        if bytes + size > max_bytes {
            by = "bytes";
            if kept.is_empty() {
                let tail = tail_bytes(line, max_bytes);
                bytes = tail.len();
                partial = Some(tail);
            }
            break;
        }
        kept.push(line);
        bytes += size;
    }
    if kept.len() >= max_lines && bytes <= max_bytes {
        by = "lines";
    }
    let content = match partial {
        Some(tail) => tail.to_string(),
        None => {
            kept.reverse();
            kept.join("\n")
        }
    };
    Truncation {
        output_lines: if partial.is_some() { 1 } else { kept.len() },
        output_bytes: content.len(),
        content,
        truncated: true,
        truncated_by: Some(by),
        total_lines: lines.len(),
        total_bytes,
        last_line_partial: partial.is_some(),
        first_line_exceeds_limit: false,
        max_lines,
        max_bytes,
    }
}

/// The last `max` bytes of `text`, starting on a character boundary.
fn tail_bytes(text: &str, max: usize) -> &str {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// `1.5KB`-style sizes, rounded as JavaScript's `toFixed(1)` does.
pub fn format_size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes}B")
    } else if bytes < 1024 * 1024 {
        format!("{}KB", fixed1(bytes as f64 / 1024.0))
    } else {
        format!("{}MB", fixed1(bytes as f64 / (1024.0 * 1024.0)))
    }
}

fn fixed1(value: f64) -> String {
    let tenths = (value * 10.0).round();
    format!("{:.1}", tenths / 10.0)
}

/// A grep line cut to `GREP_MAX_LINE_LENGTH` characters, and whether it was cut.
pub fn truncate_line(line: &str) -> (String, bool) {
    // The reference counts UTF-16 units; a character outside the BMP counts twice.
    let mut units = 0;
    for (index, c) in line.char_indices() {
        units += c.len_utf16();
        if units > GREP_MAX_LINE_LENGTH {
            return (format!("{}... [truncated]", &line[..index]), true);
        }
    }
    (line.to_string(), false)
}

/// The text and details of a listing tool's result (`ls`, `find`, `grep`): the listing as cut,
/// then its notices in one bracket, each with its record in `details`, in the order added.
pub struct ListingResult {
    text: String,
    details: crate::json::JsonMap,
    notices: Vec<String>,
}

impl ListingResult {
    pub fn new(truncation: &Truncation) -> Self {
        Self {
            text: truncation.content.clone(),
            details: Default::default(),
            notices: Vec::new(),
        }
    }

    /// Adds a notice and its `details` record.
    pub fn notice(&mut self, text: String, key: &str, record: Json) {
        self.notices.push(text);
        self.details.insert(key.into(), record);
    }

    /// The byte cap's notice, when `truncation` cut the listing.
    pub fn byte_limit(&mut self, truncation: &Truncation) {
        if truncation.truncated {
            let text = format!("{} limit reached", format_size(MAX_BYTES));
            self.notice(text, "truncation", truncation.to_json());
        }
    }

    /// The tool result.
    pub fn finish(mut self) -> Json {
        if !self.notices.is_empty() {
            self.text
                .push_str(&format!("\n\n[{}]", self.notices.join(". ")));
        }
        let details = (!self.details.is_empty()).then_some(Json::Object(self.details));
        super::text_result(&self.text, details)
    }
}
