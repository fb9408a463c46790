//! A branch's context with provenance: the session's projection ([`crate::session::project`])
//! kept entry by entry, so an estimate can tell which entry a message came from and the cut
//! point can weigh and cut whole entries.

use crate::json::Json;
use crate::session::{project, ProjectedEntry};

/// A branch projected into context messages, entry by entry.
#[derive(Clone, Debug, Default)]
pub struct Projection<'a> {
    pub entries: Vec<ProjectedEntry<'a>>,
}

impl<'a> Projection<'a> {
    /// Projects `branch` (the path from the root to the leaf, in order).
    pub fn of_branch(branch: &[&'a Json]) -> Projection<'a> {
        Projection {
            entries: project(branch),
        }
    }

    /// Every context message, in order.
    pub fn messages(&self) -> Vec<&Json> {
        self.entries
            .iter()
            .flat_map(|e| e.messages.iter())
            .collect()
    }

    /// The entry that contributed the context message at `index` of [`Projection::messages`].
    pub fn source_of_message(&self, index: usize) -> Option<&'a Json> {
        let mut end = 0;
        for projected in &self.entries {
            end += projected.messages.len();
            if index < end {
                return Some(projected.entry);
            }
        }
        None
    }
}

/// An entry's `type` ("" without one).
pub(crate) fn entry_type(entry: &Json) -> &str {
    entry.get("type").and_then(Json::as_str).unwrap_or("")
}
