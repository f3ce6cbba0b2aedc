// SPDX-License-Identifier: GPL-2.0

//! Memory-management helpers the `kernel` crate lacks: `vmap()` of pages,
//! page frame numbers, the size of system memory, access to a page by
//! frame number, page copies (the SVM copy engine) and
//! `memalloc_noreclaim_save()`.

use core::ptr::NonNull;

use kernel::{
    bindings,
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

/// A scope in which allocations do not enter direct reclaim
/// (`memalloc_noreclaim_save()`), for page-table allocations under a lock
/// that mmu-notifier invalidations take (upstream `svm_range_lock`).
/// Restored on drop, on the same task (hence not `Send`).
pub(crate) struct NoReclaim {
    /// The flags to restore.
    flags: kernel::ffi::c_uint,
    /// Restored by the task that saved it.
    _not_send: core::marker::PhantomData<*mut ()>,
}

impl NoReclaim {
    /// Enters the scope.
    pub(crate) fn new() -> Self {
        // SAFETY: Changes only the current task's allocation flags; `drop`
        // restores them on the same task.
        let flags = unsafe { shim::vgpu_shim_noreclaim_save() };
        NoReclaim { flags, _not_send: core::marker::PhantomData }
    }
}

impl Drop for NoReclaim {
    fn drop(&mut self) {
        // SAFETY: `flags` came from the matching save on this task.
        unsafe { shim::vgpu_shim_noreclaim_restore(self.flags) };
    }
}

/// Reads (or writes, with `write`) `buf` at `offset` in the page of frame
/// `pfn`: the GPU accessing system memory through its page table.
/// `EFAULT` if `pfn` is not a valid memory page.
///
/// The page must stay allocated during the call: callers hold the GPU
/// page-table lock that mmu-notifier invalidations take before a page
/// mapped there can be freed.
pub(crate) fn pfn_rw(pfn: u64, offset: usize, buf: &mut [u8], write: bool) -> Result {
    let pfn = kernel::ffi::c_ulong::try_from(pfn).map_err(|_| EFAULT)?;
    if offset + buf.len() > kernel::page::PAGE_SIZE {
        return Err(EINVAL);
    }
    // SAFETY: `buf` is valid for `buf.len()` bytes; the shim checks the pfn
    // and the range; the page stays allocated (the caller's contract).
    super::to_result(unsafe {
        shim::vgpu_shim_pfn_rw(pfn, offset, buf.as_mut_ptr().cast(), buf.len(), write)
    })
}

/// Copies the page `src` to the page `dst` (`copy_highpage`); `src` null:
/// clears `dst`.  Does not sleep.
///
/// # Safety
///
/// `dst` and (if not null) `src` are valid `struct page` pointers that stay
/// allocated during the call.
pub(crate) unsafe fn copy_page(dst: *mut bindings::page, src: *mut bindings::page) {
    // SAFETY: The caller's contract.
    unsafe { shim::vgpu_shim_copy_page(dst, src) }
}
