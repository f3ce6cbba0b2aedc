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
    /// The GPU driver evicts the device's VRAM (`kgd2kfd_svm_evict_vram`;
    /// upstream `KFD_MIGRATE_TRIGGER_TTM_EVICTION`, from
    /// `svm_range_evict_svm_bo`).
    TtmEviction,
}

impl MigrateTrigger {
    /// The SMI events' `KFD_MIGRATE_TRIGGER_*`.
    fn smi(self) -> u32 {
        match self {
            MigrateTrigger::Prefetch => smi::MIGRATE_TRIGGER_PREFETCH,
            MigrateTrigger::PagefaultGpu | MigrateTrigger::Restore => smi::MIGRATE_TRIGGER_PAGEFAULT_GPU,
            MigrateTrigger::TtmEviction => smi::MIGRATE_TRIGGER_TTM_EVICTION,
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

/// How often one range's migration out of a VRAM being evicted is tried
/// while pages stay behind (upstream `svm_range_evict_svm_bo`'s
/// `retries = 3`: a page can be busy, its reference held by a racing
/// fault or GUP, for a moment).
const EVICT_TRIES: u32 = 3;

/// `kgd2kfd_svm_evict_vram`: every SVM page any process holds in `dev`'s
/// VRAM goes back to system memory (upstream `svm_range_evict_svm_bo` for
/// every SVM BO of the device, as TTM's eviction of VRAM before a suspend
/// runs it).  Per process, with the locks SET_ATTR's prefetch takes in
/// the crate root's order ([`Svms::flush`], `mmap_lock` read,
/// [`Svms::list`]; never `Process::inner`), per range and VMA:
/// [`to_ram`] with trigger [`MigrateTrigger::TtmEviction`] (SMI
/// `MIGRATE_START` / `_END` with the range's PREFETCH_LOC and
/// PREFERRED_LOC, as upstream, when pages moved), up to [`EVICT_TRIES`]
/// times while the range has pages there (read from the page table
/// before each try and after the last, [`RangeList::placement`]'s
/// source).  The ranges keep their
/// attributes; the migration's own invalidation updates the GPU mappings
/// (`notifier`: XNACK on unmapped, XNACK off remapped in system memory by
/// the restore).  A process whose mm has exited or whose SVM is torn down
/// is skipped: its teardown frees or migrates its pages.  Pages left are
/// logged per process and range with their count; `EBUSY` (or `ENOMEM`
/// if system memory ran out) after every process was tried.
pub(crate) fn evict_vram(dev: &Device) -> Result {
    let Some(pagemap) = dev.vram_pagemap.as_ref() else { return Ok(()) };
    let all = crate::process::snapshot()?;
    let (mut moved, mut left, mut no_mem) = (0u64, 0u64, false);
    for p in all.iter() {
        let (m, l, nm) = p.svms.evict_vram(dev, pagemap);
        moved += m;
        if l > 0 {
            kfd_warn!("svm: GPU {}: {} pages of pid {} stay in VRAM after the eviction\n", dev.gpu_id(), l, p.pid());
        }
        left += l;
        no_mem |= nm;
    }
    if left > 0 {
        kfd_warn!("svm: GPU {}: VRAM eviction left {} pages in VRAM ({} moved)\n", dev.gpu_id(), left, moved);
        return Err(if no_mem { ENOMEM } else { EBUSY });
    }
    kernel::pr_debug!("svm: GPU {}: VRAM eviction moved {} pages to system memory\n", dev.gpu_id(), moved);
    Ok(())
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

    /// This process's part of [`evict_vram`]: (pages moved, pages left in
    /// `pagemap`, whether a migration of pages that stayed ran out of
    /// system memory).  Nothing for a process whose mm exited or whose SVM
    /// is torn down.
    fn evict_vram(&self, dev: &Device, pagemap: &VramPagemap) -> (u64, u64, bool) {
        let _flush = self.flush.lock();
        let Some(mm) = self.mm_user() else { return (0, 0, false) };
        let guard = MmRead::new(&mm);
        let list = self.list.lock();
        if list.dead {
            return (0, 0, false);
        }
        let (mut moved, mut left, mut no_mem) = (0u64, 0u64, false);
        for r in list.tree.iter() {
            let Some(n) = r.payload.notifier.as_ref() else { continue };
            let report = Report { owner: &self.owner, locs: (r.attrs.prefetch_loc, r.attrs.preferred_loc) };
            let (start, end) = super::range::bytes(r);
            // VMA by VMA: a hole is a `munmap` whose range removal is
            // pending; its pages went with the mapping.
            guard.for_each_vma_piece(start, end, |s, e| {
                // Asked of the page table first, so a range with nothing
                // in this VRAM costs one walk (no migration buffers, no
                // invalidation); an unreadable one counts as all there.
                let in_vram = || n.locate(&guard, pagemap, s, e).map_or((e - s) / super::PAGE, |(vram, _)| vram);
                let (mut tries, mut last_err) = (0, None);
                let stayed = loop {
                    let vram = in_vram();
                    if vram == 0 || tries >= EVICT_TRIES {
                        break vram;
                    }
                    tries += 1;
                    match to_ram(dev, pagemap, &guard, s, e, MigrateTrigger::TtmEviction, Some(report)) {
                        Ok(k) => moved += k,
                        Err(err) => last_err = Some(err),
                    }
                };
                if stayed > 0 {
                    kfd_warn!(
                        "svm: GPU {}: {} pages of {:#x}..{:#x} would not leave VRAM ({:?})\n",
                        dev.gpu_id(),
                        stayed,
                        s,
                        e,
                        last_err
                    );
                    left += stayed;
                    no_mem |= last_err == Some(ENOMEM);
                }
            });
        }
        (moved, left, no_mem)
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
