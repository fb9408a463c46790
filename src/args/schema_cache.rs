//! Compiled tool schemas, kept per tool definition: a tool's schema is compiled on its first
//! call instead of on every call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use super::schema::Compiled;
use crate::json::Json;
use crate::sync::lock;

/// Definition address → (the definition, its compile outcome). The `Weak` keeps the address
/// from being reused by another definition while the entry exists.
type Cache = HashMap<usize, (Weak<Json>, Result<Arc<Compiled>, String>)>;

static CACHE: Mutex<Option<Cache>> = Mutex::new(None);

/// Entries of dropped definitions are pruned once the cache doubled since the last pruning.
static PRUNE_AT: Mutex<usize> = Mutex::new(64);

/// The compiled `parameters` of `definition` (compiled now if this definition is new).
pub(super) fn compiled(definition: &Arc<Json>, parameters: &Json) -> Result<Arc<Compiled>, String> {
    let key = Arc::as_ptr(definition) as usize;
    if let Some((_, outcome)) = lock(&CACHE).as_ref().and_then(|cache| cache.get(&key)) {
        return outcome.clone();
    }
    // Compiled outside the lock: other agents keep validating meanwhile.
    let outcome = Compiled::new(parameters).map(Arc::new);
    let mut guard = lock(&CACHE);
    let cache = guard.get_or_insert_with(HashMap::new);
    let mut prune_at = lock(&PRUNE_AT);
    if cache.len() >= *prune_at {
        cache.retain(|_, (weak, _)| weak.strong_count() > 0);
        *prune_at = (cache.len() * 2).max(64);
    }
    cache.insert(key, (Arc::downgrade(definition), outcome.clone()));
    outcome
}
