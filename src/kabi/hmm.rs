// SPDX-License-Identifier: GPL-2.0

//! The kernel's HMM machinery for SVM (`shim/rkfd_hmm.c`) behind a safe
//! API for `crate::svm`: a GPU's VRAM as device-private pages
//! ([`VramPagemap`]) with migration, one `mmu_interval_notifier` per range
//! ([`NotifierSlot`] allocated ahead, registered into an [`HmmRange`])
//! with `hmm_range_fault` + map, the mm's `mmap_lock` ([`MmRead`]), GPU VMs
//! named by their identity ([`VmId`]), the SVM workqueue, and the
//! upcalls the shim makes (counters, invalidation through the
//! [`Invalidate`] trait).  Every raw pointer and `unsafe` block of SVM is
//! here.
//!
//! C: upstream `kfd_migrate.c` and the HMM half of `kfd_svm.c`.

use core::{marker::PhantomData, ptr::NonNull};

use kernel::{
    ffi::{c_long, c_ulong, c_void},
    mm::MmWithUser,
    prelude::*,
    sync::{Arc, ArcBorrow},
    workqueue::Queue,
};

use super::kgd::{KgdDevice, KgdVm};

/// A process's mm with its `mmap_lock` held, for reading (hmm_range_fault,
/// migration) or writing (creating ranges: `mmu_interval_notifier_insert_locked`
/// needs it, as upstream creates ranges under `mmap_write_lock`).  Unlocked
/// on drop, on the same thread (hence not `Send`).
pub(crate) struct MmRead<'a> {
    mm: &'a MmWithUser,
    write: bool,
    _not_send: core::marker::PhantomData<*mut ()>,
}

impl<'a> MmRead<'a> {
    /// Takes `mmap_lock` for reading.
    pub(crate) fn new(mm: &'a MmWithUser) -> Self {
        // SAFETY: `mm` has users; unlocked in `drop`.
        unsafe { shim::rkfd_shim_mmap_lock(mm.as_raw(), false) };
        MmRead { mm, write: false, _not_send: core::marker::PhantomData }
    }

    /// Takes `mmap_lock` for writing.
    pub(crate) fn new_write(mm: &'a MmWithUser) -> Self {
        // SAFETY: `mm` has users; unlocked in `drop`.
        unsafe { shim::rkfd_shim_mmap_lock(mm.as_raw(), true) };
        MmRead { mm, write: true, _not_send: core::marker::PhantomData }
    }

    /// Whether it is held for writing.
    pub(crate) fn is_write(&self) -> bool {
        self.write
    }

    /// Write to read (`mmap_write_downgrade`).
    pub(crate) fn downgrade(&mut self) {
        if self.write {
            // SAFETY: We hold it for writing.
            unsafe { shim::rkfd_shim_mmap_downgrade(self.mm.as_raw()) };
            self.write = false;
        }
    }

    /// The mm.
    pub(crate) fn mm(&self) -> &'a MmWithUser {
        self.mm
    }

    /// The VMA at `addr`: its bounds, `EFAULT` if none or if SVM may not
    /// use it (`VM_IO | VM_PFNMAP | VM_MIXEDMAP`, upstream
    /// `svm_range_check_vm`).
    pub(crate) fn usable_vma(&self, addr: u64) -> Result<(u64, u64)> {
        let (mut start, mut end, mut usable) = (0u64, 0u64, false);
        // SAFETY: We hold `mmap_lock`; valid out pointers.
        super::to_result(unsafe {
            shim::rkfd_shim_vma_at(self.mm.as_raw(), addr, &mut start, &mut end, &mut usable)
        })?;
        if !usable {
            return Err(EFAULT);
        }
        Ok((start, end))
    }

    /// Whether every byte of `[start, end)` lies in VMAs SVM may use
    /// (upstream `svm_range_is_valid`'s VMA walk).
    pub(crate) fn all_usable(&self, start: u64, end: u64) -> bool {
        let mut at = start;
        while at < end {
            match self.usable_vma(at) {
                Ok((_, ve)) => at = ve,
                Err(_) => return false,
            }
        }
        true
    }

    /// The first VMA ending after `addr` (`find_vma`): its bounds.
    pub(crate) fn vma_from(&self, addr: u64) -> Option<(u64, u64)> {
        let (mut start, mut end) = (0u64, 0u64);
        // SAFETY: We hold `mmap_lock`; valid out pointers.
        let r = unsafe { shim::rkfd_shim_vma_next(self.mm.as_raw(), addr, &mut start, &mut end) };
        (r == 0).then_some((start, end))
    }

    /// Calls `f(start, end)` for each part of `[start, end)` that no VMA
    /// covers, in order.
    pub(crate) fn for_each_hole(&self, start: u64, end: u64, mut f: impl FnMut(u64, u64)) {
        let mut at = start;
        while at < end {
            match self.vma_from(at) {
                Some((vs, ve)) if vs <= at => at = ve,
                Some((vs, _)) if vs < end => {
                    f(at, vs);
                    at = vs;
                }
                _ => {
                    f(at, end);
                    at = end;
                }
            }
        }
    }

    /// Calls `f(start, end)` for each part of `[start, end)` that a VMA
    /// covers, in order (the complement of [`Self::for_each_hole`]).
    pub(crate) fn for_each_vma_piece(&self, start: u64, end: u64, mut f: impl FnMut(u64, u64)) {
        let mut at = start;
        while at < end {
            let Some((vs, ve)) = self.vma_from(at) else { break };
            if vs >= end {
                break;
            }
            let (s, e) = (at.max(vs), ve.min(end));
            f(s, e);
            at = e;
        }
    }

    /// Whether the VMA at `addr` is the initial heap (brk) or stack
    /// (upstream `vma_is_initial_heap || vma_is_initial_stack`).
    pub(crate) fn is_heap_stack(&self, addr: u64) -> bool {
        // SAFETY: We hold `mmap_lock`.
        unsafe { shim::rkfd_shim_vma_heap_stack(self.mm.as_raw(), addr) }
    }
}

impl Drop for MmRead<'_> {
    fn drop(&mut self) {
        // SAFETY: We hold it in this mode.
        unsafe { shim::rkfd_shim_mmap_unlock(self.mm.as_raw(), self.write) };
    }
}

use super::shim_ffi as shim;

/// The SVM workqueue's lifetime: created by [`SvmWq::new`] at module init,
/// drained and destroyed on drop (module exit, when no process exists).
pub(crate) struct SvmWq(());

impl SvmWq {
    /// Creates the SVM workqueue.
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: Called once from module init.
        super::to_result(unsafe { shim::rkfd_shim_svm_wq_init() })?;
        Ok(SvmWq(()))
    }
}

impl Drop for SvmWq {
    fn drop(&mut self) {
        // SAFETY: Module exit: no process exists, so nothing queues work
        // any more; destroying drains what is queued.
        unsafe { shim::rkfd_shim_svm_wq_exit() }
    }
}

/// The SVM workqueue; drained at module exit.
pub(crate) fn wq() -> Option<&'static Queue> {
    // SAFETY: Reads the pointer set at module init.
    let q = unsafe { shim::rkfd_shim_svm_wq() };
    if q.is_null() {
        return None;
    }
    // SAFETY: The queue lives from module init to module exit, and no rkfd
    // code runs after module exit.
    Some(unsafe { Queue::from_raw(q) })
}

/// Makes `mm` ready for interval notifiers (sets up its interval tree,
/// taking `mmap_lock` for writing): once per process, before any range.
pub(crate) fn prepare_mm(mm: &MmWithUser) -> Result {
    // SAFETY: `mm` has users (it is `MmWithUser`); the caller holds no
    // `mmap_lock`.
    super::to_result(unsafe { shim::rkfd_shim_svm_mm_prepare(mm.as_raw()) })
}

/// Converts a `long` result (count or `-errno`).
fn count_result(ret: c_long) -> Result<u64> {
    if ret < 0 {
        Err(Error::from_errno(ret as i32))
    } else {
        Ok(ret as u64)
    }
}

/// One GPU's VRAM as `MEMORY_DEVICE_PRIVATE` pages: its `dev_pagemap`
/// (upstream `svm_migrate_init`, `adev->kfd.pgmap`), through which pages
/// migrate between system memory and this VRAM.  Dropping it waits until
/// every device page is free.
///
/// # Invariants
///
/// `raw` is a live `rkfd_svm_dev` whose `kgd` and `calls` stay valid while
/// it exists (the device is not exited before it is dropped).
pub(crate) struct VramPagemap {
    raw: NonNull<shim::rkfd_svm_dev>,
    /// The device's handle: only VMs of this device are mapped through it.
    kgd: *mut c_void,
}

// SAFETY: The shim's device state is immutable after init; migration and
// mapping calls may be made from any thread.
unsafe impl Send for VramPagemap {}
// SAFETY: As for `Send`.
unsafe impl Sync for VramPagemap {}

impl VramPagemap {
    /// Registers `vram_size` bytes of `kgd`'s VRAM as device-private pages;
    /// `EOPNOTSUPP` if the driver has no SVM calls.
    pub(crate) fn new(kgd: &KgdDevice, vram_size: u64) -> Result<Self> {
        if !kgd.svm_supported() {
            return Err(EOPNOTSUPP);
        }
        let (k, calls) = kgd.raw();
        let mut raw = core::ptr::null_mut();
        // SAFETY: `k`/`calls` are the driver's live handles (valid until the
        // device exits, which drops the `Device` owning this); `raw` is a
        // valid out pointer.
        super::to_result(unsafe { shim::rkfd_shim_svm_dev_init(k, calls, vram_size, &mut raw) })?;
        // INVARIANT: Initialised above.
        Ok(VramPagemap { raw: NonNull::new(raw).ok_or(ENOMEM)?, kgd: k.cast() })
    }

    /// Migrates the system pages of `[start, end)` to this GPU's VRAM,
    /// accounting them to `counters`; returns the pages moved.  `ENOMEM`:
    /// VRAM is exhausted and nothing (more) moved; `ENOSPC`: it ran out
    /// part way; `EFAULT`: a hole without a VMA.
    pub(crate) fn migrate_to_vram<T: PageOwner>(
        &self,
        mm: &MmRead<'_>,
        start: u64,
        end: u64,
        counters: &Arc<T>,
    ) -> Result<u64> {
        let mm = mm.mm();
        // SAFETY: `mm` is read-locked by the guard; `counters` outlives the
        // call, and every device page takes its own reference
        // (`rkfd_rs_svm_counters_get`).
        count_result(unsafe {
            shim::rkfd_shim_svm_migrate_to_vram(
                mm.as_raw(),
                self.raw.as_ptr(),
                start,
                end,
                Arc::as_ptr(counters).cast_mut().cast(),
            )
        })
    }

    /// Migrates this GPU's device pages of `[start, end)` back to system
    /// memory; returns the pages moved.  `EFAULT`: a hole without a VMA
    /// (pages before it moved); `ENOMEM`: no system memory.
    pub(crate) fn migrate_to_ram(&self, mm: &MmRead<'_>, start: u64, end: u64) -> Result<u64> {
        let mm = mm.mm();
        // SAFETY: `mm` is read-locked by the guard.
        count_result(unsafe {
            shim::rkfd_shim_svm_migrate_to_ram(mm.as_raw(), self.raw.as_ptr(), start, end)
        })
    }
}

impl VramPagemap {
    /// Whether `vm` is a VM of this pagemap's GPU.
    fn owns(&self, vm: &KgdVm) -> bool {
        core::ptr::eq(vm.kgd_raw().cast::<c_void>(), self.kgd)
    }
}

impl Drop for VramPagemap {
    fn drop(&mut self) {
        // SAFETY: Live (type invariant); last use.
        unsafe { shim::rkfd_shim_svm_dev_fini(self.raw.as_ptr()) };
    }
}

/// What the invalidate callback of an [`HmmRange`] calls, with the range's
/// lock held (so it must not sleep on anything an invalidation waits for,
/// nor allocate with reclaim).
pub(crate) trait Invalidate: Sync + Send + Sized {
    /// CPU mappings of `[start, end)` of the range starting at `range_start`
    /// changed; `unmap`: they are gone (`munmap`); `migrate`: a migration
    /// moves the pages (`MMU_NOTIFY_MIGRATE`).
    fn invalidate(this: ArcBorrow<'_, Self>, range_start: u64, start: u64, end: u64, unmap: bool, migrate: bool);
}

/// The identity of a GPU VM handle, as a GPU driver passes it back
/// (`kgd2kfd_svm_fault`): compared, never dereferenced.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct VmId(usize);

impl VmId {
    /// The identity of the raw handle `vm`.
    pub(crate) fn of_raw(vm: *const c_void) -> Self {
        VmId(vm as usize)
    }
}

/// An interval notifier allocated and not registered yet (see
/// [`NotifierSlot::register`]): what an operation on a range tree
/// allocates before it changes the tree, so that giving every new or
/// reshaped range its notifier afterwards cannot fail for want of memory.
///
/// # Invariants
///
/// `raw` is a live, not inserted shim range whose cookie is `tramp`, which
/// holds a reference on its owner.
pub(crate) struct NotifierSlot {
    raw: NonNull<shim::rkfd_svm_range>,
    tramp: NonNull<Trampoline>,
}

// SAFETY: Owned memory, used through thread-safe kernel calls.
unsafe impl Send for NotifierSlot {}
// SAFETY: As for `Send`.
unsafe impl Sync for NotifierSlot {}

impl NotifierSlot {
    /// A notifier whose callback will call `T::invalidate(owner, ..)`; it
    /// holds a reference on `owner` until it is dropped.
    pub(crate) fn new<T: Invalidate>(owner: &Arc<T>) -> Result<Self> {
        // One allocation per notifier: the shim keeps the trampoline
        // beside the notifier (this runs once per new range of a SET_ATTR).
        const { assert!(core::mem::align_of::<Trampoline>() <= 8 && core::mem::size_of::<Trampoline>() <= 64) };
        let mut raw = core::ptr::null_mut();
        let mut space = core::ptr::null_mut();
        // SAFETY: Valid out pointers; the size is the shim's bound.
        let ret = unsafe { shim::rkfd_shim_svm_range_alloc(core::mem::size_of::<Trampoline>(), &mut raw, &mut space) };
        let (Some(raw), Some(space)) = (NonNull::new(raw), NonNull::new(space.cast::<Trampoline>())) else {
            return Err(if ret < 0 { Error::from_errno(ret) } else { ENOMEM });
        };
        let cookie = Arc::into_raw(owner.clone()).cast::<c_void>();
        // SAFETY: `space` is the range's own cookie space: at least
        // `size_of::<Trampoline>()` bytes, 8-aligned (checked above), not
        // in use; the range is not inserted, so no callback reads it yet.
        unsafe { space.as_ptr().write(Trampoline { cookie, call: invalidate_tramp::<T>, put: put_tramp::<T> }) };
        // INVARIANT: Allocated above, its cookie the trampoline just
        // written (which holds the owner reference); not inserted.
        Ok(NotifierSlot { raw, tramp: space })
    }

    /// Registers the notifier over `[start, end)` of `mm`, which must be
    /// held for writing (`mmu_interval_notifier_insert_locked`, as upstream
    /// `svm_range_add_notifier_locked`).  It allocates nothing (the mm was
    /// prepared by [`prepare_mm`]), so only wrong arguments fail: the slot
    /// comes back with the error.
    pub(crate) fn register(self, mm: &MmRead<'_>, start: u64, end: u64) -> Result<HmmRange, (Error, Self)> {
        if !mm.is_write() {
            return Err((EDEADLK, self));
        }
        // SAFETY: Live, not inserted (invariant); `mm` has users and its
        // `mmap_lock` is held for writing (checked above); the shim checks
        // the bounds and leaves the range not inserted on failure.
        let ret = unsafe { shim::rkfd_shim_svm_range_insert(self.raw.as_ptr(), mm.mm().as_raw(), start, end) };
        if ret < 0 {
            return Err((Error::from_errno(ret), self));
        }
        let slot = core::mem::ManuallyDrop::new(self);
        // INVARIANT: Inserted over `[start, end)` with the slot's trampoline;
        // the slot's ownership moves to the range (not dropped above).
        Ok(HmmRange { raw: slot.raw, start, end })
    }
}

impl Drop for NotifierSlot {
    fn drop(&mut self) {
        // SAFETY: Live and not inserted (invariant), its cookie the
        // trampoline at `tramp`: freeing waits for nothing, and the
        // trampoline is read out first and released once.
        unsafe { Trampoline::free_with(self.raw.as_ptr(), self.tramp.as_ptr()) };
    }
}

/// One `mmu_interval_notifier` over `[start, end)` of a process's mm, with
/// its lock (upstream: a `svm_range`'s `notifier` and `lock`), registered
/// by [`NotifierSlot::register`].  Removed on drop, which waits for running
/// callbacks and then drops the owner reference.
///
/// # Invariants
///
/// `raw` is a live, inserted shim range whose cookie is a live
/// [`Trampoline`] owned by this value.
pub(crate) struct HmmRange {
    raw: NonNull<shim::rkfd_svm_range>,
    start: u64,
    end: u64,
}

// SAFETY: The shim range is used through thread-safe kernel calls.
unsafe impl Send for HmmRange {}
// SAFETY: As for `Send`.
unsafe impl Sync for HmmRange {}

impl HmmRange {
    /// The first address.
    pub(crate) fn start(&self) -> u64 {
        self.start
    }

    /// The end (exclusive).
    pub(crate) fn end(&self) -> u64 {
        self.end
    }

    /// `hmm_range_fault` over `[start, end)` (faulting pages in, writable
    /// if `write`), then maps the result into `vm` of `pagemap`'s GPU under
    /// the range's lock unless an invalidation raced (`EBUSY`: try again).
    /// Returns the notifier sequence the mapping is valid for.  `EINVAL`:
    /// `vm` is not a VM of `pagemap`'s GPU.
    pub(crate) fn map(
        &self,
        _mm: &MmRead<'_>,
        pagemap: &VramPagemap,
        vm: &KgdVm,
        start: u64,
        end: u64,
        write: bool,
    ) -> Result<u64> {
        if !pagemap.owns(vm) {
            return Err(EINVAL);
        }
        let mut seq: c_ulong = 0;
        // SAFETY: Live range and pagemap (invariants); `vm` is live (we
        // borrow it) and of the pagemap's GPU (checked above); mmap_lock is
        // read-held (the guard); the shim checks the bounds.
        super::to_result(unsafe {
            shim::rkfd_shim_svm_range_map(
                self.raw.as_ptr(),
                pagemap.raw.as_ptr(),
                vm.raw(),
                start,
                end,
                write,
                &mut seq,
            )
        })?;
        Ok(seq as u64)
    }

    /// Unmaps `[start, end)` from `vm` under the range's lock; nothing if
    /// `vm` is not a VM of `pagemap`'s GPU.
    pub(crate) fn unmap(&self, pagemap: &VramPagemap, vm: &KgdVm, start: u64, end: u64) {
        if !pagemap.owns(vm) {
            return;
        }
        // SAFETY: Live range and pagemap (invariants), live VM (borrowed)
        // of the pagemap's GPU (checked above).
        unsafe { shim::rkfd_shim_svm_range_unmap(self.raw.as_ptr(), pagemap.raw.as_ptr(), vm.raw(), start, end) };
    }

    /// Where the pages of `[start, end)` are, read from the CPU page table
    /// without faulting anything: `(pages in pagemap's VRAM, pages present
    /// in system memory)` (upstream keeps this as `prange->actual_loc` /
    /// `vram_pages`).
    pub(crate) fn locate(&self, _mm: &MmRead<'_>, pagemap: &VramPagemap, start: u64, end: u64) -> Result<(u64, u64)> {
        let (mut dev, mut ram) = (0u64, 0u64);
        // SAFETY: Live range and pagemap (invariants); mmap_lock is
        // read-held (the guard); the shim checks the bounds; valid out
        // pointers.
        super::to_result(unsafe {
            shim::rkfd_shim_svm_range_locate(self.raw.as_ptr(), pagemap.raw.as_ptr(), start, end, &mut dev, &mut ram)
        })?;
        Ok((dev, ram))
    }

    /// Whether no invalidation happened since `seq` (from [`Self::map`]).
    pub(crate) fn seq_valid(&self, seq: u64) -> bool {
        // SAFETY: Live range (invariant).
        unsafe { shim::rkfd_shim_svm_range_seq_valid(self.raw.as_ptr(), seq as c_ulong) }
    }
}

impl Drop for HmmRange {
    fn drop(&mut self) {
        // SAFETY: Live range (invariant); removal waits for callbacks, after
        // which the trampoline is unused and released once.  The trampoline
        // pointer is read back before the C side is freed.
        unsafe {
            let tramp = shim::rkfd_shim_svm_range_cookie(self.raw.as_ptr()).cast::<Trampoline>();
            Trampoline::free_with(self.raw.as_ptr(), tramp);
        }
    }
}

/// The cookie the shim holds: a reference on the owner, type-erased, and
/// the functions that use it.
struct Trampoline {
    /// `Arc::into_raw` of an `Arc<T>`, for the `T` of `call` and `put`.
    cookie: *const c_void,
    /// `invalidate_tramp::<T>` for the `T` behind `cookie`.
    // SAFETY: sound to call with `cookie` only, while this trampoline is
    // alive (it holds the reference `cookie` stands for).
    call: unsafe fn(*const c_void, u64, u64, u64, bool, bool),
    /// `put_tramp::<T>`: gives the reference back.
    // SAFETY: sound to call with `cookie` only, once (`Trampoline::free_with`).
    put: unsafe fn(*const c_void),
}

impl Trampoline {
    /// Frees the shim range `raw` (waiting for its running callbacks if it
    /// is inserted), then gives back the reference of its trampoline
    /// `tramp`, which lives in the range's allocation: read out first.
    ///
    /// # Safety
    ///
    /// `raw` is a live shim range whose cookie is `tramp`, written by
    /// [`NotifierSlot::new`]; nothing uses either afterwards; called once.
    unsafe fn free_with(raw: *mut shim::rkfd_svm_range, tramp: *mut Trampoline) {
        // SAFETY: The caller's contract: a live, initialised trampoline;
        // the copy is the only one used from now on.
        let t = unsafe { tramp.read() };
        // SAFETY: The caller's contract; removal waits for callbacks, which
        // use the trampoline's memory until then.
        unsafe { shim::rkfd_shim_svm_range_free(raw) };
        // SAFETY: `put` matches `cookie`'s type (`NotifierSlot::new`); once.
        unsafe { (t.put)(t.cookie) };
    }
}

/// Calls `T::invalidate` on a type-erased cookie.
///
/// # Safety
///
/// `cookie` is `Arc::into_raw` of an `Arc<T>` whose reference is still held.
unsafe fn invalidate_tramp<T: Invalidate>(
    cookie: *const c_void,
    range_start: u64,
    start: u64,
    end: u64,
    unmap: bool,
    migrate: bool,
) {
    // SAFETY: The caller's contract: the reference keeps it alive.
    let t = unsafe { ArcBorrow::from_raw(cookie.cast::<T>()) };
    T::invalidate(t, range_start, start, end, unmap, migrate);
}

/// Gives back the reference a trampoline holds.
///
/// # Safety
///
/// `cookie` is `Arc::into_raw` of an `Arc<T>`; called once for it.
unsafe fn put_tramp<T: Invalidate>(cookie: *const c_void) {
    // SAFETY: The caller's contract.
    drop(unsafe { Arc::from_raw(cookie.cast::<T>()) });
}


/// The invalidate callback of a range (`rkfd_svm_invalidate`), under the
/// range's lock.
///
/// # Safety
///
/// Called by the shim with the cookie of a live, inserted range.
#[no_mangle]
unsafe extern "C" fn rkfd_rs_svm_invalidate(
    cookie: *mut c_void,
    range_start: u64,
    start: u64,
    end: u64,
    unmap: bool,
    migrate: bool,
) {
    // SAFETY: The cookie is the range's live trampoline.
    let t = unsafe { &*cookie.cast::<Trampoline>() };
    // SAFETY: The trampoline holds its reference while the range exists.
    unsafe { (t.call)(t.cookie, range_start, start, end, unmap, migrate) };
}

/// What device pages report to the process whose migration created them
/// (upcalls from the shim, upstream's `svm_bo` and `pdd` counters): bytes
/// of device pages it holds (`svm_allocated`), pages moved in and out
/// (`counters_<gpuid>/page_in`, `page_out`), and a CPU fault's migration
/// back (an SMI event).  Each device page holds an `Arc` of its owner.
/// Called in any context a page is freed or a CPU fault runs: no sleeping
/// locks.
///
/// # Safety
///
/// The implementing type is `#[repr(C)]` and its first field is the
/// [`PageOwnerOps`] of [`PageOwnerOps::of::<Self>`]: the shim's upcalls,
/// which get a type-erased pointer, find their functions through it.
pub(crate) unsafe trait PageOwner: Send + Sync + Sized {
    /// A device page of `bytes` now holds a reference.
    fn device_bytes_added(&self, bytes: u64);
    /// A device page of `bytes` was freed.
    fn device_bytes_freed(&self, bytes: u64);
    /// `pages` pages migrated to VRAM.
    fn paged_in(&self, pages: u64);
    /// `pages` pages migrated back to system memory.
    fn paged_out(&self, pages: u64);
    /// A CPU fault migrated `[start, end)` back to system memory, starting
    /// at boot-time `t0_ns`; `ret` is the pages moved or a negative errno.
    fn cpu_migrated(&self, start: u64, end: u64, t0_ns: u64, ret: i64);
}

/// The functions of one [`PageOwner`] type, for the shim's upcalls.
// SAFETY: each is `owner_*::<T>` for one `T` (`VtableOf<T>`), sound to
// call only with a pointer to a live `T` as its `# Safety` section says;
// the vtable is reached only through that `T`'s first field (`vtable`).
struct PageOwnerVtable {
    get: unsafe fn(*const c_void, u64) -> *const c_void,
    put: unsafe fn(*const c_void, u64),
    page_in: unsafe fn(*const c_void, u64),
    page_out: unsafe fn(*const c_void, u64),
    cpu_migrated: unsafe fn(*const c_void, u64, u64, u64, i64),
}

/// The first field of a [`PageOwner`]: its functions.
#[repr(transparent)]
pub(crate) struct PageOwnerOps(&'static PageOwnerVtable);

/// `T`'s [`PageOwnerVtable`] as a constant (promoted to a static).
struct VtableOf<T>(PhantomData<T>);

impl<T: PageOwner> VtableOf<T> {
    const VTABLE: PageOwnerVtable = PageOwnerVtable {
        get: owner_get::<T>,
        put: owner_put::<T>,
        page_in: owner_page_in::<T>,
        page_out: owner_page_out::<T>,
        cpu_migrated: owner_cpu_migrated::<T>,
    };
}

impl PageOwnerOps {
    /// The field a [`PageOwner`] `T` starts with.
    pub(crate) const fn of<T: PageOwner>() -> Self {
        PageOwnerOps(&VtableOf::<T>::VTABLE)
    }
}

/// # Safety
///
/// `p` is `Arc::as_ptr` of a live `Arc<T>`.
unsafe fn owner_get<T: PageOwner>(p: *const c_void, bytes: u64) -> *const c_void {
    // SAFETY: The caller's contract.
    let c: Arc<T> = unsafe { ArcBorrow::from_raw(p.cast::<T>()) }.into();
    c.device_bytes_added(bytes);
    Arc::into_raw(c).cast()
}

/// # Safety
///
/// `p` came from `owner_get::<T>`; called once for it.
unsafe fn owner_put<T: PageOwner>(p: *const c_void, bytes: u64) {
    // SAFETY: The caller's contract: this reference is ours.
    let c = unsafe { Arc::from_raw(p.cast::<T>()) };
    c.device_bytes_freed(bytes);
}

/// # Safety
///
/// `p` points to a live `T`.
unsafe fn owner_page_in<T: PageOwner>(p: *const c_void, pages: u64) {
    // SAFETY: The caller's contract.
    unsafe { &*p.cast::<T>() }.paged_in(pages);
}

/// # Safety
///
/// `p` points to a live `T`.
unsafe fn owner_page_out<T: PageOwner>(p: *const c_void, pages: u64) {
    // SAFETY: The caller's contract.
    unsafe { &*p.cast::<T>() }.paged_out(pages);
}

/// # Safety
///
/// `p` points to a live `T`.
unsafe fn owner_cpu_migrated<T: PageOwner>(p: *const c_void, start: u64, end: u64, t0_ns: u64, ret: i64) {
    // SAFETY: The caller's contract.
    unsafe { &*p.cast::<T>() }.cpu_migrated(start, end, t0_ns, ret);
}

/// The functions of the [`PageOwner`] at `p`.
///
/// # Safety
///
/// `p` points to a live [`PageOwner`] (the shim passes back only pointers
/// [`VramPagemap::migrate_to_vram`] and `owner_get` gave it).
unsafe fn vtable(p: *const c_void) -> &'static PageOwnerVtable {
    // SAFETY: The caller's contract, and `PageOwner`'s: the value starts
    // with its `PageOwnerOps`.
    unsafe { (*p.cast::<PageOwnerOps>()).0 }
}

/// A device page takes a reference on its owner and adds its bytes.
///
/// # Safety
///
/// `counters` is a pointer [`VramPagemap::migrate_to_vram`] passed: a live
/// `Arc` of a [`PageOwner`].
#[no_mangle]
unsafe extern "C" fn rkfd_rs_svm_counters_get(counters: *mut c_void, bytes: u64) -> *mut c_void {
    // SAFETY: The caller's contract; the function matches the type.
    unsafe { (vtable(counters).get)(counters, bytes) }.cast_mut()
}

/// A device page is freed: gives its reference back.  Any context.
///
/// # Safety
///
/// `counters` came from `rkfd_rs_svm_counters_get`; called once for it.
#[no_mangle]
unsafe extern "C" fn rkfd_rs_svm_counters_put(counters: *mut c_void, bytes: u64) {
    // SAFETY: The caller's contract; the function matches the type.
    unsafe { (vtable(counters).put)(counters, bytes) };
}

/// Pages migrated to VRAM.
///
/// # Safety
///
/// `counters` points to a live [`PageOwner`] the shim was given.
#[no_mangle]
unsafe extern "C" fn rkfd_rs_svm_count_page_in(counters: *mut c_void, pages: u64) {
    // SAFETY: The caller's contract; the function matches the type.
    unsafe { (vtable(counters).page_in)(counters, pages) };
}

/// Pages migrated back to system memory.
///
/// # Safety
///
/// `counters` points to a live [`PageOwner`] the shim was given.
#[no_mangle]
unsafe extern "C" fn rkfd_rs_svm_count_page_out(counters: *mut c_void, pages: u64) {
    // SAFETY: The caller's contract; the function matches the type.
    unsafe { (vtable(counters).page_out)(counters, pages) };
}

/// A CPU fault migrated `[start, end)` from a device page's VRAM back to
/// system memory (`dev_pagemap_ops.migrate_to_ram`), starting at boot-time
/// `t0_ns`; `ret` is the pages moved or a negative errno.  Any context
/// the fault handler runs in.
///
/// # Safety
///
/// `counters` came from `rkfd_rs_svm_counters_get` and is still held.
#[no_mangle]
unsafe extern "C" fn rkfd_rs_svm_cpu_migrated(counters: *mut c_void, start: u64, end: u64, t0_ns: u64, ret: c_long) {
    // SAFETY: The caller's contract; the function matches the type.
    unsafe { (vtable(counters).cpu_migrated)(counters, start, end, t0_ns, ret as i64) };
}
