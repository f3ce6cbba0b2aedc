// SPDX-License-Identifier: GPL-2.0

//! `/dev/kfd`: registration through the C shim and the file operations it
//! calls back (`rkfd_rs_*`).
//!
//! C header: `shim/rkfd_shim.h`.

use kernel::{
    ffi::{c_int, c_long, c_uint, c_ulong, c_void},
    prelude::*,
    sync::Arc,
    types::ForeignOwnable, //
};

use crate::{chardev, process::Process};

use super::kgd::Vma;

use super::to_result;

use super::shim_ffi as shim;

/// The `/dev/kfd` character device, its `kfd` class and device
/// (`/sys/devices/virtual/kfd/kfd`).  Unregistered when dropped.
///
/// # Invariants
///
/// While a `Chardev` exists the shim's registration is live; only one exists
/// at a time (the module holds it).
pub(crate) struct Chardev(());

impl Chardev {
    /// Registers `/dev/kfd`.
    pub(crate) fn register() -> Result<Self> {
        // SAFETY: Called once from module init; the shim serialises nothing
        // else against it and undoes partial work on failure.
        to_result(unsafe { shim::rkfd_shim_chrdev_register() })?;
        // INVARIANT: registration succeeded.
        Ok(Chardev(()))
    }

    /// The dynamically allocated major number of `/dev/kfd`.
    pub(crate) fn major(&self) -> i32 {
        // SAFETY: Reads a value the shim set during registration.
        unsafe { shim::rkfd_shim_chrdev_major() }
    }
}

impl Drop for Chardev {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the registration is live.  Open files
        // hold a module reference (`.owner = THIS_MODULE`), so none remain.
        unsafe { shim::rkfd_shim_chrdev_unregister() };
    }
}

/// `open` of `/dev/kfd`: stores the opener's [`Process`] in `private_data`.
///
/// # Safety
///
/// Only called by the shim's `open`, with `private_data` pointing to the
/// new file's `private_data` field.
#[no_mangle]
unsafe extern "C" fn rkfd_rs_open(private_data: *mut *mut c_void) -> c_int {
    match chardev::open() {
        Ok(process) => {
            // SAFETY: The shim passes a valid pointer to `file::private_data`.
            unsafe { *private_data = process.into_foreign() };
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// `release` of `/dev/kfd`: drops the file's reference to its [`Process`].
///
/// # Safety
///
/// Only called by the shim's `release`, once per successful open, with the
/// value `rkfd_rs_open` stored.
#[no_mangle]
unsafe extern "C" fn rkfd_rs_release(private_data: *mut c_void) {
    // SAFETY: `private_data` came from `into_foreign` in `rkfd_rs_open` and
    // this is the last use of it (release runs once, after every ioctl/mmap).
    let process = unsafe { <Arc<Process> as ForeignOwnable>::from_foreign(private_data) };
    chardev::release(process);
}

/// `unlocked_ioctl` of `/dev/kfd`.
///
/// # Safety
///
/// Only called by the shim's `unlocked_ioctl`, between open and release.
#[no_mangle]
unsafe extern "C" fn rkfd_rs_ioctl(private_data: *mut c_void, cmd: c_uint, arg: c_ulong) -> c_long {
    // SAFETY: `private_data` came from `into_foreign` in `rkfd_rs_open` and
    // release has not run (the VFS does not release a file with calls in flight).
    let process = unsafe { <Arc<Process> as ForeignOwnable>::borrow(private_data) };
    match chardev::ioctl(&process, cmd, arg as usize) {
        Ok(ret) => ret as c_long,
        Err(e) => e.to_errno() as c_long,
    }
}

/// `mmap` of `/dev/kfd`.
///
/// # Safety
///
/// Only called by the shim's `mmap`, between open and release, with the VMA
/// being set up (valid for the call; the mm's mmap_lock is held).
#[no_mangle]
unsafe extern "C" fn rkfd_rs_mmap(
    private_data: *mut c_void,
    vma: *mut c_void,
    vm_start: c_ulong,
    vm_end: c_ulong,
    vm_pgoff: c_ulong,
) -> c_int {
    // SAFETY: As for `rkfd_rs_ioctl`.
    let process = unsafe { <Arc<Process> as ForeignOwnable>::borrow(private_data) };
    let Some(vma) = core::ptr::NonNull::new(vma) else {
        return EINVAL.to_errno();
    };
    // SAFETY: The VMA of this mmap call, valid until it returns.
    let vma = unsafe { Vma::from_raw(vma, vm_start as usize, vm_end as usize, vm_pgoff as usize) };
    match chardev::mmap(&process, &vma) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}
