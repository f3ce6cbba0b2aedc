// SPDX-License-Identifier: GPL-2.0

//! The range type and the process's range tree (upstream `struct
//! svm_range` and `svms->objects`, `kfd_svm.c`).
//!
//! A range ([`SvmRange`]) is the logic's `Range` (pages `[start, last]`
//! and attributes, `rust/kfd-logic/src/svm/ranges.rs`) with a
//! [`RangeState`]: its MMU interval notifier, the GPUs it is mapped on and
//! its last mappings (the duplicate-fault filter).  Its location (upstream
//! `actual_loc`) is read from the CPU page table through the notifier
//! ([`RangeList::placement`]): device-private pages say which VRAM holds
//! them, so there is no second record to keep in step.
//!
//! An interval notifier cannot be resized.  An operation that creates or
//! splits ranges first allocates one [`NotifierSlot`] per range it will
//! reshape (the logic counts them exactly: `set_attr_reshaped`,
//! `remove_reshaped`) together with room for the notifiers they replace
//! ([`Reshape`]), then changes the tree (failure-atomic), then registers
//! the new notifiers, and only then drops the replaced ones
//! ([`Reshape::finish`]): every page stays covered by a notifier
//! throughout, so no invalidation is missed and the GPU mappings of the
//! kept pieces stay valid.  Storage is a red-black tree keyed by a range's
//! last page, with a pool of node reservations ([`RbStore`]).

use kernel::{
    prelude::*,
    rbtree::{RBTree, RBTreeNode, RBTreeNodeReservation},
    sync::Arc,
};

use super::{
    err,
    logic::{
        attr::{self, Attrs, GpuMask},
        place::Placement,
        ranges::{max_range_pages, Params, Payload, Range, RangeSet, Span, Store},
        SvmError,
    },
    migrate::MigrateTrigger,
    Svms, PAGE,
};
use crate::{
    device::Device,
    kabi::{
        hmm::{HmmRange, MmRead, NotifierSlot},
        log::kfd_err,
    },
};

/// One GPU's last mapping of a window of a range: valid while no
/// invalidation happened since `seq` (the duplicate-fault filter).
#[derive(Clone, Copy)]
struct LastMap {
    gpu_id: u32,
    start: u64,
    end: u64,
    seq: u64,
    /// Mapped for a write fault (pages writable).
    write: bool,
}

/// What a range carries besides its interval and attributes.
pub(crate) struct RangeState {
    /// The interval notifier (upstream `prange->notifier`).  Over exactly
    /// the range's pages once the operation that created or reshaped the
    /// range has finished; during it, a piece keeps the notifier of the
    /// range it was cut from (which covers more) or has none (covered by
    /// its sibling's).
    pub(crate) notifier: Option<HmmRange>,
    /// The VM slots (`Svms::vms`, bit i = slot i) the range is mapped on,
    /// in part or whole: the XNACK-off restore remaps those.
    pub(crate) mapped_on: u64,
    /// The last mapping per GPU, valid for the notifier's sequence.
    last_maps: KVec<LastMap>,
}

impl Payload for RangeState {
    fn new(_span: Span) -> Self {
        RangeState { notifier: None, mapped_on: 0, last_maps: KVec::new() }
    }

    fn split_off(&mut self, _keep: Span, _off: Span) -> Self {
        // Both pieces get new notifiers: the sequences of the last mappings
        // go with the old one (a duplicate fault is then mapped again).
        self.last_maps.clear();
        RangeState { notifier: None, mapped_on: self.mapped_on, last_maps: KVec::new() }
    }
}

/// A range (upstream `struct svm_range`).
pub(crate) type SvmRange = Range<RangeState>;

/// The tree of a process's ranges.
pub(crate) type RangeTree = RangeSet<RangeState, RbStore<RangeState>>;

/// The addresses `[start, end)` of a range.
pub(crate) fn bytes(r: &SvmRange) -> (u64, u64) {
    (r.start.saturating_mul(PAGE), r.last.saturating_add(1).saturating_mul(PAGE))
}

/// Whether a range's notifier covers exactly its pages.
fn notifier_fits(r: &SvmRange) -> bool {
    r.payload.notifier.as_ref().map(|n| (n.start(), n.end())) == Some(bytes(r))
}

/// What a retry fault uses of a range ([`RangeList::fault_attrs`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FaultAttrs {
    /// The range's attributes.
    pub(crate) attrs: Attrs,
    /// The range (pages): the fault window stays inside it, as upstream
    /// clips it to `prange`.
    pub(crate) span: Span,
}

impl FaultAttrs {
    /// Where a fault of process device `gpu_idx` (gpu_id `gpu_id`)
    /// restores the range (upstream `svm_range_best_restore_location`, see
    /// [`attr::best_restore_location`]): system memory (0), a gpu_id, or
    /// `None`: no access, the fault is fatal (`-EACCES`).  Virtual GPUs
    /// share no XGMI hive: only a GPU itself reaches its VRAM.
    /// `no_vram`: the GPU has no device-private VRAM (upstream's
    /// `apu_prefer_gtt` analogue); `actual_loc()`: where the window's pages
    /// are.
    pub(crate) fn best_location(
        &self,
        gpu_idx: usize,
        gpu_id: u32,
        no_vram: bool,
        actual_loc: impl FnOnce() -> u32,
    ) -> Option<u32> {
        attr::best_restore_location(&self.attrs, gpu_idx, gpu_id, no_vram, |a, b| a == b, actual_loc)
    }
}

/// The tree and what goes with it, under `Svms::list`.
pub(crate) struct RangeList {
    /// The ranges.
    pub(crate) tree: RangeTree,
    /// Set by teardown: no new range, no new VM.
    pub(crate) dead: bool,
    /// The device whose GPU driver keeps the system-memory limit (any: the
    /// accounts are the driver's, module-wide, as amdgpu's
    /// `amdgpu_amdkfd_reserve_mem_limit(NULL, ..)`); `None` after teardown
    /// or if no driver accounts.
    account: Option<Arc<Device>>,
    /// XNACK is off: ranges are reserved against the system-memory limit
    /// (upstream `svm_range_new(.., update_mem_usage)` when
    /// `!p->xnack_enabled`).
    accounting: bool,
    /// Bytes reserved: every page the ranges cover while `accounting`, 0
    /// otherwise.
    reserved: u64,
}

impl RangeList {
    /// The list of a new process with `devices` (upstream
    /// `svm_range_list_init`; `max_pages` is upstream's
    /// `svm_range_set_max_pages`, the minimum over the GPUs).  A new process
    /// starts with XNACK off, so its ranges are accounted.
    pub(crate) fn new<'a>(devices: impl Iterator<Item = &'a Arc<Device>>) -> Self {
        let mut max_pages = None::<u64>;
        let mut account = None;
        for d in devices {
            let m = max_range_pages(d.info.vram_size);
            max_pages = Some(max_pages.map_or(m, |x| x.min(m)));
            if account.is_none() && d.kgd.has_mem_limit() {
                account = Some(d.clone());
            }
        }
        let params = Params { max_pages: max_pages.unwrap_or(1 << 9), default_granularity: attr::DEFAULT_GRANULARITY };
        RangeList { tree: RangeSet::new(RbStore::new(), params), dead: false, account, accounting: true, reserved: 0 }
    }

    /// Takes every range out (for dropping outside the lock: removing
    /// their notifiers waits for callbacks) and gives their reservation
    /// back (upstream `svm_range_list_fini` -> `svm_range_free`).
    pub(crate) fn take_all(&mut self) -> RangeTree {
        let params = self.tree.params();
        let old = core::mem::replace(&mut self.tree, RangeSet::new(RbStore::new(), params));
        self.unreserve(self.reserved);
        // The device may go once its processes are gone.
        self.account = None;
        old
    }

    /// Reserves `bytes` of new ranges if XNACK is off (upstream
    /// `amdgpu_amdkfd_reserve_mem_limit(NULL, size, USERPTR)` in
    /// `svm_range_new`); `ENOMEM` over the limit, nothing reserved.
    pub(crate) fn reserve(&mut self, bytes: u64) -> Result {
        if !self.accounting || bytes == 0 {
            return Ok(());
        }
        if let Some(d) = self.account.as_ref() {
            d.kgd.reserve_userptr_limit(bytes)?;
            self.reserved += bytes;
        }
        Ok(())
    }

    /// Gives back the reservation of `bytes` of removed ranges (upstream
    /// `svm_range_free` with XNACK off).
    pub(crate) fn unreserve(&mut self, bytes: u64) {
        let bytes = bytes.min(self.reserved);
        if bytes == 0 {
            return;
        }
        if let Some(d) = self.account.as_ref() {
            d.kgd.unreserve_userptr_limit(bytes);
        }
        self.reserved -= bytes;
    }

    /// SET_XNACK_MODE is switching to `enable` (upstream
    /// `svm_range_switch_xnack_reserve_mem`): XNACK on gives the ranges'
    /// reservation back, XNACK off reserves every page they cover;
    /// `ENOMEM` over the limit, and then nothing changed (the caller keeps
    /// the old mode).
    pub(crate) fn switch_xnack(&mut self, enable: bool) -> Result {
        if enable {
            self.unreserve(self.reserved);
            self.accounting = false;
        } else if !self.accounting {
            self.accounting = true;
            let total = self.tree.total_pages() << attr::PAGE_SHIFT;
            if let Err(e) = self.reserve(total) {
                self.accounting = false;
                return Err(e);
            }
        }
        Ok(())
    }

    /// Bytes reserved against the system-memory limit.
    #[cfg_attr(not(CONFIG_KUNIT), expect(dead_code, reason = "KUnit reads it"))]
    pub(crate) fn reserved(&self) -> u64 {
        self.reserved
    }

    /// What a GPU retry fault at `page` (a page number) must honour
    /// (upstream `svm_range_restore_pages` and
    /// `svm_range_best_restore_location`); `None` if no range covers the
    /// page (see [`RangeList::create_unregistered`]).
    pub(crate) fn fault_attrs(&self, page: u64) -> Option<FaultAttrs> {
        let r = self.tree.find(page)?;
        Some(FaultAttrs { attrs: r.attrs, span: r.span() })
    }

    /// A retry fault (XNACK on) at `page`, which no range covers, inside
    /// the VMA `vma` (pages): creates the range upstream's
    /// `svm_range_create_unregistered_range` creates and returns its span
    /// (its notifier is the caller's).  The window is the process's default
    /// granularity around the page, clipped to the VMA and to the
    /// neighbouring ranges (`svm_range_get_range_boundaries`); the
    /// attributes are a new range's with XNACK on (`svm_range_new`: every
    /// SVM GPU in ACCESS, `svm_range_set_default_attributes`), and
    /// PREFERRED_LOC is system memory in the initial heap or stack
    /// (`is_heap_stack`).  `supported` is the process's SVM-capable devices
    /// by index.  Not accounted against the system-memory limit: XNACK is
    /// on.
    pub(crate) fn create_unregistered(
        &mut self,
        page: u64,
        vma: Span,
        heap_stack: bool,
        supported: GpuMask,
    ) -> Result<Span> {
        let gran = self.tree.params().default_granularity;
        let span = self.tree.unregistered_bounds(page, vma, gran).map_err(err)?;
        let mut attrs = Attrs::defaults(gran, true, supported);
        if heap_stack {
            attrs.preferred_loc = attr::LOCATION_SYSMEM;
        }
        // With XNACK on (the only way here) this reserves nothing, as
        // upstream's `svm_range_new(.., true)`.
        self.reserve(span.npages() << attr::PAGE_SHIFT)?;
        let r = self.tree.insert_new(span, attrs).map(|_| span).map_err(err);
        self.tree.store_mut().trim();
        if r.is_err() {
            self.unreserve(span.npages() << attr::PAGE_SHIFT);
        }
        r
    }

    /// Whether a range intersects the `size` bytes at `start` (upstream's
    /// `interval_tree_iter_first` over `[start >> PAGE_SHIFT, (start + size
    /// - 1) >> PAGE_SHIFT]`).
    pub(crate) fn overlaps_bytes(&self, start: u64, size: u64) -> bool {
        if size == 0 {
            return false;
        }
        let last = start.saturating_add(size - 1);
        self.tree.overlaps(start >> attr::PAGE_SHIFT, last >> attr::PAGE_SHIFT)
    }

    /// The last page of the first range that ends at or after `page` and
    /// starts at or before `last` (for walking ranges mutably: each step
    /// is one lookup).
    pub(crate) fn next_key(&self, page: u64, last: u64) -> Option<u64> {
        self.tree.first_overlap(page, last).map(|r| r.last)
    }

    /// Where the pages of range `r` are, seen through the VRAM of each of
    /// `devs` (upstream `prange->actual_loc`).
    pub(crate) fn placement(guard: &MmRead<'_>, r: &SvmRange, devs: &[Arc<Device>]) -> Placement {
        let mut p = Placement::new();
        let Some(n) = r.payload.notifier.as_ref() else {
            p.add_failure();
            return p;
        };
        let (start, end) = bytes(r);
        for d in devs {
            let Some(pagemap) = d.vram_pagemap.as_ref() else { continue };
            match n.locate(guard, pagemap, start, end) {
                Ok((vram, ram)) => p.add(d.gpu_id(), vram, ram),
                Err(_) => p.add_failure(),
            }
        }
        p
    }
}

/// The notifiers an operation on the tree needs, allocated before it
/// changes anything, and room for those they replace.
pub(crate) struct Reshape {
    slots: SmallVec<NotifierSlot, RESHAPE_INLINE>,
    retired: SmallVec<HmmRange, RESHAPE_INLINE>,
}

/// Notifiers a [`Reshape`] holds without allocating: a SET_ATTR creating
/// one range needs one, splitting a range at both ends of its span three.
const RESHAPE_INLINE: usize = 4;

impl Reshape {
    /// Allocates `n` notifiers owned by `svms` (`ENOMEM`: nothing
    /// allocated stays).
    pub(crate) fn new(svms: &Arc<Svms>, n: usize) -> Result<Self> {
        let mut slots = SmallVec::with_capacity(n)?;
        let retired = SmallVec::with_capacity(n)?;
        for _ in 0..n {
            // Room for `n` was made above: never full.
            slots.push_within_capacity(NotifierSlot::new(svms)?).map_err(|_| ENOMEM)?;
        }
        Ok(Reshape { slots, retired })
    }

    /// Gives every range meeting pages `[first, last]` whose notifier does
    /// not cover exactly its pages a new one, registered under `guard`
    /// (held for writing), then drops the notifiers they replace: each page
    /// stays covered throughout.  Call with `first`/`last` one page beyond
    /// the operation's span, where the kept pieces of split ranges are.
    pub(crate) fn finish(mut self, guard: &MmRead<'_>, tree: &mut RangeTree, first: u64, last: u64) {
        let mut pos = first;
        while let Some(key) = tree.first_overlap(pos, last).map(|r| r.last) {
            if let Some(r) = tree.find_mut(key) {
                if !notifier_fits(r) {
                    let (start, end) = bytes(r);
                    match self.slots.pop().map(|s| s.register(guard, start, end)) {
                        Some(Ok(n)) => {
                            if let Some(old) = r.payload.notifier.replace(n) {
                                if let Err(old) = self.retired.push_within_capacity(old) {
                                    // Cannot happen (room for one per slot):
                                    // dropped now, its range has the new one.
                                    drop(old);
                                }
                            }
                        }
                        Some(Err((e, _slot))) => {
                            kfd_err!("svm: notifier for {:#x}..{:#x} not registered: {:?}\n", start, end, e)
                        }
                        None => kfd_err!("svm: no notifier allocated for {:#x}..{:#x}\n", start, end),
                    }
                }
            }
            if key >= last {
                break;
            }
            pos = key + 1;
        }
        // Now the replaced ones (removal waits for their callbacks).
        drop(self.retired);
    }
}

/// Up to `N` values in place, the rest on the heap: what the SET_ATTR path
/// collects without allocating in the common case (an allocation is one
/// more failure path, and on a debug kernel tens of microseconds).
pub(crate) struct SmallVec<T, const N: usize> {
    inline: [Option<T>; N],
    heap: KVec<T>,
}

impl<T, const N: usize> SmallVec<T, N> {
    /// Room for `n` values (the heap part allocated only beyond `N`).
    pub(crate) fn with_capacity(n: usize) -> Result<Self> {
        Ok(SmallVec { inline: [const { None }; N], heap: KVec::with_capacity(n.saturating_sub(N), GFP_KERNEL)? })
    }

    /// Adds `v` without allocating; gives it back when full.
    pub(crate) fn push_within_capacity(&mut self, v: T) -> Result<(), T> {
        match self.inline.iter_mut().find(|slot| slot.is_none()) {
            Some(slot) => {
                *slot = Some(v);
                Ok(())
            }
            None => self.heap.push_within_capacity(v).map_err(|e| e.0),
        }
    }

    /// Takes a value out (the last added first).
    pub(crate) fn pop(&mut self) -> Option<T> {
        self.heap.pop().or_else(|| self.inline.iter_mut().rev().find_map(Option::take))
    }
}

/// How often a mapping is retried when invalidations race with it.
const MAP_TRIES: u32 = 16;

impl Svms {
    /// Maps `[start, end)` of `r` on GPU `gpu_id` (upstream
    /// `svm_range_validate_and_map`: `hmm_range_fault` + map, retried on
    /// racing invalidations; `EAGAIN` if they keep racing).  A read-only
    /// device page and a write go back to system memory first (`trigger`
    /// says why the mapping was asked for).
    pub(crate) fn map_on(
        &self,
        guard: &MmRead<'_>,
        r: &mut SvmRange,
        gpu_id: u32,
        start: u64,
        end: u64,
        write: bool,
        trigger: MigrateTrigger,
    ) -> Result {
        // Not under `vms`: the callbacks take it inside the range's lock.
        let (slot, vm) = self.vm_of(gpu_id)?;
        let pagemap = vm.dev().vram_pagemap.as_ref().ok_or(EOPNOTSUPP)?;
        let notifier = r.payload.notifier.as_ref().ok_or(EFAULT)?;
        let mut seq = Err(EBUSY);
        for _ in 0..MAP_TRIES {
            seq = notifier.map(guard, pagemap, vm.kgd_vm(), start, end, write);
            match seq {
                Err(e) if e == EBUSY => continue,
                // A read-only device page and a write: back to system memory
                // (its CPU fault breaks copy-on-write), then map again.
                // Not an SMI migration (see `src/smi.rs`).
                Err(e) if e == EXDEV => {
                    self.migrate_to_ram(guard, start, end, trigger, None)?;
                }
                _ => break,
            }
        }
        let seq = seq.map_err(|e| if e == EBUSY { EAGAIN } else { e })?;
        r.payload.mapped_on |= 1u64 << slot;
        let m = LastMap { gpu_id, start, end, seq, write };
        match r.payload.last_maps.iter_mut().find(|l| l.gpu_id == gpu_id) {
            Some(l) => *l = m,
            None => r.payload.last_maps.push(m, GFP_KERNEL)?,
        }
        Ok(())
    }

    /// Maps the part `[start, end)` of `r` on GPU `gpu_id` VMA by VMA:
    /// writable where the VMA allows, else read-only (upstream maps each
    /// VMA with its own `readonly`).
    pub(crate) fn map_vmas(
        &self,
        guard: &MmRead<'_>,
        r: &mut SvmRange,
        gpu_id: u32,
        start: u64,
        end: u64,
        trigger: MigrateTrigger,
    ) -> Result {
        let mut at = start;
        while at < end {
            let (_, vma_end) = guard.usable_vma(at)?;
            let e = vma_end.min(end);
            match self.map_on(guard, r, gpu_id, at, e, true, trigger) {
                Err(err) if err == EPERM || err == EFAULT => self.map_on(guard, r, gpu_id, at, e, false, trigger)?,
                other => other?,
            }
            at = e;
        }
        Ok(())
    }

    /// Whether GPU `gpu_id`'s last mapping of `r` covers `addr` and no
    /// invalidation happened since: a duplicate fault (upstream filters
    /// them with `svm_range_skip_recover` and fault timestamps).
    pub(crate) fn still_mapped(r: &SvmRange, gpu_id: u32, addr: u64, write: bool) -> bool {
        let Some(n) = r.payload.notifier.as_ref() else { return false };
        r.payload.last_maps.iter().any(|l| {
            l.gpu_id == gpu_id && (l.start..l.end).contains(&addr) && (l.write || !write) && n.seq_valid(l.seq)
        })
    }
}

/// `RBTree` storage with reserved nodes.
pub(crate) struct RbStore<T> {
    tree: RBTree<u64, Range<T>>,
    /// Nodes allocated ahead by [`Store::reserve`].
    pool: KVec<RBTreeNodeReservation<u64, Range<T>>>,
    len: usize,
}

impl<T> RbStore<T> {
    /// An empty store.
    pub(crate) fn new() -> Self {
        RbStore { tree: RBTree::new(), pool: KVec::new(), len: 0 }
    }

    /// Frees reserved nodes that were not used (after an operation).
    pub(crate) fn trim(&mut self) {
        self.pool.clear();
        if self.pool.capacity() > 64 {
            self.pool = KVec::new();
        }
    }

    /// Reserved nodes not used yet.
    #[allow(dead_code)] // KUnit checks that the logic reserves exactly.
    pub(crate) fn spare(&self) -> usize {
        self.pool.len()
    }
}

impl<T> Store<T> for RbStore<T> {
    fn reserve(&mut self, n: usize) -> Result<(), SvmError> {
        if self.pool.len() >= n {
            return Ok(());
        }
        self.pool.reserve(n - self.pool.len(), GFP_KERNEL).map_err(|_| SvmError::NoMem)?;
        while self.pool.len() < n {
            let node = RBTreeNodeReservation::new(GFP_KERNEL).map_err(|_| SvmError::NoMem)?;
            // Capacity was reserved above: cannot fail.
            self.pool.push(node, GFP_KERNEL).map_err(|_| SvmError::NoMem)?;
        }
        Ok(())
    }

    fn insert_reserved(&mut self, range: Range<T>) {
        let key = range.last;
        let node = match self.pool.pop() {
            Some(r) => r.into_node(key, range),
            // Only reachable through a bug in the logic's node count: try to
            // allocate rather than lose the range.
            None => match RBTreeNode::new(key, range, GFP_KERNEL) {
                Ok(node) => {
                    kfd_err!("svm: range insert without a reserved node\n");
                    node
                }
                Err(_) => {
                    kfd_err!("svm: range [.., {:#x}] lost: no reserved node\n", key);
                    return;
                }
            },
        };
        match self.tree.insert(node) {
            None => self.len += 1,
            Some(_) => kfd_err!("svm: duplicate range key {:#x}\n", key),
        }
    }

    fn remove(&mut self, last: u64) -> Option<Range<T>> {
        let r = self.tree.remove(&last)?;
        self.len -= 1;
        Some(r)
    }

    fn lower_bound(&self, page: u64) -> Option<&Range<T>> {
        // The cursor's references only live as long as the cursor: look the
        // key up again (both O(log n)).
        let key = *self.tree.cursor_lower_bound(&page)?.current().0;
        self.tree.get(&key)
    }

    fn get_mut(&mut self, last: u64) -> Option<&mut Range<T>> {
        self.tree.get_mut(&last)
    }

    fn last_before(&self, page: u64) -> Option<&Range<T>> {
        // The node before the first key >= page, or the last node.
        let key = match self.tree.cursor_lower_bound(&page) {
            Some(c) => *c.peek_prev()?.0,
            None => *self.tree.cursor_back()?.current().0,
        };
        self.tree.get(&key)
    }

    fn pop_first(&mut self) -> Option<Range<T>> {
        let key = *self.tree.cursor_front()?.current().0;
        self.remove(key)
    }

    fn len(&self) -> usize {
        self.len
    }
}

#[kunit_tests(rkfd_svm_range)]
mod tests {
    use super::*;
    use crate::svm::logic::{self, attr::*};

    const IDS: [u32; 2] = [0x1111, 0x2222];

    fn gpus() -> Gpus<'static> {
        Gpus { ids: &IDS, supported: 0b11 }
    }

    fn new_ranges(max_pages: u64) -> RangeTree {
        RangeSet::new(RbStore::new(), Params { max_pages, default_granularity: DEFAULT_GRANULARITY })
    }

    fn spans(r: &RangeTree) -> KVec<(u64, u64)> {
        let mut v = KVec::new();
        for x in r.iter() {
            let _ = v.push((x.start, x.last), GFP_KERNEL);
        }
        v
    }

    #[test]
    fn small_vec_spills_to_the_heap_and_pops_in_reverse() -> Result {
        let mut v = SmallVec::<u32, 2>::with_capacity(3)?;
        for x in [1, 2, 3] {
            assert_eq!(v.push_within_capacity(x), Ok(()));
        }
        // Full: two in place, one on the heap.
        assert_eq!(v.push_within_capacity(4), Err(4));
        assert_eq!((v.pop(), v.pop()), (Some(3), Some(2)));
        assert_eq!(v.push_within_capacity(5), Ok(()));
        assert_eq!((v.pop(), v.pop(), v.pop()), (Some(5), Some(1), None));
        // Within its inline room it allocates nothing.
        let v = SmallVec::<u32, 2>::with_capacity(2)?;
        assert_eq!(v.heap.capacity(), 0);
        Ok(())
    }

    #[test]
    fn rbtree_store_splits_and_removes() -> Result {
        let g = gpus();
        let mut r = new_ranges(16);
        r.set_attr(Span::new(5, 40), &[Attr::new(ATTR_ACCESS, 0x2222)], &g, false).map_err(err)?;
        assert_eq!(&spans(&r)[..], &[(5, 15), (16, 31), (32, 40)]);
        assert_eq!(r.store().spare(), 0);
        r.set_attr(Span::new(20, 25), &[Attr::new(ATTR_PREFERRED_LOC, 0x1111)], &g, false).map_err(err)?;
        assert_eq!(&spans(&r)[..], &[(5, 15), (16, 19), (20, 25), (26, 31), (32, 40)]);
        assert_eq!(r.find(22).map(|x| x.attrs.preferred_loc), Some(0x1111));
        assert_eq!(r.find(26).map(|x| x.attrs.preferred_loc), Some(LOCATION_UNDEFINED));
        assert_eq!(r.find(30).map(|x| x.attrs.access), Some(0b10));
        assert!(r.find(41).is_none() && r.find(4).is_none());
        let mut removed = 0;
        r.remove(Span::new(10, 21), |x| removed += x.last - x.start + 1).map_err(err)?;
        assert_eq!(removed, 12);
        assert_eq!(&spans(&r)[..], &[(5, 9), (22, 25), (26, 31), (32, 40)]);
        assert_eq!(r.store().spare(), 0);
        // Fault-path bounds: clipped by the neighbours (the RBTree's
        // predecessor and successor lookups), the VMA and the window.
        let vma = Span::new(0, 100);
        assert_eq!(r.unregistered_bounds(15, vma, 9), Ok(Span::new(10, 21)));
        assert_eq!(r.unregistered_bounds(50, vma, 9), Ok(Span::new(41, 100)));
        assert_eq!(r.unregistered_bounds(2, vma, 9), Ok(Span::new(0, 4)));
        assert_eq!(r.unregistered_bounds(50, vma, 3), Ok(Span::new(48, 55)));
        assert_eq!(r.unregistered_bounds(7, vma, 9), Err(SvmError::Inval));
        let a = r.new_range_attrs(&g, true);
        r.insert_new(Span::new(10, 21), a).map_err(err)?;
        assert_eq!(r.find(15).map(|x| (x.start, x.last, x.attrs.access)), Some((10, 21, 0b11)));
        assert!(r.insert_new(Span::new(21, 21), a).is_err());
        assert_eq!(r.store().spare(), 0);
        let mut n = 0;
        r.clear(|_| n += 1);
        assert_eq!((n, r.len()), (5, 0));
        Ok(())
    }

    #[test]
    fn rbtree_store_many_ranges_stay_ordered() -> Result {
        let g = gpus();
        let mut r = new_ranges(1 << 18);
        // Every other page: 1000 ranges, then one call over all of them.
        for i in 0..1000u64 {
            r.set_attr(Span::new(2 * i, 2 * i), &[Attr::new(ATTR_GRANULARITY, (i % 7) as u32)], &g, true)
                .map_err(err)?;
        }
        assert_eq!(r.len(), 1000);
        r.set_attr(Span::new(0, 1999), &[Attr::new(ATTR_SET_FLAGS, 0x10)], &g, true).map_err(err)?;
        assert_eq!(r.len(), 2000);
        let mut prev = None;
        for x in r.iter() {
            assert!(prev.map_or(true, |p| x.start == p + 1));
            assert!(x.attrs.flags & 0x10 != 0);
            prev = Some(x.last);
        }
        let mut q = [Attr::new(ATTR_GRANULARITY, 0)];
        logic::get_attr(&r, Span::new(0, 13), &mut q, &g, true).map_err(err)?;
        assert_eq!(q[0].value, 0);
        logic::get_attr(&r, Span::new(2, 11), &mut q, &g, true).map_err(err)?;
        // Pages 2..11: the set ones have 1..5, the others the default 9.
        assert_eq!(q[0].value, 1);
        Ok(())
    }

    #[test]
    fn state_overlap_in_bytes() -> Result {
        let mut st = RangeList::new(core::iter::empty());
        // No GPU: upstream's smallest block, 2 MiB.
        assert_eq!(st.tree.params().max_pages, 512);
        st.tree.set_attr(Span::new(0x10, 0x1f), &[], &gpus(), false).map_err(err)?;
        assert!(st.overlaps_bytes(0x1f000, 1));
        assert!(st.overlaps_bytes(0xf000, 0x1001));
        assert!(!st.overlaps_bytes(0xf000, 0x1000));
        assert!(!st.overlaps_bytes(0x20000, 0x1000));
        assert!(!st.overlaps_bytes(0x10000, 0));
        // A size that runs past the address space saturates instead of wrapping.
        assert!(st.overlaps_bytes(0x1000, u64::MAX));
        drop(st.take_all());
        assert!(st.tree.is_empty() && !st.overlaps_bytes(0, u64::MAX));
        Ok(())
    }

    #[test]
    fn fault_attrs_follow_the_range() -> Result {
        let mut st = RangeList::new(core::iter::empty());
        let g = gpus();
        // No range: none until the fault creates one.
        assert_eq!(st.fault_attrs(0x10), None);
        st.tree
            .set_attr(
                Span::new(0x10, 0x1f),
                &[Attr::new(ATTR_GRANULARITY, 4), Attr::new(ATTR_PREFERRED_LOC, 0x2222), Attr::new(ATTR_ACCESS, 0x2222)],
                &g,
                true,
            )
            .map_err(err)?;
        st.tree.set_attr(Span::new(0x18, 0x1f), &[Attr::new(ATTR_NO_ACCESS, 0x2222)], &g, true).map_err(err)?;
        // Where GPU `idx` (ids 0x1111, 0x2222) restores page `page`; the
        // pages are in system memory.
        let best = |st: &RangeList, page, idx: usize| -> Result<Option<u32>> {
            let id = IDS.get(idx).copied().unwrap_or(0);
            Ok(st.fault_attrs(page).ok_or(EINVAL)?.best_location(idx, id, false, || LOCATION_SYSMEM))
        };
        let a = st.fault_attrs(0x12).ok_or(EINVAL)?;
        assert_eq!((a.attrs.granularity, a.attrs.preferred_loc), (4, 0x2222));
        assert_eq!(best(&st, 0x12, 1)?, Some(0x2222));
        // XNACK on: new ranges give every GPU access, so GPU 0 still has it
        // (preferred elsewhere, no XGMI: its own VRAM).
        assert_eq!(best(&st, 0x12, 0)?, Some(0x1111));
        // Preferred here but NO_ACCESS: PREFERRED_LOC wins, as upstream.
        assert_eq!(best(&st, 0x18, 1)?, Some(0x2222));
        st.tree.set_attr(Span::new(0x18, 0x1f), &[Attr::new(ATTR_PREFERRED_LOC, LOCATION_UNDEFINED)], &g, true).map_err(err)?;
        assert_eq!(best(&st, 0x18, 1)?, None);
        st.tree.set_attr(Span::new(0x18, 0x18), &[Attr::new(ATTR_ACCESS_IN_PLACE, 0x2222)], &g, true).map_err(err)?;
        assert_eq!((best(&st, 0x18, 1)?, best(&st, 0x19, 1)?), (Some(LOCATION_SYSMEM), None));
        assert_eq!(best(&st, 0x12, MAX_GPU_INSTANCE)?, None);
        drop(st.take_all());
        Ok(())
    }

    #[test]
    fn fault_creates_unregistered_range() -> Result {
        let mut st = RangeList::new(core::iter::empty());
        let g = gpus();
        st.tree.set_attr(Span::new(0x300, 0x30f), &[Attr::new(ATTR_PREFERRED_LOC, 0x1111)], &g, true).map_err(err)?;
        // The 512-page window around 0x2f0, clipped by the VMA's start and
        // by the range after it.
        let vma = Span::new(0x250, 0x7ff);
        assert_eq!(st.create_unregistered(0x2f0, vma, false, 0b01)?, Span::new(0x250, 0x2ff));
        let r = st.tree.find(0x2f0).ok_or(EINVAL)?;
        let want = Attrs::defaults(DEFAULT_GRANULARITY, true, 0b01);
        assert_eq!((r.start, r.last, r.attrs), (0x250, 0x2ff, want));
        // After the range: up to the window's end; heap or stack prefers
        // system memory.
        assert_eq!(st.create_unregistered(0x310, vma, true, 0b11)?, Span::new(0x310, 0x3ff));
        assert_eq!(st.fault_attrs(0x3ff).map(|a| a.attrs.preferred_loc), Some(LOCATION_SYSMEM));
        // Covered already, or outside the VMA: refused, nothing created.
        assert_eq!(st.create_unregistered(0x300, vma, false, 1).err(), Some(EINVAL));
        assert_eq!(st.create_unregistered(0x900, vma, false, 1).err(), Some(EINVAL));
        assert_eq!(st.tree.len(), 3);
        drop(st.take_all());
        Ok(())
    }

    #[test]
    fn xnack_off_ranges_are_reserved() -> Result {
        use crate::{device, kabi::kgd::fake::{self, FakeGpu}};
        use kernel::sync::atomic::Relaxed;
        const P: u64 = kernel::page::PAGE_SIZE as u64;
        let gpu = FakeGpu::new()?;
        let dev = device::probe(fake::device(&gpu), fake::info())?;
        let devs = [dev];
        let mut st = RangeList::new(devs.iter());
        let g = gpus();
        let held = || gpu.reserved.load(Relaxed);
        // XNACK off (a new process): the pages of new ranges only.
        let set = |st: &mut RangeList, s: u64, l: u64| -> Result {
            let span = Span::new(s, l);
            let bytes = (span.npages() - st.tree.covered_pages(span)) * P;
            st.reserve(bytes)?;
            st.tree.set_attr(span, &[], &g, false).map_err(err)?;
            Ok(())
        };
        set(&mut st, 0x10, 0x1f)?;
        set(&mut st, 0x18, 0x27)?;
        assert_eq!((held(), st.reserved()), (0x18 * P, 0x18 * P));
        // Over the limit: ENOMEM, nothing reserved.
        gpu.limit.store(0x20 * P, Relaxed);
        assert_eq!(set(&mut st, 0x100, 0x10f).err(), Some(ENOMEM));
        assert_eq!((held(), st.tree.covered_pages(Span::new(0x100, 0x10f))), (0x18 * P, 0));
        // XNACK on gives it back; off again needs room for all of it.
        st.switch_xnack(true)?;
        assert_eq!((held(), st.reserved()), (0, 0));
        set(&mut st, 0x100, 0x10f)?;
        assert_eq!(held(), 0);
        assert_eq!(st.switch_xnack(false).err(), Some(ENOMEM));
        assert_eq!((held(), st.reserved(), st.accounting), (0, 0, false));
        gpu.limit.store(u64::MAX, Relaxed);
        st.switch_xnack(false)?;
        assert_eq!(held(), 0x28 * P);
        drop(st.take_all());
        assert_eq!((held(), st.reserved()), (0, 0));
        Ok(())
    }
}
