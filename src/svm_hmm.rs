// SPDX-License-Identifier: GPL-2.0

//! SVM on HMM: the mechanism under shared virtual memory (upstream
//! `kfd_svm.c`'s notifier/mapping half and `kfd_migrate.c`).
//!
//! Per process, [`Svm`] holds the HMM side of its SVM ranges: one
//! `mmu_interval_notifier` per range ([`HmmRange`]), the GPU VMs the ranges
//! are mapped into, and what the workers must do.  The range *attributes*
//! and the SET_ATTR/GET_ATTR algebra are the range bookkeeping's
//! (`svm` module); this module keeps only what the mechanism needs per
//! range (bounds, preferred location, mapping state) and offers the
//! operations SET_ATTR and the GPU use:
//!
//! - [`fault::gpu_fault`]: a retry fault (XNACK on) from a GPU: find or
//!   create the range, migrate to the preferred location, `hmm_range_fault`
//!   over the granule, map; duplicates are filtered; XNACK off or no VMA is
//!   fatal (`EFAULT`, logged);
//! - [`migrate::prefetch`]: PREFETCH_LOC (to a GPU's VRAM, or back to system
//!   memory), [`Svm::set_preferred`]: PREFERRED_LOC;
//! - invalidation ([`Invalidate`]): unmaps from every GPU; `munmap`
//!   removes or shrinks the range in a worker (upstream `deferred_range_list`,
//!   because the callback cannot take the SVM lock); XNACK off: the queues
//!   are quiesced and a restore worker remaps.
//!
//! Lock order (outermost first; docs/design.md has the whole picture):
//!
//!  1. `mmap_lock` (read)
//!  2. [`Svm::ranges`] (upstream `svms->lock`, the process SVM lock)
//!  3. the mmu-notifier invalidation (lockdep's
//!     `mmu_notifier_invalidate_range_start`): `migrate_vma_setup` and
//!     `hmm_range_fault` run callbacks under 2
//!  4. a range's lock (C, `rkfd_svm_range.lock`, upstream `prange->lock`)
//!  5. [`Svm::vms`] (the GPU VM list, for the callbacks)
//!  6. the GPU driver's page-table lock (inside `svm_map` / `svm_unmap`)
//!
//! Nothing at 4–6 allocates with reclaim (`memalloc_noreclaim_save`).
//! `Process::inner` is never taken under 1–6; `migrate_to_ram` takes none
//! of rkfd's locks.

pub(crate) mod fault;
pub(crate) mod migrate;

use kernel::{
    mm::{Mm, MmWithUser},
    new_mutex,
    prelude::*,
    rbtree::{RBTree, RBTreeNode},
    sync::{
        aref::ARef,
        atomic::{Acquire, Atomic, Full, Relaxed, Release},
        Arc, ArcBorrow, Mutex,
    },
};

use crate::{
    device::Device,
    svm::SvmState,
    kabi::{
        hmm::{self, HmmRange, Invalidate, MmRead, VmRef},
        kgd::KgdVm,
        log::kfd_warn,
    },
};

/// The bytes of one page.
pub(crate) const PAGE: u64 = kernel::page::PAGE_SIZE as u64;
/// `KFD_IOCTL_SVM_LOCATION_SYSMEM`.
pub(crate) const LOCATION_SYSMEM: u32 = 0;
/// `KFD_IOCTL_SVM_LOCATION_UNDEFINED`.
pub(crate) const LOCATION_UNDEFINED: u32 = 0xffff_ffff;

/// One GPU's last mapping of a window of a range: valid while no
/// invalidation happened since `seq` (the duplicate-fault filter).
#[derive(Clone, Copy)]
struct Mapped {
    gpu_id: u32,
    start: u64,
    end: u64,
    seq: u64,
    /// Mapped for a write fault (pages writable).
    write: bool,
}

/// The HMM side of one SVM range.
pub(crate) struct Range {
    /// The notifier over `[start, end)`.
    hmm: HmmRange,
    /// PREFERRED_LOC: a `gpu_id`, [`LOCATION_SYSMEM`] or
    /// [`LOCATION_UNDEFINED`].
    preferred: u32,
    /// Whether a GPU mapped (part of) it: the XNACK-off restore worker
    /// remaps those.
    mapped_gpus: KVec<u32>,
    /// The last mapping per GPU (at most a few GPUs).
    last: KVec<Mapped>,
}

impl Range {
    /// The first address.
    pub(crate) fn start(&self) -> u64 {
        self.hmm.start()
    }

    /// The end (exclusive).
    pub(crate) fn end(&self) -> u64 {
        self.hmm.end()
    }
}

/// The ranges of a process, by start address; they never overlap.
pub(crate) struct Ranges {
    tree: RBTree<u64, Range>,
    /// Set by teardown: no new range.
    dead: bool,
}

impl Ranges {
    /// The start of the range containing `addr`.
    fn containing(&self, addr: u64) -> Option<u64> {
        let prev = match self.tree.cursor_lower_bound(&(addr + 1)) {
            Some(c) => c.peek_prev().map(|(k, r)| (*k, r.end())),
            None => self.tree.cursor_back().map(|c| {
                let (k, r) = c.current();
                (*k, r.end())
            }),
        };
        prev.filter(|&(_, end)| addr < end).map(|(k, _)| k)
    }

    /// Whether ranges cover all of `[start, end)`.
    fn covers(&self, start: u64, end: u64) -> bool {
        let mut at = start;
        while at < end {
            match self.containing(at).and_then(|k| self.tree.get(&k)) {
                Some(r) => at = r.end(),
                None => return false,
            }
        }
        true
    }

    /// The free gap around `addr` (not in any range), within `[lo, hi)`:
    /// bounded by the ranges before and after `addr` (two lookups; this
    /// was a walk over every range, which made SET_ATTR cost grow with
    /// the number of ranges).
    fn gap(&self, addr: u64, lo: u64, hi: u64) -> (u64, u64) {
        let (prev_end, next_start) = match self.tree.cursor_lower_bound(&(addr + 1)) {
            Some(c) => (c.peek_prev().map(|(_, r)| r.end()), Some(c.current().1.start())),
            None => (self.tree.cursor_back().map(|c| c.current().1.end()), None),
        };
        (prev_end.map_or(lo, |e| lo.max(e)), next_start.map_or(hi, |s| hi.min(s)))
    }

    /// The keys of the ranges overlapping `[start, end)`, in address
    /// order (one lookup per range).
    fn overlapping(&self, start: u64, end: u64) -> Result<KVec<u64>> {
        let mut keys = KVec::new();
        let mut from = self.containing(start).unwrap_or(start);
        while let Some(c) = self.tree.cursor_lower_bound(&from) {
            let (k, r) = c.current();
            if *k >= end {
                break;
            }
            keys.push(*k, GFP_KERNEL)?;
            from = r.end();
        }
        Ok(keys)
    }
}

/// The HMM side of a process's SVM (upstream `struct svm_range_list`).
#[pin_data]
pub(crate) struct Svm {
    /// The address space (a `mmgrab` reference: identity, and `mmget`).
    mm: ARef<Mm>,
    /// The ranges: the process SVM lock.
    #[pin]
    ranges: Mutex<Ranges>,
    /// The GPU VMs the ranges may be mapped into (for the callbacks, which
    /// cannot take [`Svm::ranges`]).
    #[pin]
    vms: Mutex<KVec<VmRef>>,
    /// Held across [`Svm::run_pending`], so a caller waits for a worker
    /// already running (upstream `flush_work(&svms->deferred_list_work)`).
    /// Outermost: taken with no lock held, `mmap_lock` inside.
    #[pin]
    flush: Mutex<()>,
    /// A `munmap` hit a range: the deferred worker must run.
    unmap_pending: Atomic<bool>,
    /// XNACK off and a mapped range was invalidated: the restore worker
    /// must remap.
    restore_pending: Atomic<bool>,
    /// XNACK off: invalidations that quiesced the queues, and how many of
    /// them the last finished restore covered.  The process is evicted
    /// (its queues quiesced) while they differ (upstream
    /// `svms->evicted_ranges`).
    evictions: Atomic<u64>,
    restored: Atomic<u64>,
    /// The process's XNACK mode, mirrored for the callbacks.
    xnack: Atomic<bool>,
    /// The attribute ranges (`Process::svm`): the `munmap` worker removes
    /// what no VMA covers any more from them too.
    attrs: Arc<Mutex<SvmState>>,
    /// The process, as SMI events name it (its opener creates it).
    owner: crate::smi::Owner,
}

impl Svm {
    /// The SVM state of a new process on `mm`.
    pub(crate) fn new(mm: &Mm, attrs: Arc<Mutex<SvmState>>) -> Result<Arc<Self>> {
        Arc::pin_init(
            try_pin_init!(Svm {
                mm: ARef::from(mm),
                ranges <- new_mutex!(Ranges { tree: RBTree::new(), dead: false }, "Svm::ranges"),
                // Never grown under the lock (invalidation takes it, so
                // nothing may allocate with reclaim while holding it).
                vms <- new_mutex!(KVec::with_capacity(MAX_VMS, GFP_KERNEL)?, "Svm::vms"),
                flush <- new_mutex!((), "Svm::flush"),
                unmap_pending: Atomic::new(false),
                restore_pending: Atomic::new(false),
                evictions: Atomic::new(0),
                restored: Atomic::new(0),
                xnack: Atomic::new(false),
                attrs,
                owner: crate::smi::Owner::current(),
            }),
            GFP_KERNEL,
        )
    }

    /// Mirrors the process's XNACK mode (SET_XNACK_MODE).
    pub(crate) fn set_xnack(&self, on: bool) {
        self.xnack.store(on, Relaxed);
    }

    /// A VM the process acquired (`ACQUIRE_VM`): SVM ranges may now be
    /// mapped into it.
    ///
    /// # Safety
    ///
    /// [`Svm::teardown`] runs before `vm` is released (`Process::teardown`
    /// does so).
    pub(crate) unsafe fn add_vm(&self, dev: &Arc<Device>, vm: &KgdVm) -> Result {
        if self.ranges.lock().dead {
            return Err(ESRCH);
        }
        // SAFETY: The caller's contract: teardown drops the copy first.
        let r = unsafe { VmRef::new(dev, vm) };
        self.vms.lock().push_within_capacity(r).map_err(|_| ENOSPC)?;
        Ok(())
    }

    /// Whether the raw VM handle a GPU driver passed back is one of ours.
    pub(crate) fn has_vm(&self, raw: *const core::ffi::c_void) -> bool {
        self.vms.lock().iter().any(|v| v.is(raw))
    }

    /// PREFERRED_LOC of `[start, end)`: faults in it migrate there first.
    /// Ranges are created for the parts inside VMAs that have none.
    pub(crate) fn set_preferred(self: &Arc<Self>, start: u64, end: u64, loc: u32) -> Result {
        let mm = self.mm.mmget_not_zero().ok_or(ESRCH)?;
        let (_guard, mut ranges) = self.lock_covered(&mm, start, end)?;
        for r in ranges.tree.values_mut() {
            if r.start() < end && start < r.end() {
                r.preferred = loc;
            }
        }
        Ok(())
    }

    /// Makes sure ranges (so MMU interval notifiers) cover `[start, end)`,
    /// so that a CPU `munmap` of it reaches the worker (SET_ATTR; upstream
    /// gives every range a notifier).
    pub(crate) fn track(self: &Arc<Self>, start: u64, end: u64) -> Result {
        let mm = self.mm.mmget_not_zero().ok_or(ESRCH)?;
        let (guard, ranges) = self.lock_covered(&mm, start, end)?;
        drop(ranges);
        drop(guard);
        Ok(())
    }

    /// Takes `mmap_lock` (read) and the ranges lock with `[start, end)`
    /// covered by ranges, creating the missing ones first under the write
    /// lock (then downgraded), as upstream creates ranges.
    fn lock_covered<'a>(
        self: &'a Arc<Self>,
        mm: &'a MmWithUser,
        start: u64,
        end: u64,
    ) -> Result<(MmRead<'a>, kernel::sync::MutexGuard<'a, Ranges>)> {
        let guard = MmRead::new(mm);
        let ranges = self.ranges.lock();
        if ranges.dead {
            return Err(ESRCH);
        }
        if ranges.covers(start, end) {
            return Ok((guard, ranges));
        }
        drop(ranges);
        drop(guard);
        let mut guard = MmRead::new_write(mm);
        let mut ranges = self.ranges.lock();
        self.cover(&guard, &mut ranges, start, end)?;
        guard.downgrade();
        Ok((guard, ranges))
    }

    /// Creates ranges for the parts of `[start, end)` that lie inside VMAs
    /// usable by SVM and have no range yet (upstream `svm_range_add`), with
    /// `mmap_lock` held for writing.  `EFAULT` if a part has no VMA or an
    /// unusable one.
    fn cover(self: &Arc<Self>, guard: &MmRead<'_>, ranges: &mut Ranges, start: u64, end: u64) -> Result {
        if ranges.dead {
            return Err(ESRCH);
        }
        let mut at = start;
        while at < end {
            if let Some(k) = ranges.containing(at) {
                at = ranges.tree.get(&k).map_or(end, |r| r.end());
                continue;
            }
            let (vs, ve) = guard.usable_vma(at)?;
            let (gs, ge) = ranges.gap(at, vs, ve.min(end));
            self.insert(guard, ranges, gs.max(at), ge)?;
            at = ge;
        }
        Ok(())
    }

    /// Registers a range over `[start, end)` (free, inside one VMA); needs
    /// `mmap_lock` for writing.
    fn insert(self: &Arc<Self>, mm: &MmRead<'_>, ranges: &mut Ranges, start: u64, end: u64) -> Result {
        // SAFETY: The `Arc` outlives the range: ranges live in
        // `self.ranges` and are dropped by `teardown` or the workers while
        // the `Svm` is alive.
        let hmm = unsafe { HmmRange::new(mm, start, end, Arc::as_ptr(self))? };
        let range = Range {
            hmm,
            preferred: LOCATION_UNDEFINED,
            mapped_gpus: KVec::new(),
            last: KVec::new(),
        };
        let node = RBTreeNode::new(start, range, GFP_KERNEL)?;
        ranges.tree.insert(node);
        Ok(())
    }

    /// Calls `f(start, end, preferred, mapped_gpus)` for each range, in
    /// address order, under [`Svm::ranges`] alone (debugfs `svm_ranges`;
    /// `f` must take no lock).
    pub(crate) fn for_each_range(&self, mut f: impl FnMut(u64, u64, u32, &[u32]) -> core::fmt::Result) -> core::fmt::Result {
        let ranges = self.ranges.lock();
        for r in ranges.tree.values() {
            f(r.start(), r.end(), r.preferred, &r.mapped_gpus)?;
        }
        Ok(())
    }

    /// Where the pages of each `[start, end)` of `spans` are now (the
    /// debugfs dump's `actual_loc`, upstream `prange->actual_loc`), read
    /// from the CPU page table under `mmap_lock` (read) and
    /// [`Svm::ranges`]; faults nothing in.  Parts without an HMM range
    /// never migrated, so count as system memory.
    pub(crate) fn actual_locations(&self, spans: &[(u64, u64)]) -> Result<KVec<ActualLoc>> {
        let mut out = KVec::with_capacity(spans.len(), GFP_KERNEL)?;
        let Some(mm) = self.mm.mmget_not_zero() else {
            for _ in spans {
                out.push(ActualLoc::Unknown, GFP_KERNEL)?;
            }
            return Ok(out);
        };
        let devs = self.devices();
        let guard = MmRead::new(&mm);
        let ranges = self.ranges.lock();
        for &(start, end) in spans {
            let mut vram: Option<u32> = None;
            let (mut several, mut ram, mut failed) = (false, false, false);
            let mut at = start;
            while at < end {
                let Some(r) = ranges.containing(at).and_then(|k| ranges.tree.get(&k)) else {
                    // Up to the next range (or the end).
                    at = ranges.tree.cursor_lower_bound(&at).map_or(end, |c| *c.current().0).min(end);
                    continue;
                };
                let seg_end = r.end().min(end);
                for d in devs.iter() {
                    let Some(sdev) = d.svm.as_ref() else { continue };
                    match r.hmm.locate(&guard, sdev, at, seg_end) {
                        Ok((dev_pages, ram_pages)) => {
                            ram |= ram_pages != 0;
                            if dev_pages != 0 {
                                several |= vram.is_some_and(|g| g != d.gpu_id());
                                vram = Some(d.gpu_id());
                            }
                        }
                        Err(_) => failed = true,
                    }
                }
                at = seg_end;
            }
            let loc = match vram {
                _ if failed => ActualLoc::Unknown,
                None => ActualLoc::System,
                Some(_) if several || ram => ActualLoc::Mixed,
                Some(g) => ActualLoc::Gpu(g),
            };
            out.push(loc, GFP_KERNEL)?;
        }
        Ok(out)
    }

    /// Unmaps `[start, end)` from GPU `gpu_id` (SET_ATTR NO_ACCESS, or
    /// ACCESS removed), under each range's lock.
    pub(crate) fn unmap_gpu(&self, gpu_id: u32, start: u64, end: u64) -> Result {
        let ranges = self.ranges.lock();
        let vm = self.vm_of(gpu_id)?;
        let sdev = vm.dev().svm.as_ref().ok_or(EINVAL)?;
        for k in ranges.overlapping(start, end)? {
            if let Some(r) = ranges.tree.get(&k) {
                r.hmm.unmap(sdev, &vm, r.start().max(start), r.end().min(end));
                crate::smi::unmap_from_gpu(&self.owner, gpu_id, r.start().max(start), r.end().min(end), crate::smi::SVM_UNMAP_TRIGGER_UNMAP_FROM_CPU);
            }
        }
        Ok(())
    }

    /// Gives everything back: device pages return to system memory while
    /// the mm lives (else device teardown would wait for them), notifiers
    /// are removed, then the VM copies are dropped, so the process may
    /// release its VMs.  Idempotent.  Called without `Process::inner`.
    pub(crate) fn teardown(&self) {
        // Put asynchronously: teardown may run in the mm notifier's
        // `release`, inside its SRCU read section, and the last `mmput`
        // would run `exit_mmap`, which waits for that SRCU (a deadlock
        // kfd-storm hit: the file closed at exit while a worker held the
        // mm).
        let mm = self.mm.mmget_not_zero().map(MmWithUser::into_mmput_async);
        let guard = mm.as_ref().map(|m| MmRead::new(m));
        let old = {
            let mut ranges = self.ranges.lock();
            ranges.dead = true;
            if let Some(g) = guard.as_ref() {
                let devs = self.devices();
                for r in ranges.tree.values() {
                    for d in devs.iter() {
                        if let Some(sdev) = d.svm.as_ref() {
                            let _ = sdev.migrate_to_ram(g, r.start(), r.end());
                        }
                    }
                }
            }
            core::mem::replace(&mut ranges.tree, RBTree::new())
        };
        drop(guard);
        // Removing the notifiers waits for their callbacks (which take
        // `vms`), so before `vms` is cleared.
        drop(old);
        // The copies go outside the lock (the last device reference may
        // drop with them); the process is dead, so no VM is added again.
        let vms = core::mem::replace(&mut *self.vms.lock(), KVec::new());
        drop(vms);
        drop(mm);
    }

    /// Whether a VM of a GPU other than `gpu_id` is acquired (so another
    /// VRAM may hold pages); no allocation.
    fn vms_on_other_devices(&self, gpu_id: u32) -> bool {
        self.vms.lock().iter().any(|v| v.dev().gpu_id() != gpu_id)
    }

    /// The devices of the acquired VMs.
    fn devices(&self) -> KVec<Arc<Device>> {
        // Allocated outside `vms` (see `Svm::vms`); the list only grows up
        // to its capacity, so `MAX_VMS` entries always fit.
        let mut out = KVec::with_capacity(MAX_VMS, GFP_KERNEL).unwrap_or_default();
        let vms = self.vms.lock();
        for v in vms.iter() {
            if !out.iter().any(|d: &Arc<Device>| Arc::ptr_eq(d, v.dev())) {
                // Only fails if the allocation above did (then: best effort).
                let _ = out.push_within_capacity(v.dev().clone());
            }
        }
        out
    }

    /// Runs the deferred `munmap` processing and the XNACK-off restore if
    /// pending (upstream `svm_range_deferred_list_work`,
    /// `svm_range_restore_work`), or waits for a worker doing so.  Called
    /// from the workers and before SVM operations (SET_ATTR and GET_ATTR
    /// too, as upstream flushes the deferred work there), with no lock
    /// held.
    pub(crate) fn run_pending(self: &Arc<Self>) {
        let _flush = self.flush.lock();
        let unmap = self.unmap_pending.xchg(false, Relaxed);
        let restore = self.restore_pending.xchg(false, Relaxed);
        if !unmap && !restore {
            return;
        }
        let Some(mm) = self.mm.mmget_not_zero() else {
            return;
        };
        // Splitting creates ranges: the write lock, then read for the rest.
        let mut guard = if unmap { MmRead::new_write(&mm) } else { MmRead::new(&mm) };
        if unmap {
            // The attribute ranges first, under `mmap_lock` alone (their
            // lock is never nested with `Svm::ranges`).
            self.attrs.lock().prune_unmapped(&guard);
        }
        let mut ranges = self.ranges.lock();
        if ranges.dead {
            return;
        }
        let mut restore = restore;
        if unmap {
            // XNACK off: the split ranges lost their GPU mappings.
            restore |= self.drop_unmapped(&guard, &mut ranges);
            guard.downgrade();
        }
        if restore {
            self.restore(&guard, &mut ranges);
        }
    }

    /// Removes the parts of ranges that no VMA covers any more (`munmap`
    /// of all or part of a range; upstream `svm_range_unmap_from_cpu` +
    /// the deferred worker): such a range is removed and its still-mapped
    /// parts get new ranges (a split).  The callback unmapped the
    /// munmapped part from the GPUs; the rest is unmapped here; the
    /// notifiers go now, outside any callback.  Returns whether the new
    /// ranges need the XNACK-off restore.
    fn drop_unmapped(self: &Arc<Self>, guard: &MmRead<'_>, ranges: &mut Ranges) -> bool {
        let mut stale = KVec::new();
        for (k, r) in ranges.tree.iter() {
            let mut at = r.start();
            while at < r.end() {
                match guard.usable_vma(at) {
                    Ok((_, ve)) => at = ve,
                    Err(_) => break,
                }
            }
            if at < r.end() && stale.push((*k, r.end(), r.preferred), GFP_KERNEL).is_err() {
                break;
            }
        }
        let mut remap = false;
        let xnack_off = !self.xnack.load(Relaxed);
        for (start, end, preferred) in stale {
            // Nothing of the old range stays mapped on a GPU: between its
            // notifier's removal and the new ranges' insertion no
            // invalidation is seen (a CPU fault under the VMA lock alone
            // can migrate a page then), so a mapping kept across would go
            // stale.  XNACK on: the next access faults it back; XNACK off:
            // the new ranges are remapped below, as after an invalidation,
            // the process quiesced meanwhile.
            if xnack_off && ranges.tree.get(&start).is_some_and(|r| !r.mapped_gpus.is_empty()) {
                queues_quiesce(self);
            }
            for vm in self.vms.lock().iter() {
                vm.unmap(start, end);
            }
            // The old range (and its notifier) goes; its GPUs carry over.
            let gpus = ranges.tree.remove(&start).map_or_else(KVec::new, |old| old.mapped_gpus);
            let mut at = start;
            while at < end {
                match guard.usable_vma(at) {
                    Ok((vs, ve)) => {
                        let (s, e) = (vs.max(at), ve.min(end));
                        if self.insert(guard, ranges, s, e).is_ok() {
                            if let Some(r) = ranges.tree.get_mut(&s) {
                                r.preferred = preferred;
                                for g in gpus.iter() {
                                    if r.mapped_gpus.push(*g, GFP_KERNEL).is_ok() {
                                        remap = true;
                                    }
                                }
                            }
                        }
                        at = e;
                    }
                    Err(_) => at = next_vma_start(guard, at, end),
                }
            }
        }
        remap && xnack_off
    }

    /// XNACK off: remaps every range some GPU had mapped (the queues were
    /// quiesced by the invalidation), then resumes the queues.
    fn restore(&self, guard: &MmRead<'_>, ranges: &mut Ranges) {
        // What this restore covers: the invalidations so far (a later one
        // sets `restore_pending` again and keeps the process evicted).
        let covered = self.evictions.load(Acquire);
        for r in ranges.tree.values_mut() {
            let gpus = core::mem::replace(&mut r.mapped_gpus, KVec::new());
            for gpu_id in gpus.iter() {
                let (s, e) = (r.start(), r.end());
                let res = match self.map_range_on(guard, r, *gpu_id, s, e, true) {
                    Err(err) if err == EPERM || err == EFAULT => self.map_range_on(guard, r, *gpu_id, s, e, false),
                    other => other,
                };
                if let Err(e) = res {
                    kfd_warn!("SVM restore of {:#x}..{:#x} on GPU {} failed: {:?}\n", r.start(), r.end(), gpu_id, e);
                }
            }
        }
        queues_resume(self, covered);
    }

    /// XNACK off: whether an invalidation quiesced the process and no
    /// restore has remapped since.
    pub(crate) fn evicted(&self) -> bool {
        self.evictions.load(Acquire) != self.restored.load(Acquire)
    }

    /// A copy of the VM handle of GPU `gpu_id`.  Copies are used under
    /// [`Svm::ranges`] only, which `teardown` takes before dropping the VMs.
    fn vm_of(&self, gpu_id: u32) -> Result<VmRef> {
        let vms = self.vms.lock();
        let vm = vms.iter().find(|v| v.dev().gpu_id() == gpu_id).ok_or(ENODEV)?;
        Ok(vm.clone())
    }

    /// Maps `[start, end)` of `r` on GPU `gpu_id` (hmm_range_fault + map,
    /// retried on racing invalidations; `EAGAIN` if they keep racing).
    fn map_range_on(
        &self,
        guard: &MmRead<'_>,
        r: &mut Range,
        gpu_id: u32,
        start: u64,
        end: u64,
        write: bool,
    ) -> Result {
        // Not under `vms`: the callbacks take it inside the range's lock.
        let vm = self.vm_of(gpu_id)?;
        let sdev = vm.dev().svm.as_ref().ok_or(EOPNOTSUPP)?;
        let mut seq = Err(EBUSY);
        for _ in 0..MAP_TRIES {
            seq = r.hmm.map(guard, sdev, &vm, start, end, write);
            match seq {
                Err(e) if e == EBUSY => continue,
                // A read-only device page and a write: back to system memory
                // (its CPU fault breaks copy-on-write), then map again.
                Err(e) if e == EXDEV => {
                    for dev in self.devices().iter() {
                        if let Some(s) = dev.svm.as_ref() {
                            s.migrate_to_ram(guard, start, end)?;
                        }
                    }
                }
                _ => break,
            }
        }
        let seq = seq.map_err(|e| if e == EBUSY { EAGAIN } else { e })?;
        if !r.mapped_gpus.contains(&gpu_id) {
            r.mapped_gpus.push(gpu_id, GFP_KERNEL)?;
        }
        let m = Mapped { gpu_id, start, end, seq, write };
        match r.last.iter_mut().find(|l| l.gpu_id == gpu_id) {
            Some(l) => *l = m,
            None => r.last.push(m, GFP_KERNEL)?,
        }
        Ok(())
    }

    /// XNACK off: whether GPU `gpu_id` has `addr` mapped (for `write`) by
    /// a mapping no invalidation has touched since.  An engine that found
    /// a PTE missing while the process was evicted reports the fault
    /// later; if the restore worker remapped and resumed the queues in
    /// between, the fault is stale: it is retried, not fatal (issue #16
    /// defect 4; upstream filters stale faults too,
    /// `svm_range_skip_recover`).
    pub(crate) fn mapped_now(&self, gpu_id: u32, addr: u64, write: bool) -> bool {
        let ranges = self.ranges.lock();
        ranges.containing(addr).and_then(|k| ranges.tree.get(&k)).is_some_and(|r| Self::still_mapped(r, gpu_id, addr, write))
    }

    /// Whether GPU `gpu_id`'s last mapping of `r` covers `addr` and no
    /// invalidation happened since: a duplicate fault (upstream filters
    /// them with `svm_range_skip_recover` and fault timestamps).
    fn still_mapped(r: &Range, gpu_id: u32, addr: u64, write: bool) -> bool {
        r.last.iter().any(|l| {
            l.gpu_id == gpu_id
                && (l.start..l.end).contains(&addr)
                && (l.write || !write)
                && r.hmm.seq_valid(l.seq)
        })
    }

    /// Queues the workers if something is pending.
    fn kick(self: &Arc<Self>) {
        if let Some(wq) = hmm::wq() {
            let me = self.clone();
            // A failed spawn leaves the work to the next SVM operation.
            let _ = wq.try_spawn(GFP_ATOMIC, move || me.run_pending());
        }
    }
}

/// Where a range's pages are ([`Svm::actual_locations`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ActualLoc {
    /// None in VRAM (upstream `actual_loc` 0).
    System,
    /// All present pages in this GPU's VRAM.
    Gpu(u32),
    /// Some in a GPU's VRAM and some in system memory or another VRAM.
    Mixed,
    /// The page table could not be read (the mm is gone, or it raced).
    Unknown,
}

/// The most GPU VMs of one process (upstream `MAX_GPU_INSTANCE`).
const MAX_VMS: usize = 64;

/// How often a mapping is retried when invalidations race with it.
const MAP_TRIES: u32 = 16;

/// The next address after `addr` (below `end`) that a VMA covers, or `end`.
fn next_vma_start(guard: &MmRead<'_>, addr: u64, end: u64) -> u64 {
    let mut at = addr + PAGE;
    while at < end {
        if guard.has_vma(at) {
            return at;
        }
        at += PAGE;
    }
    end
}

/// XNACK off: the process's queues must not run through the mappings an
/// invalidation is removing (upstream `svm_range_evict` →
/// `kgd2kfd_quiesce_mm`, which preempts them).  rkfd does not preempt from
/// the notifier callback (that would wait for the GPU driver's engines
/// inside reclaim); it marks the process evicted instead, and while it is,
/// a GPU access that finds no PTE is answered "retry later" (`EAGAIN`,
/// see `fault::gpu_fault`): the queue stalls on that access rather than
/// taking a fatal fault, and continues once the restore worker remapped.
fn queues_quiesce(svm: &Svm) {
    let before = svm.evictions.fetch_add(1, Full);
    crate::smi::svm_evicted(&svm.owner, before, svm.restored.load(Acquire), svm.vms.lock().iter().map(|v| v.dev().gpu_id()));
}

/// XNACK off: the restore worker remapped what the invalidations up to
/// `covered` removed; the queues go on (`kgd2kfd_resume_mm`).
fn queues_resume(svm: &Svm, covered: u64) {
    svm.restored.store(covered, Release);
    crate::smi::svm_restored(&svm.owner, svm.evictions.load(Acquire), covered, svm.vms.lock().iter().map(|v| v.dev().gpu_id()));
}

impl Invalidate for Svm {
    fn invalidate(this: ArcBorrow<'_, Self>, _range_start: u64, start: u64, end: u64, unmap: bool, migrate: bool) {
        // XNACK off, the memory stays: the process is evicted *before* its
        // PTEs go (upstream `svm_range_evict` quiesces first), so a GPU
        // access that finds no PTE finds the process evicted and waits for
        // the restore.  The other order let an SDMA copy hit the gap and
        // take a fatal VM fault (issue #16 defect 4: `kfd-svm-hmm-tests
        // sdma_copy_into_svm_xnack_off_migrating`, 3 of 5 runs).
        let quiesce = !unmap && !this.xnack.load(Relaxed);
        if quiesce {
            queues_quiesce(&this);
        }
        // Under the range's lock: unmap from every GPU (upstream
        // `svm_range_unmap_from_gpus`); the next GPU access faults (XNACK
        // on) or the restore worker remaps (XNACK off).
        for vm in this.vms.lock().iter() {
            vm.unmap(start, end);
            crate::smi::svm_invalidated(&this.owner, vm.dev().gpu_id(), start, end, unmap, migrate, this.xnack.load(Relaxed));
        }
        let kick = if unmap {
            // The range is removed or split by the worker: the callback
            // cannot take the ranges lock.
            !this.unmap_pending.xchg(true, Relaxed)
        } else if quiesce {
            !this.restore_pending.xchg(true, Relaxed)
        } else {
            false
        };
        if kick {
            let arc: Arc<Svm> = this.into();
            arc.kick();
        }
    }
}
