//! Context messages converted for a model (pi `convertToLlm`), with libagent's own wording for
//! summaries and shell commands the user ran.

use crate::json::{json, Json, JsonMap};

/// Converts a session's context messages for a model: `custom` messages become user messages,
/// `bashExecution` ones a user message describing the command and its output (left out when
/// `excludeFromContext`), compaction and branch summaries a user message holding the summary;
/// system, user, assistant and tool-result messages pass unchanged, and other roles are dropped.
pub fn convert_to_llm(messages: &[Json]) -> Vec<Json> {
    messages.iter().filter_map(convert).collect()
}

fn convert(message: &Json) -> Option<Json> {
    let role = message.get("role").and_then(Json::as_str)?;
    let text_of = |key: &str| -> String {
        match message.get(key) {
            Some(Json::String(text)) => text.clone(),
            Some(Json::Null) | None => String::new(),
            Some(other) => crate::json::to_string(other),
        }
    };
    let content = match role {
        "system" | "user" | "assistant" | "toolResult" => return Some(message.clone()),
        "custom" => match message.get("content") {
            Some(Json::String(text)) => json!([{"type": "text", "text": text}]),
            Some(content) => content.clone(),
            None => Json::Null,
        },
        "bashExecution" => {
            if message
                .get("excludeFromContext")
                .is_some_and(super::is_truthy)
            {
                return None;
            }
            json!([{"type": "text", "text": bash_text(message, &text_of)}])
        }
        "compactionSummary" => json!([{"type": "text", "text": format!(
            "Earlier messages of this conversation were condensed into this summary:\n<conversation-summary>\n{}\n</conversation-summary>",
            text_of("summary")
        )}]),
        "branchSummary" => json!([{"type": "text", "text": format!(
            "The conversation came back here from another branch, which went as follows:\n<branch-summary>\n{}\n</branch-summary>",
            text_of("summary")
        )}]),
        _ => return None,
    };
    let mut user = JsonMap::new();
    user.insert("role".into(), "user".into());
    if !content.is_null() {
        user.insert("content".into(), content);
    }
    if let Some(timestamp) = message.get("timestamp") {
        user.insert("timestamp".into(), timestamp.clone());
    }
    Some(Json::Object(user))
}

/// A shell command the user ran, as the model reads it.
fn bash_text(message: &Json, text_of: &dyn Fn(&str) -> String) -> String {
    let output = text_of("output");
    let mut text = format!("The user ran this shell command: {}\n", text_of("command"));
    if output.is_empty() {
        text.push_str("It printed nothing.");
    } else {
        text.push_str(&format!("Its output:\n<output>\n{output}\n</output>"));
    }
    if message.get("cancelled").is_some_and(super::is_truthy) {
        text.push_str("\nThe command was cancelled.");
    } else if let Some(code) = message.get("exitCode").and_then(Json::as_f64) {
        if code != 0.0 {
            text.push_str(&format!(
                "\nIt exited with code {}.",
                crate::json::number_to_string(code)
            ));
        }
    }
    if message.get("truncated").is_some_and(super::is_truthy) {
        if let Some(Json::String(path)) = message.get("fullOutputPath") {
            text.push_str(&format!(
                "\nThe output was truncated; all of it is in {path}."
            ));
        }
    }
    text
}
