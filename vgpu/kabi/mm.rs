// SPDX-License-Identifier: GPL-2.0

//! Memory-management helpers the `kernel` crate lacks: `vmap()` of pages,
//! page frame numbers and the size of system memory.

use core::ptr::NonNull;

use kernel::{
    ffi::c_void,
    page::Page,
    prelude::*, //
};

use super::shim;

/// A kernel virtual mapping of pages (`vmap()`), unmapped on drop.
///
/// # Invariants
///
/// `addr` was returned by `vgpu_shim_vmap` and is unmapped only by `drop`.
pub(crate) struct KernelMap {
    /// The start of the mapping.
    addr: NonNull<c_void>,
}

// SAFETY: A vmap area may be used and unmapped from any thread.
unsafe impl Send for KernelMap {}
// SAFETY: `&KernelMap` only hands out the address.
unsafe impl Sync for KernelMap {}

impl KernelMap {
    /// Maps `pages` contiguously into the kernel's address space.
    ///
    /// # Safety
    ///
    /// The pages stay allocated until the returned mapping is dropped.
    pub(crate) unsafe fn new(pages: &[Page]) -> Result<Self> {
        let count = u32::try_from(pages.len()).map_err(|_| EINVAL)?;
        let mut ptrs = KVVec::with_capacity(pages.len(), GFP_KERNEL)?;
        for page in pages {
            ptrs.push(page.as_ptr(), GFP_KERNEL)?;
        }
        // SAFETY: `ptrs` holds `count` valid page pointers for the call; the
        // caller keeps the pages allocated while the mapping exists.
        let addr = unsafe { shim::vgpu_shim_vmap(ptrs.as_mut_ptr(), count) };
        // INVARIANT: From `vgpu_shim_vmap`.
        Ok(KernelMap {
            addr: NonNull::new(addr).ok_or(ENOMEM)?,
        })
    }

    /// The kernel address of the first page.
    pub(crate) fn addr(&self) -> *mut c_void {
        self.addr.as_ptr()
    }
}

impl Drop for KernelMap {
    fn drop(&mut self) {
        // SAFETY: By the type invariant `addr` is a live vmap area.
        unsafe { shim::vgpu_shim_vunmap(self.addr.as_ptr()) };
    }
}

/// The page frame number of `page`.
pub(crate) fn page_pfn(page: &Page) -> u64 {
    // SAFETY: `page` owns a valid page.
    let pfn = unsafe { shim::vgpu_shim_page_pfn(page.as_ptr()) };
    pfn as u64
}

/// Bytes of system memory (`totalram_pages()`).
pub(crate) fn total_ram() -> u64 {
    // SAFETY: Reads a global counter.
    unsafe { shim::vgpu_shim_total_ram() }
}
