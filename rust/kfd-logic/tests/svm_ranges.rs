// SPDX-License-Identifier: GPL-2.0 OR MIT

//! SVM range set and attribute algebra: unit tests of the upstream rules,
//! and property tests against a naive per-page model.

mod common;

use common::btree_store::BTreeStore;
use kfd_logic::svm::{
    attr::{self, *},
    get_attr,
    ranges::{max_range_pages, Params, Payload, RangeSet, Span},
    SvmError,
};

const GPU_IDS: [u32; 3] = [0x1001, 0x2002, 0x3003];
/// The third GPU cannot do SVM.
const SUPPORTED: u64 = 0b011;

fn gpus() -> Gpus<'static> {
    Gpus {
        ids: &GPU_IDS,
        supported: SUPPORTED,
    }
}

/// A payload that knows the span it thinks it covers, so the tests can
/// check that the set splits payloads along with ranges.
#[derive(Debug, Clone, PartialEq)]
struct Tracked {
    span: Span,
    mapping_done: bool,
    changes: u32,
}

impl Payload for Tracked {
    fn new(span: Span) -> Self {
        Tracked {
            span,
            mapping_done: false,
            changes: 0,
        }
    }

    fn split_off(&mut self, keep: Span, off: Span) -> Self {
        // `keep` and `off` are adjacent and together are the old span.
        let (lo, hi) = if keep.start < off.start {
            (keep, off)
        } else {
            (off, keep)
        };
        assert_eq!(lo.last + 1, hi.start, "pieces not adjacent");
        assert_eq!(
            Span::new(lo.start, hi.last),
            self.span,
            "split of a span the payload does not cover"
        );
        self.span = keep;
        Tracked {
            span: off,
            mapping_done: self.mapping_done,
            changes: self.changes,
        }
    }

    fn attrs_changed(&mut self, span: Span, _old: &Attrs, _new: &Attrs, _update: bool) {
        assert_eq!(span, self.span);
        self.changes += 1;
    }

    fn mapping_done(&self) -> bool {
        self.mapping_done
    }
}

type Set<T> = RangeSet<T, BTreeStore<T>>;

fn new_set<T: Payload>(max_pages: u64) -> Set<T> {
    RangeSet::new(
        BTreeStore::new(),
        Params {
            max_pages,
            default_granularity: DEFAULT_GRANULARITY,
        },
    )
}

/// Tiny deterministic PRNG (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

// ---------------------------------------------------------------------------
// Unit tests of the argument rules.

#[test]
fn ioctl_size_must_hold_every_attribute() {
    assert_eq!(check_ioctl_size(24, 0), Ok(()));
    assert_eq!(check_ioctl_size(23, 0), Err(SvmError::Inval));
    assert_eq!(check_ioctl_size(24 + 8 * 3, 3), Ok(()));
    assert_eq!(check_ioctl_size(24 + 8 * 3 - 1, 3), Err(SvmError::Inval));
    // A bigger buffer than needed is fine (struct growth).
    assert_eq!(check_ioctl_size(100, 1), Ok(()));
    // nattr near u32::MAX cannot overflow the computation.
    assert_eq!(check_ioctl_size(16383, u32::MAX), Err(SvmError::Inval));
    assert_eq!(check_ioctl_size(usize::MAX, u32::MAX), Ok(()));
}

#[test]
fn request_must_be_page_aligned_and_non_zero() {
    assert_eq!(
        check_request(0x1000, 0x2000),
        Ok(PageRequest {
            start: 1,
            npages: 2
        })
    );
    assert_eq!(check_request(0x1001, 0x1000), Err(SvmError::Inval));
    assert_eq!(check_request(0x1000, 0x1001), Err(SvmError::Inval));
    assert_eq!(check_request(0, 0x1000), Err(SvmError::Inval));
    assert_eq!(check_request(0x1000, 0), Err(SvmError::Inval));
    let req = check_request(0xffff_ffff_ffff_f000, 0x2000).unwrap();
    assert_eq!(check_range_overflow(&req), Err(SvmError::Overflow));
    let req = check_request(0xffff_ffff_ffff_e000, 0x2000).unwrap();
    // Ends exactly at 2^64: upstream's check_add_overflow wraps to 0.
    assert_eq!(check_range_overflow(&req), Err(SvmError::Overflow));
    let req = check_request(0x7fff_0000, 0x1000).unwrap();
    assert_eq!(check_range_overflow(&req), Ok((0x7fff_0000, 0x7fff_1000)));
    assert_eq!(req.last(), 0x7fff0);
}

#[test]
fn set_attr_list_validation() {
    let g = gpus();
    let ok = |list: &[Attr]| check_set_attrs(list, &g);
    assert_eq!(ok(&[]), Ok(()));
    assert_eq!(
        ok(&[Attr::new(ATTR_PREFERRED_LOC, LOCATION_SYSMEM)]),
        Ok(())
    );
    assert_eq!(
        ok(&[Attr::new(ATTR_PREFERRED_LOC, LOCATION_UNDEFINED)]),
        Ok(())
    );
    assert_eq!(ok(&[Attr::new(ATTR_PREFERRED_LOC, 0x1001)]), Ok(()));
    assert_eq!(
        ok(&[Attr::new(ATTR_PREFERRED_LOC, 0x9999)]),
        Err(SvmError::Inval)
    );
    // Unsupported GPU.
    assert_eq!(
        ok(&[Attr::new(ATTR_PREFERRED_LOC, 0x3003)]),
        Err(SvmError::Inval)
    );
    assert_eq!(ok(&[Attr::new(ATTR_PREFETCH_LOC, LOCATION_SYSMEM)]), Ok(()));
    // PREFETCH_LOC UNDEFINED is looked up as a gpu_id.
    assert_eq!(
        ok(&[Attr::new(ATTR_PREFETCH_LOC, LOCATION_UNDEFINED)]),
        Err(SvmError::Inval)
    );
    for ty in [ATTR_ACCESS, ATTR_ACCESS_IN_PLACE, ATTR_NO_ACCESS] {
        assert_eq!(ok(&[Attr::new(ty, 0x2002)]), Ok(()));
        assert_eq!(ok(&[Attr::new(ty, 0x3003)]), Err(SvmError::Inval));
        assert_eq!(ok(&[Attr::new(ty, LOCATION_SYSMEM)]), Err(SvmError::Inval));
    }
    assert_eq!(
        ok(&[Attr::new(ATTR_SET_FLAGS, !0), Attr::new(ATTR_CLR_FLAGS, !0)]),
        Ok(())
    );
    assert_eq!(ok(&[Attr::new(ATTR_GRANULARITY, 0xffff_ffff)]), Ok(()));
    assert_eq!(ok(&[Attr::new(8, 0)]), Err(SvmError::Inval));
    // A bad entry anywhere fails the list.
    assert_eq!(
        ok(&[Attr::new(ATTR_SET_FLAGS, 1), Attr::new(ATTR_ACCESS, 7)]),
        Err(SvmError::Inval)
    );
}

#[test]
fn get_attr_list_validation() {
    assert!(parse_get_attrs(&[Attr::new(ATTR_ACCESS_IN_PLACE, 0x1001)]).is_err());
    assert!(parse_get_attrs(&[Attr::new(ATTR_NO_ACCESS, 0x1001)]).is_err());
    assert!(parse_get_attrs(&[Attr::new(99, 0)]).is_err());
    let q =
        parse_get_attrs(&[Attr::new(ATTR_CLR_FLAGS, 0), Attr::new(ATTR_GRANULARITY, 0)]).unwrap();
    assert!(q.flags && q.granularity && !q.access);
}

#[test]
fn apply_follows_upstream() {
    let g = gpus();
    let mut a = Attrs::defaults(9, false, SUPPORTED);
    assert_eq!(a.access, 0);
    assert_eq!(a.flags, FLAG_HOST_ACCESS | FLAG_COHERENT);
    // Access with XNACK off needs a mapping update.
    assert!(a.apply(&[Attr::new(ATTR_ACCESS, 0x1001)], &g, false));
    assert_eq!((a.access, a.access_in_place), (0b01, 0));
    // With XNACK on it does not.
    assert!(!a.apply(&[Attr::new(ATTR_ACCESS_IN_PLACE, 0x1001)], &g, true));
    assert_eq!((a.access, a.access_in_place), (0, 0b01));
    a.apply(
        &[
            Attr::new(ATTR_ACCESS, 0x2002),
            Attr::new(ATTR_NO_ACCESS, 0x1001),
        ],
        &g,
        true,
    );
    assert_eq!((a.access, a.access_in_place), (0b10, 0));
    // Flags always need an update; granularity is capped at 0x3f.
    assert!(a.apply(&[Attr::new(ATTR_CLR_FLAGS, FLAG_HOST_ACCESS)], &g, true));
    assert_eq!(a.flags, FLAG_COHERENT);
    assert!(!a.apply(&[Attr::new(ATTR_GRANULARITY, 1000)], &g, true));
    assert_eq!(a.granularity, 0x3f);
    // Defaults with XNACK on: every SVM-capable GPU may access.
    assert_eq!(Attrs::defaults(9, true, SUPPORTED).access, SUPPORTED);
    // Prefetch is never "the same".
    let p = Attr::new(ATTR_PREFETCH_LOC, LOCATION_SYSMEM);
    a.apply(&[p], &g, true);
    assert!(!a.is_same(&[p], &g));
    assert!(a.is_same(
        &[
            Attr::new(ATTR_ACCESS, 0x2002),
            Attr::new(ATTR_SET_FLAGS, FLAG_COHERENT)
        ],
        &g
    ));
}

#[test]
fn max_range_pages_is_upstreams() {
    // 8 GiB of VRAM: 8G/32 = 256 MiB = 65536 pages.
    assert_eq!(max_range_pages(8 << 30), 65536);
    // Tiny VRAM: at least 2 MiB; huge: at most 1 GiB; powers of two.
    assert_eq!(max_range_pages(1 << 20), 512);
    assert_eq!(max_range_pages(1 << 40), 1 << 18);
    assert_eq!(max_range_pages(3 << 30), 16384);
}

// ---------------------------------------------------------------------------
// Directed tests of the range set.

fn spans<T>(set: &Set<T>) -> Vec<(u64, u64)>
where
    T: Payload,
{
    set.iter().map(|r| (r.start, r.last)).collect()
}

#[test]
fn set_attr_creates_splits_and_cuts_at_blocks() {
    let g = gpus();
    let mut set = new_set::<()>(16);
    // Gap [5, 40] is cut at multiples of 16.
    let out = set
        .set_attr(
            Span::new(5, 40),
            &[Attr::new(ATTR_SET_FLAGS, 0x4)],
            &g,
            false,
        )
        .unwrap();
    assert_eq!(spans(&set), vec![(5, 15), (16, 31), (32, 40)]);
    assert_eq!((out.created, out.splits, out.updated), (3, 0, 3));
    assert!(out.update_mapping);
    // A sub-range inside one range splits it in three.
    let out = set
        .set_attr(
            Span::new(20, 25),
            &[Attr::new(ATTR_GRANULARITY, 3)],
            &g,
            false,
        )
        .unwrap();
    assert_eq!(
        spans(&set),
        vec![(5, 15), (16, 19), (20, 25), (26, 31), (32, 40)]
    );
    assert_eq!((out.created, out.splits, out.updated), (0, 2, 1));
    assert!(!out.update_mapping);
    assert_eq!(set.find(22).unwrap().attrs.granularity, 3);
    assert_eq!(set.find(19).unwrap().attrs.granularity, DEFAULT_GRANULARITY);
    assert_eq!(set.find(19).unwrap().attrs.flags, DEFAULT_FLAGS | 0x4);
    assert!(set.find(4).is_none() && set.find(41).is_none());
    // Same attributes again: upstream still splits when the mapping is not
    // done (no merging either).
    set.set_attr(
        Span::new(0, 8),
        &[Attr::new(ATTR_SET_FLAGS, 0x4)],
        &g,
        false,
    )
    .unwrap();
    assert_eq!(spans(&set)[..3], [(0, 4), (5, 8), (9, 15)]);
    assert!(set.overlaps(40, 100) && !set.overlaps(41, 100));
}

#[test]
fn set_attr_skips_mapped_ranges_with_same_attrs() {
    let g = gpus();
    let mut set = new_set::<Tracked>(64);
    set.set_attr(
        Span::new(0, 63),
        &[Attr::new(ATTR_PREFERRED_LOC, 0x1001)],
        &g,
        false,
    )
    .unwrap();
    set.find_mut(10).unwrap().payload.mapping_done = true;
    let out = set
        .set_attr(
            Span::new(10, 20),
            &[Attr::new(ATTR_PREFERRED_LOC, 0x1001)],
            &g,
            false,
        )
        .unwrap();
    assert_eq!(out, Default::default());
    assert_eq!(spans(&set), vec![(0, 63)]);
    // A different value splits.
    let out = set
        .set_attr(
            Span::new(10, 20),
            &[Attr::new(ATTR_PREFERRED_LOC, 0)],
            &g,
            false,
        )
        .unwrap();
    assert_eq!(spans(&set), vec![(0, 9), (10, 20), (21, 63)]);
    assert_eq!(out.splits, 2);
    assert_eq!(set.find(15).unwrap().payload.changes, 2);
}

#[test]
fn remove_cuts_and_hands_back_pieces() {
    let g = gpus();
    let mut set = new_set::<Tracked>(1024);
    set.set_attr(Span::new(0, 99), &[], &g, false).unwrap();
    set.set_attr(Span::new(200, 299), &[], &g, false).unwrap();
    let mut gone = Vec::new();
    // Middle of a range.
    assert_eq!(
        set.remove(Span::new(10, 19), |r| gone.push(r.payload.span))
            .unwrap(),
        1
    );
    assert_eq!(spans(&set), vec![(0, 9), (20, 99), (200, 299)]);
    // Across two ranges and a gap.
    assert_eq!(
        set.remove(Span::new(90, 209), |r| gone.push(r.payload.span))
            .unwrap(),
        2
    );
    assert_eq!(spans(&set), vec![(0, 9), (20, 89), (210, 299)]);
    assert_eq!(
        gone,
        vec![Span::new(10, 19), Span::new(90, 99), Span::new(200, 209)]
    );
    // Nothing there.
    assert_eq!(set.remove(Span::new(100, 199), |_| panic!()).unwrap(), 0);
    let mut n = 0;
    set.clear(|_| n += 1);
    assert_eq!((n, set.len()), (3, 0));
}

#[test]
fn get_attr_aggregation_quirks() {
    let g = gpus();
    let mut set = new_set::<()>(1024);
    // No range: defaults (access by XNACK mode).
    let mut q = [
        Attr::new(ATTR_PREFERRED_LOC, 0),
        Attr::new(ATTR_ACCESS, 0x1001),
        Attr::new(ATTR_SET_FLAGS, 0),
        Attr::new(ATTR_CLR_FLAGS, 0),
        Attr::new(ATTR_GRANULARITY, 0),
    ];
    get_attr(&set, Span::new(0, 9), &mut q, &g, true).unwrap();
    assert_eq!(q[0].value, LOCATION_UNDEFINED);
    assert_eq!(q[1].ty, ATTR_ACCESS);
    assert_eq!(q[2].value, DEFAULT_FLAGS);
    assert_eq!(q[3].value, !DEFAULT_FLAGS);
    assert_eq!(q[4].value, 9);
    let mut q2 = [Attr::new(ATTR_ACCESS, 0x1001)];
    get_attr(&set, Span::new(0, 9), &mut q2, &g, false).unwrap();
    assert_eq!(q2[0].ty, ATTR_NO_ACCESS);

    // Two ranges with a gap between them: the gap does not count.
    set.set_attr(
        Span::new(0, 9),
        &[
            Attr::new(ATTR_PREFERRED_LOC, 0x1001),
            Attr::new(ATTR_ACCESS_IN_PLACE, 0x2002),
            Attr::new(ATTR_GRANULARITY, 4),
        ],
        &g,
        false,
    )
    .unwrap();
    set.set_attr(
        Span::new(20, 29),
        &[
            Attr::new(ATTR_PREFERRED_LOC, 0x1001),
            Attr::new(ATTR_ACCESS_IN_PLACE, 0x2002),
            Attr::new(ATTR_SET_FLAGS, 0x10),
        ],
        &g,
        false,
    )
    .unwrap();
    let mut q = [
        Attr::new(ATTR_PREFERRED_LOC, 0),
        Attr::new(ATTR_PREFETCH_LOC, 0),
        Attr::new(ATTR_ACCESS, 0x2002),
        Attr::new(ATTR_ACCESS, 0x3003),
        Attr::new(ATTR_SET_FLAGS, 0),
        Attr::new(ATTR_CLR_FLAGS, 0),
        Attr::new(ATTR_GRANULARITY, 0),
    ];
    get_attr(&set, Span::new(0, 29), &mut q, &g, false).unwrap();
    assert_eq!(q[0].value, 0x1001);
    assert_eq!(q[1].value, LOCATION_UNDEFINED);
    assert_eq!(q[2].ty, ATTR_ACCESS_IN_PLACE);
    // A GPU without SVM is never accessible.
    assert_eq!(q[3].ty, ATTR_NO_ACCESS);
    assert_eq!(q[4].value, DEFAULT_FLAGS);
    assert_eq!(q[5].value, !(DEFAULT_FLAGS | 0x10));
    assert_eq!(q[6].value, 4);

    // ACCESS of an unknown GPU: -EINVAL after the entries before it.
    let mut q = [
        Attr::new(ATTR_GRANULARITY, 0),
        Attr::new(ATTR_ACCESS, 0x7777),
        Attr::new(ATTR_PREFERRED_LOC, 5),
    ];
    assert_eq!(
        get_attr(&set, Span::new(0, 29), &mut q, &g, false),
        Err(SvmError::Inval)
    );
    assert_eq!(q[0].value, 4);
    assert_eq!(q[2].value, 5);
}

#[test]
fn allocation_failure_changes_nothing() {
    let g = gpus();
    let mut set = new_set::<Tracked>(16);
    set.set_attr(
        Span::new(10, 50),
        &[Attr::new(ATTR_SET_FLAGS, 0x8)],
        &g,
        false,
    )
    .unwrap();
    let before: Vec<_> = set
        .iter()
        .map(|r| (r.start, r.last, r.attrs, r.payload.clone()))
        .collect();
    set_fail(&mut set);
    assert_eq!(
        set.set_attr(
            Span::new(0, 100),
            &[Attr::new(ATTR_CLR_FLAGS, 0x8)],
            &g,
            false
        ),
        Err(SvmError::NoMem)
    );
    set_fail(&mut set);
    assert_eq!(
        set.remove(Span::new(12, 13), |_| panic!()),
        Err(SvmError::NoMem)
    );
    let after: Vec<_> = set
        .iter()
        .map(|r| (r.start, r.last, r.attrs, r.payload.clone()))
        .collect();
    assert_eq!(before, after);
}

fn set_fail<T: Payload>(set: &mut Set<T>) {
    set.store_mut().fail_next_reserve = true;
}

// ---------------------------------------------------------------------------
// Property tests against a per-page model.

/// The naive model: the attributes of every page, or `None`.
struct Model {
    pages: Vec<Option<Attrs>>,
}

impl Model {
    fn set_attr(&mut self, span: Span, list: &[Attr], g: &Gpus<'_>, xnack: bool) {
        for p in span.start..=span.last {
            let a = self.pages[p as usize].get_or_insert(Attrs::defaults(
                DEFAULT_GRANULARITY,
                xnack,
                g.supported,
            ));
            a.apply(list, g, xnack);
        }
    }

    fn remove(&mut self, span: Span) -> Vec<u64> {
        let mut gone = Vec::new();
        for p in span.start..=span.last {
            if self.pages[p as usize].take().is_some() {
                gone.push(p);
            }
        }
        gone
    }

    /// `GET_ATTR` computed page by page, from the documented rules.
    fn get_attr(
        &self,
        span: Span,
        list: &mut [Attr],
        g: &Gpus<'_>,
        xnack: bool,
    ) -> Result<(), SvmError> {
        for a in list.iter() {
            if ![
                ATTR_PREFERRED_LOC,
                ATTR_PREFETCH_LOC,
                ATTR_ACCESS,
                ATTR_SET_FLAGS,
                ATTR_CLR_FLAGS,
                ATTR_GRANULARITY,
            ]
            .contains(&a.ty)
            {
                return Err(SvmError::Inval);
            }
        }
        let present: Vec<Attrs> = (span.start..=span.last)
            .filter_map(|p| self.pages[p as usize])
            .collect();
        let common = |f: fn(&Attrs) -> u32| -> u32 {
            let v = f(&present[0]);
            if v != LOCATION_UNDEFINED && present.iter().all(|a| f(a) == v) {
                v
            } else {
                LOCATION_UNDEFINED
            }
        };
        let (loc, pf, flags_and, flags_or, gran, access, aip) = if present.is_empty() {
            let d = Attrs::defaults(DEFAULT_GRANULARITY, xnack, g.supported);
            (
                d.preferred_loc,
                d.prefetch_loc,
                d.flags,
                d.flags,
                d.granularity,
                d.access,
                0,
            )
        } else {
            (
                common(|a| a.preferred_loc),
                common(|a| a.prefetch_loc),
                present.iter().fold(!0, |x, a| x & a.flags),
                present.iter().fold(0, |x, a| x | a.flags),
                present.iter().map(|a| a.granularity).min().unwrap(),
                present.iter().fold(g.supported, |x, a| x & a.access),
                present
                    .iter()
                    .fold(g.supported, |x, a| x & a.access_in_place),
            )
        };
        for a in list.iter_mut() {
            match a.ty {
                ATTR_PREFERRED_LOC => a.value = loc,
                ATTR_PREFETCH_LOC => a.value = pf,
                ATTR_SET_FLAGS => a.value = flags_and,
                ATTR_CLR_FLAGS => a.value = !flags_or,
                ATTR_GRANULARITY => a.value = gran.into(),
                _ => {
                    let i = GPU_IDS
                        .iter()
                        .position(|&id| id == a.value)
                        .ok_or(SvmError::Inval)?;
                    a.ty = if access & (1 << i) != 0 {
                        ATTR_ACCESS
                    } else if aip & (1 << i) != 0 {
                        ATTR_ACCESS_IN_PLACE
                    } else {
                        ATTR_NO_ACCESS
                    };
                }
            }
        }
        Ok(())
    }
}

fn random_span(rng: &mut Rng, universe: u64) -> Span {
    let start = rng.below(universe);
    let len = if rng.chance(20) {
        rng.below(universe - start) + 1
    } else {
        rng.below(12.min(universe - start)) + 1
    };
    Span::new(start, start + len - 1)
}

fn random_gpu(rng: &mut Rng, supported_only: bool) -> u32 {
    let n = if supported_only { 2 } else { 3 };
    GPU_IDS[rng.below(n) as usize]
}

fn random_set_list(rng: &mut Rng) -> Vec<Attr> {
    let n = rng.below(5);
    (0..n)
        .map(|_| {
            let ty = rng.below(8) as u32;
            let value = match ty {
                ATTR_PREFERRED_LOC => match rng.below(3) {
                    0 => LOCATION_SYSMEM,
                    1 => LOCATION_UNDEFINED,
                    _ => random_gpu(rng, true),
                },
                ATTR_PREFETCH_LOC => {
                    if rng.chance(50) {
                        LOCATION_SYSMEM
                    } else {
                        random_gpu(rng, true)
                    }
                }
                ATTR_ACCESS | ATTR_ACCESS_IN_PLACE | ATTR_NO_ACCESS => random_gpu(rng, true),
                ATTR_SET_FLAGS | ATTR_CLR_FLAGS => 1 << rng.below(8),
                _ => rng.below(70) as u32,
            };
            Attr::new(ty, value)
        })
        .collect()
}

fn random_get_list(rng: &mut Rng) -> Vec<Attr> {
    let n = rng.below(6) + 1;
    (0..n)
        .map(|_| {
            if rng.chance(3) {
                return Attr::new(
                    [ATTR_ACCESS_IN_PLACE, ATTR_NO_ACCESS, 8][rng.below(3) as usize],
                    0,
                );
            }
            let ty = [
                ATTR_PREFERRED_LOC,
                ATTR_PREFETCH_LOC,
                ATTR_ACCESS,
                ATTR_SET_FLAGS,
                ATTR_CLR_FLAGS,
                ATTR_GRANULARITY,
            ][rng.below(6) as usize];
            let value = if ty == ATTR_ACCESS {
                if rng.chance(5) {
                    0x4242
                } else {
                    random_gpu(rng, false)
                }
            } else {
                0
            };
            Attr::new(ty, value)
        })
        .collect()
}

/// Checks the structure and compares every page with the model.
fn check(
    set: &Set<Tracked>,
    model: &Model,
    boundaries: &std::collections::BTreeSet<u64>,
    max_pages: u64,
    ctx: &str,
) {
    let mut prev: Option<u64> = None;
    let mut count = 0;
    for r in set.iter() {
        count += 1;
        assert!(r.start <= r.last, "{ctx}: empty range");
        if let Some(p) = prev {
            assert!(r.start > p, "{ctx}: overlap or disorder at {}", r.start);
        }
        prev = Some(r.last);
        assert_eq!(
            r.start / max_pages,
            r.last / max_pages,
            "{ctx}: range crosses a block"
        );
        assert!(
            r.start % max_pages == 0 || boundaries.contains(&r.start),
            "{ctx}: stray boundary {}",
            r.start
        );
        assert!(
            (r.last + 1) % max_pages == 0 || boundaries.contains(&(r.last + 1)),
            "{ctx}: stray boundary {}",
            r.last + 1
        );
        assert_eq!(r.payload.span, r.span(), "{ctx}: payload span");
    }
    assert_eq!(count, set.len());
    assert_eq!(set.store().reserved, 0, "{ctx}: reserved nodes left over");
    // Page accounting (the XNACK-off reservation) matches the model: the
    // total, and the covered part of a few windows.
    let covered = model.pages.iter().filter(|p| p.is_some()).count() as u64;
    assert_eq!(set.total_pages(), covered, "{ctx}: total pages");
    let n = model.pages.len() as u64;
    for (s, l) in [(0, n.saturating_sub(1)), (n / 3, n / 2), (n / 5, n / 5), (n / 2, n + 7)] {
        let want = (s..=l).filter(|&p| p < n && model.pages[p as usize].is_some()).count() as u64;
        assert_eq!(set.covered_pages(Span::new(s, l)), want, "{ctx}: covered pages of [{s}, {l}]");
    }
    assert_eq!(set.covered_pages(Span::new(5, 4)), 0, "{ctx}: empty span");
    for (p, want) in model.pages.iter().enumerate() {
        let got = set.find(p as u64).map(|r| r.attrs);
        assert_eq!(got, *want, "{ctx}: page {p}");
    }
}

fn run_sequence(seed: u64, ops: usize, universe: u64, max_pages: u64) -> (usize, usize) {
    let g = gpus();
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let xnack = rng.chance(50);
    let mut set = new_set::<Tracked>(max_pages);
    let mut model = Model {
        pages: vec![None; universe as usize],
    };
    let mut boundaries = std::collections::BTreeSet::new();
    let mut max_len = 0;
    let mut failures = 0;
    for i in 0..ops {
        let ctx = format!("seed {seed} op {i}");
        let span = random_span(&mut rng, universe);
        let inject = rng.chance(5);
        match rng.below(11) {
            0..=4 => {
                let list = random_set_list(&mut rng);
                if inject {
                    set_fail(&mut set);
                }
                match set.set_attr(span, &list, &g, xnack) {
                    Ok(_) => {
                        model.set_attr(span, &list, &g, xnack);
                        boundaries.insert(span.start);
                        boundaries.insert(span.last + 1);
                    }
                    Err(e) => {
                        assert!(inject, "{ctx}: {e:?}");
                        assert_eq!(e, SvmError::NoMem);
                        failures += 1;
                    }
                }
                set_fail_clear(&mut set);
            }
            5..=6 => {
                if inject {
                    set_fail(&mut set);
                }
                let mut gone = Vec::new();
                match set.remove(span, |r| {
                    assert_eq!(r.payload.span, r.span());
                    gone.extend(r.start..=r.last);
                }) {
                    Ok(_) => {
                        assert_eq!(gone, model.remove(span), "{ctx}: removed pages");
                        boundaries.insert(span.start);
                        boundaries.insert(span.last + 1);
                    }
                    Err(e) => {
                        assert!(inject && gone.is_empty(), "{ctx}: {e:?}");
                        failures += 1;
                    }
                }
                set_fail_clear(&mut set);
            }
            10 => {
                // A GPU fault on a page: find the range or create one.
                let page = rng.below(universe);
                // Windows no bigger than a block (upstream: default
                // granularity 9 = 2 MiB, blocks at least 2 MiB).
                let gran = rng.below(u64::from(max_pages.trailing_zeros()) + 1) as u8;
                let vs = rng.below(page + 1);
                let vma = Span::new(vs, page + rng.below(universe - page));
                let bounds = set.unregistered_bounds(page, vma, gran);
                if model.pages[page as usize].is_some() {
                    assert_eq!(
                        bounds,
                        Err(SvmError::Inval),
                        "{ctx}: bounds of a covered page"
                    );
                } else {
                    let b = bounds.unwrap_or_else(|e| panic!("{ctx}: bounds: {e:?}"));
                    let w = 1u64 << gran;
                    let (ws, we) = (page & !(w - 1), page | (w - 1));
                    assert!(
                        b.start <= page && page <= b.last,
                        "{ctx}: {b:?} misses {page}"
                    );
                    assert!(
                        b.start >= vma.start.max(ws) && b.last <= vma.last.min(we),
                        "{ctx}: {b:?} too big"
                    );
                    assert!(
                        (b.start..=b.last).all(|p| model.pages[p as usize].is_none()),
                        "{ctx}: {b:?} overlaps"
                    );
                    // Maximal: each end is a limit.
                    assert!(
                        b.start == vma.start.max(ws) || model.pages[b.start as usize - 1].is_some(),
                        "{ctx}: {b:?} could start earlier"
                    );
                    assert!(
                        b.last == vma.last.min(we) || model.pages[b.last as usize + 1].is_some(),
                        "{ctx}: {b:?} could end later"
                    );
                    let attrs = set.new_range_attrs(&g, xnack);
                    if inject {
                        set_fail(&mut set);
                        assert_eq!(set.insert_new(b, attrs).err(), Some(SvmError::NoMem));
                        failures += 1;
                    } else {
                        let r = set
                            .insert_new(b, attrs)
                            .unwrap_or_else(|e| panic!("{ctx}: insert: {e:?}"));
                        assert_eq!(r.span(), b);
                        for p in b.start..=b.last {
                            model.pages[p as usize] = Some(attrs);
                        }
                        boundaries.insert(b.start);
                        boundaries.insert(b.last + 1);
                    }
                    set_fail_clear(&mut set);
                    if !inject {
                        let again = set.insert_new(Span::new(page, page), attrs).err();
                        assert_eq!(again, Some(SvmError::Inval), "{ctx}: insert over a range");
                    }
                }
            }
            7 => {
                // Mark a random range as mapped (exercises the skip rule).
                let p = rng.below(universe);
                if let Some(r) = set.find_mut(p) {
                    r.payload.mapping_done = rng.chance(70);
                }
            }
            _ => {
                let list = random_get_list(&mut rng);
                let mut got = list.clone();
                let mut want = list.clone();
                let r1 = get_attr(&set, span, &mut got, &g, xnack);
                let r2 = model.get_attr(span, &mut want, &g, xnack);
                assert_eq!(r1, r2, "{ctx}: get_attr result for {list:?}");
                if r1.is_ok() {
                    assert_eq!(
                        got, want,
                        "{ctx}: get_attr answers for {list:?} over {span:?}"
                    );
                }
            }
        }
        check(&set, &model, &boundaries, max_pages, &ctx);
        max_len = max_len.max(set.len());
    }
    (max_len, failures)
}

fn set_fail_clear<T: Payload>(set: &mut Set<T>) {
    set.store_mut().fail_next_reserve = false;
}

#[test]
fn random_sequences_match_the_page_model() {
    let mut longest = 0;
    let mut failures = 0;
    for seed in 0..2000u64 {
        let (universe, max_pages) = match seed % 3 {
            0 => (64, 8),
            1 => (200, 32),
            _ => (300, 512),
        };
        let (l, f) = run_sequence(seed, 60, universe, max_pages);
        longest = longest.max(l);
        failures += f;
    }
    // The generator must have reached interesting states.
    assert!(longest >= 20, "longest set only {longest} ranges");
    assert!(failures > 100, "only {failures} injected failures");
}

#[test]
fn long_sequences_match_the_page_model() {
    for seed in 0..10u64 {
        run_sequence(1_000_000 + seed, 2000, 400, 16);
    }
}

#[test]
fn big_addresses_do_not_overflow() {
    let g = gpus();
    let mut set = new_set::<()>(1 << 18);
    let top = (1u64 << 52) - 1; // last page of a 64-bit address space
    set.set_attr(
        Span::new(top - 1000, top),
        &[Attr::new(ATTR_GRANULARITY, 1)],
        &g,
        true,
    )
    .unwrap();
    assert_eq!(set.find(top).unwrap().attrs.granularity, 1);
    assert!(set.set_attr(Span::new(5, u64::MAX), &[], &g, true).is_err());
    set.remove(Span::new(top - 10, top), |_| {}).unwrap();
    assert_eq!(set.find(top - 11).unwrap().last, top - 11);
    let _ = attr::MAX_GPU_INSTANCE;
}

/// `svm_range_best_restore_location`, branch by branch, with GPUs 0x100
/// (index 0) and 0x200 (index 1) in no common hive (the virtual GPUs), then
/// in one hive.
#[test]
fn best_restore_location_is_upstreams() {
    use kfd_logic::svm::attr::best_restore_location;
    const A: u32 = 0x100;
    const B: u32 = 0x200;
    let base = Attrs::defaults(9, true, 0b11);
    let with = |pref: u32, access: u64, aip: u64| Attrs { preferred_loc: pref, access, access_in_place: aip, ..base };
    let alone = |x: u32, y: u32| x == y;
    let hive = |_: u32, _: u32| true;
    let never = || -> u32 { panic!("actual_loc read outside the ACCESS_IN_PLACE branch") };
    // (attrs, faulting index/id, same hive?, actual_loc, want)
    let cases: &[(Attrs, usize, u32, bool, u32, Option<u32>)] = &[
        // XNACK-on defaults: ACCESS for everyone -> the faulting GPU's VRAM.
        (base, 1, B, false, 0, Some(B)),
        // PREFERRED_LOC this GPU or system memory wins over the bitmaps.
        (with(B, 0, 0), 1, B, false, 0, Some(B)),
        (with(LOCATION_SYSMEM, 0b11, 0), 1, B, false, 0, Some(LOCATION_SYSMEM)),
        // Preferred another GPU, no XGMI: falls through to the bitmaps.
        (with(A, 0b10, 0), 1, B, false, 0, Some(B)),
        (with(A, 0b01, 0b10), 1, B, false, 0, Some(LOCATION_SYSMEM)),
        (with(A, 0b01, 0b10), 1, B, false, A, Some(LOCATION_SYSMEM)),
        (with(A, 0b01, 0b10), 1, B, false, B, Some(B)),
        (with(A, 0b01, 0), 1, B, false, 0, None),
        // In one hive the other GPU's VRAM is reachable.
        (with(A, 0b01, 0), 1, B, true, 0, Some(A)),
        (with(LOCATION_UNDEFINED, 0, 0b10), 1, B, true, A, Some(A)),
        // Neither bitmap: no access.
        (with(LOCATION_UNDEFINED, 0b01, 0b01), 1, B, false, 0, None),
    ];
    for (i, &(a, idx, id, same, actual, want)) in cases.iter().enumerate() {
        let aip_only = a.access & (1 << idx) == 0 && a.access_in_place & (1 << idx) != 0
            && a.preferred_loc != id && a.preferred_loc != LOCATION_SYSMEM
            && !(same && a.preferred_loc != LOCATION_UNDEFINED);
        let got = if same {
            if aip_only {
                best_restore_location(&a, idx, id, false, hive, || actual)
            } else {
                best_restore_location(&a, idx, id, false, hive, never)
            }
        } else if aip_only {
            best_restore_location(&a, idx, id, false, alone, || actual)
        } else {
            best_restore_location(&a, idx, id, false, alone, never)
        };
        assert_eq!(got, want, "case {i}: {a:?} from gpu {id:#x}");
    }
    // An APU-like GPU (system memory preferred) restores to system memory,
    // and an index past MAX_GPU_INSTANCE has no access.
    assert_eq!(best_restore_location(&base, 1, B, true, alone, never), Some(LOCATION_SYSMEM));
    assert_eq!(best_restore_location(&base, MAX_GPU_INSTANCE, B, false, alone, never), None);
}
