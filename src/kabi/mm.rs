// SPDX-License-Identifier: GPL-2.0

//! The process address-space notifier (`shim/rkfd_mm.c`): tells rkfd when a
//! KFD process's `mm` is torn down (upstream `kfd_process_mmu_notifier_ops`).
//! SVM's VMA walks are `kabi::hmm::MmRead`'s.

use core::ptr::NonNull;

use kernel::{
    ffi::c_void,
    mm::Mm,
    prelude::*,
    sync::aref::ARef, //
};

use crate::process::Process;

mod shim {
    use kernel::{bindings, ffi::c_void};

    // `mm_struct` contains zero-sized arch members bindgen cannot prove
    // FFI-safe; only pointers to it cross this boundary.
    #[allow(improper_ctypes)]
    extern "C" {
        pub(super) fn rkfd_shim_mm_notifier_register(mm: *mut bindings::mm_struct, cookie: *mut c_void) -> *mut c_void;
        pub(super) fn rkfd_shim_mm_notifier_unregister(handle: *mut c_void, mm: *mut bindings::mm_struct);
        pub(super) fn rkfd_shim_user_addr_limit() -> u64;
    }
}

/// A registered `mmu_notifier` whose `release` calls
/// [`Process::mm_released`]; unregistered on drop (which calls `release`
/// itself if the mm is still alive).
///
/// # Invariants
///
/// `handle` is a live registration on `mm` whose cookie is a `Process` that
/// outlives this object.
pub(crate) struct MmNotifier {
    handle: NonNull<c_void>,
    mm: ARef<Mm>,
}

// SAFETY: Registration and unregistration may happen on any thread.
unsafe impl Send for MmNotifier {}
// SAFETY: No shared-reference methods.
unsafe impl Sync for MmNotifier {}

impl MmNotifier {
    /// Registers on `mm` for `process`.
    ///
    /// # Safety
    ///
    /// `process` must stay valid until the returned object is dropped.
    pub(crate) unsafe fn register(mm: &Mm, process: *const Process) -> Result<Self> {
        // SAFETY: `mm` is valid (a reference); the registration keeps no
        // reference of its own, ours is the `ARef` stored below (mmgrab, as
        // `mmu_notifier_unregister` requires).
        let ret = unsafe { shim::rkfd_shim_mm_notifier_register(mm.as_raw(), process.cast_mut().cast()) };
        // The shim returns an ERR_PTR on failure.
        let addr = ret as usize;
        if addr >= (-4095isize) as usize {
            return Err(Error::from_errno(addr as isize as i32));
        }
        let handle = NonNull::new(ret).ok_or(ENOMEM)?;
        // INVARIANT: registered; the caller keeps `process` alive.
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

/// `release` of the notifier: the process's address space is going away.
///
/// # Safety
///
/// Only called by the shim's notifier, whose cookie is a live `Process`
/// (the [`MmNotifier`] invariant).
#[no_mangle]
unsafe extern "C" fn rkfd_rs_mm_release(cookie: *mut c_void) {
    // SAFETY: The cookie is a `Process` kept alive while registered.
    let process = unsafe { &*cookie.cast::<Process>() };
    process.mm_released();
}

/// The user address limit `access_ok()` checks against (`TASK_SIZE_MAX`).
pub(crate) fn user_addr_limit() -> u64 {
    // SAFETY: Reads a constant (or the boot-time paging level); no state.
    unsafe { shim::rkfd_shim_user_addr_limit() }
}
