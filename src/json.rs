//! The order-preserving JSON value and the JavaScript rendering rules of SPEC §0.4.
//!
//! Values are `serde_json::Value` built with `preserve_order`, so objects keep insertion order.
//! On top of that this module enforces ECMAScript own-property order (array-index keys first,
//! ascending) and renders text exactly like `JSON.stringify`.

use std::fmt::Write as _;

pub mod intern;
pub mod shared;

pub use serde_json::json;

/// A JSON value whose objects keep their key order.
pub type Json = serde_json::Value;
/// A JSON object (ordered map).
pub type JsonMap = serde_json::Map<String, Json>;

/// Parses strict JSON (RFC 8259) and puts object keys in ECMAScript order.
/// Duplicate keys: the last value wins and the key keeps its first position.
/// Lone surrogate escapes (`\ud800` without a partner) become U+FFFD (SPEC §0.4.4).
pub fn parse(text: &str) -> Result<Json, String> {
    // Most texts parse at once. serde_json refuses the rest (nesting past its own limit of 128
    // levels, lone surrogates, errors), which then take the careful path: no extra passes over
    // every text.
    let mut value = match parse_with(text, true) {
        Ok(value) => value,
        Err(_) => parse_carefully(text)?,
    };
    normalize_key_order(&mut value);
    Ok(value)
}

/// `parse` without its key order: the nesting checked first (up to `MAX_PARSE_DEPTH`), lone
/// surrogates replaced.
fn parse_carefully(text: &str) -> Result<Json, String> {
    if nesting_depth(text) > MAX_PARSE_DEPTH {
        return Err(format!("nesting deeper than {MAX_PARSE_DEPTH} levels"));
    }
    let result = if text.contains("\\u") {
        parse_with(&replace_lone_surrogates(text), false)
    } else {
        parse_with(text, false)
    };
    result.map_err(|e| e.to_string())
}

/// JavaScript's `JSON.parse` has no nesting limit while serde_json stops at 128 levels; this
/// cap is far beyond real documents yet keeps the recursive walks (parse, print, drop) well
/// inside a 2 MiB thread stack.
pub const MAX_PARSE_DEPTH: usize = 512;

/// serde_json's parse into `Exact`, within serde_json's nesting limit or (`limited` false)
/// without one (the caller bounds the depth).
fn parse_with(text: &str, limited: bool) -> serde_json::Result<Json> {
    use serde::Deserialize;
    let mut de = serde_json::Deserializer::from_str(text);
    if !limited {
        de.disable_recursion_limit();
    }
    let value = Exact::deserialize(&mut de)?.0;
    de.end()?;
    Ok(value)
}

/// A parsed value whose arrays and objects have exactly the capacity they need: serde_json's
/// own `Value` grows them by doubling (a parsed message kept its slack for its whole life, ~20 %
/// of an idle agent's bytes), and an object's hash index is built once, at its final size.
/// Otherwise the same values as `Value`'s deserializer (duplicate keys: the last value, at the
/// first key's place).
struct Exact(Json);

impl<'de> serde::Deserialize<'de> for Exact {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ExactVisitor)
    }
}

struct ExactVisitor;

impl<'de> serde::de::Visitor<'de> for ExactVisitor {
    type Value = Exact;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Exact, E> {
        Ok(Exact(Json::Bool(value)))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Exact, E> {
        Ok(Exact(Json::Number(value.into())))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Exact, E> {
        Ok(Exact(Json::Number(value.into())))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Exact, E> {
        Ok(Exact(
            serde_json::Number::from_f64(value).map_or(Json::Null, Json::Number),
        ))
    }

    fn visit_str<E>(self, value: &str) -> Result<Exact, E> {
        Ok(Exact(Json::String(value.to_owned())))
    }

    fn visit_string<E>(self, value: String) -> Result<Exact, E> {
        Ok(Exact(Json::String(value)))
    }

    fn visit_none<E>(self) -> Result<Exact, E> {
        Ok(Exact(Json::Null))
    }

    fn visit_unit<E>(self) -> Result<Exact, E> {
        Ok(Exact(Json::Null))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Exact, A::Error> {
        let mut items = Vec::new();
        while let Some(Exact(item)) = seq.next_element()? {
            items.push(item);
        }
        items.shrink_to_fit();
        Ok(Exact(Json::Array(items)))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Exact, A::Error> {
        let mut entries: Vec<(String, Json)> = Vec::new();
        while let Some((key, Exact(value))) = map.next_entry()? {
            entries.push((key, value));
        }
        let mut object = JsonMap::with_capacity(entries.len());
        object.extend(entries);
        Ok(Exact(Json::Object(object)))
    }
}

/// The deepest bracket nesting of `text`, ignoring brackets inside strings.
pub fn nesting_depth(text: &str) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in text.as_bytes() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// The UTF-16 unit of a `\uXXXX` escape starting at byte `i` (which holds the backslash).
pub(crate) fn unicode_escape_at(bytes: &[u8], i: usize) -> Option<u16> {
    let hex = bytes.get(i + 2..i + 6)?;
    if bytes.get(i + 1) != Some(&b'u') || !hex.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    std::str::from_utf8(hex)
        .ok()
        .and_then(|h| u16::from_str_radix(h, 16).ok())
}

/// Rewrites unpaired `\uD800`–`\uDFFF` escapes inside strings to `\ufffd` (same length, so
/// error positions are unchanged). The strict parser would otherwise reject them.
fn replace_lone_surrogates(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => in_string = !in_string,
            b'\\' if in_string => {
                let Some(unit) = unicode_escape_at(bytes, i) else {
                    i += 2;
                    continue;
                };
                let paired = match unit {
                    0xD800..=0xDBFF => unicode_escape_at(bytes, i + 6)
                        .is_some_and(|next| (0xDC00..=0xDFFF).contains(&next)),
                    0xDC00..=0xDFFF => false,
                    _ => {
                        i += 6;
                        continue;
                    }
                };
                if paired {
                    i += 12;
                } else {
                    out.push_str(&text[copied..i]);
                    out.push_str("\\ufffd");
                    i += 6;
                    copied = i;
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    // `copied` is always on a char boundary: it only advances past ASCII escape text.
    out.push_str(text.get(copied..).unwrap_or(""));
    out
}

/// True for the decimal strings "0".."4294967294" without leading zeros (ECMAScript array indices).
pub fn is_array_index(key: &str) -> bool {
    let bytes = key.as_bytes();
    if bytes.is_empty() || bytes.len() > 10 || !bytes.iter().all(u8::is_ascii_digit) {
        return false;
    }
    if bytes.len() > 1 && bytes[0] == b'0' {
        return false;
    }
    key.parse::<u64>().is_ok_and(|n| n < 4_294_967_295)
}

/// Reorders every object so that array-index keys come first in ascending numeric order,
/// followed by the other keys in their current (insertion) order.
pub fn normalize_key_order(value: &mut Json) {
    match value {
        Json::Object(map) => {
            if map.keys().any(|k| is_array_index(k)) {
                let old = std::mem::take(map);
                let (mut index_keys, others): (Vec<_>, Vec<_>) =
                    old.into_iter().partition(|(k, _)| is_array_index(k));
                index_keys.sort_by_key(|(k, _)| k.parse::<u64>().unwrap_or(0));
                map.extend(index_keys);
                map.extend(others);
            }
            map.values_mut().for_each(normalize_key_order);
        }
        Json::Array(items) => items.iter_mut().for_each(normalize_key_order),
        _ => {}
    }
}

/// Sets `key` on `map` with ECMAScript semantics: an existing key keeps its position, a new
/// array-index key goes to its numeric place among the index keys, any other new key goes last.
pub fn set_key(map: &mut JsonMap, key: &str, value: Json) {
    let found = if map.len() <= SCANNED_KEYS {
        map.iter_mut()
            .find_map(|(name, slot)| (name == key).then_some(slot))
    } else {
        map.get_mut(key)
    };
    if let Some(slot) = found {
        *slot = value;
        return;
    }
    if !is_array_index(key) {
        map.insert(key.to_string(), value);
        return;
    }
    let n: u64 = key.parse().unwrap_or(0);
    let position = map
        .keys()
        .position(|k| !is_array_index(k) || k.parse::<u64>().unwrap_or(0) > n)
        .unwrap_or(map.len());
    map.shift_insert(position, key.to_string(), value);
}

/// Renders a number the way ECMAScript's Number-to-String does (`3`, `0.1`, `1e+21`, `-0` → `0`).
pub fn number_to_string(n: f64) -> String {
    if n.is_finite() {
        let mut buffer = ryu_js::Buffer::new();
        buffer.format_finite(n).to_string()
    } else if n.is_nan() {
        "NaN".into()
    } else if n > 0.0 {
        "Infinity".into()
    } else {
        "-Infinity".into()
    }
}

/// The f64 value of a JSON number (all JSON numbers are doubles in the reference).
pub fn number_value(n: &serde_json::Number) -> f64 {
    n.as_f64().unwrap_or(0.0)
}

/// Makes a JSON number from a double; non-finite values become `null` (as `JSON.stringify` does).
pub fn number(n: f64) -> Json {
    if n == n.trunc() && n.abs() < 9_007_199_254_740_992.0 {
        // Integral values are stored as integers so that every consumer prints them without `.0`.
        Json::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map_or(Json::Null, Json::Number)
    }
}

/// Whether `a` and `b` have the same JSON text (`to_string(a) == to_string(b)`), decided
/// without rendering either: key order matters, and numbers compare by the double they render
/// (so `1` equals `1.0`, and `0` equals `-0`, as their texts do).
pub fn same_text(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Null, Json::Null) => true,
        (Json::Bool(x), Json::Bool(y)) => x == y,
        (Json::Number(x), Json::Number(y)) => number_value(x) == number_value(y),
        (Json::String(x), Json::String(y)) => x == y,
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_text(x, y))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kx, x), (ky, y))| kx == ky && same_text(x, y))
        }
        _ => false,
    }
}

/// `JSON.stringify(value)`: compact text.
pub fn to_string(value: &Json) -> String {
    thread_local! {
        /// Where texts are written before they are copied out at their size: a message's first
        /// rendering costs one allocation, not a doubling series of them.
        static SCRATCH: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
    }
    /// A larger text keeps the scratch buffer; a larger buffer is let go after use (a thread
    /// keeps at most this much).
    const KEPT: usize = 16 * 1024;
    let written = SCRATCH.try_with(|scratch| {
        let mut out = scratch.try_borrow_mut().ok()?;
        out.clear();
        write_value(&mut out, value, None, 0);
        if out.len() > KEPT {
            // A large text (a request's body) is handed over as it is: no copy of it.
            return Some(std::mem::take(&mut *out));
        }
        let text = out.as_str().to_owned();
        if out.capacity() > KEPT {
            *out = String::new();
        }
        Some(text)
    });
    match written {
        Ok(Some(text)) => text,
        // A thread being torn down (its scratch gone): a buffer of its own.
        _ => {
            let mut out = String::with_capacity(128);
            write_value(&mut out, value, None, 0);
            out
        }
    }
}

/// `value.get(key)` that compares keys instead of hashing for small objects: a message, block,
/// tool or schema object has a handful of keys, and SipHash costs more than scanning them.
#[inline]
pub fn field<'a>(value: &'a Json, key: &str) -> Option<&'a Json> {
    match value {
        Json::Object(map) => map_field(map, key),
        _ => None,
    }
}

/// `map.get(key)`, scanning the keys of a small map instead of hashing (see [`field`]).
#[inline]
pub fn map_field<'a>(map: &'a JsonMap, key: &str) -> Option<&'a Json> {
    if map.len() <= SCANNED_KEYS {
        map.iter()
            .find_map(|(name, item)| (name == key).then_some(item))
    } else {
        map.get(key)
    }
}

/// The most keys an object is scanned for instead of hashed.
const SCANNED_KEYS: usize = 12;

/// [`field`] as a method: `value.field("key")` where `value.get("key")` would hash the key.
pub trait Field {
    /// The member named `key` (an object's), found without hashing when the object is small.
    fn field(&self, key: &str) -> Option<&Json>;
}

impl Field for Json {
    #[inline]
    fn field(&self, key: &str) -> Option<&Json> {
        field(self, key)
    }
}

impl Field for JsonMap {
    #[inline]
    fn field(&self, key: &str) -> Option<&Json> {
        map_field(self, key)
    }
}

/// Appends `JSON.stringify(value)` to `out`.
pub fn write_json(out: &mut String, value: &Json) {
    write_value(out, value, None, 0);
}

/// Appends the text of `map` with the value at `key` written by `write_at` instead of its own;
/// when `map` has no `key`, it is appended last. This is the text of `map` after
/// `set_key(map, key, v)`, without building `v`.
pub fn write_object_with(
    out: &mut String,
    map: &JsonMap,
    key: &str,
    mut write_at: impl FnMut(&mut String),
) {
    out.push('{');
    let mut found = false;
    for (i, (name, value)) in map.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(out, name);
        out.push(':');
        if name == key {
            found = true;
            write_at(out);
        } else {
            write_value(out, value, None, 0);
        }
    }
    if !found {
        if !map.is_empty() {
            out.push(',');
        }
        write_string(out, key);
        out.push(':');
        write_at(out);
    }
    out.push('}');
}

/// `JSON.stringify(value, null, 2)`.
pub fn to_string_pretty(value: &Json) -> String {
    let mut out = String::new();
    write_value(&mut out, value, Some(2), 0);
    out
}

/// Appends `JSON.stringify(text)` to `out`.
pub fn write_string(out: &mut String, text: &str) {
    out.reserve(text.len() + 2);
    out.push('"');
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut i = 0;
    // Every byte that needs escaping is ASCII, and no byte of a multi-byte UTF-8 sequence is
    // ASCII: a scan by 8-byte words finds them and always cuts `text` at character boundaries.
    while i < bytes.len() {
        if !needs_escape_in(word_at(bytes, i)) {
            i += 8;
            continue;
        }
        // A word holds one: it is found byte by byte within these 8.
        let end = bytes.len().min(i + 8);
        while i < end {
            let byte = bytes[i];
            let escape = match byte {
                b'"' => "\\\"",
                b'\\' => "\\\\",
                0x08 => "\\b",
                0x0c => "\\f",
                b'\n' => "\\n",
                b'\r' => "\\r",
                b'\t' => "\\t",
                0..=0x1f => "",
                _ => {
                    i += 1;
                    continue;
                }
            };
            out.push_str(&text[start..i]);
            if escape.is_empty() {
                let _ = write!(out, "\\u{:04x}", byte);
            } else {
                out.push_str(escape);
            }
            i += 1;
            start = i;
        }
    }
    out.push_str(&text[start..]);
    out.push('"');
}

/// The 8 bytes of `bytes` from `at`, padded with spaces (which need no escape) past the end.
#[inline]
fn word_at(bytes: &[u8], at: usize) -> u64 {
    match bytes.get(at..at + 8) {
        Some(chunk) => u64::from_le_bytes(chunk.try_into().unwrap_or_default()),
        None => {
            let mut word = [b' '; 8];
            let tail = &bytes[at.min(bytes.len())..];
            word[..tail.len()].copy_from_slice(tail);
            u64::from_le_bytes(word)
        }
    }
}

/// Whether any of the 8 bytes of `word` is a control character, `"` or `\` (exact: the
/// zero-byte and less-than tests below never report a byte that is not there).
fn needs_escape_in(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS != 0;
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGHS != 0;
    below_space || has_zero(word ^ (ONES * b'"' as u64)) || has_zero(word ^ (ONES * b'\\' as u64))
}

/// Appends the JavaScript text of a finite double: integers without `.0` and without going
/// through a temporary string.
fn write_number(out: &mut String, n: f64) {
    if n == n.trunc() && n.abs() < 1e15 {
        out.push_str(itoa::Buffer::new().format(n as i64));
    } else {
        out.push_str(ryu_js::Buffer::new().format_finite(n));
    }
}

fn write_value(out: &mut String, value: &Json, indent: Option<usize>, depth: usize) {
    match value {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Number(n) => {
            let f = number_value(n);
            if f.is_finite() {
                write_number(out, f);
            } else {
                out.push_str("null");
            }
        }
        Json::String(s) => write_string(out, s),
        Json::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, indent, depth + 1);
                write_value(out, item, indent, depth + 1);
            }
            newline(out, indent, depth);
            out.push(']');
        }
        Json::Object(map) => {
            if map.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, indent, depth + 1);
                write_string(out, key);
                out.push(':');
                if indent.is_some() {
                    out.push(' ');
                }
                write_value(out, item, indent, depth + 1);
            }
            newline(out, indent, depth);
            out.push('}');
        }
    }
}

#[inline]
fn newline(out: &mut String, indent: Option<usize>, depth: usize) {
    if let Some(width) = indent {
        out.push('\n');
        out.extend(std::iter::repeat_n(' ', width * depth));
    }
}

/// JSON equality as JSON Schema defines it: same primitive (numbers by value), arrays item-wise,
/// objects with the same keys and equal values regardless of key order.
pub fn deep_equal(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => number_value(x) == number_value(y),
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| deep_equal(p, q))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| deep_equal(v, w)))
        }
        _ => a == b,
    }
}

/// ECMAScript WhiteSpace and LineTerminator (what `String.prototype.trim` and `Number()` strip).
pub fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

/// An object from `(key, value)` pairs, moving the values (`json!` would re-serialise them).
pub fn object<const N: usize>(entries: [(&str, Json); N]) -> Json {
    Json::Object(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

/// Milliseconds since the Unix epoch, as a JSON number (SPEC §0.4.6).
pub fn now_ms() -> Json {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    Json::from(ms)
}

/// The string value of `value[key]`, if it is a string.
pub fn str_field<'a>(value: &'a Json, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Json::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `field` finds what `get` finds, in small and large objects and in other values.
    #[test]
    fn field_agrees_with_get() {
        let small = json!({"role": "user", "content": "x", "": 1});
        let mut large = JsonMap::new();
        for i in 0..30 {
            large.insert(format!("k{i}"), json!(i));
        }
        let large = Json::Object(large);
        for value in [&small, &large, &json!([1, 2]), &json!("s"), &Json::Null] {
            for key in ["role", "content", "", "k0", "k29", "k30", "missing"] {
                assert_eq!(field(value, key), value.get(key), "{key}");
            }
        }
    }

    /// `parse` gives serde_json's values (duplicate keys: the last value at the first key's
    /// place; numbers as serde_json reads them) with exactly sized arrays.
    #[test]
    fn parse_gives_serde_json_values_exactly_sized() {
        for text in [
            r#"{"a":1,"b":[1,2,3,{"c":null}],"a":2,"n":[-1,18446744073709551615,1.5,-0.0,1e300]}"#,
            r#"[1e400]"#,
            r#"[[],{},"s",true,false,null,0]"#,
            r#""just a string""#,
        ] {
            let ours = parse(text);
            let theirs: Result<Json, _> = serde_json::from_str(text);
            match (ours, theirs) {
                (Ok(ours), Ok(theirs)) => {
                    assert_eq!(ours, theirs, "{text}");
                    assert_eq!(to_string(&ours), to_string(&theirs), "{text}");
                }
                (ours, theirs) => assert!(ours.is_err() && theirs.is_err(), "{text}"),
            }
        }
        let value = parse(r#"{"a":1,"b":[1,2,3,4,5],"a":2}"#).unwrap();
        assert_eq!(
            value.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(value["a"], 2);
        let Json::Array(items) = &value["b"] else {
            panic!("an array");
        };
        assert_eq!(items.capacity(), items.len());
    }

    /// The word-at-a-time scan escapes exactly what a per-character scan does, whatever the
    /// position of the special byte in its 8-byte word (serde_json escapes the same set).
    #[test]
    fn write_string_escapes_every_special_byte_at_every_offset() {
        let specials = [
            '"', '\\', '\u{0}', '\u{8}', '\u{c}', '\n', '\r', '\t', '\u{1f}', '\u{1}',
        ];
        let plain = [
            'a', ' ', '\u{7f}', 'é', '✓', '😀', '\u{2028}', '!', '~', '\u{20}',
        ];
        for len in 0..20 {
            for at in 0..len.max(1) {
                for (k, special) in specials.iter().enumerate() {
                    let text: String = (0..len)
                        .map(|i| {
                            if i == at {
                                *special
                            } else {
                                plain[(i + k) % plain.len()]
                            }
                        })
                        .collect();
                    let mut out = String::new();
                    write_string(&mut out, &text);
                    assert_eq!(out, serde_json::to_string(&text).unwrap(), "{text:?}");
                }
            }
        }
    }

    /// Texts written through the per-thread scratch buffer: small, one past its kept bound
    /// (handed over), and small again after it, each exactly serde_json's text.
    #[test]
    fn texts_of_every_size_come_out_whole_through_the_scratch() {
        let small = json!({"role": "user", "content": "hi \"there\"", "n": [1, 2.5, -3]});
        let large = json!({"text": "x".repeat(20 * 1024), "more": ["é".repeat(3000)]});
        for value in [&small, &large, &small, &large, &large, &small] {
            let text = to_string(value);
            assert_eq!(text, serde_json::to_string(value).unwrap());
            assert_eq!(parse(&text).unwrap(), *value);
        }
    }

    #[test]
    fn same_text_agrees_with_comparing_rendered_texts() {
        let values = [
            "null",
            "true",
            "false",
            "0",
            "-0",
            "1",
            "1.0",
            "1.5",
            "10000000000000000001",
            "10000000000000000000",
            "\"a\"",
            "\"1\"",
            "[]",
            "{}",
            "[1,2]",
            "[2,1]",
            "[1]",
            r#"{"a":1,"b":2}"#,
            r#"{"b":2,"a":1}"#,
            r#"{"a":1}"#,
            r#"{"a":1.0,"b":2}"#,
            r#"{"a":[{"x":null}]}"#,
            r#"{"a":[{"x":false}]}"#,
            r#"{"2":1,"1":2}"#,
            r#"{"1":2,"2":1}"#,
        ];
        let values: Vec<Json> = values.iter().map(|v| parse(v).unwrap()).collect();
        let mut equal_pairs = 0;
        for a in &values {
            for b in &values {
                let expected = to_string(a) == to_string(b);
                assert_eq!(same_text(a, b), expected, "{a} vs {b}");
                equal_pairs += usize::from(expected);
            }
        }
        // Besides each value with itself: 0/-0, 1/1.0, the two big integers (one double),
        // the objects differing by 1 vs 1.0, and the integer-keyed objects (parsed in JS order).
        assert_eq!(equal_pairs, values.len() + 10);
    }

    #[test]
    fn numbers_render_like_javascript() {
        assert_eq!(to_string(&parse("3.0").unwrap()), "3");
        assert_eq!(to_string(&parse("1e21").unwrap()), "1e+21");
        assert_eq!(to_string(&parse("0.1").unwrap()), "0.1");
        assert_eq!(to_string(&parse("-0").unwrap()), "0");
        assert_eq!(to_string(&parse("1e-7").unwrap()), "1e-7");
        assert_eq!(to_string(&parse("1.5").unwrap()), "1.5");
        assert_eq!(
            to_string(&parse("9007199254740993").unwrap()),
            "9007199254740992"
        );
        assert_eq!(
            number_to_string(123456789012345678901234567890.0),
            "1.2345678901234568e+29"
        );
    }

    #[test]
    fn integer_like_keys_come_first() {
        let v = parse(r#"{"b":1,"2":2,"a":3,"1":4,"01":5}"#).unwrap();
        assert_eq!(to_string(&v), r#"{"1":4,"2":2,"b":1,"a":3,"01":5}"#);
        let mut m = JsonMap::new();
        set_key(&mut m, "x", json!(1));
        set_key(&mut m, "5", json!(2));
        set_key(&mut m, "3", json!(3));
        set_key(&mut m, "x", json!(4));
        assert_eq!(to_string(&Json::Object(m)), r#"{"3":3,"5":2,"x":4}"#);
    }

    #[test]
    fn duplicate_keys_keep_first_position_last_value() {
        let v = parse(r#"{"a":1,"b":2,"a":3}"#).unwrap();
        assert_eq!(to_string(&v), r#"{"a":3,"b":2}"#);
    }

    #[test]
    fn strings_escape_like_json_stringify() {
        let v = json!("a\"b\\c\n\u{1}/é\u{7f}");
        assert_eq!(to_string(&v), "\"a\\\"b\\\\c\\n\\u0001/é\u{7f}\"");
    }

    #[test]
    fn pretty_printing_matches_indent_two() {
        let v = parse(r#"{"n":"abc","extra":1,"e":{},"l":[]}"#).unwrap();
        assert_eq!(
            to_string_pretty(&v),
            "{\n  \"n\": \"abc\",\n  \"extra\": 1,\n  \"e\": {},\n  \"l\": []\n}"
        );
    }

    #[test]
    fn deep_equal_ignores_key_order_and_number_spelling() {
        assert!(deep_equal(
            &parse(r#"{"a":1,"b":[1.0]}"#).unwrap(),
            &parse(r#"{"b":[1],"a":1}"#).unwrap()
        ));
        assert!(!deep_equal(&json!(true), &json!(1)));
    }
}

#[cfg(test)]
mod surrogate_tests {
    use super::*;

    #[test]
    fn lone_surrogate_escapes_become_replacement_characters() {
        assert_eq!(
            parse(r#"{"a":"x\ud800y"}"#).unwrap(),
            json!({"a": "x\u{FFFD}y"})
        );
        assert_eq!(parse(r#"["\udc00"]"#).unwrap(), json!(["\u{FFFD}"]));
        assert_eq!(parse(r#"["\ud83d\ude00"]"#).unwrap(), json!(["😀"]));
        // Escaped backslashes before `u` are not escapes.
        assert_eq!(parse(r#"["\\ud800"]"#).unwrap(), json!(["\\ud800"]));
    }

    /// serde_json's own limit (128 levels) sends deeper texts to the careful path, which takes
    /// them up to `MAX_PARSE_DEPTH` and refuses deeper ones by name; errors read as serde_json's.
    #[test]
    fn texts_past_the_fast_path_parse_as_before() {
        let nested = |depth: usize| "[".repeat(depth) + &"]".repeat(depth);
        let mut value = parse(&nested(300)).unwrap();
        let mut depth = 0;
        while let Json::Array(mut items) = value {
            depth += 1;
            value = items.pop().unwrap_or(Json::Null);
        }
        assert_eq!(depth, 300);
        assert_eq!(
            parse(&nested(MAX_PARSE_DEPTH + 1)).unwrap_err(),
            format!("nesting deeper than {MAX_PARSE_DEPTH} levels")
        );
        assert_eq!(
            parse(r#"{"a":1"#).unwrap_err(),
            "EOF while parsing an object at line 1 column 6"
        );
        // A lone surrogate deep in a text past serde_json's limit: both careful steps.
        let deep = "[".repeat(200) + r#""\ud800""# + &"]".repeat(200);
        assert!(parse(&deep).unwrap().to_string().contains('\u{FFFD}'));
    }
}
