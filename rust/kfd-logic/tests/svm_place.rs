// SPDX-License-Identifier: GPL-2.0 OR MIT

//! What the kernel's single SVM range tree needs beyond the attribute
//! algebra: how many ranges an operation reshapes (each gets a new
//! interval notifier, allocated before the set changes), where a range's
//! pages are, and the window a retry fault maps.

mod common;

use common::btree_store::BTreeStore;
use kfd_logic::svm::{
    attr::*,
    place::{fault_window, ActualLoc, Placement},
    ranges::{Params, Payload, RangeSet, Span},
};

const GPU_IDS: [u32; 2] = [0x1001, 0x2002];

fn gpus() -> Gpus<'static> {
    Gpus { ids: &GPU_IDS, supported: 0b11 }
}

/// Marks every range whose bounds an operation set (new, or split).
#[derive(Debug)]
struct Reshaped(bool);

impl Payload for Reshaped {
    fn new(_span: Span) -> Self {
        Reshaped(true)
    }
    fn split_off(&mut self, _keep: Span, _off: Span) -> Self {
        self.0 = true;
        Reshaped(true)
    }
}

type Set = RangeSet<Reshaped, BTreeStore<Reshaped>>;

/// Counts the marked ranges and clears the marks.
fn take_marks(set: &mut Set) -> usize {
    let lasts: Vec<u64> = set.iter().filter(|r| r.payload.0).map(|r| r.last).collect();
    for &l in &lasts {
        set.find_mut(l).unwrap().payload.0 = false;
    }
    lasts.len()
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

#[test]
fn reshaped_counts_are_exact() {
    let mut set: Set = RangeSet::new(BTreeStore::new(), Params { max_pages: 16, default_granularity: 9 });
    let g = gpus();
    // A gap over three blocks: three new ranges.
    let span = Span::new(10, 40);
    assert_eq!(set.set_attr_reshaped(span, &[], &g, false), 3);
    set.set_attr(span, &[], &g, false).unwrap();
    assert_eq!(take_marks(&mut set), 3);
    // Inside one range: head, middle and the kept tail.
    let span = Span::new(18, 20);
    let a = [Attr::new(ATTR_GRANULARITY, 3)];
    assert_eq!(set.set_attr_reshaped(span, &a, &g, false), 3);
    set.set_attr(span, &a, &g, false).unwrap();
    assert_eq!(take_marks(&mut set), 3);
    // Same attributes again: nothing split (a range whose mapping is not
    // done is still updated, in place).
    assert_eq!(set.set_attr_reshaped(span, &a, &g, false), 0);
    set.set_attr(span, &a, &g, false).unwrap();
    assert_eq!(take_marks(&mut set), 0);
    // Removal: a hole inside one range keeps its head and tail.
    assert_eq!(set.remove_reshaped(Span::new(33, 35)), 2);
    set.remove(Span::new(33, 35), drop).unwrap();
    assert_eq!(take_marks(&mut set), 2);
    // Whole ranges only: none kept.
    assert_eq!(set.remove_reshaped(Span::new(18, 20)), 0);
    // Invalid spans count nothing.
    assert_eq!(set.set_attr_reshaped(Span::new(5, 4), &[], &g, false), 0);
    assert_eq!(set.remove_reshaped(Span::new(0, u64::MAX)), 0);
}

#[test]
fn reshaped_counts_match_random_operations() {
    let g = gpus();
    for seed in 1..40u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut set: Set = RangeSet::new(BTreeStore::new(), Params { max_pages: 8, default_granularity: 9 });
        for _ in 0..300 {
            let s = rng.below(200);
            let span = Span::new(s, s + rng.below(30));
            if rng.below(3) == 0 {
                let want = set.remove_reshaped(span);
                set.remove(span, drop).unwrap();
                assert_eq!(take_marks(&mut set), want, "remove {span:?} (seed {seed})");
            } else {
                let a = [Attr::new(ATTR_GRANULARITY, rng.below(4) as u32)];
                let want = set.set_attr_reshaped(span, &a, &g, true);
                set.set_attr(span, &a, &g, true).unwrap();
                assert_eq!(take_marks(&mut set), want, "set_attr {span:?} (seed {seed})");
            }
        }
    }
}

#[test]
fn placement_sums_up_the_gpus() {
    assert_eq!(Placement::new().actual(), ActualLoc::System);
    let mut p = Placement::new();
    p.add(0x1001, 0, 5);
    p.add(0x2002, 0, 5);
    assert_eq!(p.actual(), ActualLoc::System);
    let mut p = Placement::new();
    p.add(0x1001, 4, 0);
    p.add(0x2002, 0, 0);
    assert_eq!(p.actual(), ActualLoc::Gpu(0x1001));
    p.add(0x2002, 1, 0);
    assert_eq!(p.actual(), ActualLoc::Mixed);
    let mut p = Placement::new();
    p.add(0x1001, 4, 1);
    assert_eq!(p.actual(), ActualLoc::Mixed);
    p.add_failure();
    assert_eq!(p.actual(), ActualLoc::Unknown);
}

#[test]
fn fault_window_is_granule_range_and_vma() {
    const P: u64 = 4096;
    // 2 MiB granule around the page, range and VMA larger: the granule.
    let r = Span::new(0, 0xfffff);
    assert_eq!(fault_window(0x20_1000, 12, 9, r, 0, u64::MAX), Some((0x20_0000, 0x40_0000)));
    // Clipped by the range (pages 0x201..0x210) and by the VMA.
    let r = Span::new(0x201, 0x210);
    assert_eq!(fault_window(0x20_5000, 12, 9, r, 0, u64::MAX), Some((0x20_1000, 0x21_1000)));
    assert_eq!(fault_window(0x20_5000, 12, 9, r, 0x20_4000, 0x20_8000), Some((0x20_4000, 0x20_8000)));
    // Granularity 0: the page itself.
    assert_eq!(fault_window(0x20_5000, 12, 0, r, 0, u64::MAX), Some((0x20_5000, 0x20_5000 + P)));
    // Disjoint (cannot happen for a page inside both): none.
    assert_eq!(fault_window(0x20_5000, 12, 0, r, 0x30_0000, 0x40_0000), None);
    // The top of the address space does not overflow.
    let top = Span::new(u64::MAX >> 12, u64::MAX >> 12);
    assert_eq!(fault_window(u64::MAX & !(P - 1), 12, 63, top, 0, u64::MAX), Some((u64::MAX & !(P - 1), u64::MAX)));
}
