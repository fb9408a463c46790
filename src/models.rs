//! The model catalogue: pi-ai 1.6.0's built-in chat models (1,698 of 43 providers) as facts, so
//! a host can name a model as `"provider/id"` (`"anthropic/claude-sonnet-4-5"`) and get the
//! model object its agent needs: `api`, `baseUrl`, `contextWindow`, `maxTokens`, `reasoning`,
//! `input`, and `cost` per million tokens (which the built-in providers price usage with).
//!
//! Each model is the object pi-ai's `getModel(provider, id)` returns, restricted to the members
//! libagent uses, in pi-ai's member order: `id`, `name`, `api`, `provider`, `baseUrl`,
//! `reasoning`, `thinkingLevelMap`, `input`, `cost`, `contextWindow`, `maxTokens`, and for the
//! APIs the built-in providers speak, `headers` and `compat` (tools/models/generate.mjs, which
//! writes the data, says what is left out and why).
//!
//! The data (src/models/catalogue.jsonl, one model per line, `make models` regenerates it) is
//! embedded deflated (41 KB; the stripped library grows by 89 KB in all) and inflated on first
//! use; the text and an index of it then stay in memory (1 MB of heap), and each lookup parses
//! one line.

use std::ops::Range;
use std::sync::OnceLock;

use crate::json::Json;

/// The package and version the catalogue was generated from.
pub const SOURCE: &str = "@earendil-works/pi-ai 1.6.0";

static DEFLATED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/catalogue.jsonl.deflate"));

/// The inflated catalogue and where each model's line is.
struct Catalogue {
    text: String,
    entries: Vec<Entry>,
}

/// One model: its provider and id (for lookups) and its line in `Catalogue::text`.
struct Entry {
    provider: String,
    id: String,
    line: Range<usize>,
}

/// The members a lookup needs, read from each line once.
#[derive(serde::Deserialize)]
struct Key {
    provider: String,
    id: String,
}

fn catalogue() -> &'static Catalogue {
    static CATALOGUE: OnceLock<Catalogue> = OnceLock::new();
    CATALOGUE.get_or_init(|| {
        // The build wrote both the data and this code: a failure here is a broken build.
        let bytes = miniz_oxide::inflate::decompress_to_vec(DEFLATED)
            .expect("the embedded model catalogue inflates");
        let mut text = String::from_utf8(bytes).expect("the model catalogue is UTF-8");
        text.shrink_to_fit(); // inflating grew it by doubling
        let mut entries = Vec::new();
        let mut start = 0;
        for line in text.split_inclusive('\n') {
            let end = start + line.len();
            let key: Key =
                serde_json::from_str(line).expect("each catalogue line is a model object");
            entries.push(Entry {
                provider: key.provider,
                id: key.id,
                line: start..end,
            });
            start = end;
        }
        entries.shrink_to_fit();
        Catalogue { text, entries }
    })
}

impl Catalogue {
    fn model(&self, entry: &Entry) -> Json {
        crate::json::parse(&self.text[entry.line.clone()]).expect("each catalogue line is JSON")
    }
}

/// The model `id` of `provider`, as pi-ai's `getModel(provider, id)` returns it (restricted to
/// the members above); `None` when the catalogue has no such model.
pub fn find(provider: &str, id: &str) -> Option<Json> {
    let catalogue = catalogue();
    catalogue
        .entries
        .iter()
        .find(|e| e.provider == provider && e.id == id)
        .map(|e| catalogue.model(e))
}

/// Splits `"provider/id"` at its first slash (provider names have none; model ids may:
/// `"openrouter/anthropic/claude-sonnet-4.5"`). `None` without a slash or with an empty side.
pub fn split_name(name: &str) -> Option<(&str, &str)> {
    name.split_once('/')
        .filter(|(provider, id)| !provider.is_empty() && !id.is_empty())
}

/// The model named `"provider/id"` (see [`split_name`]).
pub fn find_by_name(name: &str) -> Option<Json> {
    split_name(name).and_then(|(provider, id)| find(provider, id))
}

/// The providers of the catalogue, in pi-ai's order.
pub fn providers() -> Vec<&'static str> {
    let mut providers: Vec<&'static str> = Vec::new();
    for entry in &catalogue().entries {
        if providers.last() != Some(&entry.provider.as_str()) {
            providers.push(&entry.provider);
        }
    }
    providers
}

/// Every model of `provider` (every model of the catalogue for `None`), in pi-ai's order; empty
/// for a provider the catalogue does not have.
pub fn list(provider: Option<&str>) -> Vec<Json> {
    let catalogue = catalogue();
    catalogue
        .entries
        .iter()
        .filter(|e| provider.is_none_or(|p| e.provider == p))
        .map(|e| catalogue.model(e))
        .collect()
}

/// Why `name` is not in the catalogue, as a sentence naming it (`how_to_list` ends it: how the
/// caller's language lists the models).
pub fn unknown_model_message(name: &str, how_to_list: &str) -> String {
    match split_name(name) {
        None => format!(
            "'{name}' is not a model name: name a model as \"provider/id\" (e.g. \"anthropic/claude-sonnet-4-5\"); {how_to_list}."
        ),
        Some((provider, _)) if !providers().contains(&provider) => format!(
            "Unknown model '{name}': the model catalogue ({SOURCE}) has no provider '{provider}'; {how_to_list}."
        ),
        Some((provider, id)) => format!(
            "Unknown model '{name}': the model catalogue ({SOURCE}) has no model '{id}' for provider '{provider}'; {how_to_list}."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_of_the_data_is_found_as_written() {
        let data = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src/models/catalogue.jsonl"
        ))
        .unwrap();
        let mut count = 0;
        for line in data.lines() {
            let key: Key = serde_json::from_str(line).unwrap();
            let found = find(&key.provider, &key.id).unwrap();
            // Same members, same order, same numbers as generated from pi-ai's objects.
            assert_eq!(crate::json::to_string(&found), line);
            count += 1;
        }
        assert_eq!(count, catalogue().entries.len());
        assert!(count > 1000, "{count} models");
    }

    #[test]
    fn a_known_model_has_its_limits_and_prices() {
        let model = find_by_name("anthropic/claude-sonnet-4-5").unwrap();
        assert_eq!(model["api"], "anthropic-messages");
        assert_eq!(model["baseUrl"], "https://api.anthropic.com");
        assert_eq!(model["contextWindow"], 200000);
        assert_eq!(model["maxTokens"], 64000);
        assert_eq!(model["cost"]["input"], 3.0);
        assert_eq!(model["cost"]["cacheRead"], 0.3);
        let keys: Vec<&str> = model
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(&keys[..5], ["id", "name", "api", "provider", "baseUrl"]);
    }

    #[test]
    fn names_split_at_the_first_slash() {
        assert_eq!(
            split_name("openrouter/anthropic/claude-sonnet-4.5"),
            Some(("openrouter", "anthropic/claude-sonnet-4.5"))
        );
        let model = find_by_name("openrouter/anthropic/claude-sonnet-4.5").unwrap();
        assert_eq!(model["provider"], "openrouter");
        assert_eq!(model["id"], "anthropic/claude-sonnet-4.5");
        assert_eq!(split_name("claude-sonnet-4-5"), None);
        assert_eq!(split_name("/x"), None);
        assert_eq!(split_name("x/"), None);
    }

    #[test]
    fn unknown_names_are_none_and_explained() {
        assert!(find_by_name("anthropic/claude-nonexistent").is_none());
        assert!(find("nobody", "claude-sonnet-4-5").is_none());
        assert!(find_by_name("claude-sonnet-4-5").is_none());
        let message = unknown_model_message("anthropic/claude-x", "list them");
        assert!(
            message.contains("no model 'claude-x' for provider 'anthropic'"),
            "{message}"
        );
        let message = unknown_model_message("nobody/x", "list them");
        assert!(message.contains("no provider 'nobody'"), "{message}");
        let message = unknown_model_message("x", "list them");
        assert!(message.contains("not a model name"), "{message}");
    }

    #[test]
    fn providers_and_lists_follow_the_catalogue() {
        let providers = providers();
        assert!(providers.contains(&"anthropic") && providers.contains(&"openai"));
        let unique: std::collections::HashSet<_> = providers.iter().collect();
        assert_eq!(
            unique.len(),
            providers.len(),
            "each provider's models are together"
        );
        let anthropic = list(Some("anthropic"));
        assert!(anthropic.iter().all(|m| m["provider"] == "anthropic"));
        assert!(anthropic.iter().any(|m| m["id"] == "claude-sonnet-4-5"));
        assert!(list(Some("nobody")).is_empty());
        assert_eq!(list(None).len(), catalogue().entries.len());
    }
}
