// SPDX-License-Identifier: GPL-2.0

//! The interval notifiers' side: the invalidate callback (upstream
//! `svm_range_cpu_invalidate_pagetables`), unmapping from GPUs
//! (`svm_range_unmap_from_gpus`), the deferred `munmap` work
//! (`svm_range_unmap_from_cpu` + `svm_range_deferred_list_work`) and the
//! XNACK-off restore (`svm_range_restore_work`).
//!
//! The callback runs under a range's notifier lock, possibly in reclaim:
//! it cannot take [`Svms::list`] (which allocates under it).  So it unmaps
//! from every GPU and, for a `munmap`, only flags the process; the worker
//! (or the next SVM operation, which runs pending work first) removes what
//! no VMA covers any more.  XNACK off: an invalidation of a mapped range
//! marks the process evicted and the restore remaps.
//!
//! # XNACK off: queue eviction, and how it differs from upstream
//!
//! Upstream's callback (`svm_range_evict`) calls `kgd2kfd_quiesce_mm`,
//! which preempts the process's queues before the PTEs go, and
//! `svm_range_restore_work` calls `kgd2kfd_resume_mm` after remapping.
//! rkfd's callback may run in reclaim and under a range's notifier lock,
//! where the scheduler's locks cannot be taken (they allocate, and a
//! preemption waits for the GPU driver's engines); so the callback only
//! counts the eviction ([`Svms::evicted`]: a GPU access that finds no PTE
//! meanwhile is answered "retry later" and the queue stalls on it, which
//! keeps it correct), and the restore worker ([`Svms::run_worker`])
//! evicts the queues (`crate::queue::evict_process`: preempted, or taken
//! off the runlist or the MES) before it remaps and restores them
//! (`crate::queue::restore_process`) after, each with no SVM lock held
//! (`Process::inner` is above them in the lock order).  The SMI
//! `QUEUE_EVICTION` / `QUEUE_RESTORE` events come with those two calls.
//! A restore run by GET_ATTR's flush rather than the worker remaps
//! without evicting the queues (the stall covers it).

use kernel::{
    prelude::*,
    sync::{
        atomic::{Acquire, Full, Relaxed, Release},
        Arc, ArcBorrow,
    },
};

use super::{
    logic::{attr::PAGE_SHIFT, ranges::Span},
    migrate::MigrateTrigger,
    range::{bytes, RangeList, Reshape},
    Svms,
};
use crate::kabi::{
    hmm::{Invalidate, MmRead},
    log::kfd_warn,
};

impl Svms {
    /// Unmaps `[start, end)` from every GPU (upstream
    /// `svm_range_unmap_from_gpus`); from the callback, under the range's
    /// notifier lock.  SMI: `UNMAP_FROM_GPU` per GPU with the trigger of
    /// the invalidation (`unmap`: `munmap`; `migrate`:
    /// `MMU_NOTIFY_MIGRATE`), none with XNACK off but for a `munmap`.
    fn unmap_from_gpus(&self, start: u64, end: u64, unmap: bool, migrate: bool) {
        let xnack = self.xnack.load(Relaxed);
        for vm in self.vms.lock().iter() {
            vm.unmap(start, end);
            crate::smi::svm_invalidated(&self.owner, vm.dev().gpu_id(), start, end, unmap, migrate, xnack);
        }
    }

    /// Unmaps `[start, end)` from GPU `gpu_id` (SET_ATTR NO_ACCESS, or
    /// ACCESS removed), under each range's notifier lock.  `ENODEV`: no VM
    /// on that GPU; `EINVAL`: it has no device-private VRAM.
    pub(crate) fn unmap_from_gpu(&self, list: &RangeList, gpu_id: u32, start: u64, end: u64) -> Result {
        let (_, vm) = self.vm_of(gpu_id)?;
        let pagemap = vm.dev().vram_pagemap.as_ref().ok_or(EINVAL)?;
        let last = end.saturating_sub(1) >> PAGE_SHIFT;
        for r in list.tree.iter_overlapping(start >> PAGE_SHIFT, last) {
            let (s, e) = bytes(r);
            let (s, e) = (s.max(start), e.min(end));
            if let Some(n) = r.payload.notifier.as_ref() {
                n.unmap(pagemap, vm.kgd_vm(), s, e);
            }
            // SMI: one `UNMAP_FROM_GPU` per range, as upstream
            // `svm_range_unmap_from_gpus` per prange (trigger
            // UNMAP_FROM_CPU, as upstream's NO_ACCESS path).
            crate::smi::unmap_from_gpu(&self.owner, gpu_id, s, e, crate::smi::SVM_UNMAP_TRIGGER_UNMAP_FROM_CPU);
        }
        Ok(())
    }

    /// The SVM worker [`Svms::kick`] queues: [`Svms::run_pending`], with
    /// the process's queues evicted around an XNACK-off restore (upstream
    /// `kgd2kfd_quiesce_mm` from `svm_range_evict`, `kgd2kfd_resume_mm`
    /// from `svm_range_restore_work`; here both from the worker, see the
    /// module doc).  Runs with no lock held: the eviction takes
    /// `Process::inner` and the scheduler's locks before the SVM locks are
    /// taken and after they are dropped.
    pub(crate) fn run_worker(self: &Arc<Self>) {
        let process = if self.restore_pending.load(Relaxed) {
            crate::process::find_by_svms(self)
        } else {
            None
        };
        if let Some(p) = process.as_ref() {
            // Evicted even if a preemption failed (the queue is off the
            // scheduler then too); the restore below ends it in any case.
            if let Err(e) = crate::queue::evict_process(p, &self.owner, crate::smi::QUEUE_EVICTION_TRIGGER_SVM) {
                kfd_warn!("svm: evicting the queues of pid {} failed: {:?}\n", p.pid(), e);
            }
        }
        self.run_pending();
        if let Some(p) = process {
            if let Err(e) = crate::queue::restore_process(&p, &self.owner) {
                kfd_warn!("svm: restoring the queues of pid {} failed: {:?}\n", p.pid(), e);
            }
        }
    }

    /// Runs the deferred `munmap` processing and the XNACK-off restore if
    /// pending (upstream `svm_range_deferred_list_work`,
    /// `svm_range_restore_work`), or waits for a worker doing so.  Called
    /// from the workers and before SVM operations, with no lock held.
    pub(crate) fn run_pending(self: &Arc<Self>) {
        let _flush = self.flush.lock();
        let unmap = self.unmap_pending.load(Relaxed);
        let restore = self.restore_pending.xchg(false, Relaxed);
        if !unmap && !restore {
            return;
        }
        let Some(mm) = self.mm_user() else {
            return;
        };
        // Removing ranges reshapes them: the write lock, then read for the
        // rest.
        let mut guard = if unmap { MmRead::new_write(&mm) } else { MmRead::new(&mm) };
        let mut list = self.list.lock();
        if list.dead {
            return;
        }
        if unmap {
            // A failure leaves the flag set: the next SVM operation or
            // worker tries again.
            let _ = self.process_unmaps(&guard, &mut list);
            guard.downgrade();
        }
        if restore {
            self.restore(&guard, &mut list);
        }
    }

    /// The deferred `munmap` work with the locks held (`mmap_lock` for
    /// writing): clears the pending flag and removes what no VMA covers.
    /// On failure (out of memory) the flag is set again and the ranges
    /// stay consistent: the holes removed so far are gone, the others are
    /// whole ranges still (their notifiers see nothing any more).
    pub(crate) fn process_unmaps(self: &Arc<Self>, guard: &MmRead<'_>, list: &mut RangeList) -> Result {
        if !self.unmap_pending.xchg(false, Relaxed) {
            return Ok(());
        }
        let r = self.remove_unmapped(guard, list);
        if let Err(e) = r {
            self.unmap_pending.store(true, Relaxed);
            kfd_warn!("svm: removing unmapped ranges failed ({:?}), retried later\n", e);
        }
        r
    }

    /// Removes the parts of ranges that no VMA covers any more (upstream
    /// `svm_range_unmap_from_cpu`: a range inside the hole goes, one
    /// partly inside is cut, keeping its attributes, mapping and a new
    /// notifier over what is left).  The callback unmapped the hole from
    /// the GPUs.
    fn remove_unmapped(self: &Arc<Self>, guard: &MmRead<'_>, list: &mut RangeList) -> Result {
        let mut holes = KVec::new();
        for r in list.tree.iter() {
            let (start, end) = bytes(r);
            let mut pushed = Ok(());
            guard.for_each_hole(start, end, |s, e| {
                if pushed.is_ok() {
                    pushed = holes.push(Span::new(s >> PAGE_SHIFT, (e >> PAGE_SHIFT) - 1), GFP_KERNEL);
                }
            });
            pushed?;
        }
        for h in holes {
            let reshape = Reshape::new(self, list.tree.remove_reshaped(h))?;
            let mut removed = 0u64;
            // The removed pieces drop here, their notifiers with them (the
            // kept pieces keep their old ones until `finish`).
            list.tree.remove(h, |r| removed += r.last - r.start + 1).map_err(super::err)?;
            list.tree.store_mut().trim();
            list.unreserve(removed << PAGE_SHIFT);
            reshape.finish(guard, &mut list.tree, h.start.saturating_sub(1), h.last.saturating_add(1));
        }
        Ok(())
    }

    /// XNACK off: remaps every range some GPU had mapped (the worker
    /// evicted the queues first, [`Svms::run_worker`]), then ends the
    /// "retry later" state.
    fn restore(&self, guard: &MmRead<'_>, list: &mut RangeList) {
        // What this restore covers: the invalidations so far (a later one
        // sets `restore_pending` again and keeps the process evicted).
        let covered = self.evictions.load(Acquire);
        let mut pos = 0;
        while let Some(key) = list.next_key(pos, u64::MAX - 1) {
            if let Some(r) = list.tree.find_mut(key) {
                let slots = core::mem::replace(&mut r.payload.mapped_on, 0);
                let (start, end) = bytes(r);
                for slot in (0..u64::BITS as usize).filter(|i| slots & (1u64 << i) != 0) {
                    let Some(vm) = self.vm_in_slot(slot) else { continue };
                    let gpu_id = vm.dev().gpu_id();
                    if let Err(e) = self.map_vmas(guard, r, gpu_id, start, end, MigrateTrigger::Restore) {
                        kfd_warn!("SVM restore of {:#x}..{:#x} on GPU {} failed: {:?}\n", start, end, gpu_id, e);
                    }
                }
            }
            if key >= u64::MAX - 1 {
                break;
            }
            pos = key + 1;
        }
        queues_resume(self, covered);
    }
}

/// XNACK off: the process's queues must not run through the mappings an
/// invalidation is removing (upstream `svm_range_evict` ->
/// `kgd2kfd_quiesce_mm`, which preempts them).  rkfd does not preempt from
/// the notifier callback (that would wait for the GPU driver's engines
/// inside reclaim); it marks the process evicted instead, and while it is,
/// a GPU access that finds no PTE is answered "retry later" (`EAGAIN`,
/// see `fault::gpu_fault`): the queue stalls on that access rather than
/// taking a fatal fault, until the restore worker has evicted the queues,
/// remapped and restored them ([`Svms::run_worker`]).
fn queues_quiesce(svms: &Svms) {
    svms.evictions.fetch_add(1, Full);
}

/// XNACK off: the restore remapped what the invalidations up to `covered`
/// removed; GPU accesses are no longer answered "retry later" (the
/// worker restores the queues after this, `kgd2kfd_resume_mm`).
fn queues_resume(svms: &Svms, covered: u64) {
    svms.restored.store(covered, Release);
}

impl Invalidate for Svms {
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
        // Under the range's lock: unmap from every GPU; the next GPU access
        // faults (XNACK on) or the restore remaps (XNACK off).
        this.unmap_from_gpus(start, end, unmap, migrate);
        let kick = if unmap {
            // The range is removed or cut by the worker: the callback
            // cannot take the list lock.
            !this.unmap_pending.xchg(true, Relaxed)
        } else if quiesce {
            !this.restore_pending.xchg(true, Relaxed)
        } else {
            false
        };
        if kick {
            let arc: Arc<Svms> = this.into();
            arc.kick();
        }
    }
}
