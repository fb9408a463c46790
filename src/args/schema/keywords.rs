//! Keyword helpers shared by validation and the explain walk: ECMAScript regex compilation
//! and exact decimal `multipleOf`.

use crate::json::number_to_string;

/// Base URI of a root schema without `$id` (SPEC §5.5.3).
pub const ROOT_BASE: &str = "https://json-schema.invalid/root.json";

/// Compiles an ECMAScript regular expression the way the reference does: with the `u` flag,
/// and without it when that fails (SPEC §5.5.1 `pattern`).
pub fn compile_regex(source: &str) -> Result<regress::Regex, String> {
    regress::Regex::with_flags(source, "u")
        .or_else(|_| regress::Regex::new(source))
        .map_err(|e| format!("Invalid regular expression: /{source}/: {e}"))
}

/// `value` is a multiple of `divisor`: integral floating-point quotient, or else exact
/// divisibility of the two numbers' shortest decimal spellings (`0.0075` / `0.0001`).
/// As in the reference, `0` divides nothing and a negative divisor counts by its magnitude.
pub fn is_multiple_of(value: f64, divisor: f64) -> bool {
    let divisor = divisor.abs();
    if divisor.is_nan() || divisor == 0.0 || !value.is_finite() {
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
