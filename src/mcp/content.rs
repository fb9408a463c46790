//! An MCP `tools/call` result as an agent tool result: text and images pass through, embedded
//! resources become text (or an image), other blocks a short placeholder; `isError` makes an
//! error result; a result without blocks but with `structuredContent` shows it as JSON. Text
//! beyond `MAX_TEXT_BYTES` keeps its start and end (the reference's 20 KB model-facing limit).

use crate::json::{json, Json};

/// The model-facing text of one result is cut in the middle beyond this.
pub const MAX_TEXT_BYTES: usize = 20 * 1024;

/// The tool result for `server`'s `tool` from the `CallToolResult` JSON.
pub fn tool_result(server: &str, tool: &str, result: &Json) -> Json {
    let blocks = result.get("content").and_then(Json::as_array);
    let mut content: Vec<Json> = blocks.into_iter().flatten().map(block).collect();
    let structured = result.get("structuredContent").filter(|v| !v.is_null());
    if content.is_empty() {
        if let Some(structured) = structured {
            content.push(text(crate::json::to_string_pretty(structured)));
        }
    }
    let is_error = result.get("isError") == Some(&Json::Bool(true));
    if is_error && text_of(&content).is_empty() {
        content.push(text(format!(
            "MCP tool {server}/{tool} failed without saying why."
        )));
    }
    let content = limit(content);
    let mut out = json!({"content": content, "details": {"server": server, "tool": tool}});
    if let Some(structured) = structured {
        out["structuredContent"] = structured.clone();
    }
    if is_error {
        out["isError"] = Json::Bool(true);
    }
    out
}

fn text(text: String) -> Json {
    json!({"type": "text", "text": text})
}

fn str_field<'a>(value: &'a Json, key: &str) -> &'a str {
    value.get(key).and_then(Json::as_str).unwrap_or_default()
}

/// One MCP content block as a text or image block.
fn block(block: &Json) -> Json {
    match str_field(block, "type") {
        "text" => text(str_field(block, "text").to_string()),
        "image" => json!({"type": "image", "data": str_field(block, "data"),
            "mimeType": str_field(block, "mimeType")}),
        "audio" => text(format!("[audio {} left out]", str_field(block, "mimeType"))),
        "resource_link" => text(format!(
            "[resource {}: {}]",
            str_field(block, "name"),
            str_field(block, "uri")
        )),
        "resource" => {
            let resource = block.get("resource").unwrap_or(&Json::Null);
            let mime = str_field(resource, "mimeType");
            if let Some(body) = resource.get("text").and_then(Json::as_str) {
                text(body.to_string())
            } else if mime.starts_with("image/") {
                json!({"type": "image", "data": str_field(resource, "blob"), "mimeType": mime})
            } else {
                let mime = if mime.is_empty() {
                    "unknown type"
                } else {
                    mime
                };
                text(format!(
                    "[binary resource {} ({mime}) left out]",
                    str_field(resource, "uri")
                ))
            }
        }
        other => text(format!("[MCP content of type \"{other}\" left out]")),
    }
}

fn text_of(content: &[Json]) -> String {
    let texts: Vec<&str> = content
        .iter()
        .filter(|b| str_field(b, "type") == "text")
        .map(|b| str_field(b, "text"))
        .collect();
    texts.join("\n")
}

/// Within the limit the blocks stay as they are; beyond it, the text becomes one block with its
/// middle cut out, followed by the images.
fn limit(content: Vec<Json>) -> Vec<Json> {
    let combined = text_of(&content);
    if combined.len() <= MAX_TEXT_BYTES {
        return content;
    }
    let mut head = MAX_TEXT_BYTES / 2;
    while !combined.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = combined.len() - (MAX_TEXT_BYTES - MAX_TEXT_BYTES / 2);
    while !combined.is_char_boundary(tail) {
        tail += 1;
    }
    let cut = combined[head..tail].chars().count();
    let lines = combined.split('\n').count() - usize::from(combined.ends_with('\n'));
    let notice = format!(
        "[The tool's output was {} bytes in {lines} lines; {cut} characters in the middle were cut.]",
        combined.len()
    );
    let mut limited = vec![text(format!(
        "{notice}\n\n{}…{cut} chars cut…{}",
        &combined[..head],
        &combined[tail..]
    ))];
    limited.extend(
        content
            .into_iter()
            .filter(|b| str_field(b, "type") == "image"),
    );
    limited
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_map_to_text_and_images() {
        let result = json!({"content": [
            {"type": "text", "text": "hi"},
            {"type": "image", "data": "AAA", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///a", "text": "body"}},
            {"type": "resource", "resource": {"uri": "file:///b", "blob": "QQ==", "mimeType": "application/pdf"}},
        ]});
        let out = tool_result("s", "t", &result);
        assert_eq!(
            out["content"],
            json!([{"type": "text", "text": "hi"},
                {"type": "image", "data": "AAA", "mimeType": "image/png"},
                {"type": "text", "text": "body"},
                {"type": "text", "text": "[binary resource file:///b (application/pdf) left out]"}])
        );
        assert_eq!(out["details"], json!({"server": "s", "tool": "t"}));
        assert!(out.get("isError").is_none());
    }

    #[test]
    fn errors_structured_content_and_the_text_limit() {
        let failed = tool_result("s", "t", &json!({"content": [], "isError": true}));
        assert_eq!(failed["isError"], json!(true));
        assert!(failed["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("s/t failed"));
        let structured = tool_result(
            "s",
            "t",
            &json!({"content": [], "structuredContent": {"a": 1}}),
        );
        assert_eq!(structured["content"][0]["text"], json!("{\n  \"a\": 1\n}"));
        let long = "é".repeat(30_000);
        let cut = tool_result(
            "s",
            "t",
            &json!({"content": [{"type": "text", "text": long}]}),
        );
        let text = cut["content"][0]["text"].as_str().unwrap();
        assert!(text.len() < MAX_TEXT_BYTES + 200, "{}", text.len());
        assert!(text.contains("60000 bytes in 1 lines"));
    }
}
