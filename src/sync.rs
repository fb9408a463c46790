//! Locking shared by every layer (its own module so that low layers such as `args` and `stream`
//! need not import `host`).

use std::sync::{Mutex, MutexGuard};

/// Locks a mutex, ignoring poisoning (a panicking host callback must not wedge the agent).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
