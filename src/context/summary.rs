//! The compaction summary, written by the agent's own model through its stream function.
//!
//! The model is sent libagent's instructions for a checkpoint summary and the conversation to
//! condense (the data of kit §4.5: the summarizer items of the messages to summarize, the
//! previous summary to update, the host's focus), with no tools and reasoning off. A split turn
//! takes a second request for the turn's start; the two answers are joined under libagent's
//! headings, and the files read and modified are appended so the next compaction carries them.
//!
//! All wording here is libagent's own. Building a request is linear in the messages summarized:
//! each summarizer item is written once into one string.

use super::cut::summarizer_items;
use crate::host::{AbortSignal, StreamFn, StreamRequest};
use crate::json::{json, now_ms, Json};
use crate::message::Message;
use crate::stream::{self, StreamOutput};
use crate::transcript::content_text;

/// What one compaction summary is made from.
pub struct SummaryInput<'a> {
    /// The prepared compaction in the kit's §4.5 shape (`messagesToSummarize`,
    /// `turnPrefixMessages`, `isSplitTurn`, `previousSummary`, `readFiles`, `modifiedFiles`, ...).
    pub preparation: &'a Json,
    /// The host's instructions for a manual compaction ("keep the API design").
    pub focus: Option<&'a str>,
    /// The compaction's reserve: the summary's output budget is derived from it.
    pub reserve_tokens: u64,
}

/// A written summary and what writing it cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub summary: String,
    /// The requests' usage, summed member by member (`None` when no response reported any).
    pub usage: Option<Json>,
}

/// The error of a summary ended by an abort of its signal.
pub const SUMMARY_ABORTED: &str = "The compaction was aborted while its summary was being written.";

/// The heading that starts the file lists appended to a summary. A previous summary's lists
/// are cut off before it is updated: the preparation carries them again, merged.
const FILE_LISTS_HEADING: &str = "\n\n---\nFiles this conversation has touched so far";

const SYSTEM_PROMPT: &str = "You write checkpoint summaries of a working session between a \
user and an AI assistant that uses tools. The conversation itself will be dropped: the \
assistant will continue the work from your summary alone, so it must hold everything needed \
to carry on. Do not continue the conversation, answer its questions or call tools; write only \
the summary.";

const STRUCTURE: &str = "Write the summary in Markdown under these headings:\n\
## Goal\nWhat the user wants achieved, including requirements and preferences they stated.\n\
## Decisions\nChoices that were made and the reasons for them.\n\
## Progress\nWhat is finished, what is under way, and anything that is blocked or failing.\n\
## Files\nThe files that matter and what was learned about or changed in each.\n\
## Next steps\nWhat should happen next, in order.\n\
Be brief, but keep exact names: paths, identifiers, commands, error messages and values.";

const TURN_PREFIX_TASK: &str = "The messages above are the beginning of a turn that is still \
in progress. Only its later part is kept word for word after your summary, so that part may \
not make sense on its own. Summarize this beginning briefly: what the user asked for in this \
turn, what has been done and found so far, and anything the later part relies on.";

/// Which part of a compaction one request writes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    History,
    TurnPrefix,
}

/// Writes the summary with the agent's own model through its stream function. `stream_options`
/// are the agent's options for a request (API key, identity, ...): `reasoning` is removed and
/// `maxTokens` set from `reserve_tokens`.
pub async fn summarize(
    stream_fn: &StreamFn,
    model: &Json,
    stream_options: &Json,
    input: SummaryInput<'_>,
    signal: &AbortSignal,
) -> Result<Summary, String> {
    let preparation = input.preparation;
    let llm_items = |key: &str| -> Vec<Json> {
        match preparation.get(key) {
            Some(Json::Array(messages)) => {
                summarizer_items(&crate::session::convert_to_llm(messages))
            }
            _ => Vec::new(),
        }
    };
    let history = llm_items("messagesToSummarize");
    let turn_prefix = llm_items("turnPrefixMessages");
    let previous = previous_summary(preparation);
    if history.is_empty() && turn_prefix.is_empty() {
        return Err(
            "There is nothing to summarize: the compaction's preparation holds no messages with text."
                .into(),
        );
    }

    let mut usage = None;
    let history_summary = if history.is_empty() {
        // Nothing new before the split turn: the previous summary still stands for it.
        previous.clone()
    } else {
        let prompt = history_prompt(&history, previous.as_deref(), input.focus);
        let budget = output_budget(model, input.reserve_tokens, Part::History);
        let text = request(stream_fn, model, stream_options, prompt, budget, signal).await?;
        add_usage(&mut usage, text.1.as_ref());
        Some(text.0)
    };
    let prefix_summary = if turn_prefix.is_empty() {
        None
    } else {
        let prompt = turn_prefix_prompt(&turn_prefix, input.focus);
        let budget = output_budget(model, input.reserve_tokens, Part::TurnPrefix);
        let text = request(stream_fn, model, stream_options, prompt, budget, signal).await?;
        add_usage(&mut usage, text.1.as_ref());
        Some(text.0)
    };

    let mut summary = match (history_summary, prefix_summary) {
        (Some(history), Some(prefix)) => format!(
            "# The conversation so far\n\n{history}\n\n# The turn in progress (its later part follows this summary)\n\n{prefix}"
        ),
        (Some(history), None) => history,
        (None, Some(prefix)) => format!(
            "# The turn in progress (its later part follows this summary)\n\n{prefix}"
        ),
        (None, None) => String::new(),
    };
    append_file_lists(&mut summary, preparation);
    Ok(Summary { summary, usage })
}

/// The previous compaction's summary, without the file lists libagent appended to it.
fn previous_summary(preparation: &Json) -> Option<String> {
    let text = match preparation.get("previousSummary")? {
        Json::Null => return None,
        Json::String(text) => text.clone(),
        other => crate::json::to_string(other),
    };
    let text = match text.rfind(FILE_LISTS_HEADING) {
        Some(at) => text[..at].to_string(),
        None => text,
    };
    Some(text).filter(|t| !t.trim().is_empty())
}

/// The output budget of one request: most of the reserve for the history, half of it for a
/// split turn's start; never above the model's own output limit, and at least one token.
fn output_budget(model: &Json, reserve_tokens: u64, part: Part) -> u64 {
    let budget = match part {
        Part::History => reserve_tokens.saturating_mul(4) / 5,
        Part::TurnPrefix => reserve_tokens / 2,
    };
    let model_limit = model
        .get("maxTokens")
        .and_then(Json::as_f64)
        .filter(|&m| m >= 1.0)
        .map_or(u64::MAX, |m| m as u64);
    budget.min(model_limit).max(1)
}

fn history_prompt(items: &[Json], previous: Option<&str>, focus: Option<&str>) -> String {
    let mut prompt = String::new();
    write_conversation(&mut prompt, items);
    if let Some(previous) = previous {
        prompt.push_str(
            "\n\nWhat came before these messages was condensed earlier into the summary below. \
Update it with the messages above rather than starting over: keep what still holds, correct \
what has changed and add what is new.\n<earlier-summary>\n",
        );
        prompt.push_str(previous);
        prompt.push_str("\n</earlier-summary>");
    }
    write_focus(&mut prompt, focus);
    prompt.push_str("\n\n");
    prompt.push_str(STRUCTURE);
    prompt
}

fn turn_prefix_prompt(items: &[Json], focus: Option<&str>) -> String {
    let mut prompt = String::new();
    write_conversation(&mut prompt, items);
    prompt.push_str("\n\n");
    prompt.push_str(TURN_PREFIX_TASK);
    write_focus(&mut prompt, focus);
    prompt
}

fn write_focus(prompt: &mut String, focus: Option<&str>) {
    if let Some(focus) = focus.map(str::trim).filter(|f| !f.is_empty()) {
        prompt.push_str("\n\nThe user asked this summary to pay particular attention to:\n");
        prompt.push_str(focus);
    }
}

/// The summarizer items as labelled sections (kit §4.5's data, libagent's wording).
fn write_conversation(out: &mut String, items: &[Json]) {
    out.push_str("The conversation to summarize:\n<conversation>");
    for item in items {
        let text = item.get("text").and_then(Json::as_str);
        match item.get("role").and_then(Json::as_str) {
            Some("user") => section(out, "The user wrote", text.unwrap_or("")),
            Some("assistant") => {
                if let Some(text) = text {
                    section(out, "The assistant replied", text);
                }
                let calls = item.get("toolCalls").and_then(Json::as_array);
                for call in calls.into_iter().flatten() {
                    let name = call.get("name").and_then(Json::as_str).unwrap_or("?");
                    let arguments = call.get("arguments").unwrap_or(&Json::Null);
                    out.push_str("\n\n=== The assistant called the tool ");
                    out.push_str(name);
                    out.push_str(" with ");
                    crate::json::write_json(out, arguments);
                    out.push_str(" ===");
                }
            }
            Some("toolResult") => {
                section(out, "The tool returned", text.unwrap_or(""));
                let cut = item.get("truncatedChars").and_then(Json::as_u64);
                if let Some(cut) = cut.filter(|&n| n > 0) {
                    out.push_str(&format!(
                        "\n[{cut} more characters of this output are not shown]"
                    ));
                }
            }
            _ => {}
        }
    }
    out.push_str("\n</conversation>");
}

fn section(out: &mut String, label: &str, text: &str) {
    out.push_str("\n\n=== ");
    out.push_str(label);
    out.push_str(" ===\n");
    out.push_str(text);
}

/// Appends the preparation's file lists (only those that are not empty).
fn append_file_lists(summary: &mut String, preparation: &Json) {
    let list = |key: &str| -> Vec<&str> {
        preparation
            .get(key)
            .and_then(Json::as_array)
            .map(|paths| paths.iter().filter_map(Json::as_str).collect())
            .unwrap_or_default()
    };
    let read = list("readFiles");
    let modified = list("modifiedFiles");
    if read.is_empty() && modified.is_empty() {
        return;
    }
    summary.push_str(FILE_LISTS_HEADING);
    summary.push(':');
    for (label, paths) in [("Read", read), ("Modified", modified)] {
        if paths.is_empty() {
            continue;
        }
        summary.push_str("\n\n");
        summary.push_str(label);
        summary.push(':');
        for path in paths {
            summary.push_str("\n- ");
            summary.push_str(path);
        }
    }
}

/// Sends one summary request and returns the answer's text and usage.
async fn request(
    stream_fn: &StreamFn,
    model: &Json,
    stream_options: &Json,
    prompt: String,
    max_tokens: u64,
    signal: &AbortSignal,
) -> Result<(String, Option<Json>), String> {
    let mut options = match stream_options {
        Json::Object(options) => options.clone(),
        _ => Default::default(),
    };
    // The summary is plain writing: no thinking budget competes with its output budget.
    options.remove("reasoning");
    options.insert("maxTokens".into(), json!(max_tokens));
    let messages = vec![
        Message::new(json!({"role": "system", "content": SYSTEM_PROMPT, "timestamp": now_ms()})),
        Message::new(
            json!({"role": "user", "content": [{"type": "text", "text": prompt}],
            "timestamp": now_ms()}),
        ),
    ];
    let request = StreamRequest {
        model: std::sync::Arc::new(model.clone()),
        messages: std::sync::Arc::new(messages),
        options: Json::Object(options),
        signal: signal.clone(),
        text_cache: None,
    };
    crate::dispatch::before_callback().await;
    if signal.is_aborted() {
        return Err(SUMMARY_ABORTED.into());
    }
    let (sender, mut receiver) = stream::channel(model);
    stream_fn(request, sender);
    let message = loop {
        let output = tokio::select! {
            biased;
            _ = signal.aborted() => {
                receiver.close();
                return Err(SUMMARY_ABORTED.into());
            }
            output = receiver.next() => output,
        };
        match output {
            StreamOutput::Final { message, .. } => {
                receiver.notify_consumed().await;
                break message;
            }
            StreamOutput::FunctionFailed(error) => {
                return Err(format!("The summary request failed: {error}"));
            }
            _ => receiver.notify_consumed().await,
        }
    };
    answer(&message, max_tokens)
}

/// The summary text of a final message, or why it cannot be used.
fn answer(message: &Json, max_tokens: u64) -> Result<(String, Option<Json>), String> {
    let error_text = || {
        message
            .get("errorMessage")
            .and_then(Json::as_str)
            .filter(|e| !e.is_empty())
            .unwrap_or("no error message")
            .to_string()
    };
    match message.get("stopReason").and_then(Json::as_str) {
        Some("error") => {
            return Err(format!(
                "The summary request failed: the model answered with an error ({}).",
                error_text()
            ))
        }
        Some("aborted") => {
            return Err(format!(
                "The summary request was aborted ({}).",
                error_text()
            ))
        }
        Some("length") => {
            return Err(format!(
                "The summary did not fit in its budget of {max_tokens} output tokens (the model stopped at its length limit); raise reserveTokens or compact with a narrower focus."
            ))
        }
        _ => {}
    }
    let content = message.get("content").unwrap_or(&Json::Null);
    let calls_tool = content.as_array().is_some_and(|blocks| {
        blocks
            .iter()
            .any(|b| b.get("type").and_then(Json::as_str) == Some("toolCall"))
    });
    if calls_tool {
        return Err(
            "The model answered the summary request with a tool call instead of a summary (it was offered no tools)."
                .into(),
        );
    }
    let text = content_text(content, "\n").trim().to_string();
    if text.is_empty() {
        return Err("The model answered the summary request without any text.".into());
    }
    Ok((text, message.get("usage").cloned()))
}

/// Adds `usage` to `total` member by member (numbers summed, objects recursively).
fn add_usage(total: &mut Option<Json>, usage: Option<&Json>) {
    let Some(usage) = usage.filter(|u| u.is_object()) else {
        return;
    };
    match total {
        None => *total = Some(usage.clone()),
        Some(sum) => add_numbers(sum, usage),
    }
}

fn add_numbers(sum: &mut Json, add: &Json) {
    let (Json::Object(sum), Json::Object(add)) = (sum, add) else {
        return;
    };
    for (key, value) in add {
        match (sum.get_mut(key), value) {
            (Some(Json::Number(a)), Json::Number(b)) => {
                let total = crate::json::number_value(a) + crate::json::number_value(b);
                sum.insert(key.clone(), crate::json::number(total));
            }
            (Some(existing @ Json::Object(_)), Json::Object(_)) => add_numbers(existing, value),
            (None, _) => {
                sum.insert(key.clone(), value.clone());
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_is_summed_member_by_member() {
        let mut total = None;
        add_usage(
            &mut total,
            Some(&json!({"input": 10, "output": 2, "cost": {"total": 0.5}})),
        );
        add_usage(&mut total, None);
        add_usage(
            &mut total,
            Some(&json!({"input": 5, "output": 3, "cost": {"total": 0.25}, "cacheRead": 7})),
        );
        assert_eq!(
            total,
            Some(json!({"input": 15, "output": 5, "cost": {"total": 0.75}, "cacheRead": 7}))
        );
    }

    #[test]
    fn a_previous_summary_loses_its_file_lists_before_it_is_updated() {
        let mut summary = "## Goal\nShip it".to_string();
        append_file_lists(
            &mut summary,
            &json!({"readFiles": ["a.rs"], "modifiedFiles": ["b.rs"]}),
        );
        assert!(summary.contains("\n- a.rs") && summary.contains("\n- b.rs"));
        let previous = previous_summary(&json!({"previousSummary": summary}));
        assert_eq!(previous.as_deref(), Some("## Goal\nShip it"));
        assert_eq!(previous_summary(&json!({"previousSummary": null})), None);
    }

    #[test]
    fn the_budget_is_derived_from_the_reserve_and_capped_by_the_model() {
        let model = json!({"maxTokens": 8000});
        assert_eq!(output_budget(&model, 16384, Part::History), 8000);
        assert_eq!(output_budget(&json!({}), 16384, Part::History), 13107);
        assert_eq!(output_budget(&json!({}), 16384, Part::TurnPrefix), 8192);
        assert_eq!(output_budget(&json!({"maxTokens": 0}), 0, Part::History), 1);
    }

    #[test]
    fn the_prompt_grows_linearly_with_the_messages() {
        let items = |n: usize| -> Vec<Json> {
            (0..n)
                .map(|i| json!({"role": "user", "text": format!("message {i:05}")}))
                .collect()
        };
        let size = |n: usize| history_prompt(&items(n), Some("earlier"), None).len();
        let per_item = size(2000) - size(1000);
        assert_eq!(size(4000) - size(2000), 2 * per_item);
        assert!(
            per_item < 1000 * 64,
            "each item is written once: {per_item}"
        );
    }
}
