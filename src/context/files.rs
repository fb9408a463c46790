//! The files a conversation read and modified (kit §4.6), listed in a compaction summary so the
//! model keeps knowing which files it touched.

use std::collections::HashSet;

use super::cmp_utf16;
use crate::json::{json, Json};

/// Paths by operation, each at most once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileOps {
    pub read: HashSet<String>,
    pub written: HashSet<String>,
    pub edited: HashSet<String>,
}

/// The lists a summary carries: files only read, and files written or edited; both sorted by
/// UTF-16 code units (JavaScript's default sort).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileLists {
    pub read_files: Vec<String>,
    pub modified_files: Vec<String>,
}

fn sorted<'a>(paths: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    let mut list: Vec<String> = paths.into_iter().cloned().collect();
    list.sort_by(|a, b| cmp_utf16(a, b));
    list
}

impl FileOps {
    /// Records the file operations of one message: an assistant's `read`, `write` and `edit`
    /// tool calls, or the calls a tool result records as `nestedCalls.calls` (a script's calls).
    /// A call counts only with a non-empty string `path` argument.
    pub fn add_message(&mut self, message: &Json) {
        match message.get("role").and_then(Json::as_str) {
            Some("toolResult") => {
                if let Some(Json::Array(calls)) = message.pointer("/nestedCalls/calls") {
                    for call in calls {
                        self.add_call(call.get("name"), call.get("arguments"));
                    }
                }
            }
            Some("assistant") => {
                if let Some(Json::Array(blocks)) = message.get("content") {
                    for block in blocks {
                        if block.get("type").and_then(Json::as_str) == Some("toolCall") {
                            self.add_call(block.get("name"), block.get("arguments"));
                        }
                    }
                }
            }
            _ => {}
        }
    }

    fn add_call(&mut self, name: Option<&Json>, arguments: Option<&Json>) {
        let path = arguments.and_then(|a| a.get("path")).and_then(Json::as_str);
        let Some(path) = path.filter(|p| !p.is_empty()) else {
            return;
        };
        let set = match name.and_then(Json::as_str) {
            Some("read") => &mut self.read,
            Some("write") => &mut self.written,
            Some("edit") => &mut self.edited,
            _ => return,
        };
        if !set.contains(path) {
            set.insert(path.to_string());
        }
    }

    /// The operations of every message in `messages`.
    pub fn from_messages<'a>(messages: impl IntoIterator<Item = &'a Json>) -> FileOps {
        let mut ops = FileOps::default();
        for message in messages {
            ops.add_message(message);
        }
        ops
    }

    /// Modified = written ∪ edited; read = read and not modified; both sorted.
    pub fn lists(&self) -> FileLists {
        let modified: HashSet<&String> = self.written.iter().chain(&self.edited).collect();
        FileLists {
            read_files: sorted(self.read.iter().filter(|p| !modified.contains(p))),
            modified_files: sorted(modified),
        }
    }

    /// `{"read", "written", "edited"}`, each list sorted.
    pub fn to_json(&self) -> Json {
        json!({
            "read": sorted(&self.read),
            "written": sorted(&self.written),
            "edited": sorted(&self.edited),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_by_utf16_units_like_javascript() {
        // U+FF5E (one unit 0xFF5E) sorts after U+1F600 (units 0xD83D 0xDE00) in JavaScript,
        // while Rust's byte order puts it first.
        let ops = FileOps::from_messages([&json!({"role": "assistant", "content": [
            {"type": "toolCall", "name": "read", "arguments": {"path": "～"}},
            {"type": "toolCall", "name": "read", "arguments": {"path": "😀"}},
            {"type": "toolCall", "name": "read", "arguments": {"path": "B"}},
            {"type": "toolCall", "name": "read", "arguments": {"path": "a"}},
        ]})]);
        assert_eq!(ops.lists().read_files, ["B", "a", "😀", "～"]);
    }

    #[test]
    fn ignores_other_roles_and_malformed_calls() {
        let ops = FileOps::from_messages([
            &json!({"role": "user", "content": [{"type": "toolCall", "name": "read", "arguments": {"path": "u"}}]}),
            &json!({"role": "toolResult", "nestedCalls": {"calls": [{"name": "edit"}, {"name": "write", "arguments": {"path": "w"}}]}}),
            &json!({"role": "assistant", "content": "text"}),
        ]);
        assert_eq!(
            ops.lists(),
            FileLists {
                read_files: vec![],
                modified_files: vec!["w".into()]
            }
        );
    }
}
