// SPDX-License-Identifier: GPL-2.0

//! The kernel's HMM machinery for SVM (`shim/rkfd_hmm.c`): device-private
//! VRAM ([`SvmDev`]), migration, one `mmu_interval_notifier` per range
//! ([`HmmRange`]) with `hmm_range_fault` + map, the SVM workqueue, and the
//! upcalls the shim makes (counters, invalidation).
//!
//! C: upstream `kfd_migrate.c` and the HMM half of `kfd_svm.c`.

use core::ptr::NonNull;

use kernel::{
    ffi::{c_long, c_ulong, c_void},
    mm::MmWithUser,
    prelude::*,
    sync::{atomic::Relaxed, Arc, ArcBorrow},
    workqueue::Queue,
};

use super::kgd::{KgdDevice, KgdVm};
use crate::procfs::ProcCounters;

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

    /// Whether the VMA at `addr` is the initial heap (brk) or stack
    /// (upstream `vma_is_initial_heap || vma_is_initial_stack`).
    pub(crate) fn is_heap_stack(&self, addr: u64) -> bool {
        // SAFETY: We hold `mmap_lock`.
        unsafe { shim::rkfd_shim_vma_heap_stack(self.mm.as_raw(), addr) }
    }

    /// Whether a VMA covers `addr`.
    pub(crate) fn has_vma(&self, addr: u64) -> bool {
        let (mut start, mut end, mut usable) = (0u64, 0u64, false);
        // SAFETY: We hold `mmap_lock`; valid out pointers.
        unsafe { shim::rkfd_shim_vma_at(self.mm.as_raw(), addr, &mut start, &mut end, &mut usable) == 0 }
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

/// One GPU's VRAM as `MEMORY_DEVICE_PRIVATE` pages (upstream
/// `svm_migrate_init`).  Dropping it waits until every device page is free.
///
/// # Invariants
///
/// `raw` is a live `rkfd_svm_dev` whose `kgd` and `calls` stay valid while
/// it exists (the device is not exited before it is dropped).
pub(crate) struct SvmDev {
    raw: NonNull<shim::rkfd_svm_dev>,
}

// SAFETY: The shim's device state is immutable after init; migration and
// mapping calls may be made from any thread.
unsafe impl Send for SvmDev {}
// SAFETY: As for `Send`.
unsafe impl Sync for SvmDev {}

impl SvmDev {
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
        Ok(SvmDev { raw: NonNull::new(raw).ok_or(ENOMEM)? })
    }

    /// Migrates the system pages of `[start, end)` to this GPU's VRAM,
    /// accounting them to `counters`; returns the pages moved.  `ENOMEM`:
    /// VRAM is exhausted and nothing (more) moved; `ENOSPC`: it ran out
    /// part way; `EFAULT`: a hole without a VMA.
    pub(crate) fn migrate_to_vram(
        &self,
        mm: &MmRead<'_>,
        start: u64,
        end: u64,
        counters: &Arc<ProcCounters>,
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

impl Drop for SvmDev {
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

/// A VM handle copied for the invalidate callback, which cannot take the
/// process lock that owns the [`KgdVm`].
///
/// # Invariants
///
/// `vm` is a VM of `dev` that is released only after this value is dropped
/// (the SVM state drops these before the process releases its VMs).
pub(crate) struct VmRef {
    dev: Arc<crate::device::Device>,
    vm: NonNull<c_void>,
}

// SAFETY: An opaque handle used through thread-safe kfd2kgd calls.
unsafe impl Send for VmRef {}
// SAFETY: As for `Send`.
unsafe impl Sync for VmRef {}

impl Clone for VmRef {
    /// Another copy, under the same contract as the original (dropped
    /// before the VM is released).
    fn clone(&self) -> Self {
        // INVARIANT: Same VM, same contract.
        VmRef { dev: self.dev.clone(), vm: self.vm }
    }
}

impl VmRef {
    /// A copy of `vm`'s handle.
    ///
    /// # Safety
    ///
    /// The returned value must be dropped before `vm` is released.
    pub(crate) unsafe fn new(dev: &Arc<crate::device::Device>, vm: &KgdVm) -> Self {
        // INVARIANT: The caller's contract.
        VmRef { dev: dev.clone(), vm: NonNull::new(vm.raw()).unwrap_or(NonNull::dangling()) }
    }

    /// The device.
    pub(crate) fn dev(&self) -> &Arc<crate::device::Device> {
        &self.dev
    }

    /// Whether this is the VM behind the raw handle a GPU driver passed back.
    pub(crate) fn is(&self, raw: *const c_void) -> bool {
        core::ptr::eq(self.vm.as_ptr().cast_const(), raw)
    }

    /// kfd2kgd `svm_unmap` of `[start, end)`.
    pub(crate) fn unmap(&self, start: u64, end: u64) {
        // SAFETY: The VM is live (type invariant).
        unsafe {
            self.dev
                .kgd
                .svm_unmap_raw(self.vm.as_ptr(), start, (end - start) >> kernel::page::PAGE_SHIFT)
        };
    }
}

/// One `mmu_interval_notifier` over `[start, end)` of a process's mm, with
/// its lock (upstream: a `svm_range`'s `notifier` and `lock`).  Removed on
/// drop, which waits for running callbacks.
///
/// # Invariants
///
/// `raw` is a live shim range whose cookie is `cookie`, a `T` that outlives
/// this value.
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
    /// Registers a notifier over `[start, end)` of `mm` whose callback calls
    /// `T::invalidate(cookie, ..)`.
    ///
    /// # Safety
    ///
    /// `cookie` is `Arc::as_ptr` of an `Arc<T>` that keeps a reference
    /// until the returned value is dropped.
    pub(crate) unsafe fn new<T: Invalidate>(
        mm: &MmRead<'_>,
        start: u64,
        end: u64,
        cookie: *const T,
    ) -> Result<Self> {
        if !mm.is_write() {
            // `mmu_interval_notifier_insert_locked` needs the write lock.
            return Err(EDEADLK);
        }
        let mm = mm.mm();
        let mut raw = core::ptr::null_mut();
        // The shim stores a thin pointer to a `Callback` slot; we keep the
        // trait object behind a static trampoline per type.
        let tramp = KBox::new(Trampoline { cookie: cookie.cast(), call: invalidate_tramp::<T> }, GFP_KERNEL)?;
        let tramp = KBox::into_raw(tramp);
        // SAFETY: `mm` has users and its `mmap_lock` is held for writing
        // (checked above); the range is page aligned (checked by the shim);
        // the trampoline lives until the range is freed in `drop`.
        let ret = unsafe { shim::rkfd_shim_svm_range_new(mm.as_raw(), start, end, tramp.cast(), &mut raw) };
        if ret < 0 {
            // SAFETY: Not registered: still ours.
            drop(unsafe { KBox::from_raw(tramp) });
            return Err(Error::from_errno(ret));
        }
        // INVARIANT: Registered with a trampoline to `cookie`.
        Ok(HmmRange { raw: NonNull::new(raw).ok_or(ENOMEM)?, start, end })
    }

    /// The first address.
    pub(crate) fn start(&self) -> u64 {
        self.start
    }

    /// The end (exclusive).
    pub(crate) fn end(&self) -> u64 {
        self.end
    }

    /// `hmm_range_fault` over `[start, end)` (faulting pages in, writable
    /// if `write`), then maps the result into `vm` of `dev` under the
    /// range's lock unless an invalidation raced (`EBUSY`: try again).
    /// Returns the notifier sequence the mapping is valid for.
    pub(crate) fn map(
        &self,
        _mm: &MmRead<'_>,
        sdev: &SvmDev,
        vm: &VmRef,
        start: u64,
        end: u64,
        write: bool,
    ) -> Result<u64> {
        let mut seq: c_ulong = 0;
        // SAFETY: Live range and device (invariants); `vm` is live (the
        // `VmRef` invariant); mmap_lock is read-held (the guard); the shim
        // checks the bounds.
        super::to_result(unsafe {
            shim::rkfd_shim_svm_range_map(
                self.raw.as_ptr(),
                sdev.raw.as_ptr(),
                vm.vm.as_ptr(),
                start,
                end,
                write,
                &mut seq,
            )
        })?;
        Ok(seq as u64)
    }

    /// Unmaps `[start, end)` from `vm` under the range's lock.
    pub(crate) fn unmap(&self, sdev: &SvmDev, vm: &VmRef, start: u64, end: u64) {
        // SAFETY: Live range, device and VM (invariants).
        unsafe {
            shim::rkfd_shim_svm_range_unmap(self.raw.as_ptr(), sdev.raw.as_ptr(), vm.vm.as_ptr(), start, end)
        };
    }

    /// Where the pages of `[start, end)` are, read from the CPU page table
    /// without faulting anything: `(pages in sdev's VRAM, pages present in
    /// system memory)` (upstream keeps this as `prange->actual_loc` /
    /// `vram_pages`).
    pub(crate) fn locate(&self, _mm: &MmRead<'_>, sdev: &SvmDev, start: u64, end: u64) -> Result<(u64, u64)> {
        let (mut dev, mut ram) = (0u64, 0u64);
        // SAFETY: Live range and device (invariants); mmap_lock is
        // read-held (the guard); the shim checks the bounds; valid out
        // pointers.
        super::to_result(unsafe {
            shim::rkfd_shim_svm_range_locate(self.raw.as_ptr(), sdev.raw.as_ptr(), start, end, &mut dev, &mut ram)
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
        // which the trampoline is unused.  `rkfd_shim_svm_range_free` frees
        // the C side; the trampoline pointer is read back first.
        unsafe {
            let tramp = trampoline_of(self.raw.as_ptr());
            shim::rkfd_shim_svm_range_free(self.raw.as_ptr());
            drop(KBox::from_raw(tramp));
        }
    }
}

/// The cookie the shim holds: a type-erased pointer and its callback.
struct Trampoline {
    cookie: *const c_void,
    /// `invalidate_tramp::<T>` for the `T` behind `cookie`.  SAFETY: sound
    /// to call with this `cookie` only, while `HmmRange::new`'s contract holds.
    call: unsafe fn(*const c_void, u64, u64, u64, bool, bool),
}

/// Calls `T::invalidate` on a type-erased cookie.
///
/// # Safety
///
/// `cookie` is `Arc::as_ptr` of a live `Arc<T>`.
unsafe fn invalidate_tramp<T: Invalidate>(
    cookie: *const c_void,
    range_start: u64,
    start: u64,
    end: u64,
    unmap: bool,
    migrate: bool,
) {
    // SAFETY: The caller's contract: an `Arc` keeps a reference.
    let t = unsafe { ArcBorrow::from_raw(cookie.cast::<T>()) };
    T::invalidate(t, range_start, start, end, unmap, migrate);
}

/// The trampoline a shim range was created with.
///
/// # Safety
///
/// `r` is a live range created by [`HmmRange::new`].
unsafe fn trampoline_of(r: *mut shim::rkfd_svm_range) -> *mut Trampoline {
    // The shim's struct starts with the notifier; the cookie field is read
    // through the shim's accessor.
    // SAFETY: The caller's contract.
    unsafe { shim::rkfd_shim_svm_range_cookie(r).cast() }
}

/// The invalidate callback of a range (`rkfd_svm_invalidate`), under the
/// range's lock.
///
/// # Safety
///
/// Called by the shim with the cookie of a live range.
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
    // SAFETY: The trampoline's cookie outlives the range (`HmmRange::new`).
    unsafe { (t.call)(t.cookie, range_start, start, end, unmap, migrate) };
}

/// A device page takes a reference on its process's counters and adds its
/// bytes to `svm` (`svm_allocated`).
///
/// # Safety
///
/// `counters` is `Arc::as_ptr` of a live `Arc<ProcCounters>`.
#[no_mangle]
unsafe extern "C" fn rkfd_rs_svm_counters_get(counters: *mut c_void, bytes: u64) -> *mut c_void {
    // SAFETY: The caller's contract.
    let c: Arc<ProcCounters> = unsafe { ArcBorrow::from_raw(counters.cast::<ProcCounters>().cast_const()) }.into();
    c.svm.fetch_add(bytes, Relaxed);
    Arc::into_raw(c).cast_mut().cast()
}

/// A device page is freed: gives its reference back.  Any context.
///
/// # Safety
///
/// `counters` came from `rkfd_rs_svm_counters_get`; called once for it.
#[no_mangle]
unsafe extern "C" fn rkfd_rs_svm_counters_put(counters: *mut c_void, bytes: u64) {
    // SAFETY: The caller's contract: this reference is ours.
    let c = unsafe { Arc::from_raw(counters.cast::<ProcCounters>().cast_const()) };
    c.svm.fetch_sub(bytes, Relaxed);
}

/// Pages migrated to VRAM (`counters_<gpuid>/page_in`).
///
/// # Safety
///
/// `counters` points to live `ProcCounters`.
#[no_mangle]
unsafe extern "C" fn rkfd_rs_svm_count_page_in(counters: *mut c_void, pages: u64) {
    // SAFETY: The caller's contract.
    let c = unsafe { &*counters.cast::<ProcCounters>() };
    c.page_in.fetch_add(pages, Relaxed);
}

/// Pages migrated back to system memory (`counters_<gpuid>/page_out`).
///
/// # Safety
///
/// `counters` points to live `ProcCounters`.
#[no_mangle]
unsafe extern "C" fn rkfd_rs_svm_count_page_out(counters: *mut c_void, pages: u64) {
    // SAFETY: The caller's contract.
    let c = unsafe { &*counters.cast::<ProcCounters>() };
    c.page_out.fetch_add(pages, Relaxed);
}

/// A CPU fault migrated `[start, end)` from a device page's VRAM back to
/// system memory (`dev_pagemap_ops.migrate_to_ram`), starting at boot-time
/// `t0_ns`; `ret` is the pages moved or a negative errno.  Any context
/// the fault handler runs in; takes only the SMI locks (leaves).
///
/// # Safety
///
/// `counters` came from `rkfd_rs_svm_counters_get` and is still held.
#[no_mangle]
unsafe extern "C" fn rkfd_rs_svm_cpu_migrated(counters: *mut c_void, start: u64, end: u64, t0_ns: u64, ret: c_long) {
    // SAFETY: The caller's contract.
    let c = unsafe { &*counters.cast::<ProcCounters>() };
    crate::smi::migration_cpu_fault(&c.owner, c.gpu_id, start, end, t0_ns as i64, ret as i64);
}
