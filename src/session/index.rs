//! Entry id -> position among the session's entries, without a second copy of the ids: the
//! table holds positions and compares through the entries' own ids (a 100,000-entry file
//! costs no allocation per id).

use std::hash::BuildHasher;

use hashbrown::HashTable;

/// Randomly seeded: ids come from files, which may be hostile.
pub(crate) type IdHasher = foldhash::quality::RandomState;

#[derive(Default)]
pub(crate) struct IdIndex {
    table: HashTable<usize>,
    hasher: IdHasher,
}

impl IdIndex {
    /// The position of the entry with `id`; `id_of` gives the id of the entry at a position.
    pub fn get<'a>(&self, id: &str, id_of: impl Fn(usize) -> &'a str) -> Option<usize> {
        self.table
            .find(self.hasher.hash_one(id), |&at| id_of(at) == id)
            .copied()
    }

    /// The hasher ids are indexed with (ids may be hashed on other threads, with a copy).
    pub fn hasher(&self) -> IdHasher {
        self.hasher.clone()
    }

    /// Indexes the entry at `at`; an entry indexed before with the same id is replaced (the later
    /// one wins, as in the reference). Returns whether there was one.
    pub fn insert<'a>(&mut self, at: usize, id_of: impl Fn(usize) -> &'a str) -> bool {
        let hash = self.hasher.hash_one(id_of(at));
        self.insert_hashed(hash, at, id_of)
    }

    /// `insert`, with the id's hash made by `hasher()` (the id is read only when another one
    /// hashes alike).
    pub fn insert_hashed<'a>(
        &mut self,
        hash: u64,
        at: usize,
        id_of: impl Fn(usize) -> &'a str,
    ) -> bool {
        let hasher = &self.hasher;
        match self.table.entry(
            hash,
            |&other| id_of(other) == id_of(at),
            |&other| hasher.hash_one(id_of(other)),
        ) {
            hashbrown::hash_table::Entry::Occupied(mut slot) => {
                *slot.get_mut() = at;
                true
            }
            hashbrown::hash_table::Entry::Vacant(slot) => {
                slot.insert(at);
                false
            }
        }
    }

    pub fn remove<'a>(&mut self, id: &str, id_of: impl Fn(usize) -> &'a str) {
        if let Ok(slot) = self
            .table
            .find_entry(self.hasher.hash_one(id), |&at| id_of(at) == id)
        {
            slot.remove();
        }
    }

    pub fn reserve<'a>(&mut self, additional: usize, id_of: impl Fn(usize) -> &'a str) {
        let hasher = &self.hasher;
        self.table
            .reserve(additional, |&at| hasher.hash_one(id_of(at)));
    }

    pub fn clear(&mut self) {
        self.table.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lookups, a repeated id taken by the later entry (ids hashed here or by a copy of the
    /// hasher), removal, and growth past the reservation (the table rehashes through the ids).
    #[test]
    fn indexes_ids_by_position() {
        let ids: Vec<String> = (0..5000).map(|i| format!("id{}", i % 4000)).collect();
        let id_of = |i: usize| ids[i].as_str();
        let mut index = IdIndex::default();
        index.reserve(10, id_of);
        let hasher = index.hasher();
        for (at, id) in ids.iter().enumerate() {
            let repeated = if at % 2 == 0 {
                index.insert(at, id_of)
            } else {
                index.insert_hashed(hasher.hash_one(id), at, id_of)
            };
            assert_eq!(repeated, at >= 4000, "{id}");
        }
        assert_eq!(index.get("id3", id_of), Some(4003));
        assert_eq!(index.get("id3999", id_of), Some(3999));
        assert_eq!(index.get("id4000", id_of), None);
        index.remove("id3", id_of);
        assert_eq!(index.get("id3", id_of), None);
        assert_eq!(index.get("id4", id_of), Some(4004));
        index.clear();
        assert_eq!(index.get("id4", id_of), None);
    }
}
