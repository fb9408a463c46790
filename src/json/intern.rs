//! Interned JSON values: agents built from equal texts (a C host sends the same model object
//! once per agent) share one tree instead of holding a copy each, as the reference's agents
//! share the one object their host passed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use super::{to_string, Json};
use crate::sync::lock;

#[derive(Default)]
struct Table {
    values: HashMap<String, Weak<Json>>,
    /// Entries after the last sweep of dead ones: sweeping again once the table doubles keeps
    /// the cost amortised O(1) per insertion and the table within twice the live values.
    swept_len: usize,
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);

/// The shared value equal to `value` (same `JSON.stringify` text), `value` itself if none is
/// alive. Costs one rendering of `value`; only plain data is dropped under the lock.
pub fn intern(value: Json) -> Arc<Json> {
    let key = to_string(&value);
    let mut guard = lock(&TABLE);
    let table = guard.get_or_insert_with(Table::default);
    if let Some(shared) = table.values.get(&key).and_then(Weak::upgrade) {
        return shared;
    }
    if table.values.len() >= 2 * table.swept_len.max(16) {
        table.values.retain(|_, value| value.strong_count() > 0);
        table.swept_len = table.values.len();
    }
    let shared = Arc::new(value);
    table.values.insert(key, Arc::downgrade(&shared));
    shared
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::json;

    #[test]
    fn equal_texts_share_one_value_and_dead_ones_are_swept() {
        let a = intern(json!({"id": "m", "cost": {"input": 1}}));
        let b = intern(json!({"id": "m", "cost": {"input": 1}}));
        assert!(Arc::ptr_eq(&a, &b));
        // Key order is part of the text: a different order is a different value.
        let c = intern(json!({"cost": {"input": 1}, "id": "m"}));
        assert!(!Arc::ptr_eq(&a, &c));
        for i in 0..1000 {
            drop(intern(json!({ "id": i })));
        }
        let live = lock(&TABLE).as_ref().map_or(0, |t| t.values.len());
        assert!(live < 200, "dead entries kept: {live}");
    }
}
