// SPDX-License-Identifier: GPL-2.0

//! debugfs `kfd/proc/<pid>/svm_ranges`: a process's SVM ranges, for kernel
//! engineers.
//!
//! Upstream has no such file (its closest is the `svm_range_debug_dump`
//! `pr_debug` output of `kfd_svm.c`); the name follows upstream's
//! `svm_range` naming.  One line per range:
//!
//! ```text
//! # svm_ranges: pages of 4096 bytes; start/last are inclusive page numbers (address = page << 12)
//! # gpus: 0=0x1a2b 1=0x3c4d (bit i of access/in_place/mapped_on = gpu i)
//! # start last preferred_loc prefetch_loc actual_loc flags granularity access in_place mapped_on
//! range 0x7f00 0x7f0f undef 0x1a2b sys 0x3 9 0x1 0x0 0x1
//! ```
//!
//! Locations print as `sys` (system memory, 0), `undef` (`0xffffffff`) or
//! a gpu_id in hex.  `actual_loc` is where the pages are now (upstream
//! `prange->actual_loc`), read from the CPU page table when the file is
//! read: `sys` (no page in VRAM), the gpu_id whose VRAM holds every
//! present page, `mixed` (VRAM and system memory, or two VRAMs), or `?`
//! (could not be read).  `mapped_on`: the GPUs the range is mapped on.
//!
//! Locking: `mmap_lock` (read), then the SVM list lock, for a snapshot;
//! the lines are written with no lock held.  The file holds no reference
//! to the process (the SVM state is an `Arc`), so it adds no edge to the
//! lock order.

use kernel::{fmt, prelude::*, sync::Arc};

use super::{
    logic::{
        attr::{Attrs, LOCATION_SYSMEM, LOCATION_UNDEFINED, MAX_GPU_INSTANCE},
        place::ActualLoc,
    },
    range::RangeList,
    Svms,
};
use crate::{kabi::hmm::MmRead, procfs::ProcCounters};

/// The `svm_ranges` file of one process.
pub(crate) struct SvmRanges {
    /// gpu_id of each process device, in pdd order (the bitmaps' index).
    ids: KVec<u32>,
    svms: Arc<Svms>,
}

/// One line's worth of a range.
struct Line {
    start: u64,
    last: u64,
    attrs: Attrs,
    actual: ActualLoc,
    /// VM slots (`Svms::vms`).
    mapped_on: u64,
}

impl SvmRanges {
    /// The file for a process with devices `counters` (pdd order).
    pub(crate) fn new(counters: &[Arc<ProcCounters>], svms: Arc<Svms>) -> Result<Self> {
        let mut ids = KVec::with_capacity(counters.len(), GFP_KERNEL)?;
        for c in counters.iter().take(MAX_GPU_INSTANCE) {
            ids.push(c.gpu_id, GFP_KERNEL)?;
        }
        Ok(SvmRanges { ids, svms })
    }

    /// The bitmap (by index into `ids`) of the GPUs of VM slots `slots`.
    fn mask(&self, slots: u64, slot_ids: &[u32]) -> u64 {
        slot_ids
            .iter()
            .enumerate()
            .filter(|(slot, _)| slots & (1u64 << slot) != 0)
            .filter_map(|(_, g)| self.ids.iter().position(|i| i == g))
            .fold(0, |m, i| m | (1u64 << i))
    }

    /// The ranges and where their pages are, under `mmap_lock` (read) and
    /// the list lock; `actual` is unknown once the mm is gone.
    fn snapshot(&self) -> Result<KVec<Line>> {
        let devs = self.svms.devices();
        let mm = self.svms.mm_user();
        let guard = mm.as_ref().map(|m| MmRead::new(m));
        let list = self.svms.list.lock();
        let mut out = KVec::with_capacity(list.tree.len(), GFP_KERNEL)?;
        for r in list.tree.iter() {
            let actual = match guard.as_ref() {
                Some(g) => RangeList::placement(g, r, &devs).actual(),
                None => ActualLoc::Unknown,
            };
            out.push(Line { start: r.start, last: r.last, attrs: r.attrs, actual, mapped_on: r.payload.mapped_on }, GFP_KERNEL)?;
        }
        Ok(out)
    }
}

/// A location as the dump prints it.
struct Loc(u32);

impl core::fmt::Display for Loc {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            LOCATION_SYSMEM => f.write_str("sys"),
            LOCATION_UNDEFINED => f.write_str("undef"),
            id => write!(f, "{:#x}", id),
        }
    }
}

/// An actual location as the dump prints it.
struct Actual(ActualLoc);

impl core::fmt::Display for Actual {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            ActualLoc::System => f.write_str("sys"),
            ActualLoc::Gpu(id) => write!(f, "{:#x}", id),
            ActualLoc::Mixed => f.write_str("mixed"),
            ActualLoc::Unknown => f.write_str("?"),
        }
    }
}

impl crate::debugfs::Show for SvmRanges {
    fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "# svm_ranges: pages of {} bytes; start/last are inclusive page numbers (address = page << {})",
            kernel::page::PAGE_SIZE,
            kernel::page::PAGE_SHIFT
        )?;
        f.write_str("# gpus:")?;
        for (i, id) in self.ids.iter().enumerate() {
            write!(f, " {}={:#x}", i, id)?;
        }
        writeln!(f, " (bit i of access/in_place/mapped_on = gpu i)")?;
        writeln!(f, "# start last preferred_loc prefetch_loc actual_loc flags granularity access in_place mapped_on")?;
        let Ok(lines) = self.snapshot() else {
            return writeln!(f, "# out of memory");
        };
        let slot_ids = self.svms.slot_gpu_ids();
        for l in lines.iter() {
            let a = &l.attrs;
            writeln!(
                f,
                "range {:#x} {:#x} {} {} {} {:#x} {} {:#x} {:#x} {:#x}",
                l.start,
                l.last,
                Loc(a.preferred_loc),
                Loc(a.prefetch_loc),
                Actual(l.actual),
                a.flags,
                a.granularity,
                a.access,
                a.access_in_place,
                self.mask(l.mapped_on, &slot_ids)
            )?;
        }
        Ok(())
    }
}
