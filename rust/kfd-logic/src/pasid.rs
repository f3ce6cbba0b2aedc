// SPDX-License-Identifier: GPL-2.0 OR MIT
//! PASID allocation: one process address-space id per KFD process.
//!
//! Upstream (`amdgpu_pasid_alloc`) hands out ids from a 16-bit space, never
//! 0 (0 means "no PASID" in IH entries and VM fault reports).  This
//! allocator hands them out in cyclic order (next free after the last one
//! handed out) rather than lowest-free, so a freed id is reused as late as
//! possible: a stale interrupt entry naming a dead process's PASID is then
//! unlikely to reach a new process.  Pure logic, `core` only: included by
//! `src/process.rs` with `#[path]`.

/// Bits of a PASID (upstream's `pasid_bits` for KFD: 16).
pub const PASID_BITS: u32 = 16;
/// Number of ids, 0 included (never handed out).
const IDS: usize = 1 << PASID_BITS;
const WORDS: usize = IDS / 64;

/// Which PASIDs are in use.
pub struct PasidAllocator {
    used: [u64; WORDS],
    /// The last id handed out.
    last: u32,
    /// Ids in use.
    count: u32,
}

impl Default for PasidAllocator {
    fn default() -> Self {
        Self::new()
    }
}

impl PasidAllocator {
    /// Nothing in use.
    pub const fn new() -> Self {
        PasidAllocator { used: [0; WORDS], last: 0, count: 0 }
    }

    fn is_used(&self, id: u32) -> bool {
        self.used[id as usize / 64] & (1 << (id % 64)) != 0
    }

    /// A free id in `1..2^16`, or `None` if all are in use.
    pub fn alloc(&mut self) -> Option<u32> {
        if self.count as usize >= IDS - 1 {
            return None;
        }
        let mut id = self.last;
        loop {
            id = if id as usize + 1 >= IDS { 1 } else { id + 1 };
            if !self.is_used(id) {
                self.used[id as usize / 64] |= 1 << (id % 64);
                self.last = id;
                self.count += 1;
                return Some(id);
            }
        }
    }

    /// Gives `id` back; ids not in use (0, out of range, freed twice) are
    /// ignored and reported as `false`.
    pub fn free(&mut self, id: u32) -> bool {
        if id == 0 || id as usize >= IDS || !self.is_used(id) {
            return false;
        }
        self.used[id as usize / 64] &= !(1 << (id % 64));
        self.count -= 1;
        true
    }

    /// Ids in use.
    pub fn in_use(&self) -> u32 {
        self.count
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::boxed::Box;

    #[test]
    fn never_zero_distinct_and_cyclic() {
        let mut a = Box::new(PasidAllocator::new());
        let x = a.alloc().unwrap();
        let y = a.alloc().unwrap();
        assert!(x != 0 && y != 0 && x != y);
        assert!(a.free(x));
        assert!(!a.free(x));
        assert!(!a.free(0));
        assert!(!a.free(1 << 20));
        // Cyclic: the freed id is not reused at once.
        let z = a.alloc().unwrap();
        assert!(z != x && z != y);
        assert_eq!(a.in_use(), 2);
    }

    #[test]
    fn exhaustion_and_wraparound() {
        let mut a = Box::new(PasidAllocator::new());
        for i in 1..(1u32 << PASID_BITS) {
            assert_eq!(a.alloc(), Some(i));
        }
        assert_eq!(a.alloc(), None);
        assert!(a.free(5));
        assert_eq!(a.alloc(), Some(5));
        assert_eq!(a.alloc(), None);
        assert!(a.free(65535));
        assert!(a.free(3));
        // Next after the last handed out (5): 65535 comes before wrapping to 3.
        assert_eq!(a.alloc(), Some(65535));
        assert_eq!(a.alloc(), Some(3));
    }
}
