//! When to compact (kit §4.4): once the context no longer leaves `reserveTokens` free in the
//! model's window.

use crate::json::{Field, Json};

/// Compaction settings (pi-coding-agent's `compaction` settings and defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompactionSettings {
    /// Compact automatically at all (default true).
    pub enabled: bool,
    /// Tokens kept free in the window for the next response (default 16,384).
    pub reserve_tokens: u64,
    /// Tokens of recent conversation a compaction keeps verbatim (default 20,000).
    pub keep_recent_tokens: u64,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        CompactionSettings {
            enabled: true,
            reserve_tokens: 16_384,
            keep_recent_tokens: 20_000,
        }
    }
}

impl CompactionSettings {
    /// These settings with the members `settings` sets (`{"enabled"?, "reserveTokens"?,
    /// "keepRecentTokens"?}`; null or absent leaves them). An ill-typed member is an error
    /// naming it.
    pub fn with_overrides(mut self, settings: &Json) -> Result<Self, String> {
        let settings = match settings {
            Json::Null => return Ok(self),
            Json::Object(map) => map,
            _ => return Err("The compaction settings must be a JSON object or null.".into()),
        };
        if let Some(value) = settings.field("enabled").filter(|v| !v.is_null()) {
            self.enabled = value
                .as_bool()
                .ok_or("The compaction setting \"enabled\" must be true or false.")?;
        }
        for (key, slot) in [
            ("reserveTokens", &mut self.reserve_tokens),
            ("keepRecentTokens", &mut self.keep_recent_tokens),
        ] {
            if let Some(value) = settings.field(key).filter(|v| !v.is_null()) {
                *slot = token_count(value).ok_or_else(|| {
                    format!(
                        "The compaction setting \"{key}\" must be a whole number of tokens (0 or more)."
                    )
                })?;
            }
        }
        Ok(self)
    }
}

/// A non-negative whole number (as an integer or a float without a fraction).
pub(crate) fn token_count(value: &Json) -> Option<u64> {
    value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f <= u64::MAX as f64)
            .map(|f| f as u64)
    })
}

/// True when compaction is enabled and `context_tokens > context_window - reserve_tokens`
/// (strictly; a reserve larger than the window always compacts).
pub fn should_compact(
    context_tokens: f64,
    context_window: f64,
    settings: &CompactionSettings,
) -> bool {
    settings.enabled && context_tokens > context_window - settings.reserve_tokens as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::json;

    #[test]
    fn overrides_only_the_members_given_and_rejects_wrong_types() {
        let base = CompactionSettings::default();
        let s = base.with_overrides(&json!({"reserveTokens": 100})).unwrap();
        assert_eq!(
            (s.enabled, s.reserve_tokens, s.keep_recent_tokens),
            (true, 100, 20_000)
        );
        assert!(base
            .with_overrides(&json!({"keepRecentTokens": -1}))
            .is_err());
        assert!(base.with_overrides(&json!({"enabled": "yes"})).is_err());
        assert!(base.with_overrides(&json!([1])).is_err());
        assert_eq!(base.with_overrides(&Json::Null).unwrap(), base);
    }
}
