//! Value helpers of the explain walk: tagged-union detection and duplicate items.

use super::Node;
use crate::json::{deep_equal, number_to_string, to_string, Json};
use std::collections::HashSet;

/// The tag of a tagged union: the first property of the first branch whose schema in every
/// branch has a distinct primitive `const`.
pub fn union_tag<'a>(branches: &[Node<'a>]) -> Option<(&'a str, Vec<Json>)> {
    let first = branches.first()?.schema.get("properties")?.as_object()?;
    'keys: for key in first.keys() {
        let mut consts: Vec<Json> = Vec::new();
        for branch in branches {
            let constant = branch
                .schema
                .get("properties")
                .and_then(|p| p.get(key))
                .and_then(|s| s.get("const"));
            match constant {
                Some(c)
                    if !c.is_object()
                        && !c.is_array()
                        && !consts.iter().any(|d| deep_equal(c, d)) =>
                {
                    consts.push(c.clone());
                }
                _ => continue 'keys,
            }
        }
        return Some((key.as_str(), consts));
    }
    None
}

/// Whether two items are JSON-equal, via a canonical text (sorted keys, numbers as doubles).
pub fn has_duplicates(items: &[Json]) -> bool {
    fn canonical(value: &Json, out: &mut String) {
        match value {
            Json::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for key in keys {
                    crate::json::write_string(out, key);
                    out.push(':');
                    if let Some(v) = map.get(key) {
                        canonical(v, out);
                    }
                    out.push(',');
                }
                out.push('}');
            }
            Json::Array(items) => {
                out.push('[');
                for item in items {
                    canonical(item, out);
                    out.push(',');
                }
                out.push(']');
            }
            Json::Number(n) => out.push_str(&number_to_string(n.as_f64().unwrap_or(0.0))),
            other => out.push_str(&to_string(other)),
        }
    }
    let mut seen = HashSet::new();
    items.iter().any(|item| {
        let mut text = String::new();
        canonical(item, &mut text);
        !seen.insert(text)
    })
}
