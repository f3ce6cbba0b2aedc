// SPDX-License-Identifier: GPL-2.0

//! Process eviction by eviction fences: the shim's registration
//! (`shim/rkfd_evict.c`: upstream `kfd_process.c`'s `eviction_work` and
//! `restore_work` and `kgd2kfd_schedule_evict_and_restore_process`) and
//! the [`Evict`] trait whose functions its works call.

use core::{marker::PhantomData, ptr::NonNull};

use kernel::{ffi::{c_int, c_void}, mm::Mm, prelude::*};

use super::{kgd::interface::KGD_CONTEXT_ID_PRIMARY, shim_ffi as shim};

/// The context id of every rkfd process (upstream `KFD_CONTEXT_ID_PRIMARY`:
/// rkfd has one process per mm), which GPU drivers put in its eviction
/// fences.
pub(crate) const CONTEXT_ID_PRIMARY: u16 = KGD_CONTEXT_ID_PRIMARY as u16;

/// What the eviction works do, implemented by the process.  Each runs in
/// process context (the system workqueues) with no lock held.
pub(crate) trait Evict: Sync + 'static {
    /// C: `evict_process_worker` up to the restore scheduling: stop the
    /// queues (trigger TTM), signal the eviction fences.  `Ok(true)` if a
    /// fence was signalled already (whoever did restores; this eviction
    /// of the queues is ended at once), `Err`: nothing was evicted.
    fn evict(&self) -> Result<bool>;
    /// C: `kfd_process_restore_queues`: ends one eviction of the queues.
    fn restore_queues(&self);
    /// C: `restore_process_helper`: restore the VMs' memory (new fences)
    /// and the queues; `Err`: retried after `PROCESS_BACK_OFF_TIME_MS`.
    fn restore(&self) -> Result;
}

/// A process's registration: `kgd2kfd_schedule_evict_and_restore_process`
/// finds it by mm and context id.  Dropping it cancels and waits for the
/// works (C: the `cancel_delayed_work_sync` calls of
/// `kfd_process_notifier_release_internal`): drop it with no lock held
/// that [`Evict`]'s functions take.
///
/// # Invariants
///
/// `raw` came from `rkfd_shim_evict_register` with a cookie that is a
/// `&T` valid until `raw` is unregistered (in `drop`).
pub(crate) struct Registration<T: Evict> {
    raw: NonNull<shim::rkfd_evict>,
    _t: PhantomData<*const T>,
}

// SAFETY: The shim's functions on `raw` may be called from any thread; `T`
// is `Sync` (its functions run on workqueues).
unsafe impl<T: Evict> Send for Registration<T> {}
// SAFETY: As for `Send`.
unsafe impl<T: Evict> Sync for Registration<T> {}

impl<T: Evict> Registration<T> {
    /// Registers `owner`, the process of `mm`.
    ///
    /// # Safety
    ///
    /// `owner` stays valid (neither moved nor dropped) until the
    /// registration is dropped.
    pub(crate) unsafe fn new(mm: &Mm, owner: &T) -> Result<Self> {
        let cookie: *const T = owner;
        // SAFETY: `mm` is a live mm (identity only); `OPS` is a static;
        // the cookie is valid until unregistration (caller's contract).
        let raw = unsafe {
            shim::rkfd_shim_evict_register(mm.as_raw(), CONTEXT_ID_PRIMARY, cookie.cast_mut().cast(), &Table::<T>::OPS)
        };
        // INVARIANT: registered with a cookie valid until drop.
        Ok(Registration { raw: NonNull::new(raw).ok_or(ENOMEM)?, _t: PhantomData })
    }
}

impl<T: Evict> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: Registered (invariant), unregistered once; afterwards no
        // work runs, so the cookie is no longer used.
        unsafe { shim::rkfd_shim_evict_unregister(self.raw.as_ptr()) };
    }
}

/// The trampolines of `T`.
struct Table<T>(PhantomData<T>);

impl<T: Evict> Table<T> {
    const OPS: shim::rkfd_evict_ops = shim::rkfd_evict_ops {
        evict: Some(Self::evict),
        restore_queues: Some(Self::restore_queues),
        restore: Some(Self::restore),
    };

    /// # Safety
    ///
    /// `cookie` is the `&T` of a live registration (the shim's works run
    /// only until unregistration).
    unsafe fn owner<'a>(cookie: *mut c_void) -> &'a T {
        // SAFETY: The caller's contract.
        unsafe { &*cookie.cast::<T>().cast_const() }
    }

    /// # Safety
    ///
    /// As [`Self::owner`].
    unsafe extern "C" fn evict(cookie: *mut c_void) -> c_int {
        // SAFETY: The caller's contract.
        match unsafe { Self::owner(cookie) }.evict() {
            Ok(already) => c_int::from(already),
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// As [`Self::owner`].
    unsafe extern "C" fn restore_queues(cookie: *mut c_void) {
        // SAFETY: The caller's contract.
        unsafe { Self::owner(cookie) }.restore_queues();
    }

    /// # Safety
    ///
    /// As [`Self::owner`].
    unsafe extern "C" fn restore(cookie: *mut c_void) -> c_int {
        // SAFETY: The caller's contract.
        match unsafe { Self::owner(cookie) }.restore() {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }
}
