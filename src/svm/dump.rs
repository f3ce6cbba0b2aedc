// SPDX-License-Identifier: GPL-2.0

//! debugfs `kfd/proc/<pid>/svm_ranges`: a process's SVM ranges, for kernel
//! engineers.
//!
//! Upstream has no such file (its closest is the `svm_range_debug_dump`
//! `pr_debug` output of `kfd_svm.c`); the name follows upstream's
//! `svm_range` naming.  The file shows the two range sets of a process:
//!
//! ```text
//! # svm_ranges: pages of 4096 bytes; start/last are inclusive page numbers (address = page << 12)
//! # gpus: 0=0x1a2b 1=0x3c4d          (bit i of access/in_place/mapped_on = gpu i)
//! # start last preferred_loc prefetch_loc actual_loc flags granularity access in_place
//! attr 0x7f00 0x7f0f undef 0x1a2b sys 0x3 9 0x1 0x0
//! # hmm: start end (addresses, end exclusive) preferred_loc mapped_on
//! hmm 0x7f00000 0x7f10000 undef 0x1
//! ```
//!
//! - `attr` lines: the attribute ranges (`crate::svm`, what `GET_ATTR`
//!   reads).  Locations print as `sys` (system memory, 0), `undef`
//!   (`0xffffffff`) or a gpu_id in hex.  `actual_loc` is where the pages
//!   are now (upstream `prange->actual_loc`), read from the CPU page table
//!   when the file is read: `sys` (no page in VRAM), the gpu_id whose VRAM
//!   holds every present page, `mixed` (VRAM and system memory, or two
//!   VRAMs), or `?` (could not be read).
//! - `hmm` lines: the ranges of the mechanism (`crate::svm_hmm`: one MMU
//!   interval notifier each) and the GPUs that mapped them.
//!
//! Locking: [`Process::svm`](crate::process::Process::svm) alone, released,
//! then `mmap_lock` (read) and the HMM ranges lock (for `actual_loc`), then
//! the HMM ranges lock alone; the attribute lock is never held with the
//! others, and the file holds no reference to the process (the two states
//! are `Arc`s), so it adds no edge to the lock order.

use kernel::{
    fmt,
    prelude::*,
    sync::{Arc, Mutex},
};

use super::{
    logic::attr::{LOCATION_SYSMEM, LOCATION_UNDEFINED, MAX_GPU_INSTANCE},
    SvmState,
};
use crate::{
    procfs::ProcCounters,
    svm_hmm::{ActualLoc, Svm},
};

/// The `svm_ranges` file of one process.
pub(crate) struct SvmRanges {
    /// gpu_id of each process device, in pdd order (the bitmaps' index).
    ids: KVec<u32>,
    svm: Arc<Mutex<SvmState>>,
    hmm: Arc<Svm>,
}

impl SvmRanges {
    /// The file for a process with devices `counters` (pdd order).
    pub(crate) fn new(counters: &[Arc<ProcCounters>], svm: Arc<Mutex<SvmState>>, hmm: Arc<Svm>) -> Result<Self> {
        let mut ids = KVec::with_capacity(counters.len(), GFP_KERNEL)?;
        for c in counters.iter().take(MAX_GPU_INSTANCE) {
            ids.push(c.gpu_id, GFP_KERNEL)?;
        }
        Ok(SvmRanges { ids, svm, hmm })
    }

    /// The bitmap of the GPUs in `gpus` (by index into `ids`).
    fn mask(&self, gpus: &[u32]) -> u64 {
        gpus.iter()
            .filter_map(|g| self.ids.iter().position(|i| i == g))
            .fold(0, |m, i| m | (1u64 << i))
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
        writeln!(f, "# start last preferred_loc prefetch_loc actual_loc flags granularity access in_place")?;
        // A snapshot of the attribute ranges, then where their pages are
        // (outside the attribute lock: see "Locking").
        let mut snap = KVec::new();
        let mut spans = KVec::new();
        {
            let svm = self.svm.lock();
            let n = svm.ranges.len();
            if snap.reserve(n, GFP_KERNEL).is_err() || spans.reserve(n, GFP_KERNEL).is_err() {
                return writeln!(f, "# out of memory");
            }
            for r in svm.ranges.iter() {
                let shift = kernel::page::PAGE_SHIFT;
                // Reserved above: cannot fail.
                let _ = snap.push_within_capacity((r.start, r.last, r.attrs));
                let _ = spans.push_within_capacity((r.start << shift, (r.last + 1) << shift));
            }
        }
        let locs = self.hmm.actual_locations(&spans).unwrap_or_default();
        for (i, (start, last, a)) in snap.iter().enumerate() {
            let actual = locs.get(i).copied().unwrap_or(ActualLoc::Unknown);
            writeln!(
                f,
                "attr {:#x} {:#x} {} {} {} {:#x} {} {:#x} {:#x}",
                start,
                last,
                Loc(a.preferred_loc),
                Loc(a.prefetch_loc),
                Actual(actual),
                a.flags,
                a.granularity,
                a.access,
                a.access_in_place
            )?;
        }
        writeln!(f, "# hmm: start end (addresses, end exclusive) preferred_loc mapped_on")?;
        self.hmm.for_each_range(|start, end, preferred, mapped| {
            writeln!(f, "hmm {:#x} {:#x} {} {:#x}", start, end, Loc(preferred), self.mask(mapped))
        })
    }
}
