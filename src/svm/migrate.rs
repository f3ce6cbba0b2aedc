// SPDX-License-Identifier: GPL-2.0

//! Migration between system memory and VRAM (upstream `kfd_migrate.c`:
//! `svm_migrate_to_vram`, `svm_migrate_vram_to_ram`), each with the
//! trigger upstream reports, and what SET_ATTR does once the ranges are
//! updated (upstream `svm_range_set_attr` after `svm_range_add`:
//! `svm_range_trigger_migration`, `svm_range_validate_and_map`).
//!
//! The page-moving itself is the kabi layer's [`VramPagemap`]
//! (`migrate_vma_setup/pages/finalize` with the GPU driver's copy engine);
//! a CPU touch of a device page comes back through the shim's
//! `migrate_to_ram` (upstream `svm_migrate_to_ram`).
//!
//! SMI: [`to_vram`] and [`to_ram`] send `MIGRATE_START` / `_END` (upstream
//! `svm_migrate_ram_to_vram` / `svm_migrate_vram_to_ram`) when given a
//! [`Report`]; the CPU-fault migration reports from `kabi::hmm`
//! (`rkfd_rs_svm_cpu_migrated`).

use kernel::{prelude::*, sync::Arc};

use super::{
    logic::attr::{LOCATION_SYSMEM, LOCATION_UNDEFINED, PAGE_SHIFT},
    range::RangeList,
    Svms,
};
use crate::{
    device::Device,
    kabi::{
        hmm::{MmRead, VramPagemap},
        log::{kfd_info, kfd_warn},
    },
    procfs::ProcCounters,
    smi::{self, Owner},
    uapi,
};

/// Why pages migrate (upstream `KFD_MIGRATE_TRIGGER_*`, reported in SMI
/// migrate events).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MigrateTrigger {
    /// PREFETCH_LOC (`KFD_MIGRATE_TRIGGER_PREFETCH`).
    Prefetch,
    /// A GPU retry fault (`KFD_MIGRATE_TRIGGER_PAGEFAULT_GPU`).
    PagefaultGpu,
    /// The XNACK-off restore remapping a range (rkfd: upstream's restore
    /// does not migrate; reported as a GPU page fault would be).
    Restore,
}

impl MigrateTrigger {
    /// The SMI events' `KFD_MIGRATE_TRIGGER_*`.
    fn smi(self) -> u32 {
        match self {
            MigrateTrigger::Prefetch => smi::MIGRATE_TRIGGER_PREFETCH,
            MigrateTrigger::PagefaultGpu | MigrateTrigger::Restore => smi::MIGRATE_TRIGGER_PAGEFAULT_GPU,
        }
    }
}

/// What the SMI migration events of one migration name besides the pages
/// and the trigger: the process, and the range's PREFETCH_LOC and
/// PREFERRED_LOC (upstream prints `prange->prefetch_loc` and
/// `prange->preferred_loc`).  A migration given none is not reported (the
/// one before mapping a read-only device page for a write; see
/// `src/smi.rs`).
#[derive(Clone, Copy)]
pub(crate) struct Report<'a> {
    /// The process whose clients see the events.
    pub(crate) owner: &'a Owner,
    /// The range's (PREFETCH_LOC, PREFERRED_LOC).
    pub(crate) locs: (u32, u32),
}

/// Runs `f`, reported to `owner`'s SMI clients as migration `m` if given an owner.
fn reported(owner: Option<&Owner>, m: impl FnOnce() -> smi::Migration, f: impl FnOnce() -> Result<u64>) -> Result<u64> {
    match owner {
        Some(o) => smi::migration(o, m(), f),
        None => f(),
    }
}

/// Migrates the system pages of `[start, end)` to `dev`'s VRAM
/// (`pagemap`), accounted to `counters`; the pages moved (upstream
/// `svm_migrate_ram_to_vram`).  VRAM exhaustion is not an error: what does
/// not fit stays in system memory, as upstream falls back to system
/// memory (`0` moved, or what moved before VRAM ran out); a prefetch says
/// so in dmesg, a fault only at debug level (every fault of a process over
/// a full VRAM would print otherwise).  With `report`, sent as SMI
/// `MIGRATE_START` / `_END` (an exhausted VRAM as the error it was).
pub(crate) fn to_vram(
    dev: &Device,
    pagemap: &VramPagemap,
    guard: &MmRead<'_>,
    start: u64,
    end: u64,
    counters: &Arc<ProcCounters>,
    trigger: MigrateTrigger,
    report: Option<Report<'_>>,
) -> Result<u64> {
    let m = || smi::Migration::to_vram(dev.gpu_id(), start, end, report.map_or((0, 0), |r| r.locs), trigger.smi());
    match reported(report.map(|r| r.owner), m, || pagemap.migrate_to_vram(guard, start, end, counters)) {
        Err(e) if e == ENOMEM || e == ENOSPC => {
            if trigger == MigrateTrigger::Prefetch {
                kfd_info!(
                    "GPU {}: VRAM full, prefetch of {:#x}..{:#x} left (part of) it in system memory\n",
                    dev.gpu_id(),
                    start,
                    end
                );
            } else {
                kernel::pr_debug!("GPU {}: VRAM full, {:#x}..{:#x} stays in system memory\n", dev.gpu_id(), start, end);
            }
            Ok(0)
        }
        other => other,
    }
}

/// Migrates `pagemap`'s device pages of `[start, end)` back to system
/// memory; the pages moved (upstream `svm_migrate_vram_to_ram`).
/// `EFAULT`: a hole without a VMA (a `munmap` whose range removal is
/// pending; pages before it moved); `ENOMEM`: no system memory (logged
/// with the trigger).  `dev` owns `pagemap`; with `report`, sent as SMI
/// `MIGRATE_START` / `_END`.
pub(crate) fn to_ram(
    dev: &Device,
    pagemap: &VramPagemap,
    guard: &MmRead<'_>,
    start: u64,
    end: u64,
    trigger: MigrateTrigger,
    report: Option<Report<'_>>,
) -> Result<u64> {
    let m = || smi::Migration::to_ram(dev.gpu_id(), start, end, report.map_or((0, 0), |r| r.locs), trigger.smi());
    reported(report.map(|r| r.owner), m, || pagemap.migrate_to_ram(guard, start, end)).inspect_err(|e| {
        if *e == ENOMEM {
            kfd_warn!("svm: {:?}: no system memory to move {:#x}..{:#x} out of VRAM\n", trigger, start, end);
        }
    })
}

/// Where PREFETCH_LOC sends a range.
pub(crate) enum Target<'a> {
    /// System memory (location 0).
    System,
    /// A GPU's VRAM, accounted to the process's counters of that GPU.
    Gpu(&'a Arc<Device>, &'a Arc<ProcCounters>),
}

/// A process device as SET_ATTR's machinery needs it.
pub(crate) struct GpuOfProcess {
    pub(crate) dev: Arc<Device>,
    pub(crate) counters: Arc<ProcCounters>,
}

impl Svms {
    /// Migrates every device page of `[start, end)` back to system memory,
    /// whichever GPU's VRAM holds it; the pages moved.  `locs`: reported
    /// to SMI with the range's (PREFETCH_LOC, PREFERRED_LOC), one
    /// migration per GPU that held pages.
    pub(crate) fn migrate_to_ram(
        &self,
        guard: &MmRead<'_>,
        start: u64,
        end: u64,
        trigger: MigrateTrigger,
        locs: Option<(u32, u32)>,
    ) -> Result<u64> {
        let report = locs.map(|locs| Report { owner: &self.owner, locs });
        let mut moved = 0;
        for dev in self.devices().iter() {
            if let Some(p) = dev.vram_pagemap.as_ref() {
                moved += to_ram(dev, p, guard, start, end, trigger, report)?;
            }
        }
        Ok(moved)
    }

    /// PREFETCH_LOC of `[start, end)` (upstream
    /// `svm_range_trigger_migration`): migrates its pages to `target` and
    /// returns how many moved (VRAM exhaustion: see [`to_vram`]).  SMI
    /// events name the PREFERRED_LOC of the range at `start` (the ranges
    /// carry the new attributes already).
    fn prefetch(&self, guard: &MmRead<'_>, list: &RangeList, start: u64, end: u64, target: Target<'_>) -> Result<u64> {
        let trigger = MigrateTrigger::Prefetch;
        let preferred = list.fault_attrs(start >> PAGE_SHIFT).map_or(LOCATION_UNDEFINED, |fa| fa.attrs.preferred_loc);
        match target {
            Target::Gpu(dev, counters) => {
                let pagemap = dev.vram_pagemap.as_ref().ok_or(EINVAL)?;
                let report = Report { owner: &self.owner, locs: (dev.gpu_id(), preferred) };
                to_vram(dev, pagemap, guard, start, end, counters, trigger, Some(report))
            }
            Target::System => self.migrate_to_ram(guard, start, end, trigger, Some((LOCATION_SYSMEM, preferred))),
        }
    }

    /// The machinery's part of SET_ATTR, once the ranges over `[start,
    /// end)` carry the new attributes, with `mmap_lock` (read) and
    /// [`Svms::list`] held: NO_ACCESS unmaps that GPU, PREFETCH_LOC
    /// migrates now, and with XNACK off the GPUs given ACCESS get the
    /// range mapped now (upstream `svm_range_validate_and_map` from
    /// SET_ATTR; the restore keeps the mappings valid after
    /// invalidations).  PREFERRED_LOC is read by faults from the range
    /// itself.  `attrs` were validated; `gpus` are the process's devices;
    /// a GPU without device-private VRAM has nothing to migrate to.
    pub(crate) fn apply_attrs(
        &self,
        guard: &MmRead<'_>,
        list: &mut RangeList,
        start: u64,
        end: u64,
        attrs: &[super::logic::attr::Attr],
        gpus: &[GpuOfProcess],
        xnack_enabled: bool,
    ) -> Result {
        let mut access = KVec::new();
        for a in attrs {
            let (ty, value) = (a.ty, a.value);
            if ty == uapi::KFD_IOCTL_SVM_ATTR_ACCESS || ty == uapi::KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE {
                access.push(value, GFP_KERNEL)?;
            }
            // A GPU losing access loses its mappings (upstream
            // `svm_range_unmap_from_gpus` from SET_ATTR).
            if ty == uapi::KFD_IOCTL_SVM_ATTR_NO_ACCESS {
                match self.unmap_from_gpu(list, value, start, end) {
                    Ok(()) => {}
                    // No VM or no SVM on that GPU: nothing mapped there.
                    Err(e) if e == ENODEV || e == EINVAL => {}
                    Err(e) => return Err(e),
                }
            }
            if ty != uapi::KFD_IOCTL_SVM_ATTR_PREFETCH_LOC || value == LOCATION_UNDEFINED {
                continue;
            }
            let target = if value == LOCATION_SYSMEM {
                Target::System
            } else {
                let g = gpus.iter().find(|g| g.dev.gpu_id() == value).ok_or(EINVAL)?;
                if g.dev.vram_pagemap.is_none() {
                    continue;
                }
                Target::Gpu(&g.dev, &g.counters)
            };
            self.prefetch(guard, list, start, end, target)?;
        }
        if !access.is_empty() && !xnack_enabled {
            self.map_now(guard, list, start, end, &access)?;
        }
        Ok(())
    }

    /// Maps `[start, end)` on GPUs `gpu_ids` now (faulting pages in;
    /// writable where the VMA allows).  A GPU without a VM or without SVM
    /// has nothing to map.
    fn map_now(&self, guard: &MmRead<'_>, list: &mut RangeList, start: u64, end: u64, gpu_ids: &[u32]) -> Result {
        let last = end.saturating_sub(1) >> PAGE_SHIFT;
        let mut pos = start >> PAGE_SHIFT;
        while let Some(key) = list.next_key(pos, last) {
            if let Some(r) = list.tree.find_mut(key) {
                let (s, e) = super::range::bytes(r);
                let (s, e) = (s.max(start), e.min(end));
                for &gpu in gpu_ids {
                    match self.map_vmas(guard, r, gpu, s, e, MigrateTrigger::Prefetch) {
                        Err(err) if err == ENODEV || err == EOPNOTSUPP => {}
                        other => other?,
                    }
                }
            }
            if key >= last {
                break;
            }
            pos = key + 1;
        }
        Ok(())
    }
}
