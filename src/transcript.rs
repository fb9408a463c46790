//! System-prompt replay, tool declarations and tool-state diffs (SPEC §4).
