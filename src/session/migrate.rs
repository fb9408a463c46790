//! Versions 1 and 2 of the format brought to version 3, as the reference migrates them.

use crate::json::Json;

/// Whether a file with this header is of an older version (absent or null is version 1).
pub(crate) fn needed(header: &Json) -> bool {
    header.get("version").and_then(Json::as_f64).unwrap_or(1.0) < super::CURRENT_VERSION as f64
}

/// Migrates in place; true when anything changed (the caller then rewrites the file).
/// Version 1 entries get ids chained in file order, and a compaction's `firstKeptEntryIndex`
/// (an index counting the header as 0) becomes `firstKeptEntryId`; versions 1 and 2 then have
/// their `hookMessage` messages renamed to `custom`.
pub(crate) fn migrate(header: &mut Json, entries: &mut [Json]) -> bool {
    // Any number the reader accepted (a version above 3 was refused); absent or null is 1.
    let version = header.get("version").and_then(Json::as_f64).unwrap_or(1.0);
    if version >= super::CURRENT_VERSION as f64 {
        return false;
    }
    if version < 2.0 {
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
    true
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
