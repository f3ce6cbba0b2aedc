// SPDX-License-Identifier: GPL-2.0

//! SMI event files: the anonymous inode and its file operations, as a
//! trait ([`SmiFile`]) the driver's client type implements and a table of
//! `extern "C"` trampolines per implementing type; and what rkfd asks about
//! the opener.
//!
//! C: `shim/rkfd_smi.c` (upstream `kfd_smi_ev_fops`, `anon_inode_getfd` in
//! `kfd_smi_event_open`).  The client is an `Arc<T>` from `into_foreign`,
//! given back in `release`.

use core::marker::PhantomData;

use kernel::{
    bindings,
    ffi::{c_char, c_void},
    fs::File,
    prelude::*,
    sync::{poll::PollTable, Arc},
    task::Task,
    types::ForeignOwnable,
    uaccess::{UserSlice, UserSliceWriter}, //
};

use super::shim_ffi as shim;

/// What an SMI file does (upstream `kfd_smi_ev_fops`), implemented by the
/// client behind it.
pub(crate) trait SmiFile: Send + Sync + 'static {
    /// `read()`: moves up to `size` queued bytes to `out`; returns how many.
    fn read(&self, out: UserSliceWriter, size: usize) -> Result<usize>;

    /// `write()` of at least 8 bytes (the shim checked): the new event mask.
    fn set_mask(&self, mask: u64);

    /// `poll()`: registers the waiter on `table`; whether data is ready.
    fn poll(&self, file: &File, table: &PollTable<'_>) -> bool;

    /// `release`: the file's reference, given back once, after every other
    /// operation returned.
    fn release(this: Arc<Self>);
}

/// `TASK_COMM_LEN`.
pub(crate) const COMM_LEN: usize = 16;

/// Installs a new `kfd_smi_ev` file descriptor for `client` in the current
/// task; returns the fd.  On failure `client` is dropped.
pub(crate) fn install_fd<T: SmiFile>(client: Arc<T>) -> Result<u32> {
    let ptr = client.into_foreign();
    // SAFETY: `ptr` is a valid foreign `Arc<T>`; on success the new file
    // owns it and gives it back in `SmiOps::<T>::release`.  The table is a
    // `static` (constant promotion), so it outlives every file.
    let fd = unsafe { shim::rkfd_shim_smi_getfd(ptr, &SmiOps::<T>::OPS) };
    if fd < 0 {
        // SAFETY: No file was created, so `ptr` is still ours, from
        // `into_foreign` above, and not used again.
        drop(unsafe { <Arc<T> as ForeignOwnable>::from_foreign(ptr) });
        return Err(Error::from_errno(fd));
    }
    Ok(fd as u32)
}

/// Whether the current task has `CAP_SYS_ADMIN` (upstream `capable()`,
/// which also marks the task as having used the privilege).
pub(crate) fn capable_sys_admin() -> bool {
    // SAFETY: `capable` checks the current task's credentials; no arguments.
    unsafe { shim::rkfd_shim_capable_sys_admin() }
}

/// The name of `task` (`TASK_COMM_LEN` bytes, NUL padded); readable for
/// as long as the task struct lives, also after the task exited.
pub(crate) fn task_comm(task: &Task) -> [u8; COMM_LEN] {
    let mut buf = [0u8; COMM_LEN];
    // SAFETY: `task` is a valid task for the call (the reference keeps it
    // alive); `buf` is writable for `TASK_COMM_LEN` bytes, which the shim
    // writes exactly (under the task lock, as `get_task_comm`).
    unsafe { shim::rkfd_shim_task_comm(task.as_ptr().cast::<c_void>(), buf.as_mut_ptr().cast::<c_char>()) };
    buf
}

/// The `extern "C"` trampolines of `T`'s file operations.
struct SmiOps<T>(PhantomData<T>);

impl<T: SmiFile> SmiOps<T> {
    /// The table the shim calls through.
    const OPS: shim::rkfd_smi_ops = shim::rkfd_smi_ops {
        read: Some(Self::read),
        write: Some(Self::write),
        poll: Some(Self::poll),
        release: Some(Self::release),
    };

    /// `read` of an SMI file.
    ///
    /// # Safety
    ///
    /// Only called by the shim's `read`, between `install_fd` and release,
    /// with the client `install_fd` gave it, and `buf` a user pointer.
    unsafe extern "C" fn read(client: *mut c_void, buf: *mut c_char, size: usize) -> isize {
        // SAFETY: `client` came from `into_foreign` in `install_fd`; release
        // has not run (the VFS does not release a file with calls in flight).
        let client = unsafe { <Arc<T> as ForeignOwnable>::borrow(client) };
        let writer = UserSlice::new(UserPtr::from_ptr(buf.cast::<c_void>()), size).writer();
        match client.read(writer, size) {
            Ok(n) => n as isize,
            Err(e) => e.to_errno() as isize,
        }
    }

    /// `write` of an SMI file: the new event mask (the shim checked that at
    /// least 8 bytes were written, as upstream).
    ///
    /// # Safety
    ///
    /// As [`Self::read`].
    unsafe extern "C" fn write(client: *mut c_void, buf: *const c_char) -> isize {
        // SAFETY: As in `read`.
        let client = unsafe { <Arc<T> as ForeignOwnable>::borrow(client) };
        let mut reader =
            UserSlice::new(UserPtr::from_ptr(buf.cast_mut().cast::<c_void>()), size_of::<u64>()).reader();
        let mut mask = [0u8; 8];
        match reader.read_slice(&mut mask) {
            Ok(()) => {
                client.set_mask(u64::from_ne_bytes(mask));
                size_of::<u64>() as isize
            }
            Err(_) => EFAULT.to_errno() as isize,
        }
    }

    /// `poll` of an SMI file: registers the waiter; `true` if data is ready.
    ///
    /// # Safety
    ///
    /// As [`Self::read`]; `file` is the SMI file and `wait` the poll table
    /// (or null) the VFS passed to `poll`.
    unsafe extern "C" fn poll(client: *mut c_void, file: *mut bindings::file, wait: *mut bindings::poll_table) -> bool {
        // SAFETY: As in `read`.
        let client = unsafe { <Arc<T> as ForeignOwnable>::borrow(client) };
        // SAFETY: The VFS holds a reference to `file` for the call; poll is
        // not a `fdget_pos` user, so sharing the reference is fine.
        let file = unsafe { File::from_raw_file(file) };
        // SAFETY: `wait` is null or valid for the duration of this call.
        let table = unsafe { PollTable::from_raw(wait) };
        client.poll(file, &table)
    }

    /// `release` of an SMI file: takes back the file's `Arc<T>`.
    ///
    /// # Safety
    ///
    /// Only called by the shim's `release`, once, with the client
    /// `install_fd` gave it.
    unsafe extern "C" fn release(client: *mut c_void) {
        // SAFETY: `client` came from `into_foreign` in `install_fd` and this
        // is its last use (release runs once, after every other operation).
        let client = unsafe { <Arc<T> as ForeignOwnable>::from_foreign(client) };
        T::release(client);
    }
}
