// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The range set of one process: ranges `[start, last]` in pages, sorted,
//! non-overlapping, each with [`Attrs`] and an opaque payload.
//!
//! C: `svm_range_add`, `svm_range_split*`, `svm_range_split_new`,
//! `svm_range_clone`, `svm_range_unmap_split`, `svm_range_from_addr` and
//! the interval tree `svms->objects` (`kfd_svm.c`).  See [`super`] for the
//! storage choice, the payload/notification design and the invariants.

use super::{
    attr::{Attr, Attrs, GpuMask, Gpus},
    SvmError,
};

/// An inclusive page interval `[start, last]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// First page.
    pub start: u64,
    /// Last page (inclusive).
    pub last: u64,
}

impl Span {
    /// `[start, last]`.
    pub const fn new(start: u64, last: u64) -> Self {
        Span { start, last }
    }

    /// Number of pages.
    pub fn npages(&self) -> u64 {
        self.last - self.start + 1
    }
}

/// One range (C: `struct svm_range`'s interval and attributes).
#[derive(Debug)]
pub struct Range<T> {
    /// First page.
    pub start: u64,
    /// Last page (inclusive); the storage key.
    pub last: u64,
    /// Attributes.
    pub attrs: Attrs,
    /// The machinery's per-range state (notifier, mapping, VRAM, ...).
    pub payload: T,
}

impl<T> Range<T> {
    /// The range's interval.
    pub fn span(&self) -> Span {
        Span::new(self.start, self.last)
    }
}

/// The per-range state of the machinery above (HMM, migration, GPU
/// mapping), carried and split by the range set.
///
/// Every method is called with the range set's lock held, while the set is
/// being changed; none may fail (the set reserves its storage before it
/// changes anything, so a change either happens whole or not at all) and
/// none should sleep for long.  Anything that must be undone outside the
/// lock (removing an `mmu_interval_notifier`, unmapping from GPUs) should be
/// recorded in the payload and done after the call returns: the callers of
/// [`RangeSet::set_attr`] get the updated interval back and walk it, and
/// removed payloads are handed back by value.
pub trait Payload: Sized {
    /// State of a range created for a page interval that had none.
    fn new(span: Span) -> Self;

    /// The range that covered `keep` and `off` (adjacent, in either order)
    /// is split: `self` now covers `keep` and the returned payload `off`
    /// (C: `svm_range_split_adjust`, which splits the DMA address arrays and
    /// VRAM offsets).
    fn split_off(&mut self, keep: Span, off: Span) -> Self;

    /// `SET_ATTR` changed the attributes of the range covering `span` from
    /// `old` to `new` (called also when they compare equal but the range
    /// was on upstream's update list).  `update_mapping` is upstream's flag
    /// for this change (flags changed, or access changed with XNACK off).
    fn attrs_changed(&mut self, _span: Span, _old: &Attrs, _new: &Attrs, _update_mapping: bool) {}

    /// Upstream's `prange->mapping_done`: a range whose attributes would not
    /// change and whose mapping is done is left alone by `SET_ATTR` (not
    /// split, not updated).
    fn mapping_done(&self) -> bool {
        false
    }
}

/// No machinery: attributes only.
impl Payload for () {
    fn new(_span: Span) -> Self {}
    fn split_off(&mut self, _keep: Span, _off: Span) -> Self {}
}

/// Ordered storage of ranges keyed by their last page, with pre-reserved
/// nodes so that changes cannot fail half-way.
///
/// The host implements it with a `BTreeMap`, the kernel with
/// `kernel::rbtree::RBTree` and a pool of `RBTreeNodeReservation`s.  Every
/// operation must be logarithmic in the number of ranges.
pub trait Store<T> {
    /// Makes sure the next `n` calls of [`Store::insert_reserved`] cannot
    /// fail (allocates nodes ahead).  On error nothing observable changed.
    fn reserve(&mut self, n: usize) -> Result<(), SvmError>;

    /// Inserts a range whose `last` is not a key yet, using a reserved node.
    /// Called at most as many times as reserved since the last
    /// [`Store::reserve`].
    fn insert_reserved(&mut self, range: Range<T>);

    /// Removes the range keyed `last`.
    fn remove(&mut self, last: u64) -> Option<Range<T>>;

    /// The range with the smallest `last >= page` (the only one that can
    /// contain `page`).
    fn lower_bound(&self, page: u64) -> Option<&Range<T>>;

    /// The range keyed `last`, mutably.  A caller may change its `start`,
    /// `attrs` and `payload`, never its `last`.
    fn get_mut(&mut self, last: u64) -> Option<&mut Range<T>>;

    /// The range with the largest `last < page` (the last one before `page`).
    fn last_before(&self, page: u64) -> Option<&Range<T>>;

    /// Removes the first range (teardown).
    fn pop_first(&mut self) -> Option<Range<T>>;

    /// Number of ranges.
    fn len(&self) -> usize;

    /// Whether there is no range.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The per-process parameters of range creation.
#[derive(Clone, Copy, Debug)]
pub struct Params {
    /// Largest range created for a gap, a power of two; gaps are also cut
    /// at multiples of it (upstream `max_svm_range_pages`, see
    /// [`max_range_pages`]).
    pub max_pages: u64,
    /// Granularity of new ranges (`svms->default_granularity`).
    pub default_granularity: u8,
}

/// `svm_range_set_max_pages` for one GPU: VRAM/32 in pages, clamped to
/// [2 MiB, 1 GiB] worth of pages, rounded down to a power of two.  The
/// process uses the minimum over its GPUs (upstream: over all GPUs of the
/// system, a module-global value).
pub fn max_range_pages(vram_bytes: u64) -> u64 {
    let pages = (vram_bytes >> 17).clamp(1 << 9, 1 << 18);
    1u64 << (63 - pages.leading_zeros())
}

/// What a `SET_ATTR` did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetAttrOutcome {
    /// Ranges created for gaps.
    pub created: usize,
    /// Splits of existing ranges.
    pub splits: usize,
    /// Ranges whose attributes were (re)applied (upstream `update_list`).
    pub updated: usize,
    /// Some update asked for a mapping update (upstream `update_mapping`
    /// before the per-range loop).
    pub update_mapping: bool,
    /// Pieces split at a page that is not 2 MiB aligned inside a range that
    /// could be mapped with huge pages (upstream `remap_list` non-empty).
    pub needs_remap: bool,
}

/// The range set of one process (C: `struct svm_range_list`).
///
/// # Invariants
///
/// The store's ranges are sorted, pairwise disjoint, `start <= last`, and
/// each lies inside one `max_pages`-aligned block of pages (gaps are filled
/// block by block and ranges are only ever split, never merged, as
/// upstream; a range created on a fault lies inside its granularity window,
/// inside a block as long as the window is not bigger than a block, as with
/// upstream's defaults).  Every range boundary is therefore either a block
/// boundary or the start or end of some earlier `SET_ATTR`/unmap/fault
/// interval.
pub struct RangeSet<T, S: Store<T>> {
    store: S,
    params: Params,
    _payload: core::marker::PhantomData<fn() -> T>,
}

/// The state of a `SET_ATTR` walk.
struct Walk<'a, 'g> {
    span: Span,
    attrs: &'a [Attr],
    gpus: &'a Gpus<'g>,
    xnack: bool,
    defaults: Attrs,
}

impl<T: Payload, S: Store<T>> RangeSet<T, S> {
    /// An empty set over `store` (which must be empty).
    pub fn new(store: S, params: Params) -> Self {
        RangeSet {
            store,
            params,
            _payload: core::marker::PhantomData,
        }
    }

    /// The creation parameters.
    pub fn params(&self) -> Params {
        self.params
    }

    /// Changes the creation parameters (existing ranges stay as they are).
    pub fn set_params(&mut self, params: Params) {
        self.params = params;
    }

    /// The storage (read-only).
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The storage, mutably: for storage-level settings (e.g. releasing
    /// spare nodes, injecting failures in tests).  Changing ranges through
    /// it bypasses the invariants.
    pub fn store_mut(&mut self) -> &mut S {
        &mut self.store
    }

    /// Number of ranges.
    pub fn len(&self) -> usize {
        self.store.len()
    }

    /// Whether there is no range.
    pub fn is_empty(&self) -> bool {
        self.store.is_empty()
    }

    /// The range containing `page` (C: `svm_range_from_addr`).
    pub fn find(&self, page: u64) -> Option<&Range<T>> {
        self.store.lower_bound(page).filter(|r| r.start <= page)
    }

    /// The range containing `page`, mutably (attributes and payload only).
    pub fn find_mut(&mut self, page: u64) -> Option<&mut Range<T>> {
        let key = self.find(page)?.last;
        self.store.get_mut(key)
    }

    /// The first range that intersects `[page, last]`.
    pub fn first_overlap(&self, page: u64, last: u64) -> Option<&Range<T>> {
        self.store.lower_bound(page).filter(|r| r.start <= last)
    }

    /// Whether any range intersects `[start, last]` (C:
    /// `interval_tree_iter_first(&svms->objects, ..)`, used by
    /// `ALLOC_MEMORY_OF_GPU`).
    pub fn overlaps(&self, start: u64, last: u64) -> bool {
        start <= last && self.first_overlap(start, last).is_some()
    }

    /// How many pages of `span` ranges cover (the XNACK-off system-memory
    /// reservation of a `SET_ATTR`: only its uncovered pages get new
    /// ranges, upstream `svm_range_new(.., update_mem_usage = true)` for
    /// the gaps).  `O(k log n)` for the k ranges met.
    pub fn covered_pages(&self, span: Span) -> u64 {
        if span.start > span.last {
            return 0;
        }
        self.iter_overlapping(span.start, span.last)
            .map(|r| r.last.min(span.last) - r.start.max(span.start) + 1)
            .sum()
    }

    /// The pages all ranges cover (upstream's reservation of a process
    /// with XNACK off, `svm_range_switch_xnack_reserve_mem`).
    pub fn total_pages(&self) -> u64 {
        self.iter().map(|r| r.last - r.start + 1).sum()
    }

    /// The ranges intersecting `[start, last]`, in order.
    pub fn iter_overlapping(&self, start: u64, last: u64) -> Overlapping<'_, T, S> {
        Overlapping {
            set: self,
            pos: Some(start),
            last,
        }
    }

    /// All ranges, in order.
    pub fn iter(&self) -> Overlapping<'_, T, S> {
        self.iter_overlapping(0, u64::MAX)
    }

    /// The range set's upstream `max_pages`-aligned end for a gap piece
    /// starting at `start` (C: `svm_range_split_new`).
    fn chunk_last(&self, start: u64, last: u64) -> u64 {
        let m = self.params.max_pages;
        let block_end = (start / m).saturating_add(1).saturating_mul(m) - 1;
        last.min(block_end)
    }

    /// Number of gap ranges `svm_range_split_new` creates for `[start, last]`.
    fn chunks(&self, start: u64, last: u64) -> usize {
        let m = self.params.max_pages;
        (last / m - start / m + 1) as usize
    }

    /// Whether `SET_ATTR` leaves `r` alone.
    fn skips(r: &Range<T>, w: &Walk<'_, '_>) -> bool {
        r.attrs.is_same(w.attrs, w.gpus) && r.payload.mapping_done()
    }

    /// Counts what a `SET_ATTR` over `span` does: `(nodes, reshaped)`, the
    /// nodes it needs (one per gap piece, one per split) and the ranges it
    /// leaves with new bounds (the gap pieces, and both sides of every
    /// split range).
    fn set_attr_counts(&self, w: &Walk<'_, '_>) -> (usize, usize) {
        let (mut nodes, mut reshaped) = (0, 0);
        let mut pos = w.span.start;
        for r in self.iter_overlapping(w.span.start, w.span.last) {
            if r.start > pos {
                let c = self.chunks(pos, r.start - 1);
                nodes += c;
                reshaped += c;
            }
            if !Self::skips(r, w) {
                let cuts = usize::from(r.start < w.span.start) + usize::from(r.last > w.span.last);
                nodes += cuts;
                if cuts != 0 {
                    // The new pieces, and the node that keeps the rest.
                    reshaped += cuts + 1;
                }
            }
            pos = r.last.min(w.span.last) + 1;
        }
        if pos <= w.span.last {
            let c = self.chunks(pos, w.span.last);
            nodes += c;
            reshaped += c;
        }
        (nodes, reshaped)
    }

    /// How many ranges a [`RangeSet::set_attr`] with these arguments would
    /// leave with bounds they did not have (created for gaps, or pieces of
    /// a split, the kept piece included).  Each needs a new interval
    /// notifier (an `mmu_interval_notifier` cannot be resized; upstream
    /// registers one per range of its `insert_list`), so the caller can
    /// allocate them before the set changes.  0 for a span `set_attr`
    /// refuses.
    pub fn set_attr_reshaped(&self, span: Span, attrs: &[Attr], gpus: &Gpus<'_>, xnack_enabled: bool) -> usize {
        if span.start > span.last || span.last == u64::MAX {
            return 0;
        }
        let w = Walk {
            span,
            attrs,
            gpus,
            xnack: xnack_enabled,
            defaults: Attrs::defaults(self.params.default_granularity, xnack_enabled, gpus.supported_mask()),
        };
        self.set_attr_counts(&w).1
    }

    /// How many ranges a [`RangeSet::remove`] of `span` would leave with
    /// new bounds: the kept head of a range that starts before `span` and
    /// the kept tail of one that ends after it (at most 2).  As
    /// [`RangeSet::set_attr_reshaped`], for their new notifiers.
    pub fn remove_reshaped(&self, span: Span) -> usize {
        if span.start > span.last || span.last == u64::MAX {
            return 0;
        }
        let head = self.first_overlap(span.start, span.last).is_some_and(|r| r.start < span.start);
        let tail = self.find(span.last).is_some_and(|r| r.last > span.last);
        usize::from(head) + usize::from(tail)
    }

    /// Applies a `SET_ATTR` list to `span` (C: `svm_range_add` followed by
    /// the insert/apply/remove steps of `svm_range_set_attr`).
    ///
    /// Pages of `span` without a range get new ranges with the default
    /// attributes (cut at `max_pages` blocks); ranges partially inside
    /// `span` are split at its edges; then the list is applied to every
    /// range inside `span`, except those whose attributes would not change
    /// and whose mapping is done ([`Payload::mapping_done`]).
    ///
    /// The list must have passed [`super::attr::check_set_attrs`].  On
    /// error (only allocation) nothing changed.  Afterwards the ranges
    /// inside `span` are exactly [`RangeSet::iter_overlapping`]`(span)`.
    pub fn set_attr(
        &mut self,
        span: Span,
        attrs: &[Attr],
        gpus: &Gpus<'_>,
        xnack_enabled: bool,
    ) -> Result<SetAttrOutcome, SvmError> {
        if span.start > span.last || span.last == u64::MAX {
            return Err(SvmError::Inval);
        }
        let supported: GpuMask = gpus.supported_mask();
        let w = Walk {
            span,
            attrs,
            gpus,
            xnack: xnack_enabled,
            defaults: Attrs::defaults(self.params.default_granularity, xnack_enabled, supported),
        };
        let (n, _) = self.set_attr_counts(&w);
        self.store.reserve(n)?;

        let mut out = SetAttrOutcome::default();
        let mut pos = span.start;
        loop {
            let next = self
                .first_overlap(pos, span.last)
                .map(|r| (r.start, r.last));
            let gap_last = match next {
                Some((s, _)) if s > pos => Some(s - 1),
                Some(_) => None,
                None => Some(span.last),
            };
            if let Some(gl) = gap_last {
                self.fill_gap(pos, gl, &w, &mut out);
            }
            let Some((_, rlast)) = next else { break };
            self.update_one(rlast, &w, &mut out);
            if rlast >= span.last {
                break;
            }
            pos = rlast + 1;
        }
        Ok(out)
    }

    /// Creates ranges with default attributes for `[start, last]`, cut at
    /// `max_pages` blocks, and applies the walk's list to them.
    fn fill_gap(&mut self, mut start: u64, last: u64, w: &Walk<'_, '_>, out: &mut SetAttrOutcome) {
        loop {
            let l = self.chunk_last(start, last);
            let span = Span::new(start, l);
            let mut attrs = w.defaults;
            let update = attrs.apply(w.attrs, w.gpus, w.xnack);
            let mut payload = T::new(span);
            payload.attrs_changed(span, &w.defaults, &attrs, update);
            self.store.insert_reserved(Range {
                start,
                last: l,
                attrs,
                payload,
            });
            out.created += 1;
            out.updated += 1;
            out.update_mapping |= update;
            if l >= last {
                break;
            }
            start = l + 1;
        }
    }

    /// Splits the range keyed `key` at the walk's edges and applies the
    /// walk's list to the part inside.
    fn update_one(&mut self, key: u64, w: &Walk<'_, '_>, out: &mut SetAttrOutcome) {
        let Some(r) = self.store.get_mut(key) else {
            return;
        };
        if Self::skips(r, w) {
            return;
        }
        let (rstart, rlast) = (r.start, r.last);
        let huge = huge_page_mapping(rstart, rlast);
        // The node keyed `key` keeps the rightmost piece; new nodes take the
        // pieces left of it.
        if rstart < w.span.start {
            let head = Span::new(rstart, w.span.start - 1);
            let rest = Span::new(w.span.start, rlast);
            let payload = r.payload.split_off(rest, head);
            let attrs = r.attrs;
            r.start = w.span.start;
            out.needs_remap |= needs_remap(huge, rstart, rlast, w.span.start);
            self.store.insert_reserved(Range {
                start: head.start,
                last: head.last,
                attrs,
                payload,
            });
            out.splits += 1;
        }
        let Some(r) = self.store.get_mut(key) else {
            return;
        };
        let mid_start = r.start;
        let target = if rlast > w.span.last {
            let mid = Span::new(mid_start, w.span.last);
            let tail = Span::new(w.span.last + 1, rlast);
            let payload = r.payload.split_off(tail, mid);
            let attrs = r.attrs;
            r.start = tail.start;
            out.needs_remap |= needs_remap(
                huge_page_mapping(mid_start, rlast),
                mid_start,
                rlast,
                tail.start,
            );
            self.store.insert_reserved(Range {
                start: mid.start,
                last: mid.last,
                attrs,
                payload,
            });
            out.splits += 1;
            w.span.last
        } else {
            key
        };
        if let Some(r) = self.store.get_mut(target) {
            let old = r.attrs;
            let update = r.attrs.apply(w.attrs, w.gpus, w.xnack);
            let span = r.span();
            r.payload.attrs_changed(span, &old, &r.attrs, update);
            out.updated += 1;
            out.update_mapping |= update;
        }
    }

    /// Removes `span` from the set (CPU `munmap` of it; C:
    /// `svm_range_unmap_from_cpu` → `svm_range_unmap_split`): ranges inside
    /// are removed, ranges partially inside are cut.  Each removed piece is
    /// handed to `removed` (its payload split off the kept part with
    /// [`Payload::split_off`]).  Returns the number of pieces removed.  On
    /// error (only allocation) nothing changed.
    pub fn remove(
        &mut self,
        span: Span,
        mut removed: impl FnMut(Range<T>),
    ) -> Result<usize, SvmError> {
        if span.start > span.last || span.last == u64::MAX {
            return Err(SvmError::Inval);
        }
        // Only the first range can start before `span`; it needs one node:
        // if it also ends after `span` the node keeps the tail and the head
        // needs a new one, else its last page (the key) changes.
        let n = match self.first_overlap(span.start, span.last) {
            Some(r) if r.start < span.start => 1,
            _ => 0,
        };
        self.store.reserve(n)?;

        let mut count = 0;
        let mut pos = span.start;
        while let Some(r) = self.first_overlap(pos, span.last) {
            let (rstart, rlast) = (r.start, r.last);
            count += 1;
            if rstart < span.start && rlast > span.last {
                // Keep head and tail; the node keeps the tail.
                let Some(r) = self.store.get_mut(rlast) else {
                    break;
                };
                let head = Span::new(rstart, span.start - 1);
                let mid = Span::new(span.start, span.last);
                let tail = Span::new(span.last + 1, rlast);
                let head_payload = r.payload.split_off(Span::new(span.start, rlast), head);
                let mid_payload = r.payload.split_off(tail, mid);
                let attrs = r.attrs;
                r.start = tail.start;
                self.store.insert_reserved(Range {
                    start: head.start,
                    last: head.last,
                    attrs,
                    payload: head_payload,
                });
                removed(Range {
                    start: mid.start,
                    last: mid.last,
                    attrs,
                    payload: mid_payload,
                });
                break;
            } else if rstart < span.start {
                // Cut on the right: the head moves to its new key.
                let Some(mut r) = self.store.remove(rlast) else {
                    break;
                };
                let head = Span::new(rstart, span.start - 1);
                let gone = Span::new(span.start, rlast);
                let payload = r.payload.split_off(head, gone);
                removed(Range {
                    start: gone.start,
                    last: gone.last,
                    attrs: r.attrs,
                    payload,
                });
                r.last = head.last;
                self.store.insert_reserved(r);
            } else if rlast > span.last {
                // Cut on the left: in place, the key stays.
                let Some(r) = self.store.get_mut(rlast) else {
                    break;
                };
                let gone = Span::new(rstart, span.last);
                let tail = Span::new(span.last + 1, rlast);
                let payload = r.payload.split_off(tail, gone);
                let attrs = r.attrs;
                r.start = tail.start;
                removed(Range {
                    start: gone.start,
                    last: gone.last,
                    attrs,
                    payload,
                });
            } else if let Some(r) = self.store.remove(rlast) {
                removed(r);
            }
            if rlast >= span.last {
                break;
            }
            pos = rlast + 1;
        }
        Ok(count)
    }

    /// The interval a range created on a GPU fault at `page` covers (C:
    /// `svm_range_get_range_boundaries`): the `2^granularity`-page window
    /// around `page` (upstream uses the default granularity), clipped to the
    /// VMA `vma` (in pages, inclusive) and to the neighbouring ranges.
    /// `-EINVAL` if a range already contains `page` or `page` is outside
    /// `vma` (upstream: the caller found no range; no VMA is `-EFAULT` there).
    pub fn unregistered_bounds(
        &self,
        page: u64,
        vma: Span,
        granularity: u8,
    ) -> Result<Span, SvmError> {
        if self.find(page).is_some() || page < vma.start || page > vma.last || granularity > 63 {
            return Err(SvmError::Inval);
        }
        let window = 1u64 << granularity;
        let mut start = vma.start.max(page & !(window - 1));
        // Exclusive end, as upstream (`vm_end >> PAGE_SHIFT`).
        let mut end = vma
            .last
            .saturating_add(1)
            .min((page | (window - 1)).saturating_add(1));
        if let Some(next) = self.store.lower_bound(page) {
            end = end.min(next.start);
        }
        if let Some(prev) = self.store.last_before(page) {
            start = start.max(prev.last + 1);
        }
        Ok(Span::new(start, end - 1))
    }

    /// Inserts one range over `span`, which no range may meet, with `attrs`
    /// (C: `svm_range_create_unregistered_range` after the boundaries:
    /// `svm_range_new` + `svm_range_add_to_svms`).  Not cut at `max_pages`
    /// blocks, as upstream's fault path.  On error nothing changed.
    pub fn insert_new(&mut self, span: Span, attrs: Attrs) -> Result<&mut Range<T>, SvmError> {
        if span.start > span.last || span.last == u64::MAX || self.overlaps(span.start, span.last) {
            return Err(SvmError::Inval);
        }
        self.store.reserve(1)?;
        let payload = T::new(span);
        self.store.insert_reserved(Range {
            start: span.start,
            last: span.last,
            attrs,
            payload,
        });
        self.store.get_mut(span.last).ok_or(SvmError::NoMem)
    }

    /// The attributes of a range created now (the process's defaults).
    pub fn new_range_attrs(&self, gpus: &Gpus<'_>, xnack_enabled: bool) -> Attrs {
        Attrs::defaults(
            self.params.default_granularity,
            xnack_enabled,
            gpus.supported_mask(),
        )
    }

    /// Removes every range (process teardown, C: `svm_range_list_fini`),
    /// handing each to `removed`.
    pub fn clear(&mut self, mut removed: impl FnMut(Range<T>)) {
        while let Some(r) = self.store.pop_first() {
            removed(r);
        }
    }
}

/// Whether a range `[start, last]` could use 2 MiB mappings (C:
/// `huge_page_mapping` in `svm_range_split_head/tail`).
fn huge_page_mapping(start: u64, last: u64) -> bool {
    let last_align_down = (last + 1) & !511;
    let start_align = (start + 511) & !511;
    last_align_down > start_align
}

/// Whether a split of `[start, last]` at `at` leaves a piece that must be
/// remapped (C: the `remap_list` condition).
fn needs_remap(huge: bool, start: u64, last: u64, at: u64) -> bool {
    let last_align_down = (last + 1) & !511;
    let start_align = (start + 511) & !511;
    huge && at > start_align && at < last_align_down && at & 511 != 0
}

/// Iterator over the ranges intersecting an interval.
pub struct Overlapping<'a, T, S: Store<T>> {
    set: &'a RangeSet<T, S>,
    pos: Option<u64>,
    last: u64,
}

impl<'a, T: Payload, S: Store<T>> Iterator for Overlapping<'a, T, S> {
    type Item = &'a Range<T>;

    fn next(&mut self) -> Option<&'a Range<T>> {
        let pos = self.pos?;
        let r = self
            .set
            .store
            .lower_bound(pos)
            .filter(|r| r.start <= self.last);
        self.pos = match r {
            Some(r) if r.last < self.last => Some(r.last + 1),
            _ => None,
        };
        r
    }
}
