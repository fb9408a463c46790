//! Generation-checked handles: what the host holds is a 64-bit token (a value, not a pointer:
//! the same on 32-bit targets), so a freed or forged handle is detected instead of dereferenced.

use std::collections::VecDeque;
use std::sync::Mutex;

use super::{err, FfiResult, AGENT_ERR_INVALID_HANDLE};
use crate::sync::lock;

struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

/// The slot part of a token: the index + 1 in the low 30 bits, a kind in the top two.
const INDEX_MASK: u64 = (1 << 30) - 1;
const KIND_SHIFT: u32 = 30;

/// A table of live objects of one kind. Tokens encode slot index and generation, mixed with a
/// per-kind tag so that a handle of one kind is not accepted as another. Freed slots are reused
/// oldest first, and a slot whose generation is exhausted is never reused, so a stale token can
/// never match a later object.
pub(crate) struct Registry<T> {
    kind: &'static str,
    tag: u64,
    slots: Mutex<(Vec<Slot<T>>, VecDeque<usize>)>,
}

/// What a token refers to.
pub(crate) enum Lookup<T> {
    Live(T),
    /// The object existed and was removed (freed, completed).
    Retired,
    Invalid,
}

impl<T: Clone> Registry<T> {
    pub const fn new(kind: &'static str, tag: u64) -> Self {
        Registry {
            kind,
            tag,
            slots: Mutex::new((Vec::new(), VecDeque::new())),
        }
    }

    fn token(&self, index: usize, generation: u32, kind: u8) -> u64 {
        debug_assert!(index < INDEX_MASK as usize && kind < 4);
        ((((index as u64) + 1) | (kind as u64) << KIND_SHIFT) << 32 | generation as u64) ^ self.tag
    }

    fn decode(&self, token: u64) -> Option<(usize, u32)> {
        let raw = token ^ self.tag;
        let index = ((raw >> 32) & INDEX_MASK).checked_sub(1)? as usize;
        Some((index, raw as u32))
    }

    /// The kind a token was stored with (`insert_of_kind`), also once its value was removed.
    pub fn kind_of(&self, token: u64) -> u8 {
        ((token ^ self.tag) >> (32 + KIND_SHIFT)) as u8
    }

    /// Stores a value and returns its token.
    pub fn insert(&self, value: T) -> u64 {
        self.insert_of_kind(value, 0)
    }

    /// Stores a value of one of several kinds sharing the table (0..=3): the token carries the
    /// kind, so a removed value's token still tells it (`kind_of`).
    pub fn insert_of_kind(&self, value: T, kind: u8) -> u64 {
        let mut guard = lock(&self.slots);
        let (slots, free) = &mut *guard;
        if let Some(index) = free.pop_front() {
            let slot = &mut slots[index];
            slot.generation += 1;
            slot.value = Some(value);
            return self.token(index, slot.generation, kind);
        }
        slots.push(Slot {
            generation: 0,
            value: Some(value),
        });
        self.token(slots.len() - 1, 0, kind)
    }

    pub fn lookup(&self, token: u64) -> Lookup<T> {
        let Some((index, generation)) = self.decode(token) else {
            return Lookup::Invalid;
        };
        let guard = lock(&self.slots);
        match guard.0.get(index) {
            Some(slot) if slot.generation == generation => match &slot.value {
                Some(value) => Lookup::Live(value.clone()),
                None => Lookup::Retired,
            },
            Some(slot) if generation < slot.generation => Lookup::Retired,
            _ => Lookup::Invalid,
        }
    }

    /// The live value, or `AGENT_ERR_INVALID_HANDLE` naming the argument.
    pub fn get(&self, token: u64, name: &str) -> FfiResult<T> {
        match self.lookup(token) {
            Lookup::Live(value) => Ok(value),
            Lookup::Retired => err(
                AGENT_ERR_INVALID_HANDLE,
                format!("{name} is a freed {}.", self.kind),
            ),
            Lookup::Invalid if token == 0 => err(
                AGENT_ERR_INVALID_HANDLE,
                format!("{name} is the null handle."),
            ),
            Lookup::Invalid => err(
                AGENT_ERR_INVALID_HANDLE,
                format!("{name} is not a valid {}.", self.kind),
            ),
        }
    }

    /// Removes the value; the token becomes `Retired`.
    pub fn remove(&self, token: u64) -> Option<T> {
        let (index, generation) = self.decode(token)?;
        let mut guard = lock(&self.slots);
        let (slots, free) = &mut *guard;
        let slot = slots
            .get_mut(index)
            .filter(|slot| slot.generation == generation)?;
        let value = slot.value.take();
        if value.is_some() && slot.generation < u32::MAX {
            free.push_back(index);
        }
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freed_slots_are_reused_oldest_first() {
        let registry: Registry<u32> = Registry::new("thing", 0x1234_0000_0000);
        let a = registry.insert(1);
        let b = registry.insert(2);
        registry.remove(a);
        registry.remove(b);
        // `a`'s slot was freed first, so it is reused first.
        let c = registry.insert(3);
        assert_eq!(registry.decode(c).unwrap().0, registry.decode(a).unwrap().0);
        assert!(matches!(registry.lookup(a), Lookup::Retired));
        assert!(matches!(registry.lookup(c), Lookup::Live(3)));
    }

    #[test]
    fn a_slot_with_an_exhausted_generation_is_never_reused() {
        let registry: Registry<u32> = Registry::new("thing", 0x1234_0000_0000);
        let zero = registry.insert(0);
        registry.remove(zero);
        lock(&registry.slots).0[0].generation = u32::MAX - 2;
        let first = registry.insert(1); // generation u32::MAX - 1
        assert!(registry.remove(first).is_some());
        let last = registry.insert(2); // generation u32::MAX
        assert_eq!(registry.decode(last).unwrap(), (0, u32::MAX));
        registry.remove(last);
        // The slot is retired: a new value takes a new slot, and no old token matches it.
        let fresh = registry.insert(3);
        assert_eq!(registry.decode(fresh).unwrap(), (1, 0));
        assert!(matches!(registry.lookup(last), Lookup::Retired));
        assert!(matches!(registry.lookup(first), Lookup::Retired));
        assert!(lock(&registry.slots).1.is_empty());
    }

    #[test]
    fn a_token_keeps_its_kind_after_removal() {
        let registry: Registry<u32> = Registry::new("thing", 0x5a17_c0de_0000_0000);
        let tokens: Vec<u64> = (0..4)
            .map(|kind| registry.insert_of_kind(kind as u32, kind))
            .collect();
        for (kind, &token) in tokens.iter().enumerate() {
            assert!(matches!(registry.lookup(token), Lookup::Live(value) if value == kind as u32));
            registry.remove(token);
            assert!(matches!(registry.lookup(token), Lookup::Retired));
            assert_eq!(registry.kind_of(token), kind as u8);
        }
    }
}
