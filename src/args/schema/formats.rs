//! The `format` checks of SPEC §5.5.4 (unknown names are annotations: they always pass).
//!
//! Most formats are a grammar simple enough for one regular expression (the `regex` crate, ASCII
//! classes only), compiled on first use; dates and times also check the calendar.

use super::keywords::compile_regex;
use regex::Regex;
use std::sync::OnceLock;

/// Whether `text` satisfies the format `name`.
pub fn format_ok(name: &str, text: &str) -> bool {
    match name {
        "date" => date(text),
        "time" => time(text),
        "date-time" => text
            .split_once(['T', 't'])
            .is_some_and(|(d, t)| date(d) && time(t)),
        "duration" => matches(&DURATION, text),
        "email" => matches(&EMAIL, text),
        "idn-email" => idn_email(text),
        "hostname" => hostname(text),
        "idn-hostname" => idn_hostname(text),
        "ipv4" => matches(&IPV4, text),
        "ipv6" => text.parse::<std::net::Ipv6Addr>().is_ok(),
        "uri" => uri(false, false, text),
        "uri-reference" => uri(false, true, text),
        "iri" => uri(true, false, text),
        "iri-reference" => uri(true, true, text),
        "uri-template" => matches(&URI_TEMPLATE, text),
        "url" => url::Url::parse(text).is_ok(),
        "uuid" => matches(&UUID, text),
        "json-pointer" => matches(&JSON_POINTER, text),
        "json-pointer-uri-fragment" => matches(&JSON_POINTER_FRAGMENT, text),
        "relative-json-pointer" => matches(&RELATIVE_JSON_POINTER, text),
        "regex" => compile_regex(text).is_ok(),
        _ => true,
    }
}

/// RFC 3986 URIs (RFC 3987 IRIs when `iri`: non-ASCII characters allowed too); `reference`
/// admits relative references.
fn uri(iri: bool, reference: bool, text: &str) -> bool {
    static GRAMMARS: [OnceLock<Regex>; 4] = [const { OnceLock::new() }; 4];
    let slot = usize::from(iri) * 2 + usize::from(reference);
    GRAMMARS[slot]
        .get_or_init(|| {
            // Case-insensitive letters, ASCII-only (`-u`) for URIs so `K` (Kelvin) is not a `k`.
            let (flags, extra) = if iri {
                ("(?i)", r"\x{A0}-\x{10FFFF}")
            } else {
                ("(?i-u)", "")
            };
            let unreserved = format!(r"[a-z0-9\-._~!$&'()*+,;={extra}]|%[0-9a-f]{{2}}");
            let pchar = format!(r"(?:{unreserved}|[:@])");
            let segment_nc = format!(r"(?:{unreserved}|@)");
            let authority = format!(
                r"//(?:(?:{unreserved}|:)*@)?(?:\[(?:[0-9a-f:.]+|v[0-9a-f]+\.(?:{unreserved}|:)+)\]|(?:{unreserved})*)(?::[0-9]*)?(?:/{pchar}*)*"
            );
            let tail = format!(r"(?:\?(?:{pchar}|[/?])*)?(?:#(?:{pchar}|[/?])*)?");
            let absolute = format!(r"[a-z][a-z0-9+.-]*:(?:{authority}|/?(?:{pchar}+(?:/{pchar}*)*)?){tail}");
            let source = if reference {
                let relative = format!(
                    r"(?:{authority}|/(?:{pchar}+(?:/{pchar}*)*)?|{segment_nc}+(?:/{pchar}*)*)?{tail}"
                );
                format!(r"{flags}^(?:{absolute}|{relative})$")
            } else {
                format!(r"{flags}^{absolute}$")
            };
            Regex::new(&source).expect("URI grammars are valid")
        })
        .is_match(text)
}

/// A format's expression: its source and, once used, the compiled form.
struct Grammar(&'static str, OnceLock<Regex>);

fn matches(grammar: &Grammar, text: &str) -> bool {
    grammar
        .1
        .get_or_init(|| Regex::new(grammar.0).expect("format grammars are valid"))
        .is_match(text)
}

macro_rules! grammar {
    ($name:ident, $source:expr) => {
        static $name: Grammar = Grammar($source, OnceLock::new());
    };
}

// RFC 3339 appendix A: weeks alone, or date parts in order with an optional time part.
grammar!(
    DURATION,
    r"^P(?:[0-9]+W|(?:[0-9]+D|[0-9]+M(?:[0-9]+D)?|[0-9]+Y(?:[0-9]+M(?:[0-9]+D)?)?)(?:T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S))?|T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S))$"
);
// RFC 5322: a dot-atom or quoted local part, then a host name or an address literal.
grammar!(
    EMAIL,
    r#"(?i-u)^(?:[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*|"(?:[\x01-\x08\x0b\x0c\x0e-\x21\x23-\x5b\x5d-\x7f]|\\[\x01-\x09\x0b\x0c\x0e-\x7f])*")@(?:(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]*[a-z0-9])?|\[(?:(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])|[a-z0-9-]*[a-z0-9]:(?:[\x01-\x08\x0b\x0c\x0e-\x1f\x21-\x5a\x53-\x7f]|\\[\x01-\x09\x0b\x0c\x0e-\x7f])+)\])$"#
);
grammar!(
    IPV4,
    r"^(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$"
);
grammar!(
    UUID,
    r"(?i-u)^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
);
// RFC 6570: literals and `{operator? varspec,...}` expressions.
grammar!(
    URI_TEMPLATE,
    r#"(?i)^(?:[^\x00-\x20"'%<>\\^`{|}]|%[0-9a-f]{2}|\{[+#./;?&=,!@|]?(?:[a-z0-9_]|%[0-9a-f]{2})(?:\.?(?:[a-z0-9_]|%[0-9a-f]{2}))*(?::[1-9][0-9]{0,3}|\*)?(?:,(?:[a-z0-9_]|%[0-9a-f]{2})(?:\.?(?:[a-z0-9_]|%[0-9a-f]{2}))*(?::[1-9][0-9]{0,3}|\*)?)*\})*$"#
);
grammar!(JSON_POINTER, r"^(?:/(?:[^~/]|~[01])*)*$");
grammar!(
    JSON_POINTER_FRAGMENT,
    r"(?i-u)^#(?:/(?:[a-z0-9_\-.!$&'()*+,;:=@]|%[0-9a-f]{2}|~[01])*)*$"
);
grammar!(
    RELATIVE_JSON_POINTER,
    r"^(?:0|[1-9][0-9]*)(?:#|(?:/(?:[^~/]|~[01])*)*)$"
);

/// Parses exactly `n` ASCII digits.
fn digits(text: &str, n: usize) -> Option<u32> {
    (text.len() == n && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

/// `YYYY-MM-DD`, a real calendar day.
fn date(text: &str) -> bool {
    let mut parts = text.split('-');
    let (Some(y), Some(m), Some(d), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let (Some(year), Some(month), Some(day)) = (digits(y, 4), digits(m, 2), digits(d, 2)) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// `HH:MM:SS[.frac]` and a required zone; a leap second only at 23:59 UTC.
fn time(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.len() < 9 || bytes[2] != b':' || bytes[5] != b':' {
        return false;
    }
    let (Some(hour), Some(minute), Some(second)) = (
        digits(&text[0..2], 2),
        digits(&text[3..5], 2),
        digits(&text[6..8], 2),
    ) else {
        return false;
    };
    let mut rest = &text[8..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let end = fraction
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(fraction.len());
        if end == 0 {
            return false;
        }
        rest = &fraction[end..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first() {
                Some(b'+') => 1,
                Some(b'-') => -1,
                _ => return false,
            };
            let zone = &rest[1..];
            let (Some(h), Some(m)) = (
                zone.get(0..2).and_then(|s| digits(s, 2)),
                zone.get(3..5).and_then(|s| digits(s, 2)),
            ) else {
                return false;
            };
            if zone.len() != 5 || zone.as_bytes()[2] != b':' || h > 23 || m > 59 {
                return false;
            }
            sign * (h as i32 * 60 + m as i32)
        }
    };
    if hour > 23 || minute > 59 || second > 60 {
        return false;
    }
    // A leap second is the last second of a UTC day.
    second < 60 || (hour as i32 * 60 + minute as i32 - offset).rem_euclid(1440) == 23 * 60 + 59
}

/// RFC 1123 host name: dot-separated labels of letters, digits and inner hyphens, 1–63
/// characters each, 253 in all (no trailing dot, as the reference).
fn hostname(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            let bytes = label.as_bytes();
            !bytes.is_empty()
                && bytes.len() <= 63
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
                && bytes[0] != b'-'
                && bytes[bytes.len() - 1] != b'-'
                && (bytes.get(2..4) != Some(b"--") || a_label(label))
        })
}

/// A label with `--` in its third and fourth places must be a valid punycode label (RFC 5891).
fn a_label(label: &str) -> bool {
    label
        .get(..4)
        .is_some_and(|p| p.eq_ignore_ascii_case("xn--"))
        && url::Host::parse(label).is_ok()
}

/// An internationalized host name: its ASCII (punycode) form is a host name.
fn idn_hostname(text: &str) -> bool {
    if text.is_ascii() {
        return hostname(text);
    }
    url::Host::parse(text).is_ok_and(|host| match host {
        url::Host::Domain(ascii) => hostname(&ascii),
        _ => false,
    })
}

/// `local@domain` where the local part may hold non-ASCII characters and the domain is an
/// internationalized host name.
fn idn_email(text: &str) -> bool {
    let Some((local, domain)) = text.rsplit_once('@') else {
        return false;
    };
    let ascii_local: String = local
        .chars()
        .map(|c| if c.is_ascii() { c } else { 'a' })
        .collect();
    matches(&EMAIL, &format!("{ascii_local}@example.com")) && idn_hostname(domain)
}
