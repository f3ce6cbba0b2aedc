// SPDX-License-Identifier: GPL-2.0

//! GPU retry faults (XNACK on): upstream `svm_range_restore_pages`.
//!
//! The GPU driver calls `kgd2kfd_svm_fault` when an access finds no valid
//! PTE; [`gpu_fault`] is the entry and its return the exit.  The handler
//! finds the process by the VM's PASID on that device (the GPU driver's,
//! `ProcessDevice::pasid`; upstream `kfd_lookup_process_by_pasid`) and
//! checks the VM is one of its own,
//! finds or creates the range (a granule-aligned window inside the VMA for
//! an unregistered address, as upstream
//! `svm_range_create_unregistered_range`), filters duplicates, migrates the
//! window to the best location, runs `hmm_range_fault` over it and maps
//! it.  XNACK off, no VMA or an unusable VMA: a fatal fault (`EFAULT`,
//! logged), never an oops.

use kernel::{
    prelude::*,
    sync::{
        atomic::{Acquire, Full, Relaxed},
        Arc,
    },
};

use super::{
    logic::{attr::MAX_GPU_INSTANCE, place::fault_window, ranges::Span},
    migrate::{MigrateTrigger, Report},
    range::Reshape,
    Svms, PAGE,
};
use crate::{
    device::Device,
    kabi::{
        hmm::{MmRead, VmId},
        log::kfd_err,
    },
    process::{find_by_pasid, Process},
    procfs::ProcCounters,
};

/// The process whose VM on `dev` has PASID `pasid` (upstream
/// `kfd_lookup_process_by_pasid`), if the VM `vm` is one of its VMs (a stale fault from a VM released
/// since, or a PASID reused, finds nothing).
fn process_of(dev: &Device, pasid: u32, vm: VmId) -> Option<Arc<Process>> {
    find_by_pasid(dev.gpu_id(), pasid).filter(|p| p.svms.has_vm(vm))
}

/// `kgd2kfd_svm_fault`: a retry fault of `dev` in VM `vm` of PASID `pasid`
/// (upstream `svm_range_restore_pages`: page-fault start here, end at the
/// return).
pub(crate) fn gpu_fault(dev: &Device, pasid: u32, vm: VmId, addr: u64, write: bool) -> Result {
    let Some(process) = process_of(dev, pasid, vm) else {
        kfd_err!("GPU {} fault at {:#x}: no process with pasid {} owns the VM\n", dev.gpu_id(), addr, pasid);
        return Err(EFAULT);
    };
    let (xnack, counters, gpu_idx, supported) = {
        let inner = process.inner.lock();
        let xnack = inner.xnack_enabled;
        let gpu_idx = inner.pdds.iter().position(|p| p.dev.gpu_id() == dev.gpu_id()).ok_or(EINVAL)?;
        // `svms->bitmap_supported`: the SVM-capable devices by index.
        let supported = inner
            .pdds
            .iter()
            .take(MAX_GPU_INSTANCE)
            .enumerate()
            .filter(|(_, p)| super::device_supports_svm(&p.dev))
            .fold(0u64, |m, (i, _)| m | (1 << i));
        (xnack, inner.pdds[gpu_idx].counters.clone(), gpu_idx, supported)
    };
    if !xnack {
        // Quiesced by an invalidation the restore has not remapped yet
        // (`notifier::queues_quiesce`): the queue waits, as it would
        // preempted.  Or remapped since the engine looked: it retries.
        if process.svms.xnack_off_retry(dev.gpu_id(), addr, write) {
            return Err(EAGAIN);
        }
        kfd_err!(
            "GPU {} VM fault at {:#x} ({}), XNACK off: not retried (pid {})\n",
            dev.gpu_id(),
            addr,
            if write { "write" } else { "read" },
            process.pid()
        );
        return Err(EFAULT);
    }
    counters.faults.fetch_add(1, Relaxed);
    let ret = process.svms.restore_pages(dev, gpu_idx, supported, addr, write, &counters).inspect_err(|e| {
        if *e != EAGAIN {
            kfd_err!(
                "GPU {} VM fault at {:#x} ({}) not recoverable: {:?} (pid {})\n",
                dev.gpu_id(),
                addr,
                if write { "write" } else { "read" },
                e,
                process.pid()
            );
        }
    });
    // The interface's answers: retry later, out of memory, or fatal.
    ret.map_err(|e| if e == EAGAIN || e == ENOMEM { e } else { EFAULT })
}

impl Svms {
    /// XNACK off: whether a GPU fault at `addr` is answered "retry later"
    /// rather than fatal: the process is evicted (an invalidation the
    /// restore has not remapped yet, [`Svms::evicted`]), or the address is
    /// mapped again ([`Svms::mapped_now`]), or an invalidation began while
    /// this looked.  The last closes the window where an invalidation has
    /// made the last mapping's sequence stale but not yet counted its
    /// eviction: the callback counts the eviction before the sequence
    /// moves (`rkfd_svm_invalidate` in shim/rkfd_hmm.c calls it first), so
    /// a stale sequence seen here with the count unchanged is an
    /// invalidation whose restore already ran (issue #16 defect 4).
    pub(crate) fn xnack_off_retry(&self, gpu_id: u32, addr: u64, write: bool) -> bool {
        let before = self.evictions.load(Acquire);
        if self.evicted() || self.mapped_now(gpu_id, addr, write) {
            return true;
        }
        // A full barrier: the sequence read above happens before this.
        self.evictions.fetch_add(0, Full) != before
    }

    /// XNACK off: whether GPU `gpu_id` has `addr` mapped (for `write`) by
    /// a mapping no invalidation has touched since.  An engine that found
    /// a PTE missing while the process was evicted reports the fault
    /// later; if the restore worker remapped and resumed the queues in
    /// between, the fault is stale: it is retried, not fatal (issue #16
    /// defect 4; upstream filters stale faults too,
    /// `svm_range_skip_recover`).
    fn mapped_now(&self, gpu_id: u32, addr: u64, write: bool) -> bool {
        let page = addr & !(PAGE - 1);
        let list = self.list.lock();
        list.tree.find(page / PAGE).is_some_and(|r| Self::still_mapped(r, gpu_id, page, write))
    }

    /// Resolves a retry fault of GPU `dev` (process device `gpu_idx`; the
    /// process's SVM devices are `supported`, by index) at `addr`.  An
    /// address no range covers gets one first (upstream
    /// `svm_range_create_unregistered_range`, see
    /// [`RangeList::create_unregistered`](super::range::RangeList::create_unregistered)),
    /// so GET_ATTR and the debugfs dump show it.  The fault honours the
    /// range's attributes: the window is the range's granularity (default
    /// 2 MiB) inside the range and the VMA, and the location is upstream's
    /// `svm_range_best_restore_location`: PREFERRED_LOC on this GPU or
    /// system memory wins; else a GPU in ACCESS migrates the window to its
    /// own VRAM (so with XNACK-on defaults a first touch migrates, as
    /// upstream), one in ACCESS_IN_PLACE maps it in place from system
    /// memory (its own VRAM if the pages are there already), and any other
    /// GPU gets `EACCES` (fatal).  PREFERRED_LOC on another GPU is never
    /// reachable (no XGMI hive between virtual GPUs) and falls through to
    /// the bitmaps.  VRAM exhaustion leaves the window in system memory.
    fn restore_pages(
        self: &Arc<Self>,
        dev: &Device,
        gpu_idx: usize,
        supported: u64,
        addr: u64,
        write: bool,
        counters: &Arc<ProcCounters>,
    ) -> Result {
        self.run_pending();
        let gpu_id = dev.gpu_id();
        let mm = self.mm_user().ok_or(EFAULT)?;
        let page = addr & !(PAGE - 1);
        let mut guard = MmRead::new(&mm);
        // No VMA (or an unusable one): fatal, and no range is created.
        let (mut vs, mut ve) = guard.usable_vma(page)?;
        let mut list = self.list.lock();
        if list.dead {
            return Err(EFAULT);
        }
        if list.fault_attrs(page / PAGE).is_none() {
            // An unregistered address inside a VMA: a new range with its
            // notifier, created under the write lock (as upstream).
            drop(list);
            drop(guard);
            guard = MmRead::new_write(&mm);
            (vs, ve) = guard.usable_vma(page)?;
            list = self.list.lock();
            if list.dead {
                return Err(EFAULT);
            }
            if list.fault_attrs(page / PAGE).is_none() {
                let reshape = Reshape::new(self, 1)?;
                let vma = Span::new(vs / PAGE, ve / PAGE - 1);
                let span = list
                    .create_unregistered(page / PAGE, vma, guard.is_heap_stack(page), supported)
                    .map_err(|e| if e == ENOMEM { e } else { EFAULT })?;
                reshape.finish(&guard, &mut list.tree, span.start, span.last);
            }
            guard.downgrade();
        }
        let fa = list.fault_attrs(page / PAGE).ok_or(EFAULT)?;
        let r = list.tree.find_mut(page / PAGE).ok_or(EFAULT)?;
        if Self::still_mapped(r, gpu_id, page, write) {
            // Another fault mapped it since this one was raised.
            return Ok(());
        }
        // The window: the granule, inside the range and inside the
        // faulting page's VMA (a neighbour, e.g. an mprotect'ed page, has
        // its own permissions and faults on its own).
        let (ws, we) = fault_window(page, PAGE.trailing_zeros(), fa.attrs.granularity, fa.span, vs, ve).ok_or(EFAULT)?;
        // Upstream `svm_range_best_restore_location`: PREFERRED_LOC on this
        // GPU or system memory, else this GPU's VRAM if it is in ACCESS,
        // where the pages are (reachable) or system memory if it is in
        // ACCESS_IN_PLACE, else no access.
        let pagemap = dev.vram_pagemap.as_ref();
        let notifier = r.payload.notifier.as_ref();
        let actual = || match pagemap.zip(notifier).map(|(p, n)| n.locate(&guard, p, ws, we)) {
            Some(Ok((vram_pages, _))) if vram_pages != 0 => gpu_id,
            _ => super::logic::attr::LOCATION_SYSMEM,
        };
        let best = fa.best_location(gpu_idx, gpu_id, pagemap.is_none(), actual).ok_or(EACCES)?;
        // SMI: PAGE_FAULT_START here and PAGE_FAULT_END after the mapping,
        // whatever its outcome (upstream `svm_range_restore_pages`);
        // migrations in between are MIGRATE_START/END pairs naming the
        // range's locations.
        crate::smi::page_fault_start(&self.owner, gpu_id, page, write);
        let report = Some(Report { owner: &self.owner, locs: (fa.attrs.prefetch_loc, fa.attrs.preferred_loc) });
        let trigger = MigrateTrigger::PagefaultGpu;
        let mut migrated = 0;
        let res = (|| -> Result {
            if best == super::logic::attr::LOCATION_SYSMEM {
                // This GPU's device pages in the window go back to system
                // memory (upstream `svm_migrate_vram_to_ram`); other GPUs'
                // are faulted back by `hmm_range_fault` when mapping.
                if let Some(p) = pagemap {
                    migrated += super::migrate::to_ram(dev, p, &guard, ws, we, trigger, report)?;
                }
            } else if best == gpu_id {
                if let Some(p) = pagemap {
                    // Pages in another GPU's VRAM go through system memory
                    // first (upstream `svm_migrate_vram_to_vram`): migration
                    // to VRAM takes system pages only.
                    if self.vms_on_other_devices(gpu_id) {
                        for d in self.devices().iter().filter(|d| d.gpu_id() != gpu_id) {
                            if let Some(other) = d.vram_pagemap.as_ref() {
                                migrated += super::migrate::to_ram(d, other, &guard, ws, we, trigger, report)?;
                            }
                        }
                    }
                    // VRAM full: the data stays in system memory.
                    migrated += super::migrate::to_vram(dev, p, &guard, ws, we, counters, trigger, report)?;
                }
            }
            self.map_on(&guard, r, gpu_id, ws, we, write, trigger)
        })();
        crate::smi::page_fault_end(&self.owner, gpu_id, page, migrated != 0);
        res
    }
}
