//! Where a compaction cuts and what it summarizes (kit §4.5).
//!
//! The branch is projected once ([`Projection`]); the newest compaction on it already stands
//! for everything before its kept tail, so the range considered starts after it. Walking back
//! from the newest entry, the cut keeps about `keepRecentTokens` of recent context and lands
//! only where a turn may resume: never on a tool result (it stays with its call), never on a
//! compaction. When the cut falls inside a turn, the turn is split: its start up to the cut is
//! summarized apart (the "turn prefix"), so the kept part still makes sense.

use std::collections::HashSet;

use super::estimate::{estimate_message, estimate_projected};
use super::files::FileOps;
use super::projection::{entry_type, Projection};
use super::threshold::CompactionSettings;
use super::utf16_len;
use crate::json::{json, Json, JsonMap};
use crate::session::{entry_messages, ProjectedEntry};
use crate::transcript::content_text;

/// A tool result's text is cut to this many UTF-16 units for the summarizer.
pub(crate) const SUMMARIZER_TOOL_RESULT_CHARS: usize = 2000;

/// Where to cut a projected branch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CutPoint {
    /// Index (into the projected entries) of the first entry kept verbatim.
    pub first_kept: usize,
    /// When the cut splits a turn, the index of the entry that starts it.
    pub split_turn_start: Option<usize>,
}

/// What a compaction needs: where it cuts, what to summarize, the previous summary to update
/// and the files touched.
#[derive(Clone, Debug, PartialEq)]
pub struct CompactionPreparation {
    /// The id of the first entry kept verbatim (the compaction entry's `firstKeptEntryId`).
    pub first_kept_entry_id: String,
    /// The cut falls inside a turn; `turn_prefix_messages` holds the turn's start.
    pub is_split_turn: bool,
    /// The projected context estimate before compacting (the compaction entry's `tokensBefore`).
    pub tokens_before: u64,
    /// The summary of the newest compaction on the branch, to be updated (not repeated).
    pub previous_summary: Option<Json>,
    /// The context messages to summarize (system messages left out).
    pub messages_to_summarize: Vec<Json>,
    /// The split turn's messages before the cut (empty when the turn is not split).
    pub turn_prefix_messages: Vec<Json>,
    /// Files read and modified in the summarized messages, plus the previous compaction's lists.
    pub file_ops: FileOps,
    pub settings: CompactionSettings,
}

/// What the summarizer is sent, as data: per message its text, tool calls and cut tool-result
/// text. The words around it are the summarizer prompt's business.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SummarizerInput {
    pub history: Vec<Json>,
    pub turn_prefix: Vec<Json>,
}

impl SummarizerInput {
    /// `{"history": [...], "turnPrefix": [...]}`.
    pub fn to_json(&self) -> Json {
        json!({"history": self.history, "turnPrefix": self.turn_prefix})
    }
}

fn role(message: &Json) -> &str {
    message.get("role").and_then(Json::as_str).unwrap_or("")
}

/// A turn may resume at an entry holding one of these (a tool result never: it follows its call).
fn is_cut_point_role(role: &str) -> bool {
    matches!(
        role,
        "user" | "assistant" | "bashExecution" | "custom" | "branchSummary" | "compactionSummary"
    )
}

/// A turn starts with input: anything user-like, not a model response.
fn is_turn_start_role(role: &str) -> bool {
    matches!(
        role,
        "user" | "bashExecution" | "custom" | "branchSummary" | "compactionSummary"
    )
}

fn holds(entry: &ProjectedEntry, wanted: fn(&str) -> bool) -> bool {
    entry_type(entry.entry) != "compaction" && entry.messages.iter().any(|m| wanted(role(m)))
}

fn entry_tokens(entry: &ProjectedEntry) -> u64 {
    entry.messages.iter().map(estimate_message).sum()
}

/// The cut point among `entries[start..end]` keeping about `keep_recent_tokens`.
pub fn find_cut_point(
    entries: &[ProjectedEntry],
    start: usize,
    end: usize,
    keep_recent_tokens: u64,
) -> CutPoint {
    let candidates: Vec<usize> = (start..end)
        .filter(|&i| holds(&entries[i], is_cut_point_role))
        .collect();
    if candidates.is_empty() {
        return CutPoint {
            first_kept: start,
            split_turn_start: None,
        };
    }
    let mut cut = candidates[0];
    let mut budget_reached = false;
    let mut kept = 0u64;
    for i in (start..end).rev() {
        let tokens = entry_tokens(&entries[i]);
        if tokens == 0 {
            continue;
        }
        kept += tokens;
        if kept >= keep_recent_tokens {
            budget_reached = true;
            // The nearest valid cut at or after this entry; when only tool results follow
            // (they alone exceed the budget), the last valid cut, i.e. their call.
            let at = candidates.partition_point(|&c| c < i);
            cut = candidates
                .get(at)
                .copied()
                .unwrap_or(candidates[candidates.len() - 1]);
            break;
        }
    }
    if budget_reached && is_omitted_attempt_suffix(&entries[cut + 1..end]) {
        cut += 1;
    }
    // Entries that add nothing to the context (model or thinking changes, labels, ...) just
    // before the cut stay with what is kept; a compaction is a hard boundary.
    while cut > start {
        let previous = &entries[cut - 1];
        if entry_type(previous.entry) == "compaction" || !previous.messages.is_empty() {
            break;
        }
        cut -= 1;
    }
    let split_turn_start = if holds(&entries[cut], is_turn_start_role) {
        None
    } else {
        (start..=cut)
            .rev()
            .find(|&i| holds(&entries[i], is_turn_start_role))
    };
    CutPoint {
        first_kept: cut,
        split_turn_start,
    }
}

/// True when everything after the cut is a failed attempt that context edits have omitted
/// (with the edits themselves): nothing there is visible, so keeping it would keep nothing
/// the model sees and the cut moves past the entry it would otherwise keep alone. Not when
/// some edit there replaces content of an entry outside that suffix (that is visible input).
fn is_omitted_attempt_suffix(suffix: &[ProjectedEntry]) -> bool {
    let visible_in_itself = |e: &ProjectedEntry| {
        entry_type(e.entry) != "context_edit" && !entry_messages(e.entry).is_empty()
    };
    let omitted = |e: &ProjectedEntry| visible_in_itself(e) && e.messages.is_empty();
    let omitted_ids: HashSet<&str> = suffix
        .iter()
        .filter(|e| omitted(e))
        .filter_map(|e| e.entry.get("id").and_then(Json::as_str))
        .collect();
    let replaces_outside = suffix.iter().any(|e| {
        entry_type(e.entry) == "context_edit"
            && !matches!(e.entry.get("replacement"), Some(Json::Null))
            && !e
                .entry
                .get("targetId")
                .and_then(Json::as_str)
                .is_some_and(|target| omitted_ids.contains(&target))
    });
    let has_omitted_assistant = suffix.iter().any(|e| {
        entry_type(e.entry) == "message"
            && e.entry.pointer("/message/role").and_then(Json::as_str) == Some("assistant")
            && omitted(e)
    });
    !replaces_outside
        && has_omitted_assistant
        && suffix
            .iter()
            .all(|e| entry_type(e.entry) != "compaction" && (!visible_in_itself(e) || omitted(e)))
}

/// The messages a range contributes to a summary: compactions and system messages left out
/// (system messages are prompt state; the compaction entry carries their replay).
fn summarized_messages(entries: &[ProjectedEntry]) -> Vec<Json> {
    entries
        .iter()
        .filter(|e| entry_type(e.entry) != "compaction")
        .flat_map(|e| e.messages.iter())
        .filter(|m| role(m) != "system")
        .cloned()
        .collect()
}

/// Prepares compacting `branch` (the path from the root to the leaf): None when the branch
/// ends with a compaction or there is nothing to summarize. Linear in the branch: one
/// projection, one backward walk.
pub fn prepare_compaction(
    branch: &[&Json],
    settings: &CompactionSettings,
) -> Option<CompactionPreparation> {
    if branch
        .last()
        .is_some_and(|e| e.get("type").and_then(Json::as_str) == Some("compaction"))
    {
        return None;
    }
    let projection = Projection::of_branch(branch);
    let entries = &projection.entries;
    let previous = entries
        .iter()
        .position(|e| entry_type(e.entry) == "compaction" && !e.messages.is_empty());
    let start = previous.map_or(0, |p| p + 1);
    let tokens_before = estimate_projected(&projection, branch).tokens;
    let cut = find_cut_point(entries, start, entries.len(), settings.keep_recent_tokens);
    let first_kept_entry_id = entries
        .get(cut.first_kept)?
        .entry
        .get("id")
        .and_then(Json::as_str)
        .filter(|id| !id.is_empty())?
        .to_string();
    let history_end = cut.split_turn_start.unwrap_or(cut.first_kept);
    let messages_to_summarize = summarized_messages(&entries[start..history_end]);
    let turn_prefix_messages = match cut.split_turn_start {
        Some(turn_start) => summarized_messages(&entries[turn_start..cut.first_kept]),
        None => Vec::new(),
    };
    if messages_to_summarize.is_empty() && turn_prefix_messages.is_empty() {
        return None;
    }
    let mut file_ops = FileOps::default();
    if let Some(previous) = previous.map(|p| entries[p].entry) {
        add_previous_lists(&mut file_ops, previous);
    }
    for message in messages_to_summarize.iter().chain(&turn_prefix_messages) {
        file_ops.add_message(message);
    }
    Some(CompactionPreparation {
        first_kept_entry_id,
        is_split_turn: cut.split_turn_start.is_some(),
        tokens_before,
        previous_summary: previous.and_then(|p| entries[p].entry.get("summary").cloned()),
        messages_to_summarize,
        turn_prefix_messages,
        file_ops,
        settings: *settings,
    })
}

/// A previous compaction written by libagent (or pi) lists the files of what it summarized;
/// one written by a hook or extension (`fromHook`) is not trusted to.
fn add_previous_lists(file_ops: &mut FileOps, compaction: &Json) {
    let from_hook = compaction
        .get("fromHook")
        .is_some_and(|v| !matches!(v, Json::Null | Json::Bool(false)));
    if from_hook {
        return;
    }
    let paths = |key: &str| -> Vec<String> {
        match compaction.get("details").and_then(|d| d.get(key)) {
            Some(Json::Array(items)) => items
                .iter()
                .filter_map(|p| p.as_str().map(String::from))
                .collect(),
            _ => Vec::new(),
        }
    };
    file_ops.read.extend(paths("readFiles"));
    file_ops.edited.extend(paths("modifiedFiles"));
}

impl CompactionPreparation {
    /// The kit's shape (§4.5): `firstKeptEntryId`, `isSplitTurn`, `tokensBefore`,
    /// `previousSummary`, `messagesToSummarize`, `turnPrefixMessages`, `fileOps`, `readFiles`,
    /// `modifiedFiles`.
    pub fn to_json(&self) -> Json {
        let lists = self.file_ops.lists();
        json!({
            "firstKeptEntryId": self.first_kept_entry_id,
            "isSplitTurn": self.is_split_turn,
            "tokensBefore": self.tokens_before,
            "previousSummary": self.previous_summary.clone().unwrap_or(Json::Null),
            "messagesToSummarize": self.messages_to_summarize,
            "turnPrefixMessages": self.turn_prefix_messages,
            "fileOps": self.file_ops.to_json(),
            "readFiles": lists.read_files,
            "modifiedFiles": lists.modified_files,
        })
    }

    /// What the summarizer is sent for this preparation; `convert_to_llm` turns the context
    /// messages into a model's messages (summaries and bash executions become user text).
    pub fn summarizer_input(
        &self,
        convert_to_llm: impl Fn(&[Json]) -> Vec<Json>,
    ) -> SummarizerInput {
        SummarizerInput {
            history: summarizer_items(&convert_to_llm(&self.messages_to_summarize)),
            turn_prefix: summarizer_items(&convert_to_llm(&self.turn_prefix_messages)),
        }
    }
}

/// One summarizer item per model message that has something to say: a user's text (blocks
/// joined without separator), an assistant's text (blocks joined with a newline; thinking is
/// never sent) and tool calls, a tool result's text cut to `SUMMARIZER_TOOL_RESULT_CHARS` (2000 UTF-16 units).
pub fn summarizer_items(llm_messages: &[Json]) -> Vec<Json> {
    let mut items = Vec::new();
    for message in llm_messages {
        let content = message.get("content").unwrap_or(&Json::Null);
        match role(message) {
            "user" => {
                let text = content_text(content, "");
                if !text.is_empty() {
                    items.push(json!({"role": "user", "text": text}));
                }
            }
            "assistant" => {
                let blocks = content.as_array().map(Vec::as_slice).unwrap_or_default();
                let is = |b: &Json, t: &str| b.get("type").and_then(Json::as_str) == Some(t);
                let mut item = JsonMap::new();
                item.insert("role".into(), "assistant".into());
                if blocks.iter().any(|b| is(b, "text")) {
                    item.insert("text".into(), content_text(content, "\n").into());
                }
                let calls: Vec<Json> = blocks
                    .iter()
                    .filter(|b| is(b, "toolCall"))
                    .map(|b| {
                        json!({
                            "name": b.get("name").cloned().unwrap_or(Json::Null),
                            "arguments": b.get("arguments").cloned().unwrap_or_else(|| json!({})),
                        })
                    })
                    .collect();
                if !calls.is_empty() {
                    item.insert("toolCalls".into(), Json::Array(calls));
                }
                if item.len() > 1 {
                    items.push(Json::Object(item));
                }
            }
            "toolResult" => {
                let text = content_text(content, "");
                if !text.is_empty() {
                    let (kept, cut) = cut_to_utf16(&text, SUMMARIZER_TOOL_RESULT_CHARS);
                    items.push(json!({"role": "toolResult", "text": kept, "truncatedChars": cut}));
                }
            }
            _ => {}
        }
    }
    items
}

/// The first `max` UTF-16 units of `text` (one fewer when the cut would split a surrogate
/// pair), and how many units the whole text has beyond `max` (0 when it fits).
fn cut_to_utf16(text: &str, max: usize) -> (&str, usize) {
    let total = utf16_len(text);
    if total <= max {
        return (text, 0);
    }
    let mut units = 0;
    let mut end = 0;
    for (at, c) in text.char_indices() {
        if units + c.len_utf16() > max {
            break;
        }
        units += c.len_utf16();
        end = at + c.len_utf8();
    }
    (&text[..end], total - max)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A branch of `turns` turns (user, assistant tool call, tool result), with a model change
    /// and a context edit of the previous turn's result every tenth turn.
    fn long_branch(turns: usize) -> Vec<Json> {
        let mut entries = Vec::new();
        let mut parent = Json::Null;
        let mut push = |entries: &mut Vec<Json>, mut entry: Json| {
            let id = format!("e{}", entries.len());
            entry["id"] = json!(id);
            entry["parentId"] = parent.clone();
            entry["timestamp"] = json!("2024-12-03T14:00:00.000Z");
            parent = json!(id);
            entries.push(entry);
        };
        for turn in 0..turns {
            push(
                &mut entries,
                json!({"type": "message", "message": {"role": "user", "content": "q".repeat(400)}}),
            );
            push(
                &mut entries,
                json!({"type": "message", "message": {"role": "assistant", "stopReason": "toolUse",
                "content": [{"type": "toolCall", "id": "c", "name": "read", "arguments": {"path": format!("f{turn}")}}],
                "usage": {"input": 10, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 11}}}),
            );
            push(
                &mut entries,
                json!({"type": "message", "message": {"role": "toolResult", "toolCallId": "c",
                "content": [{"type": "text", "text": "r".repeat(2000)}]}}),
            );
            if turn % 10 == 9 {
                let target = format!("e{}", entries.len() - 1);
                push(
                    &mut entries,
                    json!({"type": "model_change", "provider": "p", "modelId": "m"}),
                );
                push(
                    &mut entries,
                    json!({"type": "context_edit", "targetId": target, "replacement": {"content": "short"}}),
                );
            }
        }
        entries
    }

    /// Messages estimated while preparing a compaction of `turns` turns.
    fn estimates_to_prepare(turns: usize, keep_per_turn: u64) -> usize {
        let entries = long_branch(turns);
        let branch: Vec<&Json> = entries.iter().collect();
        let settings = CompactionSettings {
            keep_recent_tokens: keep_per_turn * turns as u64,
            ..Default::default()
        };
        let before = super::super::estimate::ESTIMATES.with(|c| c.get());
        assert!(prepare_compaction(&branch, &settings).is_some());
        super::super::estimate::ESTIMATES.with(|c| c.get()) - before
    }

    #[test]
    fn preparing_a_compaction_is_linear_in_the_branch() {
        // Each message is estimated a bounded number of times (the projected estimate once,
        // the backward walk at most once), whether the cut is near the end or near the start
        // (a turn estimates to about 610 tokens).
        for keep in [2, 500] {
            let small = estimates_to_prepare(200, keep);
            let large = estimates_to_prepare(1600, keep);
            let messages = 1600 * 3;
            assert!(
                large <= 2 * messages + 1,
                "{large} estimates for {messages} messages (keep {keep})"
            );
            assert!(
                large <= 9 * small,
                "{small} estimates for 200 turns, {large} for 1600 (keep {keep})"
            );
        }
    }

    #[test]
    fn cuts_tool_results_by_utf16_units_without_splitting_a_pair() {
        let text = format!("{}😀tail", "a".repeat(1999));
        let (kept, cut) = cut_to_utf16(&text, 2000);
        assert_eq!(kept, "a".repeat(1999));
        assert_eq!(cut, utf16_len(&text) - 2000);
        assert_eq!(cut_to_utf16("short", 2000), ("short", 0));
    }

    #[test]
    fn an_assistant_with_only_thinking_says_nothing_to_the_summarizer() {
        let items = summarizer_items(&[
            json!({"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm"}]}),
            json!({"role": "user", "content": [{"type": "image", "data": "x"}]}),
            json!({"role": "toolResult", "content": []}),
        ]);
        assert!(items.is_empty());
    }
}
