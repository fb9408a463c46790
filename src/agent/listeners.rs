//! An agent's subscriptions (SPEC §7.11, §7.12): a copy-on-write list, so that delivering an
//! event takes one lock however many listeners there are, and a generation number that tells a
//! delivery in progress when the live set changed under it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::host::{ImmediateListener, Listener};
use crate::sync::lock;

/// A subscription's listener.
#[derive(Clone)]
pub(super) enum Subscriber {
    Async(Listener),
    Immediate(ImmediateListener),
}

/// The subscriptions in subscription order (ids increase).
pub(super) type Subscriptions = Arc<Vec<(u64, Subscriber)>>;

#[derive(Default)]
pub(super) struct ListenerSet {
    list: Mutex<Subscriptions>,
    /// Bumped (under the lock) by every change of `list`.
    generation: AtomicU64,
}

impl ListenerSet {
    /// The live set now and its generation (one lock).
    #[inline]
    pub(super) fn current(&self) -> (Subscriptions, u64) {
        let list = lock(&self.list);
        (list.clone(), self.generation.load(Ordering::Relaxed))
    }

    /// Whether the set changed since `generation`: a delivery then walks the new one.
    pub(super) fn changed_since(&self, generation: u64) -> bool {
        self.generation.load(Ordering::Acquire) != generation
    }

    /// Applies `change` to a copy of the list. What it returns (a removed listener) and the old
    /// list are dropped by the caller after the lock was released: a finalizer is host code.
    fn change<R>(
        &self,
        change: impl FnOnce(&mut Vec<(u64, Subscriber)>) -> R,
    ) -> (R, Subscriptions) {
        let mut list = lock(&self.list);
        let mut copy = (**list).clone();
        let result = change(&mut copy);
        let old = std::mem::replace(&mut *list, Arc::new(copy));
        self.generation.fetch_add(1, Ordering::Release);
        (result, old)
    }

    /// The id of `listener` when subscribed already, else it is added with `id()`.
    pub(super) fn add_async(&self, listener: Listener, id: impl FnOnce() -> u64) -> u64 {
        let (id, old) = self.change(|list| {
            let existing = list
                .iter()
                .find(|(_, l)| matches!(l, Subscriber::Async(l) if Arc::ptr_eq(l, &listener)));
            match existing {
                Some((id, _)) => *id,
                None => {
                    let id = id();
                    list.push((id, Subscriber::Async(listener)));
                    id
                }
            }
        });
        drop(old);
        id
    }

    pub(super) fn add(&self, subscriber: Subscriber, id: impl FnOnce() -> u64) -> u64 {
        let (id, old) = self.change(|list| {
            let id = id();
            list.push((id, subscriber));
            id
        });
        drop(old);
        id
    }

    /// Removes subscription `id`; `false` when there is none.
    pub(super) fn remove(&self, id: u64) -> bool {
        let (removed, old) = self.change(|list| {
            let index = list.iter().position(|(other, _)| *other == id);
            index.map(|i| list.remove(i))
        });
        drop(old);
        removed.is_some()
    }

    /// Removes every subscription.
    pub(super) fn clear(&self) {
        let ((), old) = self.change(Vec::clear);
        drop(old);
    }
}
