//! Entry ids, session ids and timestamps as the reference writes them.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// 64 unpredictable bits: SipHash with the process's random keys over a counter and the clock
/// (no random-number crate in the core; these ids need uniqueness, not secrecy).
fn random_u64() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.finish()
}

/// A new entry id: 8 lowercase hex characters that `taken` does not hold.
pub(crate) fn entry_id(taken: impl Fn(&str) -> bool) -> String {
    loop {
        let id = format!("{:08x}", random_u64() as u32);
        if !taken(&id) {
            return id;
        }
    }
}

/// A new session id: a UUID version 7 (48-bit milliseconds, then random bits), as pi's are.
pub(crate) fn session_id() -> String {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&random_u64().to_be_bytes());
    bytes[8..].copy_from_slice(&random_u64().to_be_bytes());
    let ms = now_ms() as u64;
    bytes[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
    bytes[6] = 0x70 | (bytes[6] & 0x0f);
    bytes[8] = 0x80 | (bytes[8] & 0x3f);
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Now as `new Date().toISOString()`: `2026-12-02T02:01:49.249Z`.
pub(crate) fn now_iso() -> String {
    ms_to_iso(now_ms())
}

/// Milliseconds since the epoch as an ISO 8601 UTC text with milliseconds.
pub(crate) fn ms_to_iso(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000
    )
}

/// `new Date(text).getTime()` for the ISO 8601 forms JavaScript reads (`YYYY-MM-DD`, then
/// optionally `THH:MM[:SS[.fff]]` and `Z` or `±HH:MM`); None where it gives NaN. A time without
/// a zone is read as UTC (JavaScript would use the local zone).
pub(crate) fn iso_to_ms(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    let digits = |from: usize, count: usize| -> Option<i64> {
        let part = bytes.get(from..from + count)?;
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| part.iter().fold(0i64, |n, d| n * 10 + (d - b'0') as i64))
    };
    let year = digits(0, 4)?;
    let (month, day) = if bytes.len() >= 10 {
        (bytes.get(4) == Some(&b'-') && bytes.get(7) == Some(&b'-'))
            .then_some((digits(5, 2)?, digits(8, 2)?))?
    } else {
        return None;
    };
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    let mut ms = days_from_civil(year, month, day) * 86_400_000;
    let mut i = 10;
    if i == bytes.len() {
        return Some(ms);
    }
    if bytes[i] != b'T' {
        return None;
    }
    let hour = digits(i + 1, 2)?;
    if bytes.get(i + 3) != Some(&b':') {
        return None;
    }
    let minute = digits(i + 4, 2)?;
    i += 6;
    let mut second = 0;
    let mut millis = 0;
    if bytes.get(i) == Some(&b':') {
        second = digits(i + 1, 2)?;
        i += 3;
        if bytes.get(i) == Some(&b'.') {
            i += 1;
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            if i == start {
                return None;
            }
            let fraction = &text[start..i.min(start + 3)];
            millis = fraction.parse::<i64>().ok()? * 10i64.pow(3 - fraction.len() as u32);
        }
    }
    if hour > 24 || minute > 59 || second > 59 || (hour == 24 && (minute | second | millis) != 0) {
        return None;
    }
    ms += ((hour * 60 + minute) * 60 + second) * 1000 + millis;
    match bytes.get(i) {
        None => Some(ms),
        Some(b'Z') if i + 1 == bytes.len() => Some(ms),
        Some(sign @ (b'+' | b'-')) if i + 6 == bytes.len() && bytes[i + 3] == b':' => {
            let offset = (digits(i + 1, 2)? * 60 + digits(i + 4, 2)?) * 60_000;
            Some(if *sign == b'+' {
                ms - offset
            } else {
                ms + offset
            })
        }
        _ => None,
    }
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_round_trips_and_reads_what_javascript_reads() {
        assert_eq!(
            iso_to_ms("2024-12-03T14:00:01.000Z"),
            Some(1_733_234_401_000)
        );
        assert_eq!(ms_to_iso(1_733_234_401_000), "2024-12-03T14:00:01.000Z");
        assert_eq!(ms_to_iso(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_to_ms("2024-02-29"), Some(1_709_164_800_000));
        assert_eq!(
            iso_to_ms("2024-12-03T14:00:01.5+01:00"),
            Some(1_733_230_801_500)
        );
        assert_eq!(iso_to_ms("2023-02-29T00:00:00Z"), None);
        assert_eq!(iso_to_ms("yesterday"), None);
        let now = now_ms();
        assert_eq!(iso_to_ms(&ms_to_iso(now)), Some(now));
    }

    #[test]
    fn ids_have_the_reference_shapes() {
        let id = entry_id(|_| false);
        assert_eq!(id.len(), 8);
        assert!(id
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        // A collision is retried: only "taken" ids are refused.
        let first = entry_id(|_| false);
        let second = entry_id(|candidate| candidate == first);
        assert_ne!(first, second);
        let session = session_id();
        let parts: Vec<&str> = session.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(parts[2].starts_with('7'));
        assert!(matches!(parts[3].as_bytes()[0], b'8' | b'9' | b'a' | b'b'));
        // The first 48 bits are the time in milliseconds.
        let ms = i64::from_str_radix(&format!("{}{}", parts[0], parts[1]), 16).unwrap();
        assert!((now_ms() - ms).abs() < 60_000);
    }
}
