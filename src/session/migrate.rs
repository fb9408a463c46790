//! Versions 1 and 2 of the format brought to version 3, as the reference migrates them.

use crate::json::Json;

/// The header's version: any number the reader accepted (it refuses versions above 3); absent
/// or null is 1.
fn version(header: &Json) -> f64 {
    header.get("version").and_then(Json::as_f64).unwrap_or(1.0)
}

/// Whether a file with this header is of an older version (then `migrate` and rewrite it).
pub(crate) fn needed(header: &Json) -> bool {
    version(header) < super::CURRENT_VERSION as f64
}

/// Migrates an older file's header and entries in place (nothing for version 3). Version 1 entries get ids chained in file order, and a compaction's `firstKeptEntryIndex`
/// (an index counting the header as 0) becomes `firstKeptEntryId`; versions 1 and 2 then have
/// their `hookMessage` messages renamed to `custom`.
pub(crate) fn migrate(header: &mut Json, entries: &mut [Json]) {
    if !needed(header) {
        return;
    }
    if version(header) < 2.0 {
        v1_to_v2(entries);
    }
    for entry in entries.iter_mut() {
        if entry.get("type").and_then(Json::as_str) != Some("message") {
            continue;
        }
        if let Some(Json::Object(message)) = entry.get_mut("message") {
            if message.get("role").and_then(Json::as_str) == Some("hookMessage") {
                message.insert("role".into(), "custom".into());
            }
        }
    }
    if let Json::Object(map) = header {
        crate::json::set_key(map, "version", super::CURRENT_VERSION.into());
    }
}

fn v1_to_v2(entries: &mut [Json]) {
    let mut taken = std::collections::HashSet::new();
    let mut previous: Option<String> = None;
    for index in 0..entries.len() {
        let id = super::ids::entry_id(|id| taken.contains(id));
        taken.insert(id.clone());
        let Json::Object(map) = &mut entries[index] else {
            continue;
        };
        crate::json::set_key(map, "id", id.clone().into());
        crate::json::set_key(map, "parentId", previous.map_or(Json::Null, Json::from));
        previous = Some(id);
        let is_compaction = map.get("type").and_then(Json::as_str) == Some("compaction");
        let Some(k) = map.get("firstKeptEntryIndex").and_then(Json::as_f64) else {
            continue;
        };
        if !is_compaction {
            continue;
        }
        // `k` counts the header as entry 0; entries after this one have no id yet, as in the
        // reference, which migrates in file order.
        let target = (k >= 1.0 && k.fract() == 0.0)
            .then(|| entries.get(k as usize - 1))
            .flatten()
            .filter(|e| e.get("type").and_then(Json::as_str) != Some("session"))
            .and_then(|e| e.get("id").and_then(Json::as_str))
            .map(str::to_string);
        let Json::Object(map) = &mut entries[index] else {
            continue;
        };
        if let Some(target) = target {
            crate::json::set_key(map, "firstKeptEntryId", target.into());
        }
        map.shift_remove("firstKeptEntryIndex");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::json;

    /// A version 1 compaction whose index points at a later entry (which has no id yet when the
    /// reference migrates it) or at the header keeps no `firstKeptEntryId`; the index goes.
    #[test]
    fn a_first_kept_index_that_points_forward_or_at_the_header_is_dropped() {
        let mut header = json!({"type": "session", "id": "s"});
        let mut entries = vec![
            json!({"type": "compaction", "summary": "a", "firstKeptEntryIndex": 0}),
            json!({"type": "compaction", "summary": "b", "firstKeptEntryIndex": 4}),
            json!({"type": "compaction", "summary": "c", "firstKeptEntryIndex": 1}),
            json!({"type": "message", "message": {"role": "hookMessage", "content": "x"}}),
        ];
        migrate(&mut header, &mut entries);
        assert_eq!(header["version"], 3);
        assert!(entries[0].get("firstKeptEntryId").is_none());
        assert!(entries[1].get("firstKeptEntryId").is_none());
        assert_eq!(entries[2]["firstKeptEntryId"], entries[0]["id"]);
        assert!(entries
            .iter()
            .all(|e| e.get("firstKeptEntryIndex").is_none()));
        assert_eq!(entries[1]["parentId"], entries[0]["id"]);
        assert_eq!(entries[3]["message"]["role"], "custom");
        // Ids come last, where the reference's assignment puts them.
        let keys: Vec<&String> = entries[3].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["type", "message", "id", "parentId"]);
    }
}
