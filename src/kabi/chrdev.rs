// SPDX-License-Identifier: GPL-2.0

//! `/dev/kfd`: registration through the C shim, and the file operations it
//! calls back, as a trait ([`FileOps`]) the driver implements and a table
//! of `extern "C"` trampolines per implementing type (as
//! `rust/kernel/miscdevice.rs` builds its `file_operations`).
//!
//! C header: `shim/rkfd_shim.h` (`struct rkfd_chrdev_ops`).

use core::marker::PhantomData;

use kernel::{
    bindings,
    ffi::{c_int, c_long, c_uint, c_ulong, c_void},
    prelude::*,
    types::ForeignOwnable, //
};

use super::kgd::Vma;

use super::shim_ffi as shim;
use super::to_result;

/// What the file operations of `/dev/kfd` do (upstream `kfd_fops`).
pub(crate) trait FileOps: 'static {
    /// What an open file keeps in `private_data` (upstream: the process).
    type Data: ForeignOwnable + Send + Sync;

    /// `open`: the new file's state.
    fn open() -> Result<Self::Data>;

    /// `release`: the file's state, given back once, after every other
    /// operation on the file returned.
    fn release(data: Self::Data);

    /// `unlocked_ioctl` (and `compat_ioctl`, through `compat_ptr_ioctl`).
    fn ioctl(data: <Self::Data as ForeignOwnable>::Borrowed<'_>, cmd: u32, arg: usize) -> Result<isize>;

    /// `mmap` of `vma`.
    fn mmap(data: <Self::Data as ForeignOwnable>::Borrowed<'_>, vma: &Vma<'_>) -> Result;
}

/// The `/dev/kfd` character device, its `kfd` class and device
/// (`/sys/devices/virtual/kfd/kfd`).  Unregistered when dropped.
///
/// # Invariants
///
/// While a `Chardev` exists the shim's registration is live; only one exists
/// at a time (the module holds it).
pub(crate) struct Chardev(());

impl Chardev {
    /// Registers `/dev/kfd` with `T`'s file operations.
    pub(crate) fn register<T: FileOps>() -> Result<Self> {
        // SAFETY: Called once from module init; the shim serialises nothing
        // else against it and undoes partial work on failure.  The table is
        // a `static` (constant promotion), so it outlives the registration.
        to_result(unsafe { shim::rkfd_shim_chrdev_register(&FileOpsTable::<T>::OPS) })?;
        // INVARIANT: registration succeeded.
        Ok(Chardev(()))
    }

    /// Zaps every user mapping of `/dev/kfd` (all opens share one
    /// address_space, upstream's `kfd_anon_inode`) whose mmap offset lies
    /// in `[start, start + len)` (C: `kfd_dev_unmap_mapping_range`).  The
    /// VMAs stay; a later access gets SIGBUS.  Takes no rkfd lock.
    pub(crate) fn unmap_mapping_range(start: u64, len: u64) {
        // SAFETY: Only zaps PTEs of the shim's own inode, which lives from
        // registration to unregistration (nothing before or after).
        unsafe { shim::rkfd_shim_unmap_mapping_range(start, len) };
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

/// The `extern "C"` trampolines of `T`'s file operations.
struct FileOpsTable<T>(PhantomData<T>);

impl<T: FileOps> FileOpsTable<T> {
    /// The table the shim calls through.
    const OPS: shim::rkfd_chrdev_ops = shim::rkfd_chrdev_ops {
        open: Some(Self::open),
        release: Some(Self::release),
        ioctl: Some(Self::ioctl),
        mmap: Some(Self::mmap),
    };

    /// `open`: stores the new file's [`FileOps::Data`] in `private_data`.
    ///
    /// # Safety
    ///
    /// Only called by the shim's `open`, with `private_data` pointing to the
    /// new file's `private_data` field.
    unsafe extern "C" fn open(private_data: *mut *mut c_void) -> c_int {
        match T::open() {
            Ok(data) => {
                // SAFETY: The shim passes a valid pointer to `file::private_data`.
                unsafe { *private_data = data.into_foreign() };
                0
            }
            Err(e) => e.to_errno(),
        }
    }

    /// `release`: gives the file's state back.
    ///
    /// # Safety
    ///
    /// Only called by the shim's `release`, once per successful open, with
    /// the value `open` stored.
    unsafe extern "C" fn release(private_data: *mut c_void) {
        // SAFETY: `private_data` came from `into_foreign` in `open` and this
        // is the last use of it (release runs once, after every ioctl/mmap).
        T::release(unsafe { T::Data::from_foreign(private_data) });
    }

    /// `unlocked_ioctl`.
    ///
    /// # Safety
    ///
    /// Only called by the shim's `unlocked_ioctl`, between open and release.
    unsafe extern "C" fn ioctl(private_data: *mut c_void, cmd: c_uint, arg: c_ulong) -> c_long {
        // SAFETY: `private_data` came from `into_foreign` in `open` and
        // release has not run (the VFS does not release a file with calls in
        // flight).
        let data = unsafe { T::Data::borrow(private_data) };
        match T::ioctl(data, cmd, arg) {
            Ok(ret) => ret,
            Err(e) => e.to_errno() as c_long,
        }
    }

    /// `mmap`.
    ///
    /// # Safety
    ///
    /// Only called by the shim's `mmap`, between open and release, with the
    /// VMA being set up (valid for the call; the mm's mmap_lock is held).
    unsafe extern "C" fn mmap(
        private_data: *mut c_void,
        vma: *mut bindings::vm_area_struct,
        vm_start: c_ulong,
        vm_end: c_ulong,
        vm_pgoff: c_ulong,
    ) -> c_int {
        // SAFETY: As for `ioctl`.
        let data = unsafe { T::Data::borrow(private_data) };
        let Some(vma) = core::ptr::NonNull::new(vma) else {
            return EINVAL.to_errno();
        };
        // SAFETY: The VMA of this mmap call, valid until it returns.
        let vma = unsafe { Vma::from_raw(vma.cast(), vm_start, vm_end, vm_pgoff) };
        match T::mmap(data, &vma) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }
}
