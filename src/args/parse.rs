//! The final argument parse (`parseToolCallArguments`) and `repairJson` of SPEC §3.9.

use crate::json::{self, Json, JsonMap};

/// Result of the final parse: `arguments` is `{}` whenever `error` is set.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedArguments {
    pub arguments: Json,
    /// The full `argumentsError` text (`<description>\n\nReceived arguments:\n<text>`).
    pub error: Option<String>,
}

/// The error text for a parsed value that is not an object.
pub const NOT_AN_OBJECT: &str = "Tool arguments must be a JSON object";

/// Parses the complete raw argument text of a tool call (SPEC §3.9).
pub fn parse_tool_call_arguments(text: &str) -> ParsedArguments {
    if text.trim_matches(json::is_js_whitespace).is_empty() {
        return ParsedArguments {
            arguments: Json::Object(JsonMap::new()),
            error: None,
        };
    }
    let parsed = strict_parse(text).or_else(|original_error| {
        let repaired = repair_json(text);
        if repaired != text {
            strict_parse(&repaired)
        } else {
            Err(original_error)
        }
    });
    let description = match parsed {
        Ok(value @ Json::Object(_)) => {
            return ParsedArguments {
                arguments: value,
                error: None,
            }
        }
        Ok(_) => NOT_AN_OBJECT.to_string(),
        Err(description) => description,
    };
    ParsedArguments {
        arguments: Json::Object(JsonMap::new()),
        error: Some(format!("{description}\n\nReceived arguments:\n{text}")),
    }
}

/// Strict JSON parse (lone surrogate escapes become U+FFFD, SPEC §0.4.4).
fn strict_parse(text: &str) -> Result<Json, String> {
    json::parse(text)
}

/// `repairJson` of SPEC §3.9.
pub fn repair_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut in_string = false;
    let mut chars = text.char_indices().peekable();
    let bytes = text.as_bytes();
    while let Some((i, c)) = chars.next() {
        if !in_string {
            out.push(c);
            in_string = c == '"';
            continue;
        }
        match c {
            '"' => {
                out.push(c);
                in_string = false;
            }
            '\\' => match chars.peek().map(|&(_, next)| next) {
                None => out.push_str("\\\\"),
                Some('u') if json::unicode_escape_at(bytes, i).is_some() => {
                    out.push_str(&text[i..i + 6]);
                    for _ in 0..5 {
                        chars.next();
                    }
                }
                Some(next @ ('"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't')) => {
                    out.push('\\');
                    out.push(next);
                    chars.next();
                }
                // The backslash is doubled; the next character is processed normally.
                Some(_) => out.push_str("\\\\"),
            },
            '\u{08}' => out.push_str("\\b"),
            '\u{0C}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}
