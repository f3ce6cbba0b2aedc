// SPDX-License-Identifier: GPL-2.0 OR MIT

//! SET_ATTR cost with 1k vs 100k ranges (issue #4, benchmark piece (c)),
//! on the host, over the same pure logic the kernel runs (with a `BTreeMap`
//! store instead of the kernel's `RBTree`).  Prints figures, asserts
//! nothing about time:
//!
//!     cd rust && cargo run --release -p kfd-logic --example svm_bench
//!
//! The set holds N one-page ranges on even pages.  Measured per call, at
//! random positions: (1) SET_ATTR on one existing range (lookup + update),
//! (2) SET_ATTR on a gap page (a new range) followed by its removal (CPU
//! munmap), (3) SET_ATTR over 16 consecutive ranges and the gaps between
//! them.  The last column is the 100k/1k ratio: logarithmic storage keeps
//! it near 1 (upstream's interval tree is logarithmic too) as long as the
//! set fits the caches; beyond, cache misses dominate, which the baseline
//! row (the bare container) shows.

#[path = "../tests/common/btree_store.rs"]
mod btree_store;

use std::time::Instant;

use btree_store::BTreeStore;
use kfd_logic::svm::{
    attr::{Attr, Gpus, ATTR_GRANULARITY, ATTR_SET_FLAGS, DEFAULT_GRANULARITY},
    ranges::{Params, Range, RangeSet, Span, Store},
    SvmError,
};

/// The host store, counting the tree operations the logic asks for (each
/// O(log n)): a figure that does not depend on the machine's load.
struct Counting {
    inner: BTreeStore<()>,
    ops: u64,
}

impl Store<()> for Counting {
    fn reserve(&mut self, n: usize) -> Result<(), SvmError> {
        self.inner.reserve(n)
    }
    fn insert_reserved(&mut self, range: Range<()>) {
        self.ops += 1;
        self.inner.insert_reserved(range)
    }
    fn remove(&mut self, last: u64) -> Option<Range<()>> {
        self.ops += 1;
        self.inner.remove(last)
    }
    fn lower_bound(&self, page: u64) -> Option<&Range<()>> {
        // `&self` here: counted in a thread-local.
        LOOKUPS.with(|c| c.set(c.get() + 1));
        self.inner.lower_bound(page)
    }
    fn get_mut(&mut self, last: u64) -> Option<&mut Range<()>> {
        self.ops += 1;
        self.inner.get_mut(last)
    }
    fn last_before(&self, page: u64) -> Option<&Range<()>> {
        LOOKUPS.with(|c| c.set(c.get() + 1));
        self.inner.last_before(page)
    }
    fn pop_first(&mut self) -> Option<Range<()>> {
        self.inner.pop_first()
    }
    fn len(&self) -> usize {
        self.inner.len()
    }
}

thread_local! {
    static LOOKUPS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

type Set = RangeSet<(), Counting>;

/// Tree operations per call of `op`, averaged over `iters` calls.
fn tree_ops(set: &mut Set, iters: u64, mut op: impl FnMut(&mut Set, u64)) -> f64 {
    let before = set.store().ops + LOOKUPS.with(|c| c.get());
    for i in 0..iters {
        op(set, i);
    }
    (set.store().ops + LOOKUPS.with(|c| c.get()) - before) as f64 / iters as f64
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn build(n: u64, gpus: &Gpus<'_>) -> Set {
    let store = Counting {
        inner: BTreeStore::new(),
        ops: 0,
    };
    let mut set = RangeSet::new(
        store,
        Params {
            max_pages: 1 << 18,
            default_granularity: DEFAULT_GRANULARITY,
        },
    );
    for i in 0..n {
        set.set_attr(
            Span::new(2 * i, 2 * i),
            &[Attr::new(ATTR_GRANULARITY, 3)],
            gpus,
            false,
        )
        .unwrap();
    }
    assert_eq!(set.len() as u64, n);
    set
}

/// Nanoseconds per call of `op`, best of 5 rounds of `iters` calls.
fn time(iters: u64, mut op: impl FnMut(u64)) -> f64 {
    let mut best = f64::MAX;
    for round in 0..5 {
        let t = Instant::now();
        for i in 0..iters {
            op(round * iters + i);
        }
        best = best.min(t.elapsed().as_nanos() as f64 / iters as f64);
    }
    best
}

/// The container alone: insert + remove of a random key in a `BTreeMap` of
/// `n` entries the size of a range (what cache misses cost at this size).
fn baseline(n: u64) -> f64 {
    let mut m = std::collections::BTreeMap::new();
    for i in 0..n {
        m.insert(2 * i, [0u64; 6]);
    }
    let mut rng = Rng(0x1234_5678 ^ n);
    time(200_000, |_| {
        let p = 2 * rng.below(n - 1) + 1;
        m.insert(p, [1; 6]);
        m.remove(&p);
    })
}

/// Tree operations per call for the three measured operations.
fn count_ops(n: u64, gpus: &Gpus<'_>) -> [f64; 3] {
    let mut set = build(n, gpus);
    let mut rng = Rng(0x5555 ^ n);
    let a = tree_ops(&mut set, 1000, |s, i| {
        let p = 2 * rng.below(n);
        s.set_attr(
            Span::new(p, p),
            &[Attr::new(ATTR_SET_FLAGS, 1 << (i % 8))],
            gpus,
            false,
        )
        .unwrap();
    });
    let b = tree_ops(&mut set, 1000, |s, _| {
        let p = 2 * rng.below(n - 1) + 1;
        s.set_attr(
            Span::new(p, p),
            &[Attr::new(ATTR_GRANULARITY, 1)],
            gpus,
            false,
        )
        .unwrap();
        s.remove(Span::new(p, p), |_| {}).unwrap();
    });
    let c = tree_ops(&mut set, 100, |s, i| {
        let p = 2 * rng.below(n - 16);
        s.set_attr(
            Span::new(p, p + 30),
            &[Attr::new(ATTR_GRANULARITY, (i % 5) as u32)],
            gpus,
            false,
        )
        .unwrap();
        for k in 0..15 {
            s.remove(Span::new(p + 2 * k + 1, p + 2 * k + 1), |_| {})
                .unwrap();
        }
    });
    [a, b, c]
}

fn measure(n: u64, gpus: &Gpus<'_>) -> [f64; 4] {
    let mut set = build(n, gpus);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ n);
    let iters = 200_000;
    let update = time(iters, |i| {
        let p = 2 * rng.below(n);
        set.set_attr(
            Span::new(p, p),
            &[Attr::new(ATTR_SET_FLAGS, 1 << (i % 8))],
            gpus,
            false,
        )
        .unwrap();
    });
    let insert_remove = time(iters, |_| {
        let p = 2 * rng.below(n - 1) + 1;
        set.set_attr(
            Span::new(p, p),
            &[Attr::new(ATTR_GRANULARITY, 1)],
            gpus,
            false,
        )
        .unwrap();
        set.remove(Span::new(p, p), |_| {}).unwrap();
    });
    assert_eq!(set.len() as u64, n);
    let wide = time(iters / 10, |i| {
        let p = 2 * rng.below(n - 16);
        set.set_attr(
            Span::new(p, p + 30),
            &[Attr::new(ATTR_GRANULARITY, (i % 5) as u32)],
            gpus,
            false,
        )
        .unwrap();
        // Take the gap pages out again so the set keeps its shape.
        for k in 0..15 {
            set.remove(Span::new(p + 2 * k + 1, p + 2 * k + 1), |_| {})
                .unwrap();
        }
    });
    assert_eq!(set.len() as u64, n);
    [update, insert_remove, wide, baseline(n)]
}

fn main() {
    let ids = [0x1001u32, 0x2002];
    let gpus = Gpus {
        ids: &ids,
        supported: 0b11,
    };
    let small = measure(1_000, &gpus);
    let big = measure(100_000, &gpus);
    println!("svm-bench: SET_ATTR cost, host, BTreeMap store (ns per call, best of 5)");
    println!(
        "{:<46} {:>10} {:>10} {:>8}",
        "operation", "1k ranges", "100k", "ratio"
    );
    let names = [
        "set_attr on one existing range",
        "set_attr on a gap page + remove it",
        "set_attr over 16 ranges + 15 gaps (+15 removes)",
        "baseline: BTreeMap insert + remove",
    ];
    for (i, name) in names.iter().enumerate() {
        println!(
            "{:<46} {:>10.0} {:>10.0} {:>8.2}",
            name,
            small[i],
            big[i],
            big[i] / small[i]
        );
    }
    let (s, b) = (count_ops(1_000, &gpus), count_ops(100_000, &gpus));
    println!("svm-bench: tree operations (each O(log n)) per call");
    for i in 0..3 {
        println!(
            "{:<46} {:>10.1} {:>10.1} {:>8.2}",
            names[i],
            s[i],
            b[i],
            b[i] / s[i]
        );
    }
}
