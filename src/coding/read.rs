//! `read`: a file's lines (1-based offset/limit), cut at 2000 lines or 50 KB with a notice that
//! says how to continue; images as attachments. The file is read in chunks: only the lines that
//! can be shown are kept, the rest are counted, so memory does not grow with the file. Only
//! regular files are read (a named pipe or a device is refused without blocking).

use std::io::Read;

use super::open::{open_regular, OpenError, Use};
use super::root::{node_code, node_error, Root};
use super::truncate::{format_size, truncate_head, MAX_BYTES, MAX_LINES};
use super::{check_abort, number, string};
use crate::host::AbortSignal;
use crate::json::{json, Json};

const CHUNK: usize = 64 * 1024;
/// Images larger than this are not attached (the model could not take them anyway).
const MAX_IMAGE_BYTES: u64 = 20 * 1024 * 1024;

pub fn run(root: &Root, args: &Json, signal: &AbortSignal) -> Result<Json, String> {
    let path = string(args, "path").unwrap_or_default();
    let resolved = root.resolve(path)?;
    let metadata = root
        .dir()
        .metadata(&resolved.rel)
        .map_err(|error| node_error(&error, "access", path, &resolved.display))?;
    if metadata.is_dir() {
        return Err("EISDIR: illegal operation on a directory, read".into());
    }
    let (mut file, metadata) =
        open_regular(root, &resolved.rel, path, Use::Read).map_err(|error| match error {
            OpenError::Refused(message) => message,
            OpenError::Io(error) => node_error(&error, "open", path, &resolved.display),
        })?;
    let mut head = [0u8; 16];
    let head_len = read_up_to(&mut file, &mut head).map_err(|e| e.to_string())?;
    if let Some(mime) = image_mime(&head[..head_len]) {
        if metadata.len() <= MAX_IMAGE_BYTES {
            return read_image(head[..head_len].to_vec(), file, mime);
        }
    }
    let offset = number(args, "offset");
    let limit = number(args, "limit");
    let start_line = match offset {
        Some(offset) if offset != 0.0 && offset.is_finite() => {
            (offset.floor() - 1.0).max(0.0) as usize
        }
        _ => 0,
    };
    let end_line = limit.map(|limit| start_line.saturating_add(limit.max(0.0).floor() as usize));
    let mut selection = Selection::new(start_line, end_line.unwrap_or(usize::MAX));
    selection.feed(&head[..head_len]);
    // A regular file is read up to its size at open, so a file that keeps growing still ends.
    let rest = if metadata.is_file() && metadata.len() > 0 {
        metadata.len().saturating_sub(head_len as u64)
    } else {
        u64::MAX
    };
    let mut file = file.take(rest);
    let mut buffer = vec![0u8; CHUNK];
    loop {
        check_abort(signal)?;
        let n = file.read(&mut buffer).map_err(|error| {
            let (code, description) = node_code(&error);
            format!("{code}: {description}, read")
        })?;
        if n == 0 {
            break;
        }
        selection.feed(&buffer[..n]);
    }
    let selected = selection.finish();
    let total_file_lines = selected.total_file_lines;
    if start_line >= total_file_lines {
        return Err(format!(
            "Offset {} is beyond end of file ({total_file_lines} lines total)",
            js_number(offset.unwrap_or(0.0))
        ));
    }
    let mut truncation = truncate_head(&selected.stored, MAX_LINES, MAX_BYTES);
    truncation.total_lines = selected.total_lines;
    truncation.total_bytes = selected.total_bytes;
    let start_display = start_line + 1;
    let mut details = None;
    let text = if truncation.first_line_exceeds_limit {
        details = Some(json!({"truncation": truncation.to_json()}));
        format!(
            "[Line {start_display} is {}, exceeds {} limit. Use bash: sed -n '{start_display}p' {path} | head -c {MAX_BYTES}]",
            format_size(selected.first_line_bytes),
            format_size(MAX_BYTES)
        )
    } else if truncation.truncated {
        let end_display = start_display + truncation.output_lines - 1;
        let next = end_display + 1;
        let notice = if truncation.truncated_by == Some("lines") {
            format!("[Showing lines {start_display}-{end_display} of {total_file_lines}. Use offset={next} to continue.]")
        } else {
            format!(
                "[Showing lines {start_display}-{end_display} of {total_file_lines} ({} limit). Use offset={next} to continue.]",
                format_size(MAX_BYTES)
            )
        };
        let text = format!("{}\n\n{notice}", truncation.content);
        details = Some(json!({"truncation": truncation.to_json()}));
        text
    } else {
        match end_line {
            Some(end) if end.min(total_file_lines) < total_file_lines => {
                let shown_end = end.min(total_file_lines);
                format!(
                    "{}\n\n[{} more lines in file. Use offset={} to continue.]",
                    truncation.content,
                    total_file_lines - shown_end,
                    shown_end + 1
                )
            }
            _ => truncation.content,
        }
    };
    let mut result = serde_json::Map::new();
    result.insert("content".into(), json!([{"type": "text", "text": text}]));
    if let Some(details) = details {
        result.insert("details".into(), details);
    }
    result.insert("structuredContent".into(), Json::String(text));
    Ok(Json::Object(result))
}

/// Reads until `buffer` is full or the file ends.
fn read_up_to(file: &mut impl Read, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match file.read(&mut buffer[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

/// The image types the reference attaches, recognized by their first bytes.
fn image_mime(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else if head.starts_with(b"BM") && head.len() >= 14 {
        Some("image/bmp")
    } else {
        None
    }
}

fn read_image(mut bytes: Vec<u8>, mut file: impl Read, mime: &str) -> Result<Json, String> {
    file.read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    let data = base64(&bytes);
    let text = format!("Read image file [{mime}]");
    let content = json!([
        {"type": "text", "text": text},
        {"type": "image", "data": data, "mimeType": mime},
    ]);
    Ok(json!({
        "content": content,
        "structuredContent": {"type": "image", "data": data, "mimeType": mime, "note": text},
    }))
}

fn base64(bytes: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(TABLE[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A number as JavaScript prints it (whole numbers without a fraction).
fn js_number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

/// The lines `start..end` of a file fed in chunks.
struct Selection {
    start: usize,
    end: usize,
    /// The current line (0-based).
    line: usize,
    /// The selected lines that can be shown, joined by newlines (kept up to the caps).
    stored: String,
    stored_lines: usize,
    storing: bool,
    /// The current line's bytes (kept up to just over the byte cap) and its full length.
    current: Vec<u8>,
    current_len: usize,
    selected_lines: usize,
    selected_bytes: usize,
    first_line_bytes: usize,
    last_line_empty: bool,
}

/// What a selection found.
struct Selected {
    stored: String,
    total_file_lines: usize,
    total_lines: usize,
    total_bytes: usize,
    first_line_bytes: usize,
}

impl Selection {
    fn new(start: usize, end: usize) -> Self {
        Selection {
            start,
            end,
            line: 0,
            stored: String::new(),
            stored_lines: 0,
            storing: true,
            current: Vec::new(),
            current_len: 0,
            selected_lines: 0,
            selected_bytes: 0,
            first_line_bytes: 0,
            last_line_empty: true,
        }
    }

    fn selected(&self) -> bool {
        self.line >= self.start && self.line < self.end
    }

    fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let newline = bytes.iter().position(|b| *b == b'\n');
            let text = &bytes[..newline.unwrap_or(bytes.len())];
            if self.selected() {
                self.append(text);
                self.selected_bytes += text.len();
            }
            let Some(at) = newline else { break };
            if self.selected() {
                self.finish_line();
                if self.line + 1 != self.end {
                    self.selected_bytes += 1;
                }
            }
            self.line += 1;
            bytes = &bytes[at + 1..];
        }
    }

    fn append(&mut self, text: &[u8]) {
        if self.storing && self.current.len() <= MAX_BYTES {
            let room = MAX_BYTES + 4 - self.current.len();
            self.current
                .extend_from_slice(&text[..text.len().min(room)]);
        }
        self.current_len += text.len();
    }

    fn finish_line(&mut self) {
        if self.storing {
            if self.selected_lines == 0 {
                self.first_line_bytes = self.current_len;
            }
            if self.stored_lines > 0 {
                self.stored.push('\n');
            }
            self.stored
                .push_str(&String::from_utf8_lossy(&self.current));
            self.stored_lines += 1;
            // Past the caps nothing more can be shown: count, do not keep.
            if self.stored_lines > MAX_LINES + 1 || self.stored.len() > MAX_BYTES * 2 {
                self.storing = false;
            }
        }
        self.selected_lines += 1;
        self.last_line_empty = self.current_len == 0;
        self.current.clear();
        self.current_len = 0;
    }

    fn finish(mut self) -> Selected {
        if self.selected() {
            self.finish_line();
        }
        let total_lines = if self.selected_bytes == 0 {
            0
        } else {
            self.selected_lines - usize::from(self.last_line_empty)
        };
        Selected {
            stored: self.stored,
            total_file_lines: self.line + 1,
            total_lines,
            total_bytes: self.selected_bytes,
            first_line_bytes: self.first_line_bytes,
        }
    }
}
