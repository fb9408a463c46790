//! The stream operations that compact or typed host pushes stand for, recognised without
//! building JSON (each is exactly what pushing the corresponding JSON event does).

use super::{BlockKind, StreamOp};
use crate::json::{Json, JsonMap};

/// The typed delta that the JSON text `{"type":"<block>_delta","contentIndex":<n>,"delta":"…"}`
/// stands for, when `text` is exactly that: compact, these three keys in this order, `n` a plain
/// decimal below 10^9 (what a typed push of that delta is equivalent to; `make
/// conformance-typed` checks the equivalence). `None` for anything else, which takes the JSON
/// path.
pub fn compact_delta_op(text: &str) -> Option<StreamOp> {
    let rest = text.strip_prefix(r#"{"type":""#)?;
    let (kind, rest) = [
        ("text_delta", BlockKind::Text),
        ("thinking_delta", BlockKind::Thinking),
        ("toolcall_delta", BlockKind::ToolCall),
    ]
    .into_iter()
    .find_map(|(name, kind)| Some((kind, rest.strip_prefix(name)?)))?;
    let rest = rest.strip_prefix(r#"","contentIndex":"#)?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let (number, rest) = rest.split_at(digits);
    if !(1..=9).contains(&digits) || (digits > 1 && number.starts_with('0')) {
        return None;
    }
    let literal = rest.strip_prefix(r#","delta":"#)?.strip_suffix('}')?;
    if !literal.starts_with('"') {
        return None;
    }
    let index = number.parse().ok()?;
    // A literal without escapes or control characters is its own text (no parse, no allocation).
    if let Some(plain) = literal[1..]
        .strip_suffix('"')
        .filter(|body| !body.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20))
    {
        let delta = plain.into();
        return Some(StreamOp::KindDelta { kind, index, delta });
    }
    // The JSON path's own string parsing (escapes, lone surrogates) of the one string literal.
    match crate::json::parse(literal).ok()? {
        Json::String(delta) => Some(StreamOp::KindDelta {
            kind,
            index,
            delta: delta.into(),
        }),
        _ => None,
    }
}

/// The block a delta-form `*_start` event places (SPEC §3.7 rules 2, 5, 8).
fn start_block(kind: BlockKind, id: Option<&str>, tool_name: Option<&str>) -> JsonMap {
    let mut block = JsonMap::with_capacity(4);
    block.insert("type".into(), kind.block_type().into());
    match kind {
        BlockKind::Text | BlockKind::Thinking => {
            block.insert(kind.block_type().into(), "".into());
        }
        BlockKind::ToolCall => {
            if let Some(id) = id {
                block.insert("id".into(), id.into());
            }
            if let Some(name) = tool_name {
                block.insert("name".into(), name.into());
            }
            block.insert("arguments".into(), Json::Object(JsonMap::new()));
        }
    }
    block
}

/// The operation of a delta-form `*_start` event at `index`.
pub fn start_block_op(
    kind: BlockKind,
    index: usize,
    id: Option<&str>,
    tool_name: Option<&str>,
) -> StreamOp {
    StreamOp::StartBlock {
        index,
        block: Box::new(start_block(kind, id, tool_name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(text: &str) -> Option<(BlockKind, usize, String)> {
        match compact_delta_op(text)? {
            StreamOp::KindDelta { kind, index, delta } => Some((kind, index, delta.into())),
            other => panic!("not a delta: {other:?}"),
        }
    }

    /// Exactly the compact three-key form is recognised, with the JSON path's string decoding.
    #[test]
    fn compact_delta_events_are_recognised_exactly() {
        let text = BlockKind::Text;
        assert_eq!(
            delta(r#"{"type":"text_delta","contentIndex":0,"delta":"hi"}"#),
            Some((text, 0, "hi".into()))
        );
        assert_eq!(
            delta(r#"{"type":"thinking_delta","contentIndex":12,"delta":"a\"b\\\n\u00e9\ud800}"}"#),
            Some((BlockKind::Thinking, 12, "a\"b\\\né\u{fffd}}".into()))
        );
        assert_eq!(
            delta(r#"{"type":"toolcall_delta","contentIndex":3,"delta":"{\"a\":1}"}"#),
            Some((BlockKind::ToolCall, 3, r#"{"a":1}"#.into()))
        );
        for other in [
            r#"{"type":"text_delta","contentIndex":0,"delta":"hi","partial":null}"#,
            r#"{"contentIndex":0,"type":"text_delta","delta":"hi"}"#,
            r#"{"type": "text_delta","contentIndex":0,"delta":"hi"}"#,
            r#"{"type":"text_delta","contentIndex":0,"delta":"hi"} "#,
            r#"{"type":"text_delta","contentIndex":01,"delta":"hi"}"#,
            r#"{"type":"text_delta","contentIndex":1.0,"delta":"hi"}"#,
            r#"{"type":"text_delta","contentIndex":-1,"delta":"hi"}"#,
            r#"{"type":"text_delta","contentIndex":1000000000,"delta":"hi"}"#,
            r#"{"type":"text_delta","contentIndex":0,"delta":5}"#,
            r#"{"type":"text_delta","contentIndex":0,"delta":"a"}"b"}"#,
            r#"{"type":"text_delta","contentIndex":0,"delta":"unterminated}"#,
            r#"{"type":"text_start","contentIndex":0,"delta":"hi"}"#,
            r#"{"type":"image_delta","contentIndex":0,"delta":"hi"}"#,
        ] {
            assert_eq!(delta(other), None, "{other}");
        }
    }
}
