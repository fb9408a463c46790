//! Borrowed views of a server-sent event's JSON, for the streaming hot path. Most events of a
//! response are text deltas whose handling reads three or four members; building the whole
//! ordered tree for each (`json::parse`) cost about half of a delta's instructions. A view keeps
//! an object's members with their values as unparsed JSON text and decodes only the members
//! read. It answers `None` for anything outside the shape a reader expects (a value of another
//! type, escapes it cannot borrow, a lone surrogate), and the reader then takes the general path,
//! which parses the event in full: a view never decides differently from the tree.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// One JSON value, undecoded (no whitespace around it).
pub(crate) type Raw<'a> = &'a RawValue;

/// An object's members in document order, values undecoded.
pub(crate) struct Members<'a>(Vec<(Cow<'a, str>, Raw<'a>)>);

impl<'a> Members<'a> {
    /// The members of `text` when it is exactly one JSON object (whitespace around it allowed);
    /// `None` for any other value and for invalid JSON.
    pub(crate) fn parse(text: &'a str) -> Option<Self> {
        serde_json::from_str(text).ok()
    }

    /// The members of an object value.
    pub(crate) fn of(value: Raw<'a>) -> Option<Self> {
        Self::parse(value.get())
    }

    /// The value of `key`: the last one when a key repeats, as `JSON.parse` keeps the last.
    pub(crate) fn get(&self, key: &str) -> Option<Raw<'a>> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| *v)
    }

    /// Whether `key` is absent or `null` (what `value?.key` and `value.key || …` read alike).
    pub(crate) fn absent_or_null(&self, key: &str) -> bool {
        self.get(key).is_none_or(is_null)
    }
}

/// Whether the value is `null`.
pub(crate) fn is_null(value: Raw<'_>) -> bool {
    value.get() == "null"
}

/// The value as a string, when it is one (decoded; borrowed when it has no escapes).
pub(crate) fn string<'a>(value: Raw<'a>) -> Option<Cow<'a, str>> {
    let text = value.get();
    if !text.starts_with('"') {
        return None;
    }
    match serde_json::from_str::<&'a str>(text) {
        Ok(borrowed) => Some(Cow::Borrowed(borrowed)),
        Err(_) => serde_json::from_str::<String>(text).ok().map(Cow::Owned),
    }
}

/// The elements of an array value.
pub(crate) fn array<'a>(value: Raw<'a>) -> Option<Vec<Raw<'a>>> {
    let text = value.get();
    if !text.starts_with('[') {
        return None;
    }
    serde_json::from_str(text).ok()
}

/// The text of a non-negative integer in the form JavaScript prints it (`0`, `17`; no sign,
/// fraction, exponent or leading zero, at most 15 digits), so the text is the number's key.
pub(crate) fn plain_index<'a>(value: Raw<'a>) -> Option<&'a str> {
    let text = value.get();
    let digits = text.as_bytes();
    let plain = !digits.is_empty()
        && digits.len() <= 15
        && digits.iter().all(u8::is_ascii_digit)
        && (digits[0] != b'0' || digits.len() == 1);
    plain.then_some(text)
}

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectOnly;
        impl<'de> Visitor<'de> for ObjectOnly {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut members = Vec::with_capacity(map.size_hint().unwrap_or(8));
                while let Some(Key(key)) = map.next_key()? {
                    members.push((key, map.next_value::<Raw<'de>>()?));
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(ObjectOnly)
    }
}

/// A member name, borrowed from the text unless it has escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyText;
        impl<'de> Visitor<'de> for KeyText {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(text)))
            }
            fn visit_str<E>(self, text: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(text.to_string())))
            }
        }
        deserializer.deserialize_str(KeyText)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_keep_the_last_of_a_repeated_key_and_only_objects_have_members() {
        let m =
            Members::parse(r#" {"a":1,"b" : [2, {"c":3}],"a":"x\"y","\u0061b":null} "#).unwrap();
        assert_eq!(string(m.get("a").unwrap()).as_deref(), Some("x\"y"));
        assert_eq!(m.get("b").unwrap().get(), r#"[2, {"c":3}]"#);
        assert!(m.absent_or_null("ab") && m.absent_or_null("zz") && !m.absent_or_null("b"));
        let items = array(m.get("b").unwrap()).unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(Members::of(items[1]).unwrap().get("c").unwrap().get(), "3");
        assert!(Members::of(items[0]).is_none());
        for not_an_object in ["[1]", "\"a\"", "null", "{\"a\":1", "{\"a\":1} x", "{'a':1}"] {
            assert!(Members::parse(not_an_object).is_none(), "{not_an_object}");
        }
    }

    #[test]
    fn strings_decode_escapes_and_refuse_lone_surrogates() {
        let m = Members::parse(r#"{"p":"plain","e":"a\nb\u00e9","lone":"\ud800x","n":5}"#).unwrap();
        assert!(matches!(
            string(m.get("p").unwrap()),
            Some(Cow::Borrowed("plain"))
        ));
        assert_eq!(string(m.get("e").unwrap()).as_deref(), Some("a\nbé"));
        assert_eq!(string(m.get("lone").unwrap()), None);
        assert_eq!(string(m.get("n").unwrap()), None);
    }

    #[test]
    fn only_plain_integers_are_index_keys() {
        let m = Members::parse(r#"{"a":0,"b":17,"c":1.0,"d":-1,"e":01,"f":"1","g":1e2}"#);
        // `01` is not JSON: the whole object is refused.
        assert!(m.is_none());
        let m = Members::parse(r#"{"a":0,"b":17,"c":1.0,"d":-1,"f":"1","g":1e2}"#).unwrap();
        let key = |k| plain_index(m.get(k).unwrap());
        assert_eq!((key("a"), key("b")), (Some("0"), Some("17")));
        assert!(["c", "d", "f", "g"].iter().all(|k| key(k).is_none()));
    }
}
