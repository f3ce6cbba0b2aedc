// SPDX-License-Identifier: GPL-2.0

//! GPU retry faults (XNACK on): upstream `svm_range_restore_pages`.
//!
//! The GPU driver calls `kgd2kfd_svm_fault` when an access finds no valid
//! PTE.  The handler finds the process by the VM's PASID (upstream
//! `kfd_lookup_process_by_pasid`) and checks the VM is one of its own, finds or creates the
//! range (a granule-aligned window inside the VMA for an unregistered
//! address, as upstream `svm_range_create_unregistered_range`), filters
//! duplicates, migrates the window to the preferred location, runs
//! `hmm_range_fault` over it and maps it.  XNACK off, no VMA or an unusable
//! VMA: a fatal fault (`EFAULT`, logged), never an oops.

use kernel::{
    ffi::c_void,
    prelude::*,
    sync::{atomic::Relaxed, Arc},
};

use crate::kabi::hmm::MmRead;
use crate::svm::logic::{attr::MAX_GPU_INSTANCE, ranges::Span};
use super::{Svm, PAGE};
use crate::{
    device::Device,
    kabi::log::kfd_err,
    process::{find_by_pasid, Process},
    procfs::ProcCounters,
};

/// The process of PASID `pasid` (upstream `kfd_lookup_process_by_pasid`),
/// if the raw VM handle `vm` is one of its VMs (a stale fault from a VM
/// released since, or a PASID reused, finds nothing).
fn process_of(pasid: u32, vm: *const c_void) -> Option<Arc<Process>> {
    find_by_pasid(pasid).filter(|p| p.hmm.has_vm(vm))
}

/// `kgd2kfd_svm_fault`: a retry fault of `dev` in VM `vm` of PASID `pasid`.
pub(crate) fn gpu_fault(dev: &Device, pasid: u32, vm: *const c_void, addr: u64, write: bool) -> Result {
    let Some(process) = process_of(pasid, vm) else {
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
            .filter(|(_, p)| crate::svm::device_supports_svm(&p.dev))
            .fold(0u64, |m, (i, _)| m | (1 << i));
        (xnack, inner.pdds[gpu_idx].counters.clone(), gpu_idx, supported)
    };
    if !xnack {
        // Quiesced by an invalidation the restore worker has not remapped
        // yet (`svm_hmm::queues_quiesce`): the queue waits, as it would
        // preempted.  Or remapped since the engine looked: it retries.
        if process.hmm.evicted() || process.hmm.mapped_now(dev.gpu_id(), addr, write) {
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
    let ret = process.hmm.fault(dev, gpu_idx, supported, addr, write, &counters).inspect_err(|e| {
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

impl Svm {
    /// Resolves a retry fault of GPU `dev` (process device `gpu_idx`; the
    /// process's SVM devices are `supported`, by index) at `addr`.  An
    /// address no attribute range covers gets one first (upstream
    /// `svm_range_create_unregistered_range`, see
    /// [`SvmState::create_unregistered`](crate::svm::SvmState::create_unregistered)),
    /// so GET_ATTR and the debugfs dump show it.  The fault honours the
    /// range's attributes: the window is the range's granularity (default
    /// 2 MiB) inside the range, and the location is upstream's
    /// `svm_range_best_restore_location`: PREFERRED_LOC on this GPU or
    /// system memory wins; else a GPU in ACCESS migrates the window to its
    /// own VRAM (so with XNACK-on defaults a first touch migrates, as
    /// upstream), one in ACCESS_IN_PLACE maps it in place from system
    /// memory (its own VRAM if the pages are there already), and any other
    /// GPU gets `EACCES` (fatal).  PREFERRED_LOC on another GPU is never
    /// reachable (no XGMI hive between virtual GPUs) and falls through to
    /// the bitmaps.  VRAM exhaustion leaves the window in system memory.
    pub(crate) fn fault(
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
        let mm = self.mm.mmget_not_zero().ok_or(EFAULT)?;
        let page = addr & !(PAGE - 1);
        let mut guard = MmRead::new(&mm);
        // No VMA (or an unusable one): fatal, and no range is created.
        let (mut vs, mut ve) = guard.usable_vma(page)?;
        // The attribute set under `mmap_lock` alone (never nested with
        // `Svm::ranges`).  Upstream takes `mmap_lock` for writing to create
        // the range because it inserts the notifier too; the attribute
        // range needs only its own lock (the HMM range below is created
        // under the write lock).
        let fa = {
            let mut attrs = self.attrs.lock();
            match attrs.fault_attrs(page / PAGE) {
                Some(fa) => fa,
                None => {
                    let vma = Span::new(vs / PAGE, ve / PAGE - 1);
                    attrs
                        .create_unregistered(page / PAGE, vma, guard.is_heap_stack(page), supported)
                        .map_err(|e| if e == ENOMEM { e } else { EFAULT })?;
                    attrs.fault_attrs(page / PAGE).ok_or(EFAULT)?
                }
            }
        };
        let shift = (PAGE.trailing_zeros() + u32::from(fa.granularity())).min(63);
        let size = 1u64 << shift;
        let granule = page & !(size - 1);
        let granule_end = granule.saturating_add(size);
        let mut ranges = self.ranges.lock();
        if ranges.dead {
            return Err(EFAULT);
        }
        let key = match ranges.containing(page) {
            Some(k) => k,
            None => {
                // An unregistered address inside a VMA: a new range over
                // the granule around it, clipped to the VMA and to the
                // neighbours (upstream svm_range_create_unregistered_range),
                // created under the write lock.
                drop(ranges);
                drop(guard);
                guard = MmRead::new_write(&mm);
                (vs, ve) = guard.usable_vma(page)?;
                ranges = self.ranges.lock();
                if ranges.dead {
                    return Err(EFAULT);
                }
                let key = match ranges.containing(page) {
                    Some(k) => k,
                    None => {
                        let (s, e) = ranges.gap(page, granule.max(vs), granule_end.min(ve));
                        self.insert(&guard, &mut ranges, s, e)?;
                        s
                    }
                };
                guard.downgrade();
                key
            }
        };
        let r = ranges.tree.get_mut(&key).ok_or(EFAULT)?;
        if Self::still_mapped(r, gpu_id, page, write) {
            // Another fault mapped it since this one was raised.
            return Ok(());
        }
        // The window: the granule, inside the attribute range and the HMM
        // range (upstream clips to `prange`), and inside the faulting
        // page's VMA: a neighbour (an mprotect'ed page, another mapping)
        // has its own permissions and faults on its own (upstream maps VMA
        // by VMA with each one's `readonly`).
        let ws = granule.max(r.start()).max(fa.span.start * PAGE).max(vs);
        let we = granule_end.min(r.end()).min(fa.span.last.saturating_add(1).saturating_mul(PAGE)).min(ve);
        if ws >= we {
            // Both contain the page: cannot happen.
            return Err(EFAULT);
        }
        // Upstream `svm_range_best_restore_location`: PREFERRED_LOC on this
        // GPU or system memory, else this GPU's VRAM if it is in ACCESS,
        // where the pages are (reachable) or system memory if it is in
        // ACCESS_IN_PLACE, else no access.  Virtual GPUs share no XGMI
        // hive, so another GPU's VRAM is never the answer.
        let sdev = dev.svm.as_ref();
        let actual = || match sdev.map(|s| r.hmm.locate(&guard, s, ws, we)) {
            Some(Ok((vram_pages, _))) if vram_pages != 0 => gpu_id,
            _ => super::LOCATION_SYSMEM,
        };
        let best = fa.best_location(gpu_idx, gpu_id, sdev.is_none(), actual).ok_or(EACCES)?;
        // SMI: PAGE_FAULT_START here and PAGE_FAULT_END after the mapping,
        // whatever its outcome (upstream `svm_range_restore_pages`);
        // migrations in between are MIGRATE_START/END pairs.
        crate::smi::page_fault_start(&self.owner, gpu_id, page, write);
        let locs = (fa.attrs.prefetch_loc, fa.attrs.preferred_loc);
        let trigger = crate::smi::MIGRATE_TRIGGER_PAGEFAULT_GPU;
        let mut migrated = 0;
        let res = (|| -> Result {
            if best == super::LOCATION_SYSMEM {
                // This GPU's device pages in the window go back to system
                // memory (upstream `svm_migrate_vram_to_ram`); other GPUs'
                // are faulted back by `hmm_range_fault` when mapping.
                if let Some(s) = sdev {
                    let m = crate::smi::Migration::to_ram(gpu_id, ws, we, locs, trigger);
                    migrated += crate::smi::migration(&self.owner, m, || s.migrate_to_ram(&guard, ws, we))?;
                }
            } else if best == gpu_id {
                if let Some(sdev) = sdev {
                    // Pages in another GPU's VRAM go through system memory
                    // first (upstream `svm_migrate_vram_to_vram`): migration to
                    // VRAM takes system pages only.
                    if self.vms_on_other_devices(gpu_id) {
                        for d in self.devices().iter().filter(|d| d.gpu_id() != gpu_id) {
                            if let Some(s) = d.svm.as_ref() {
                                let m = crate::smi::Migration::to_ram(d.gpu_id(), ws, we, locs, trigger);
                                migrated += crate::smi::migration(&self.owner, m, || s.migrate_to_ram(&guard, ws, we))?;
                            }
                        }
                    }
                    let m = crate::smi::Migration::to_vram(gpu_id, ws, we, locs, trigger);
                    match crate::smi::migration(&self.owner, m, || sdev.migrate_to_vram(&guard, ws, we, counters)) {
                        Ok(n) => migrated += n,
                        // VRAM is full: the data stays in system memory.
                        // Debug level: this is the fault path, and every fault
                        // of a process over a full VRAM would print otherwise.
                        Err(e) if e == ENOMEM || e == ENOSPC => {
                            kernel::pr_debug!("GPU {}: VRAM full, {:#x}..{:#x} stays in system memory\n", gpu_id, ws, we)
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
            self.map_range_on(&guard, r, gpu_id, ws, we, write)
        })();
        crate::smi::page_fault_end(&self.owner, gpu_id, page, migrated != 0);
        res
    }
}
