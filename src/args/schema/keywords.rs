//! Engine configuration: the `jsonschema` options plus the keyword and format checks where the
//! crate's semantics differ from SPEC §5.5 (ECMAScript `pattern`, exact decimal `multipleOf`,
//! the `url` and `regex` formats).

use super::pattern::Pattern;
use crate::json::{number_to_string, Json, JsonMap};
use jsonschema::paths::Location;
use jsonschema::{Draft, Keyword, ValidationError, ValidationOptions};

/// Base URI of a root schema without `$id` (SPEC §5.5.3).
pub const ROOT_BASE: &str = "https://json-schema.invalid/root.json";

/// Compiles an ECMAScript regular expression the way the reference does: with the `u` flag,
/// and without it when that fails (SPEC §5.5.1 `pattern`).
pub fn compile_regex(source: &str) -> Result<regress::Regex, String> {
    regress::Regex::with_flags(source, "u")
        .or_else(|_| regress::Regex::new(source))
        .map_err(|e| format!("Invalid regular expression: /{source}/: {e}"))
}

/// Options shared by every compile: draft 2020-12 always (a `$schema` never switches drafts),
/// formats asserted, and the overrides below.
pub fn engine_options() -> ValidationOptions<'static> {
    jsonschema::options()
        .with_draft(Draft::Draft202012)
        .with_base_uri(ROOT_BASE)
        .should_validate_formats(true)
        .should_ignore_unknown_formats(true)
        // jsonschema translates patterns to a Rust engine; `pattern` must be ECMAScript (regress).
        .with_keyword("pattern", pattern_factory)
        // jsonschema compares binary fractions; the SPEC wants exact decimal multiples.
        .with_keyword("multipleOf", multiple_of_factory)
        // `url` is not a standard format name; `regex` must use ECMAScript syntax.
        .with_format("url", is_url)
        .with_format("regex", |s: &str| compile_regex(s).is_ok())
}

struct PatternKeyword(Pattern);

impl<'i> Keyword<'i> for PatternKeyword {
    fn validate(&self, instance: &'i Json) -> Result<(), ValidationError<'i>> {
        match instance.as_str().map(|s| self.0.is_match(s)) {
            None | Some(Ok(true)) => Ok(()),
            Some(Ok(false)) => Err(ValidationError::custom("does not match pattern")),
            Some(Err(error)) => Err(ValidationError::custom(error)),
        }
    }

    fn is_valid(&self, instance: &'i Json) -> bool {
        // A match that cannot be decided in bounded time fails the validation.
        instance
            .as_str()
            .is_none_or(|s| self.0.is_match(s) == Ok(true))
    }
}

// The factory signature is fixed by jsonschema (an error borrowing the schema).
#[allow(clippy::result_large_err)]
fn pattern_factory<'a>(
    _parent: &'a JsonMap,
    value: &'a Json,
    _location: Location,
) -> Result<Box<dyn for<'i> Keyword<'i>>, ValidationError<'a>> {
    let source = value
        .as_str()
        .ok_or_else(|| ValidationError::custom("pattern must be a string"))?;
    let pattern = Pattern::new(source).map_err(ValidationError::custom)?;
    Ok(Box::new(PatternKeyword(pattern)))
}

struct MultipleOfKeyword(f64);

impl<'i> Keyword<'i> for MultipleOfKeyword {
    fn validate(&self, instance: &'i Json) -> Result<(), ValidationError<'i>> {
        if self.is_valid(instance) {
            Ok(())
        } else {
            Err(ValidationError::custom("not a multiple"))
        }
    }

    fn is_valid(&self, instance: &'i Json) -> bool {
        instance.as_f64().is_none_or(|v| is_multiple_of(v, self.0))
    }
}

#[allow(clippy::result_large_err)]
fn multiple_of_factory<'a>(
    _parent: &'a JsonMap,
    value: &'a Json,
    _location: Location,
) -> Result<Box<dyn for<'i> Keyword<'i>>, ValidationError<'a>> {
    match value.as_f64() {
        Some(m) if m > 0.0 && m.is_finite() => Ok(Box::new(MultipleOfKeyword(m))),
        _ => Err(ValidationError::custom(
            "multipleOf must be a number greater than 0",
        )),
    }
}

/// `value` is a multiple of `divisor`: integral floating-point quotient, or else exact
/// divisibility of the two numbers' shortest decimal spellings (`0.0075` / `0.0001`).
pub fn is_multiple_of(value: f64, divisor: f64) -> bool {
    if divisor.is_nan() || divisor <= 0.0 || !value.is_finite() {
        return false;
    }
    let quotient = value / divisor;
    if quotient.is_finite() && quotient == quotient.trunc() {
        return true;
    }
    let (Some((a, ea)), Some((b, eb))) = (decimal(value), decimal(divisor)) else {
        return false;
    };
    if a == 0 {
        return true;
    }
    if b == 0 {
        return false;
    }
    if ea >= eb {
        // a·10^(ea-eb) mod b, by modular exponentiation (b < 10^18 fits comfortably).
        let b = u128::from(b);
        let mut rest = u128::from(a) % b;
        let mut shift = ea - eb;
        while shift > 0 && rest != 0 {
            rest = rest * 10 % b;
            shift -= 1;
        }
        rest == 0
    } else {
        let shift = eb - ea;
        if shift > 20 {
            return false; // b·10^shift > 10^20 > a, and a != 0
        }
        let big = u128::from(b) * 10u128.pow(shift as u32);
        u128::from(a) % big == 0
    }
}

/// The shortest decimal spelling of |n| as (digits, exponent): n = digits · 10^exponent.
fn decimal(n: f64) -> Option<(u64, i64)> {
    let text = number_to_string(n.abs());
    let (mantissa, exponent) = match text.split_once('e') {
        Some((m, e)) => (m, e.trim_start_matches('+').parse::<i64>().ok()?),
        None => (text.as_str(), 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits: String = format!("{int}{frac}");
    let digits = digits.trim_start_matches('0');
    let value = if digits.is_empty() {
        0
    } else {
        digits.parse::<u64>().ok()?
    };
    Some((value, exponent - frac.len() as i64))
}

/// WHATWG URL parser success = an absolute URL (SPEC §5.5.4 `url`).
fn is_url(text: &str) -> bool {
    url::Url::parse(text).is_ok()
}

#[cfg(test)]
mod tests {
    use super::is_multiple_of;

    #[test]
    fn decimal_multiples_are_exact() {
        assert!(is_multiple_of(0.0075, 0.0001));
        assert!(is_multiple_of(0.3, 0.1));
        assert!(is_multiple_of(10.0, 2.0));
        assert!(!is_multiple_of(3.0, 2.0));
        assert!(!is_multiple_of(0.35, 0.1));
        assert!(is_multiple_of(1e30, 1e-5));
        assert!(!is_multiple_of(1e-5, 1e30));
        assert!(is_multiple_of(0.0, 0.7));
    }
}
