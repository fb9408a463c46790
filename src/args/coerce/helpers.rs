//! The conversion helpers of SPEC §5.4.2/§5.4.3 (JavaScript conversion semantics).

use crate::json::{number, number_to_string, Json};

/// JavaScript `===` for JSON values: primitives by value, containers only when structurally
/// identical (the helpers return the same value when they convert nothing).
pub fn same(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// ECMAScript `StringToNumber` (`NaN` for anything that is not a numeric literal).
pub fn js_string_to_number(text: &str) -> f64 {
    let s = text.trim_matches(crate::json::is_js_whitespace);
    if s.is_empty() {
        return 0.0;
    }
    let radix = match s.get(..2) {
        Some("0x" | "0X") => 16,
        Some("0o" | "0O") => 8,
        Some("0b" | "0B") => 2,
        _ => 10,
    };
    if radix != 10 {
        let digits = &s[2..];
        if digits.is_empty() {
            return f64::NAN;
        }
        let mut acc = 0f64;
        for c in digits.chars() {
            match c.to_digit(radix) {
                Some(d) => acc = acc * f64::from(radix) + f64::from(d),
                None => return f64::NAN,
            }
        }
        return acc;
    }
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    if unsigned == "Infinity" {
        return if s.starts_with('-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        };
    }
    if !is_decimal_literal(unsigned) {
        return f64::NAN;
    }
    s.parse::<f64>().unwrap_or(f64::NAN)
}

/// `digits [. digits] [e [sign] digits]` with at least one digit before or after the point.
fn is_decimal_literal(s: &str) -> bool {
    let bytes = s.as_bytes();
    let mut i = 0;
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < bytes.len() && bytes[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    let mut count = digits(&mut i);
    if i < bytes.len() && bytes[i] == b'.' {
        i += 1;
        count += digits(&mut i);
    }
    if count == 0 {
        return false;
    }
    if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
        i += 1;
        if i < bytes.len() && (bytes[i] == b'+' || bytes[i] == b'-') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == bytes.len()
}

/// `I`, `In` or `I.digits` with `I` an integer literal (optional `-`, no leading zeros) that is
/// a safe integer (the fallback of `toNumber`, e.g. `"12n"`).
fn integer_literal(s: &str) -> Option<f64> {
    let body = s.strip_suffix('n').unwrap_or(s);
    let int = match body.split_once('.') {
        Some((int, frac))
            if !s.ends_with('n')
                && !frac.is_empty()
                && frac.bytes().all(|b| b.is_ascii_digit()) =>
        {
            int
        }
        Some(_) => return None,
        None => body,
    };
    let digits = int.strip_prefix('-').unwrap_or(int);
    if digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || (digits.len() > 1 && digits.starts_with('0'))
    {
        return None;
    }
    let magnitude: u64 = digits.parse().ok()?;
    if magnitude > (1u64 << 53) - 1 {
        return None;
    }
    let value = magnitude as f64;
    Some(if int.starts_with('-') { -value } else { value })
}

/// `toString` (SPEC §5.4.2).
pub fn to_js_string(value: &Json) -> Option<Json> {
    match value {
        Json::Number(n) => n
            .as_f64()
            .filter(|f| f.is_finite())
            .map(|f| Json::String(number_to_string(f))),
        Json::Bool(b) => Some(Json::String(b.to_string())),
        Json::Null => Some(Json::String("null".into())),
        Json::String(_) => Some(value.clone()),
        _ => None,
    }
}

/// `toNumber` (SPEC §5.4.2), as a double.
pub fn to_number_f64(value: &Json) -> Option<f64> {
    match value {
        Json::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Json::Number(n) => n.as_f64().filter(|f| f.is_finite()),
        Json::Null => Some(0.0),
        Json::String(s) => {
            let n = js_string_to_number(s);
            if n.is_finite() {
                return Some(n);
            }
            match s.to_lowercase().as_str() {
                "false" => Some(0.0),
                "true" => Some(1.0),
                _ => integer_literal(s),
            }
        }
        _ => None,
    }
}

/// `toNumber` as a JSON value.
pub fn to_number(value: &Json) -> Option<Json> {
    to_number_f64(value).map(number)
}

/// `toBoolean` (SPEC §5.4.2).
pub fn to_boolean(value: &Json) -> Option<Json> {
    let result = match value {
        Json::Bool(b) => *b,
        Json::Number(n) if n.as_f64() == Some(0.0) => false,
        Json::Number(n) if n.as_f64() == Some(1.0) => true,
        Json::Null => false,
        Json::String(s) if s.to_lowercase() == "false" || s == "0" => false,
        Json::String(s) if s.to_lowercase() == "true" || s == "1" => true,
        _ => return None,
    };
    Some(Json::Bool(result))
}

/// `toNull` (SPEC §5.4.2).
pub fn to_null(value: &Json) -> Option<Json> {
    let ok = match value {
        Json::Null | Json::Bool(false) => true,
        Json::Number(n) => n.as_f64() == Some(0.0),
        Json::String(s) => {
            matches!(s.to_lowercase().as_str(), "null" | "undefined") || s.is_empty() || s == "0"
        }
        _ => false,
    };
    ok.then_some(Json::Null)
}

/// "`v` matches type t" of pass 3.
pub fn matches_primitive_type(value: &Json, name: &str) -> bool {
    crate::args::schema::matches_type(value, name)
}

/// `coercePrimitive(v, t)` of pass 3 (Ajv-style; `None` = unchanged).
pub fn coerce_primitive(value: &Json, name: &str) -> Option<Json> {
    match (name, value) {
        ("number" | "integer", Json::Null) => Some(number(0.0)),
        ("number" | "integer", Json::Bool(b)) => Some(number(if *b { 1.0 } else { 0.0 })),
        ("number" | "integer", Json::String(s)) => {
            if s.trim_matches(crate::json::is_js_whitespace).is_empty() {
                return None;
            }
            let n = js_string_to_number(s);
            let ok = n.is_finite() && (name == "number" || n == n.trunc());
            ok.then(|| number(n))
        }
        ("boolean", Json::Null) => Some(Json::Bool(false)),
        ("boolean", Json::String(s)) if s == "true" => Some(Json::Bool(true)),
        ("boolean", Json::String(s)) if s == "false" => Some(Json::Bool(false)),
        ("boolean", Json::Number(n)) if n.as_f64() == Some(1.0) => Some(Json::Bool(true)),
        ("boolean", Json::Number(n)) if n.as_f64() == Some(0.0) => Some(Json::Bool(false)),
        ("string", Json::Null) => Some(Json::String(String::new())),
        ("string", Json::Number(_) | Json::Bool(_)) => to_js_string(value),
        ("null", Json::String(s)) if s.is_empty() => Some(Json::Null),
        ("null", Json::Bool(false)) => Some(Json::Null),
        ("null", Json::Number(n)) if n.as_f64() == Some(0.0) => Some(Json::Null),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_to_number_follows_javascript() {
        assert_eq!(js_string_to_number(" 7 "), 7.0);
        assert_eq!(js_string_to_number("0x10"), 16.0);
        assert_eq!(js_string_to_number("0b11"), 3.0);
        assert_eq!(js_string_to_number("0o17"), 15.0);
        assert_eq!(js_string_to_number(".5"), 0.5);
        assert_eq!(js_string_to_number("5."), 5.0);
        assert_eq!(js_string_to_number("+3"), 3.0);
        assert_eq!(js_string_to_number("1e3"), 1000.0);
        assert_eq!(js_string_to_number(""), 0.0);
        for bad in ["-0x10", "1,5", "abc", ".", "e5", "1e", "inf", "NaN", "0x"] {
            assert!(js_string_to_number(bad).is_nan(), "{bad}");
        }
        assert!(js_string_to_number("Infinity").is_infinite());
        assert_eq!(integer_literal("12n"), Some(12.0));
        assert_eq!(integer_literal("-12.75"), Some(-12.0));
        assert_eq!(integer_literal("012n"), None);
        assert_eq!(integer_literal("9007199254740992n"), None);
    }
}
