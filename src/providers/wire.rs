//! Borrowed views of a server-sent event's JSON, for the streaming hot path. Most events of a
//! response are text deltas whose handling reads three or four members; building the whole
//! ordered tree for each (`json::parse`) cost about half of a delta's instructions. A view keeps
//! an object's members with their values as unparsed JSON text and decodes only the members
//! read. It answers `None` for anything outside the shape a reader expects (a value of another
//! type, a lone surrogate, invalid JSON), and the reader then takes the general path, which
//! parses the event in full: a view never decides differently from the tree.

use std::borrow::Cow;

/// One JSON value, undecoded: its text (valid JSON, no whitespace around it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Raw<'a>(&'a str);

impl<'a> Raw<'a> {
    pub(crate) fn get(self) -> &'a str {
        self.0
    }
}

/// An object's members in document order, values undecoded.
pub(crate) struct Members<'a>(Vec<(Cow<'a, str>, Raw<'a>)>);

impl<'a> Members<'a> {
    /// The members of `text` when it is exactly one JSON object (whitespace around it allowed);
    /// `None` for any other value and for invalid JSON.
    pub(crate) fn parse(text: &'a str) -> Option<Self> {
        let mut scan = Scan::new(text);
        scan.space();
        let members = scan.members()?;
        scan.space();
        scan.at_end().then_some(members)
    }

    /// The members of the first element of an array value, when it is an object (`Some(None)`
    /// for an empty array). The rest is not read again: a `Raw` is valid JSON by construction.
    pub(crate) fn of_first(array: Raw<'a>) -> Option<Option<Self>> {
        let mut scan = Scan::new(array.0);
        scan.eat(b'[')?;
        scan.space();
        if scan.peek()? == b']' {
            return Some(None);
        }
        scan.members().map(Some)
    }

    /// The members of an object value.
    pub(crate) fn of(value: Raw<'a>) -> Option<Self> {
        Self::parse(value.0)
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
    value.0 == "null"
}

/// The value as a string, when it is one (decoded; borrowed when it has no escapes). A lone
/// surrogate escape, which a Rust string cannot hold, gives `None`.
pub(crate) fn string(value: Raw<'_>) -> Option<Cow<'_, str>> {
    let body = value.0.strip_prefix('"')?.strip_suffix('"')?;
    if !body.contains('\\') {
        return Some(Cow::Borrowed(body));
    }
    serde_json::from_str::<String>(value.0).ok().map(Cow::Owned)
}

/// The elements of an array value.
pub(crate) fn array(value: Raw<'_>) -> Option<Vec<Raw<'_>>> {
    let mut scan = Scan::new(value.0);
    let mut items = Vec::new();
    scan.array(|item| items.push(item))?;
    scan.at_end().then_some(items)
}

/// The text of a non-negative integer in the form JavaScript prints it (`0`, `17`; no sign,
/// fraction, exponent or leading zero, at most 15 digits), so the text is the number's key.
pub(crate) fn plain_index(value: Raw<'_>) -> Option<&str> {
    let digits = value.0.as_bytes();
    let plain = !digits.is_empty()
        && digits.len() <= 15
        && digits.iter().all(u8::is_ascii_digit)
        && (digits[0] != b'0' || digits.len() == 1);
    plain.then_some(value.0)
}

/// The index and the string of `text` when it is exactly `prefix`, a plain index (as
/// [`plain_index`] reads one), `middle`, a string without escapes or control characters, and
/// `suffix`: the fixed form a server writes its commonest event in, read without a scan of its
/// members. `middle` ends with the string's opening quote and `suffix` starts after its closing
/// one; the caller's template must make such a text a JSON object whose names each appear once.
pub(crate) fn fixed_form<'a>(
    text: &'a str,
    prefix: &str,
    middle: &str,
    suffix: &str,
) -> Option<(&'a str, &'a str)> {
    let rest = text.strip_prefix(prefix)?;
    let digits = rest.bytes().position(|b| !b.is_ascii_digit())?;
    let (index, rest) = rest.split_at(digits);
    let index = plain_index(Raw(index))?;
    let rest = rest.strip_prefix(middle)?;
    let (body, tail) = rest.split_at(plain_end(rest.as_bytes(), 0)?);
    (tail.strip_prefix('"')? == suffix).then_some((index, body))
}

/// Where the plain bytes of a string starting at `from` end: the first quote, backslash or
/// control character. Eight bytes at a time (a word's bytes compared at once, as serde_json's
/// own scan does), then byte by byte for the last few.
fn plain_end(bytes: &[u8], mut from: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while let Some(word) = bytes.get(from..from + 8) {
        let word = u64::from_le_bytes(word.try_into().ok()?);
        let quote = word ^ (ONES * u64::from(b'"'));
        let backslash = word ^ (ONES * u64::from(b'\\'));
        // A byte's high bit is set where the byte is zero (below 0x20 for `word` itself); a
        // borrow may mark bytes after the first such byte too, never one before it.
        let stops = (quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (word.wrapping_sub(ONES * 0x20) & !word);
        let stops = stops & HIGH;
        if stops != 0 {
            return Some(from + stops.trailing_zeros() as usize / 8);
        }
        from += 8;
    }
    let rest = bytes.get(from..)?;
    let plain = rest
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
    Some(from + plain)
}

/// Nesting deeper than this is left to the general path (serde_json's own default limit).
const MAX_DEPTH: usize = 128;

/// A validating scan of JSON text (RFC 8259, as `JSON.parse` reads it) that records where
/// values start and end instead of building them: one pass, no allocation but the member lists.
struct Scan<'a> {
    text: &'a str,
    at: usize,
    depth: usize,
}

impl<'a> Scan<'a> {
    fn new(text: &'a str) -> Self {
        Scan {
            text,
            at: 0,
            depth: 0,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn at_end(&self) -> bool {
        self.at == self.text.len()
    }

    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek() == Some(byte)).then(|| self.at += 1)
    }

    /// One value, whatever its kind; its text.
    fn value(&mut self) -> Option<Raw<'a>> {
        let start = self.at;
        match self.peek()? {
            b'{' => self.object(|_, _, _| Some(()))?,
            b'[' => self.array(|_| {})?,
            b'"' => {
                self.string()?;
            }
            b't' => self.word("true")?,
            b'f' => self.word("false")?,
            b'n' => self.word("null")?,
            _ => self.number()?,
        }
        Some(Raw(&self.text[start..self.at]))
    }

    fn word(&mut self, word: &str) -> Option<()> {
        self.text[self.at..]
            .starts_with(word)
            .then(|| self.at += word.len())
    }

    /// An object, its members listed with their names decoded.
    fn members(&mut self) -> Option<Members<'a>> {
        let mut members = Vec::with_capacity(8);
        self.object(|name, escaped, value| {
            let body = &name.0[1..name.0.len() - 1];
            let name = match escaped {
                false => Cow::Borrowed(body),
                true => string(name)?,
            };
            members.push((name, value));
            Some(())
        })?;
        Some(Members(members))
    }

    /// `{ members }`: each member's name (its text, and whether it has escapes) and value go
    /// to `member`, which may refuse it.
    fn object(
        &mut self,
        mut member: impl FnMut(Raw<'a>, bool, Raw<'a>) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        self.nest()?;
        self.space();
        if self.eat(b'}').is_none() {
            loop {
                self.space();
                let start = self.at;
                if self.peek()? != b'"' {
                    return None;
                }
                let escaped = self.string()?;
                let name = Raw(&self.text[start..self.at]);
                self.space();
                self.eat(b':')?;
                self.space();
                let value = self.value()?;
                member(name, escaped, value)?;
                self.space();
                if self.eat(b',').is_none() {
                    self.eat(b'}')?;
                    break;
                }
            }
        }
        self.depth -= 1;
        Some(())
    }

    /// `[ elements ]`, each element to `item`.
    fn array(&mut self, mut item: impl FnMut(Raw<'a>)) -> Option<()> {
        self.eat(b'[')?;
        self.nest()?;
        self.space();
        if self.eat(b']').is_none() {
            loop {
                self.space();
                item(self.value()?);
                self.space();
                if self.eat(b',').is_none() {
                    self.eat(b']')?;
                    break;
                }
            }
        }
        self.depth -= 1;
        Some(())
    }

    fn nest(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }

    /// A string: no control characters, only JSON's escapes; whether it has any.
    fn string(&mut self) -> Option<bool> {
        let bytes = self.text.as_bytes();
        let mut escaped = false;
        self.at += 1;
        loop {
            self.at = plain_end(bytes, self.at)?;
            match bytes[self.at] {
                b'"' => {
                    self.at += 1;
                    return Some(escaped);
                }
                b'\\' => {
                    escaped = true;
                    self.at += 1;
                    match *bytes.get(self.at)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.at += 1,
                        b'u' => {
                            let hex = bytes.get(self.at + 1..self.at + 5)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            self.at += 5;
                        }
                        _ => return None,
                    }
                }
                _ => return None,
            }
        }
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    fn number(&mut self) -> Option<()> {
        let start = self.at;
        let _ = self.eat(b'-');
        match self.peek()? {
            b'0' => self.at += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        // Beyond f64's range (the general parse refuses it) only with an exponent or 309 digits.
        let mut may_overflow = self.at - start > 300;
        if self.eat(b'.').is_some() {
            self.some_digits()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            self.some_digits()?;
            may_overflow = true;
        }
        if may_overflow {
            let number: f64 = self.text[start..self.at].parse().ok()?;
            number.is_finite().then_some(())?;
        }
        Some(())
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
    }

    fn some_digits(&mut self) -> Option<()> {
        let start = self.at;
        self.digits();
        (self.at > start).then_some(())
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
        let objects = Members::parse(r#"{"o":[ {"c":4} , 5],"e":[ ]}"#).unwrap();
        let first = Members::of_first(objects.get("o").unwrap())
            .unwrap()
            .unwrap();
        assert_eq!(first.get("c").unwrap().get(), "4");
        assert!(Members::of_first(objects.get("e").unwrap())
            .unwrap()
            .is_none());
        assert!(
            Members::of_first(m.get("b").unwrap()).is_none(),
            "a first element that is no object"
        );
        assert!(Members::of_first(items[0]).is_none(), "not an array");
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

    /// Texts near valid JSON: each seed, and each with one character deleted, replaced or
    /// inserted (characters that matter to JSON's grammar).
    fn near_json() -> Vec<String> {
        let seeds = [
            r#"{"id":"c1","n":-0.5e+3,"a":[1,{"b":null},true,false,[]],"e":"x\n\u00e9\/","o":{}}"#,
            r#" { "k" : [ 0 , 1.25 , -7 , 1E9 ] , "k" : "last" , "\u0061" : { "deep" : [ { } ] } } "#,
            r#"{"choices":[{"index":0,"delta":{"content":"d0000001"},"finish_reason":null}]}"#,
            "{\"t\":\"a\\\"b\",\"z\":0}",
        ];
        let alphabet = [
            '{', '}', '[', ']', '"', ',', ':', '\\', ' ', '\n', '0', '1', '-', '+', '.', 'e', 'E',
            't', 'n', 'u', 'l', 'x', '\u{1}', '\u{1f}', '\t', '\u{7f}', 'é',
        ];
        let mut texts = Vec::new();
        for seed in seeds {
            let chars: Vec<char> = seed.chars().collect();
            texts.push(seed.to_string());
            for at in 0..chars.len() {
                let mut deleted = chars.clone();
                deleted.remove(at);
                texts.push(deleted.into_iter().collect());
                for c in alphabet {
                    let mut replaced = chars.clone();
                    replaced[at] = c;
                    texts.push(replaced.into_iter().collect());
                    let mut inserted = chars.clone();
                    inserted.insert(at, c);
                    texts.push(inserted.into_iter().collect());
                }
            }
        }
        texts
    }

    #[test]
    fn numbers_beyond_f64_are_refused_as_the_general_parse_refuses_them() {
        let big = format!("{{\"n\":{}}}", "9".repeat(309));
        let bigger = format!("{{\"n\":-{}.5}}", "9".repeat(400));
        let texts = [
            r#"{"n":1e400}"#,
            r#"{"n":-1E+400}"#,
            r#"{"t":{"x":[443.6413538634661e4007]},"n":1}"#,
            r#"{"n":1.7976931348623157e308}"#,
            r#"{"n":1.7976931348623159e308}"#,
            r#"{"n":0e999999999999999999}"#,
            r#"{"n":1e-400}"#,
            r#"{"n":123456789012345678901234567890}"#,
            &big,
            &bigger,
        ];
        for text in texts {
            let general = crate::json::parse(text).is_ok();
            assert_eq!(Members::parse(text).is_some(), general, "{text}");
        }
        assert!(Members::parse(r#"{"n":1e400}"#).is_none());
        assert!(Members::parse(r#"{"n":1e-400}"#).is_some());
    }

    #[test]
    fn a_fixed_form_is_read_only_when_the_text_is_exactly_it() {
        fn read(text: &str) -> Option<(&str, &str)> {
            fixed_form(text, r#"{"i":"#, r#","s":""#, "}")
        }
        assert_eq!(read(r#"{"i":0,"s":"ab c"}"#), Some(("0", "ab c")));
        assert_eq!(read(r#"{"i":42,"s":""}"#), Some(("42", "")));
        assert_eq!(read(r#"{"i":7,"s":"\u00e9 é"}"#), None, "an escape");
        assert_eq!(
            read("{\"i\":7,\"s\":\"a\tb\"}"),
            None,
            "a control character"
        );
        for text in [
            r#"{"i":01,"s":"a"}"#,
            r#"{"i":,"s":"a"}"#,
            r#"{"i":1.0,"s":"a"}"#,
            r#"{"i":1,"s":"a"} "#,
            r#"{"i":1,"s":"a","t":1}"#,
            r#"{"i":1,"s":"a"#,
            r#"{"i":1,"s":"a\"}"#,
            r#"{"i":1, "s":"a"}"#,
        ] {
            assert_eq!(read(text), None, "{text}");
        }
        for text in [r#"{"i":0,"s":"ab c"}"#, r#"{"i":42,"s":""}"#] {
            assert!(
                Members::parse(text).is_some(),
                "a fixed form is JSON: {text}"
            );
        }
    }

    #[test]
    fn members_accept_exactly_the_objects_the_general_parse_accepts() {
        let mut accepted = 0;
        for text in near_json() {
            let general = crate::json::parse(&text).ok().filter(|v| v.is_object());
            let view = Members::parse(&text);
            match (&general, &view) {
                (Some(object), Some(members)) => {
                    accepted += 1;
                    let object = object.as_object().unwrap();
                    // Each member (the last of a repeated name) is the general parse's value.
                    for (key, value) in object {
                        let raw = members
                            .get(key)
                            .unwrap_or_else(|| panic!("{key} in {text}"));
                        assert_eq!(&crate::json::parse(raw.get()).unwrap(), value, "{text}");
                    }
                    let names: std::collections::HashSet<_> =
                        members.0.iter().map(|(k, _)| k).collect();
                    assert_eq!(names.len(), object.len(), "{text}");
                }
                (None, None) => {}
                // A view may refuse what it cannot hold (a lone surrogate in a name), never more.
                (Some(_), None) => assert!(text.contains("\\u"), "refused: {text}"),
                (None, Some(_)) => panic!("accepted what the general parse refuses: {text}"),
            }
        }
        assert!(accepted > 500, "{accepted}");
    }

    #[test]
    fn nesting_past_the_limit_goes_to_the_general_path() {
        let nested = |depth: usize| {
            format!(
                "{{\"a\":{}1{}}}",
                "[".repeat(depth - 1),
                "]".repeat(depth - 1)
            )
        };
        assert!(Members::parse(&nested(MAX_DEPTH)).is_some());
        assert!(Members::parse(&nested(MAX_DEPTH + 1)).is_none());
        assert!(crate::json::parse(&nested(MAX_DEPTH + 1)).is_ok());
    }

    #[test]
    fn the_plain_run_ends_at_the_first_stop_byte_at_any_offset() {
        let stops = [b'"', b'\\', 0x00, 0x1f, b'\n'];
        let fillers = [b'a', b' ', 0x7f, 0x80, 0xe9, 0xff, 0x21, 0x5b, 0x5d];
        for len in 0..20 {
            for &filler in &fillers {
                for &stop in &stops {
                    for at in 0..len {
                        let mut bytes = vec![filler; len];
                        bytes[at] = stop;
                        // A second stop later must not hide the first one.
                        if at + 1 < len {
                            bytes[len - 1] = b'"';
                        }
                        for from in 0..=at {
                            assert_eq!(plain_end(&bytes, from), Some(at), "{bytes:?} from {from}");
                        }
                    }
                    assert_eq!(plain_end(&vec![filler; len], 0), None);
                }
            }
        }
    }
}
