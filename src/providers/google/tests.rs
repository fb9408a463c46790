use super::request::Thinking;
use super::response::{fallback_tool_call_id, Frames};
use super::*;
