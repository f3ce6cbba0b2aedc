// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Where a range's pages are, and which window of it a GPU retry fault
//! maps.
//!
//! C: `prange->actual_loc` (kept up to date by `kfd_migrate.c`; rkfd reads
//! the CPU page table instead, see [`Placement`]) and the window
//! computation of `svm_range_restore_pages`.

use super::ranges::Span;

/// Where a range's pages are (the debugfs dump's `actual_loc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActualLoc {
    /// None in VRAM (upstream `actual_loc` 0).
    System,
    /// Every page in VRAM is in this GPU's.
    Gpu(u32),
    /// Some in a GPU's VRAM and some in system memory or another VRAM.
    Mixed,
    /// The page table could not be read (the mm is gone, or it raced).
    Unknown,
}

/// Sums up, GPU by GPU, where the pages of one range are.
#[derive(Clone, Copy, Debug, Default)]
pub struct Placement {
    /// The GPU whose VRAM holds pages, the last one seen.
    vram: Option<u32>,
    /// Two GPUs' VRAMs hold pages.
    several: bool,
    /// Some page is present in system memory.
    ram: bool,
    /// A page-table walk failed.
    failed: bool,
}

impl Placement {
    /// Nothing seen yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A walk with GPU `gpu_id` as the device-private owner: `vram_pages`
    /// are in its VRAM, `ram_pages` present in system memory.
    pub fn add(&mut self, gpu_id: u32, vram_pages: u64, ram_pages: u64) {
        self.ram |= ram_pages != 0;
        if vram_pages != 0 {
            self.several |= self.vram.is_some_and(|g| g != gpu_id);
            self.vram = Some(gpu_id);
        }
    }

    /// A walk failed.
    pub fn add_failure(&mut self) {
        self.failed = true;
    }

    /// The result.
    pub fn actual(&self) -> ActualLoc {
        match self.vram {
            _ if self.failed => ActualLoc::Unknown,
            None => ActualLoc::System,
            Some(_) if self.several || self.ram => ActualLoc::Mixed,
            Some(g) => ActualLoc::Gpu(g),
        }
    }
}

/// The addresses `[start, end)` a retry fault at page address `page` maps
/// (upstream `svm_range_restore_pages`): the `2^granularity`-page granule
/// around it, inside the range `range` (pages; upstream clips to `prange`)
/// and inside the faulting page's VMA `[vma_start, vma_end)` (a neighbour
/// VMA has its own permissions and faults on its own).  `None` if that is
/// empty, which cannot happen when both contain `page`.
pub fn fault_window(
    page: u64,
    page_shift: u32,
    granularity: u8,
    range: Span,
    vma_start: u64,
    vma_end: u64,
) -> Option<(u64, u64)> {
    let shift = (page_shift + u32::from(granularity)).min(63);
    let size = 1u64 << shift;
    let granule = page & !(size - 1);
    let granule_end = granule.saturating_add(size);
    let page_size = 1u64 << page_shift.min(63);
    let range_start = range.start.saturating_mul(page_size);
    let range_end = range.last.saturating_add(1).saturating_mul(page_size);
    let start = granule.max(range_start).max(vma_start);
    let end = granule_end.min(range_end).min(vma_end);
    (start < end).then_some((start, end))
}
