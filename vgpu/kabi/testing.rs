// SPDX-License-Identifier: GPL-2.0

//! KUnit-only helpers: open device files and map them into the test
//! thread's own address space (`kunit_attach_mm()`), as user space would,
//! so the render node's mmap is tested before rkfd's ioctls exist.

use core::ptr::NonNull;

use kernel::{
    bindings,
    ffi::c_ulong,
    prelude::*,
    sync::Arc,
};

use super::{
    kfd::DrmFileRef,
    shim,
    to_result,
    Devices,
    RenderNode, //
};

/// An open file, closed (and released, even from a kernel thread) on drop.
///
/// # Invariants
///
/// `file` is a `struct file *` we own a reference on.
pub(crate) struct TestFile {
    /// The file.
    file: NonNull<bindings::file>,
}

impl TestFile {
    /// Opens the device node at `path` under `/dev` (`"dri/renderD128"`)
    /// read-write.
    pub(crate) fn open(path: &CStr) -> Result<Self> {
        let mut file = core::ptr::null_mut();
        // SAFETY: `path` is NUL-terminated; `file` is valid for writes.
        to_result(unsafe { shim::vgpu_shim_test_open(path.as_char_ptr(), &mut file) })
            .inspect_err(|e| pr_err!("test: open {:?}: {:?}\n", path, e))?;
        // INVARIANT: The shim returned an opened file.
        Ok(TestFile {
            file: NonNull::new(file).ok_or(EINVAL)?,
        })
    }

    /// What `acquire_vm` gives rkfd for this file (its state in `T`).
    pub(crate) fn vm_of<T: RenderNode>(&self, devices: &Devices<T>) -> Result<Arc<T::File>> {
        // SAFETY: By the type invariant we hold a reference on the file
        // while `self` (borrowed for the call) exists.
        let file = unsafe { DrmFileRef::from_raw(self.file) };
        devices.file_state(&file)
    }

    /// Maps `len` bytes at `offset` of the file into the test's mm.
    pub(crate) fn mmap(&self, offset: u64, len: usize, rw: bool, shared: bool) -> Result<UserMap> {
        let mut addr: c_ulong = 0;
        // SAFETY: The file is open (type invariant); `addr` is valid for writes.
        to_result(unsafe {
            shim::vgpu_shim_test_mmap(
                self.file.as_ptr(),
                offset,
                len as c_ulong,
                rw,
                shared,
                &mut addr,
            )
        })?;
        Ok(UserMap { addr, len })
    }
}

impl Drop for TestFile {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we own this reference.
        unsafe { shim::vgpu_shim_test_close(self.file.as_ptr()) };
    }
}

/// A mapping in the test's mm, unmapped on drop.
pub(crate) struct UserMap {
    /// User address.
    addr: c_ulong,
    /// Length in bytes.
    len: usize,
}

impl UserMap {
    /// A fresh private anonymous mapping of `len` bytes in the test's mm
    /// (read-only unless `rw`).
    pub(crate) fn anon(len: usize, rw: bool) -> Result<Self> {
        let mut addr: c_ulong = 0;
        // SAFETY: `addr` is valid for writes.
        to_result(unsafe { shim::vgpu_shim_test_mmap_anon(len as c_ulong, rw, &mut addr) })?;
        Ok(UserMap { addr, len })
    }

    /// The user address of the mapping.
    pub(crate) fn addr(&self) -> u64 {
        self.addr as u64
    }

    /// Writes `data` at byte `off` of the mapping, as user space would.
    pub(crate) fn write(&self, off: usize, data: &[u8]) -> Result {
        if off.checked_add(data.len()).is_none_or(|end| end > self.len) {
            return Err(EINVAL);
        }
        // SAFETY: `data` is valid for reads; the copy checks the user range.
        to_result(unsafe {
            shim::vgpu_shim_test_write_user(
                self.addr + off as c_ulong,
                data.as_ptr().cast(),
                data.len() as c_ulong,
            )
        })
    }

    /// Reads `buf.len()` bytes at byte `off` of the mapping.
    pub(crate) fn read(&self, off: usize, buf: &mut [u8]) -> Result {
        if off.checked_add(buf.len()).is_none_or(|end| end > self.len) {
            return Err(EINVAL);
        }
        // SAFETY: `buf` is valid for writes; the copy checks the user range.
        to_result(unsafe {
            shim::vgpu_shim_test_read_user(
                buf.as_mut_ptr().cast(),
                self.addr + off as c_ulong,
                buf.len() as c_ulong,
            )
        })
    }
}

impl UserMap {
    /// Unmaps `len` bytes at byte `off`, splitting the mapping.
    pub(crate) fn punch(&self, off: usize, len: usize) -> Result {
        if off.checked_add(len).is_none_or(|end| end > self.len) {
            return Err(EINVAL);
        }
        // SAFETY: Unmapping part of a range of the test's own mm.
        to_result(unsafe {
            shim::vgpu_shim_test_munmap(self.addr + off as c_ulong, len as c_ulong)
        })
    }
}

impl Drop for UserMap {
    fn drop(&mut self) {
        // SAFETY: Unmapping a range of the test's own mm.
        let _ = unsafe { shim::vgpu_shim_test_munmap(self.addr, self.len as c_ulong) };
    }
}

/// Reads `buf.len()` bytes at byte `off` of the page with frame number
/// `pfn`, as an engine following a system-memory PTE would.
pub(crate) fn read_frame(pfn: u64, off: usize, buf: &mut [u8]) -> Result {
    // SAFETY: `buf` is valid for writes of its length; the shim checks the
    // frame and the range within the page.
    to_result(unsafe {
        shim::vgpu_shim_test_pfn_copy(pfn as c_ulong, off as c_ulong, buf.as_mut_ptr().cast(), buf.len() as c_ulong, false)
    })
}

/// Writes `data` at byte `off` of the page with frame number `pfn`.
pub(crate) fn write_frame(pfn: u64, off: usize, data: &[u8]) -> Result {
    // SAFETY: `data` is only read (the shim copies from it); the shim
    // checks the frame and the range within the page.
    to_result(unsafe {
        shim::vgpu_shim_test_pfn_copy(pfn as c_ulong, off as c_ulong, data.as_ptr().cast_mut().cast(), data.len() as c_ulong, true)
    })
}
