// SPDX-License-Identifier: GPL-2.0

//! Memory-management helpers the `kernel` crate lacks: `vmap()` of pages,
//! page frame numbers, the size of system memory, access to a page by
//! frame number, page copies (the SVM copy engine) and
//! `memalloc_noreclaim_save()`, and doorbell pages whose user mappings
//! trap the first write after idle ([`DoorbellWatch`]).

use core::ptr::NonNull;

use kernel::{
    bindings,
    ffi::c_void,
    page::Page,
    prelude::*,
    sync::Arc, //
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

/// How long an engine worker polls its doorbells after work before it
/// arms their traps, ns (the module's `doorbell_arm_us`, fixed at load).
pub(crate) fn doorbell_arm_ns() -> u64 {
    // SAFETY: Reads a module parameter no one writes after load.
    unsafe { shim::vgpu_shim_doorbell_arm_ns() }
}

/// Bytes of system memory (`totalram_pages()`).
pub(crate) fn total_ram() -> u64 {
    // SAFETY: Reads a global counter.
    unsafe { shim::vgpu_shim_total_ram() }
}

/// A PASID of the driver's table (upstream `amdgpu_pasid_alloc(16, ..)`,
/// one table for every GPU): 16 bits, never 0, handed out cyclically so a
/// freed one is reused as late as possible.  Given back when dropped
/// (`amdgpu_pasid_free`).
///
/// # Invariants
///
/// `self.0` was allocated by `vgpu_shim_pasid_alloc` and is freed once, in
/// `drop`.
pub(crate) struct Pasid(u32);

impl Pasid {
    /// A free PASID; `EBUSY` when all 65535 are in use.
    pub(crate) fn alloc() -> Result<Self> {
        let mut pasid = 0u32;
        // SAFETY: `pasid` is a valid out pointer.
        super::to_result(unsafe { shim::vgpu_shim_pasid_alloc(&mut pasid) })?;
        // INVARIANT: just allocated.
        Ok(Pasid(pasid))
    }

    /// Its value.
    pub(crate) fn get(&self) -> u32 {
        self.0
    }
}

impl Drop for Pasid {
    fn drop(&mut self) {
        // SAFETY: Allocated by `vgpu_shim_pasid_alloc` and freed only here
        // (type invariant).
        unsafe { shim::vgpu_shim_pasid_free(self.0) };
    }
}

/// Zeroed pages shared with user space and read by the GPU's engines
/// (doorbells, the MMIO remap page): kept mapped in the kernel for 64-bit
/// reads and writes, and mapped into `/dev/kfd` VMAs by [`Self::mmap`].
///
/// # Invariants
///
/// `map` maps exactly `pages`, which stay allocated until `map` is dropped
/// (field order); the mapping is `pages.len() * PAGE_SIZE` bytes.
pub(crate) struct SharedPages {
    /// The kernel mapping; dropped first.
    map: KernelMap,
    /// The pages (user mappings hold their own references).
    pages: KVVec<Page>,
}

impl SharedPages {
    /// `count` zeroed pages.
    pub(crate) fn new(count: usize) -> Result<Self> {
        let mut pages = KVVec::with_capacity(count, GFP_KERNEL)?;
        for _ in 0..count {
            pages.push(Page::alloc_page(GFP_KERNEL | __GFP_ZERO)?, GFP_KERNEL)?;
        }
        // SAFETY: The pages are kept (in `Self`) until after the mapping is
        // dropped.
        let map = unsafe { KernelMap::new(&pages)? };
        // INVARIANT: `map` maps `pages`.
        Ok(SharedPages { map, pages })
    }

    /// Size in bytes.
    pub(crate) fn len(&self) -> usize {
        self.pages.len() * kernel::page::PAGE_SIZE
    }

    /// The pages.
    #[allow(dead_code)] // For the engines.
    pub(crate) fn pages(&self) -> &[Page] {
        &self.pages
    }

    /// The 64-bit word at byte `offset` (8-byte aligned, in range).
    fn word(&self, offset: usize) -> Option<&core::sync::atomic::AtomicU64> {
        if offset % 8 != 0 || offset.checked_add(8)? > self.len() {
            return None;
        }
        // SAFETY: In range of the mapping (checked above; type invariant),
        // 8-byte aligned (the mapping is page aligned), and valid for
        // `&self`'s lifetime.  User space writes the same memory through its
        // own mapping at any time: atomic accesses make that well defined,
        // as READ_ONCE/WRITE_ONCE do in C.
        Some(unsafe {
            core::sync::atomic::AtomicU64::from_ptr(self.map.addr().cast::<u8>().add(offset).cast())
        })
    }

    /// Reads the 64-bit word at byte `offset`; `None` if unaligned or out
    /// of range.
    pub(crate) fn read_u64(&self, offset: usize) -> Option<u64> {
        Some(self.word(offset)?.load(core::sync::atomic::Ordering::Acquire))
    }

    /// Writes the 64-bit word at byte `offset`; `EINVAL` if unaligned or
    /// out of range.
    #[allow(dead_code)] // For the engines and tests.
    pub(crate) fn write_u64(&self, offset: usize, value: u64) -> Result {
        self.word(offset).ok_or(EINVAL)?.store(value, core::sync::atomic::Ordering::Release);
        Ok(())
    }

    /// The 32-bit word at byte `offset` (4-byte aligned, in range).
    fn word32(&self, offset: usize) -> Option<&core::sync::atomic::AtomicU32> {
        if offset % 4 != 0 || offset.checked_add(4)? > self.len() {
            return None;
        }
        // SAFETY: As in `word`, for a 4-byte aligned 32-bit word; rkfd
        // writes kernel objects (`alloc_gtt_mem`) through its own pointer
        // with volatile or plain stores the same way.
        Some(unsafe {
            core::sync::atomic::AtomicU32::from_ptr(self.map.addr().cast::<u8>().add(offset).cast())
        })
    }

    /// Reads the 32-bit word at byte `offset`; `None` if unaligned or out
    /// of range.
    pub(crate) fn read_u32(&self, offset: usize) -> Option<u32> {
        Some(self.word32(offset)?.load(core::sync::atomic::Ordering::Acquire))
    }

    /// Writes the 32-bit word at byte `offset`; `EINVAL` if unaligned or
    /// out of range.
    pub(crate) fn write_u32(&self, offset: usize, value: u32) -> Result {
        self.word32(offset).ok_or(EINVAL)?.store(value, core::sync::atomic::Ordering::Release);
        Ok(())
    }

    /// The kernel address of the first byte (what `alloc_gtt_mem` hands
    /// rkfd as `cpu_ptr`).
    pub(crate) fn kernel_addr(&self) -> NonNull<c_void> {
        self.map.addr
    }

    /// Maps all the pages into the `/dev/kfd` VMA rkfd is setting up,
    /// which must be exactly as large (`EINVAL` otherwise).
    pub(crate) fn mmap(&self, vma: &super::kfd::MmapVma<'_>) -> Result {
        let mut ptrs = KVVec::with_capacity(self.pages.len(), GFP_KERNEL)?;
        for page in self.pages.iter() {
            ptrs.push(page.as_ptr(), GFP_KERNEL)?;
        }
        // SAFETY: `vma` is valid for the call (its invariant); `ptrs` holds
        // `len` valid pages for the call; each inserted page gets its own
        // reference, so it outlives `self` while user space maps it.
        super::to_result(unsafe {
            shim::vgpu_shim_mmap_pages(vma.as_ptr().cast(), ptrs.as_mut_ptr(), ptrs.len() as kernel::ffi::c_ulong)
        })
    }
}

/// What a [`DoorbellWatch`] calls when a write to its trapped doorbell
/// pages faults.
pub(crate) trait DoorbellTarget: Send + Sync {
    /// User space wrote byte `offset` of the doorbell pages of the watch
    /// [`DoorbellWatch::id`] `watch` after they were armed.  Called in the
    /// writer's page fault (may sleep) with the written page locked:
    /// nothing it takes may be held by a caller of [`DoorbellWatch::arm`].
    fn rung(&self, watch: usize, offset: usize);
}

/// Doorbell pages whose user mappings trap the first write after
/// [`Self::arm`] (the shim's `vgpu_db_watch`, which explains the
/// protocol): an engine worker arms them before it sleeps, and the write
/// fault wakes it through the [`DoorbellTarget`].
///
/// # Invariants
///
/// `ptr` is a watch from `vgpu_shim_db_watch_new` of which this object
/// owns one reference; its target is an `Arc<T>` of the `T` given to
/// [`Self::new`], released with the watch.
pub(crate) struct DoorbellWatch {
    ptr: NonNull<shim::vgpu_db_watch>,
}

// SAFETY: The watch is reference counted and locks its own state; any
// thread may use or release it.
unsafe impl Send for DoorbellWatch {}
// SAFETY: As above: every operation takes the watch's own locks.
unsafe impl Sync for DoorbellWatch {}

/// `rung` for a target of type `T`.
///
/// # Safety
///
/// `target` is an `Arc<T>` pointer the calling watch holds.
unsafe extern "C" fn doorbell_rung<T: DoorbellTarget>(
    target: *mut c_void,
    watch: kernel::ffi::c_ulong,
    offset: kernel::ffi::c_ulong,
) {
    // SAFETY: The watch keeps its reference to the target while it calls.
    let t = unsafe { &*target.cast_const().cast::<T>() };
    t.rung(watch as usize, offset as usize);
}

/// `release` for a target of type `T`.
///
/// # Safety
///
/// `target` came from `Arc::into_raw` and is released once, here.
unsafe extern "C" fn doorbell_release<T: DoorbellTarget>(target: *mut c_void) {
    // SAFETY: The reference `DoorbellWatch::new` gave the watch.
    drop(unsafe { Arc::<T>::from_raw(target.cast_const().cast::<T>()) });
}

impl DoorbellWatch {
    /// A watch over `pages` (at most 4) that tells `target`.
    pub(crate) fn new<T: DoorbellTarget>(pages: &SharedPages, target: Arc<T>) -> Result<Self> {
        let mut ptrs = KVVec::with_capacity(pages.pages.len(), GFP_KERNEL)?;
        for page in pages.pages.iter() {
            ptrs.push(page.as_ptr(), GFP_KERNEL)?;
        }
        let raw = Arc::into_raw(target);
        // SAFETY: `ptrs` holds valid pages for the call (the watch takes
        // its own references); `raw` is an `Arc<T>` the watch owns from
        // now on, which the two callbacks expect.
        let w = unsafe {
            shim::vgpu_shim_db_watch_new(
                ptrs.as_mut_ptr(),
                ptrs.len() as kernel::ffi::c_ulong,
                raw.cast_mut().cast(),
                Some(doorbell_rung::<T>),
                Some(doorbell_release::<T>),
            )
        };
        match NonNull::new(w) {
            // INVARIANT: A new watch with one reference, ours.
            Some(ptr) => Ok(DoorbellWatch { ptr }),
            None => {
                // SAFETY: The shim took nothing: the reference is ours.
                drop(unsafe { Arc::from_raw(raw) });
                Err(ENOMEM)
            }
        }
    }

    /// What [`DoorbellTarget::rung`] names this watch by.
    pub(crate) fn id(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    /// Maps the pages into the `/dev/kfd` VMA rkfd is setting up, which
    /// must be exactly as large (`EINVAL` otherwise), read-only until
    /// written (the first write traps).
    pub(crate) fn mmap(&self, vma: &super::kfd::MmapVma<'_>) -> Result {
        // SAFETY: The watch is live (invariant); `vma` is valid for the
        // call (its invariant), its mm's mmap_lock held for writing.
        super::to_result(unsafe { shim::vgpu_shim_db_watch_mmap(self.ptr.as_ptr(), vma.as_ptr().cast()) })
    }

    /// Write-protects the pages' user mappings so that the next write
    /// calls the target.  `EAGAIN`: a page was written (trapped) less than
    /// `holdoff_ns` ago, left writable; `EBUSY`: mapped more ways than the
    /// watch tracks.  Either way the caller must poll.  Takes the pages'
    /// locks and the mappings' rmap locks: call with no lock held that
    /// [`DoorbellTarget::rung`] takes.
    pub(crate) fn arm(&self, holdoff_ns: u64) -> Result {
        // SAFETY: The watch is live (invariant).
        super::to_result(unsafe { shim::vgpu_shim_db_watch_arm(self.ptr.as_ptr(), holdoff_ns) })
    }
}

impl Drop for DoorbellWatch {
    fn drop(&mut self) {
        // SAFETY: Our reference (invariant), given back once.
        unsafe { shim::vgpu_shim_db_watch_put(self.ptr.as_ptr()) };
    }
}

/// Pages of the current process pinned for a USERPTR object
/// (`pin_user_pages_fast(FOLL_WRITE | FOLL_LONGTERM)`); unpinned (and
/// marked dirty: the GPU may have written them) when dropped.
///
/// # Invariants
///
/// Every entry of `pages` is a page pinned once by `vgpu_shim_pin_user`
/// and not yet unpinned.
pub(crate) struct PinnedPages {
    pages: KVVec<*mut kernel::bindings::page>,
}

// SAFETY: Pinned pages may be used and unpinned from any thread.
unsafe impl Send for PinnedPages {}
// SAFETY: `&PinnedPages` only reads page frame numbers.
unsafe impl Sync for PinnedPages {}

impl PinnedPages {
    /// Pins `count` pages of the current process's memory from `user_addr`
    /// (page aligned).  `EFAULT` if any of them is not mapped writable;
    /// then nothing stays pinned.
    pub(crate) fn pin(user_addr: u64, count: usize) -> Result<Self> {
        let start = kernel::ffi::c_ulong::try_from(user_addr).map_err(|_| EFAULT)?;
        let mut pages = KVVec::from_elem(core::ptr::null_mut(), count, GFP_KERNEL)?;
        // SAFETY: `pages` has room for `count` pointers; the shim pins in the
        // current mm (or fails without one) and leaves nothing pinned on error.
        super::to_result(unsafe {
            shim::vgpu_shim_pin_user(start, count as kernel::ffi::c_ulong, pages.as_mut_ptr())
        })?;
        // INVARIANT: all `count` pages were pinned.
        Ok(PinnedPages { pages })
    }

    /// The page frame number of page `index`.
    pub(crate) fn pfn(&self, index: usize) -> Option<u64> {
        let page = *self.pages.get(index)?;
        // SAFETY: A pinned page (type invariant) stays valid.
        Some(unsafe { shim::vgpu_shim_page_pfn(page) } as u64)
    }
}

impl Drop for PinnedPages {
    fn drop(&mut self) {
        // SAFETY: By the type invariant each page is pinned once; this is
        // the one unpin.
        unsafe {
            shim::vgpu_shim_unpin_user(self.pages.as_mut_ptr(), self.pages.len() as kernel::ffi::c_ulong)
        };
    }
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
