// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The host's range storage: a `BTreeMap` keyed by last page, with
//! reservations counted so that tests can check the logic reserves exactly
//! what it uses, and with injectable allocation failures.

use std::collections::BTreeMap;

use kfd_logic::svm::{
    ranges::{Range, Store},
    SvmError,
};

/// `BTreeMap` storage.
pub struct BTreeStore<T> {
    pub map: BTreeMap<u64, Range<T>>,
    /// Inserts still covered by the last `reserve`.
    pub reserved: usize,
    /// Fail the next `reserve` with a non-zero count.
    pub fail_next_reserve: bool,
}

impl<T> BTreeStore<T> {
    pub fn new() -> Self {
        BTreeStore {
            map: BTreeMap::new(),
            reserved: 0,
            fail_next_reserve: false,
        }
    }
}

impl<T> Store<T> for BTreeStore<T> {
    fn reserve(&mut self, n: usize) -> Result<(), SvmError> {
        if n > 0 && self.fail_next_reserve {
            self.fail_next_reserve = false;
            return Err(SvmError::NoMem);
        }
        self.reserved = n;
        Ok(())
    }

    fn insert_reserved(&mut self, range: Range<T>) {
        assert!(self.reserved > 0, "insert without reservation");
        self.reserved -= 1;
        let key = range.last;
        assert!(self.map.insert(key, range).is_none(), "duplicate key {key}");
    }

    fn remove(&mut self, last: u64) -> Option<Range<T>> {
        self.map.remove(&last)
    }

    fn lower_bound(&self, page: u64) -> Option<&Range<T>> {
        self.map.range(page..).next().map(|(_, r)| r)
    }

    fn get_mut(&mut self, last: u64) -> Option<&mut Range<T>> {
        self.map.get_mut(&last)
    }

    fn last_before(&self, page: u64) -> Option<&Range<T>> {
        self.map.range(..page).next_back().map(|(_, r)| r)
    }

    fn pop_first(&mut self) -> Option<Range<T>> {
        self.map.pop_first().map(|(_, r)| r)
    }

    fn len(&self) -> usize {
        self.map.len()
    }
}
