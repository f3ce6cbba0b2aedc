// SPDX-License-Identifier: GPL-2.0

//! The process address-space notifier (`shim/rkfd_mm.c`): tells rkfd when a
//! KFD process's `mm` is torn down (upstream `kfd_process_mmu_notifier_ops`).
//! SVM's VMA walks are `kabi::hmm::MmRead`'s.

use core::ptr::NonNull;

use kernel::{
    ffi::c_void,
    mm::Mm,
    prelude::*,
    sync::{aref::ARef, Arc}, //
};

use super::shim_ffi as shim;

/// What an [`MmNotifier`] tells its owner (upstream
/// `kfd_process_mmu_notifier_ops.release`).
///
/// # Safety
///
/// An implementor that keeps the [`MmNotifier`] registered for it (the
/// notifier refers to it without a counted reference: it is usually a
/// field of the implementor) drops that notifier before it is freed and
/// before anything `mm_released` uses is dropped, e.g. first thing in its
/// `PinnedDrop`, and never lets it outlive the last `Arc` of the value it
/// was registered for.
pub(crate) unsafe trait MmRelease: Send + Sync + 'static {
    /// The address space is going away (at the latest when the notifier is
    /// dropped while the mm is still alive).  Called once, may sleep.
    fn mm_released(&self);
}

/// A registered `mmu_notifier` whose `release` calls
/// [`MmRelease::mm_released`] of its owner; unregistered on drop (which
/// calls `release` itself if the mm is still alive).
///
/// # Invariants
///
/// `handle` is a live registration on `mm` whose cookie is the owner it was
/// registered for, a value of an [`MmRelease`] type that outlives this
/// object (the trait's contract), and whose callback is
/// `release_trampoline` of that type.
pub(crate) struct MmNotifier {
    handle: NonNull<c_void>,
    mm: ARef<Mm>,
}

// SAFETY: Registration and unregistration may happen on any thread.
unsafe impl Send for MmNotifier {}
// SAFETY: No shared-reference methods.
unsafe impl Sync for MmNotifier {}

impl MmNotifier {
    /// Registers on `mm` for `owner`, whose [`MmRelease::mm_released`] runs
    /// when the address space goes away.  The trait's contract says how
    /// long the returned notifier may live.
    pub(crate) fn register<T: MmRelease>(mm: &Mm, owner: &Arc<T>) -> Result<Self> {
        let cookie = Arc::as_ptr(owner).cast_mut().cast::<c_void>();
        // SAFETY: `mm` is valid (a reference); the registration keeps no
        // reference of its own, ours is the `ARef` stored below (mmgrab, as
        // `mmu_notifier_unregister` requires).  `cookie` stays valid while
        // the notifier is registered (`MmRelease`'s contract), which is
        // what `release_trampoline::<T>` needs.
        let ret = unsafe {
            shim::rkfd_shim_mm_notifier_register(mm.as_raw(), cookie, Some(release_trampoline::<T>))
        };
        // The shim returns an ERR_PTR on failure.
        let addr = ret as usize;
        if addr >= (-4095isize) as usize {
            return Err(Error::from_errno(addr as isize as i32));
        }
        let handle = NonNull::new(ret).ok_or(ENOMEM)?;
        // INVARIANT: registered for `owner` with `T`'s trampoline; `T`'s
        // contract keeps the owner alive while this exists.
        Ok(MmNotifier { handle, mm: ARef::from(mm) })
    }
}

impl Drop for MmNotifier {
    fn drop(&mut self) {
        // SAFETY: A live registration (type invariant) on `mm`, which we keep
        // grabbed; unregistering waits for running callbacks.
        unsafe { shim::rkfd_shim_mm_notifier_unregister(self.handle.as_ptr(), self.mm.as_raw()) };
    }
}

/// `release` of the notifier: the owner's address space is going away.
///
/// # Safety
///
/// Only called by the shim's notifier, whose cookie is a live `T` (the
/// [`MmNotifier`] invariant).
unsafe extern "C" fn release_trampoline<T: MmRelease>(cookie: *mut c_void) {
    // SAFETY: The cookie is a `T` kept alive while registered.
    let owner = unsafe { &*cookie.cast::<T>() };
    owner.mm_released();
}

/// The user address limit `access_ok()` checks against (`TASK_SIZE_MAX`).
pub(crate) fn user_addr_limit() -> u64 {
    // SAFETY: Reads a constant (or the boot-time paging level); no state.
    unsafe { shim::rkfd_shim_user_addr_limit() }
}
