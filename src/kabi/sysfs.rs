// SPDX-License-Identifier: GPL-2.0

//! Read-only sysfs directories whose files are formatted by Rust objects.
//!
//! C header: `shim/rkfd_sysfs.h`.  Rust for Linux 7.3 has no kobject or sysfs
//! abstraction, so this is a small driver-local one, shaped for reuse (the
//! KFD topology and `/sys/class/kfd/kfd/proc/<pid>/…` both use it).
//!
//! # Design
//!
//! A [`Dir`] is one kobject, i.e. one sysfs directory, with a fixed list of
//! files (mode 0444), created together.  The directory holds an [`Arc`] of a
//! Rust object implementing [`Show`]; reading file `N` calls
//! [`Show::show`]`(N, buffer)`.  An object-plus-index design (rather than one
//! closure per file) keeps one allocation per directory, lets every file see
//! the same object, and suits both fixed layouts ("gpu_id", "name",
//! "properties") and generated names ("vram_<gpu_id>").
//!
//! Lifetimes, and why the object outlives its files:
//!
//! - Dropping a [`Dir`] calls `kobject_del()`, which removes the kernfs nodes;
//!   kernfs waits for every running `show` (active reference) to return and
//!   fails later reads.  Only then is the object's [`Arc`] dropped, so a
//!   `show` never sees a freed object.  Open file descriptors stay harmless.
//! - A child holds an [`Arc`] of its parent [`Dir`], so a parent directory is
//!   removed only after all its children (no kobject is ever deleted under a
//!   live child).  Drop order of a tree is therefore free.
//! - Directories under the kfd device (`/sys/devices/virtual/kfd/kfd`) must
//!   be dropped before the device is unregistered; the module struct's field
//!   order guarantees it.  Creating one while the device does not exist fails
//!   with `ENODEV`.
//!
//! # Locking
//!
//! `show` runs in the reader's context holding a kernfs active reference of
//! its file, and dropping a [`Dir`] waits for those references.  So never drop
//! a [`Dir`] while holding a lock that one of its `show` methods takes
//! (lockdep reports it; it would deadlock), and never drop a [`Dir`] from
//! one of its own `show` calls.  [`Dir`] itself takes no rkfd lock.
//! Creation and removal sleep.

use core::{fmt, ptr::NonNull};

use kernel::{
    bindings,
    ffi::{c_char, c_long, c_uint, c_void},
    page::PAGE_SIZE,
    prelude::*,
    sync::Arc, //
};

use super::to_result;

pub(crate) mod host;

use super::shim_ffi as shim;

/// Formats the files of a [`Dir`].
pub(crate) trait Show: Send + Sync + 'static {
    /// Writes the content of file `file` (its index in the list given to
    /// [`Dir::new`]) to `out`.  An error is returned to the reader.
    fn show(&self, file: usize, out: &mut ShowBuffer<'_>) -> Result;
}

/// The page a [`Show::show`] writes to: at most `PAGE_SIZE - 1` bytes (sysfs
/// rejects a full page).  Writing past the end fails with [`fmt::Error`],
/// which `show` reports as `EFBIG`; nothing is truncated silently.
pub(crate) struct ShowBuffer<'a> {
    /// The whole buffer; only `buf[..len]` is content.
    buf: &'a mut [u8],
    /// Bytes written so far.
    len: usize,
}

impl<'a> ShowBuffer<'a> {
    /// A buffer writing to `buf`, keeping one byte spare like a sysfs page.
    pub(crate) fn new(buf: &'a mut [u8]) -> Self {
        ShowBuffer { buf, len: 0 }
    }

    /// The bytes written so far.
    #[allow(dead_code)] // Used by tests.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }

    /// Number of bytes written so far.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Appends formatted text (use with `fmt!`); `EFBIG` if it does not fit.
    pub(crate) fn emit(&mut self, args: fmt::Arguments<'_>) -> Result {
        fmt::Write::write_fmt(self, args).map_err(|_| EFBIG)
    }
}

impl fmt::Write for ShowBuffer<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len.checked_add(s.len()).ok_or(fmt::Error)?;
        if end >= self.buf.len() {
            return Err(fmt::Error);
        }
        let dst = self.buf.get_mut(self.len..end).ok_or(fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Where a new [`Dir`] goes.
pub(crate) enum Parent<'a> {
    /// The kfd device, `/sys/devices/virtual/kfd/kfd` (`/sys/class/kfd/kfd`).
    KfdDevice,
    /// Inside another directory.
    Dir(&'a Arc<Dir>),
    /// `/sys/kernel`, for KUnit tests: their trees must neither clash with
    /// nor depend on the module's own ones under the kfd device.
    #[cfg(CONFIG_KUNIT = "y")]
    KernelForTests,
}

/// A sysfs directory (one kobject) with read-only files; removed on drop.
///
/// # Invariants
///
/// `raw` is a directory created by `rkfd_shim_sysfs_dir_create` and not yet
/// destroyed.  If it has files, its `data` is `Arc::as_ptr` of `data`, which
/// this `Dir` keeps alive until the directory is destroyed.
pub(crate) struct Dir {
    /// The C directory.
    raw: NonNull<shim::rkfd_sysfs_dir>,
    /// The object formatting the files; dropped after `raw` is destroyed.
    _data: Option<Arc<dyn Show>>,
    /// Keeps the parent in sysfs while this directory exists; dropped last.
    _parent: Option<Arc<Dir>>,
}

// SAFETY: The C directory is only touched at creation, by children (reading
// its kobject pointer; kobject_add() is internally synchronised) and at drop,
// which has exclusive access.  `data` is `Send + Sync` by the `Show` bound.
unsafe impl Send for Dir {}

// SAFETY: See `Send`; shared references only read the kobject pointer.
unsafe impl Sync for Dir {}

impl Dir {
    /// Creates directory `name` under `parent` with `files`; reading
    /// `files[i]` calls `data.show(i, ..)`.
    pub(crate) fn new<T: Show>(
        parent: Parent<'_>,
        name: &CStr,
        files: &[&CStr],
        data: Arc<T>,
    ) -> Result<Arc<Dir>> {
        let ptr = Arc::as_ptr(&data).cast::<c_void>();
        let data: Arc<dyn Show> = data;
        Self::create(parent, name, files, ptr, Some(show_file::<T>), Some(data))
    }

    /// Creates directory `name` under `parent` with no files (e.g. `nodes`).
    pub(crate) fn new_empty(parent: Parent<'_>, name: &CStr) -> Result<Arc<Dir>> {
        Self::create(parent, name, &[], core::ptr::null(), None, None)
    }

    fn create(
        parent: Parent<'_>,
        name: &CStr,
        files: &[&CStr],
        ptr: *const c_void,
        show: shim::rkfd_sysfs_show_t,
        data: Option<Arc<dyn Show>>,
    ) -> Result<Arc<Dir>> {
        let nr_files = c_uint::try_from(files.len()).map_err(|_| EINVAL)?;
        let mut names = KVec::with_capacity(files.len(), GFP_KERNEL)?;
        for f in files {
            names.push(f.as_char_ptr(), GFP_KERNEL)?;
        }
        let (parent_kobj, parent) = match parent {
            // SAFETY: Returns the registered device's kobject or NULL.
            Parent::KfdDevice => (unsafe { shim::rkfd_shim_kfd_kobject() }, None),
            Parent::Dir(dir) => (dir.kobj(), Some(dir.clone())),
            // SAFETY: Returns `kernel_kobj`, which lives forever.
            #[cfg(CONFIG_KUNIT = "y")]
            Parent::KernelForTests => (unsafe { shim::rkfd_shim_sysfs_kunit_parent() }, None),
        };
        let mut raw = core::ptr::null_mut();
        // SAFETY: `parent_kobj` is NULL (rejected with -ENODEV) or a live
        // kobject: the kfd device's (registered: module init/exit are
        // serialised with everything that creates directories under it) or a
        // parent `Dir`'s, kept alive by the `Arc` in `parent`.  `name` and
        // `names` are valid NUL-terminated strings for the call (the shim
        // copies them).  `ptr` and `show` come from `Dir::new`, which keeps
        // `data` alive in the returned `Dir` for as long as the directory
        // exists; on failure the shim keeps nothing.
        to_result(unsafe {
            shim::rkfd_shim_sysfs_dir_create(
                parent_kobj,
                name.as_char_ptr(),
                names.as_ptr(),
                nr_files,
                ptr,
                show,
                &mut raw,
            )
        })?;
        let raw = NonNull::new(raw).ok_or(EINVAL)?;
        // INVARIANT: `raw` was just created; `data` holds what `ptr` points to.
        // If the allocation fails the `Dir` is dropped, which destroys `raw`.
        let dir = Dir {
            raw,
            _data: data,
            _parent: parent,
        };
        Ok(Arc::new(dir, GFP_KERNEL)?)
    }

    fn kobj(&self) -> *mut bindings::kobject {
        // SAFETY: By the type invariant `raw` is a live directory.
        unsafe { shim::rkfd_shim_sysfs_dir_kobj(self.raw.as_ptr()) }
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        // SAFETY: By the type invariant `raw` is live; it is destroyed once,
        // here.  When this returns no `show` runs or will start, so `_data`
        // may be dropped next; children hold an `Arc` of `self`, so none is
        // left.
        unsafe { shim::rkfd_shim_sysfs_dir_destroy(self.raw.as_ptr()) }
    }
}

/// The C `show` trampoline for [`Dir`]s formatted by a `T`.
///
/// # Safety
///
/// `data` must be `Arc::as_ptr` of an `Arc<T>` that stays alive for the
/// call, and `buf` must point to a writable buffer of `PAGE_SIZE` bytes.
/// The shim guarantees both for directories created by [`Dir::new`].
unsafe extern "C" fn show_file<T: Show>(
    data: *const c_void,
    file: c_uint,
    buf: *mut c_char,
) -> c_long {
    // SAFETY: By the function's safety requirements `data` points to a live `T`.
    let obj = unsafe { &*data.cast::<T>() };
    // SAFETY: sysfs passes a zeroed buffer of `PAGE_SIZE` bytes, used only
    // by this call.
    let page = unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), PAGE_SIZE) };
    let mut out = ShowBuffer::new(page);
    match obj.show(file as usize, &mut out) {
        // `len() < PAGE_SIZE`, so this cannot overflow.
        Ok(()) => out.len() as c_long,
        Err(e) => e.to_errno() as c_long,
    }
}

/// Reads `path`, relative to the root of sysfs, through the VFS into `buf`;
/// returns the bytes read.  For KUnit tests that check what user space sees.
#[cfg(CONFIG_KUNIT = "y")]
pub(crate) fn read_for_tests(path: &CStr, buf: &mut [u8]) -> Result<usize> {
    // SAFETY: `path` is NUL-terminated, `buf` is writable for its length.
    let n = unsafe {
        shim::rkfd_shim_sysfs_kunit_read(path.as_char_ptr(), buf.as_mut_ptr(), buf.len())
    };
    if n < 0 {
        Err(Error::from_errno(n as i32))
    } else {
        Ok(n as usize)
    }
}
