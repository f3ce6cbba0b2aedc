// SPDX-License-Identifier: GPL-2.0

//! debugfs: `/sys/kernel/debug/kfd/`.
//!
//! C: `kfd_debugfs.c`.  Upstream 7.3 has, under `kfd/`: `mqds`, `hqds`,
//! `rls`, `hang_hws` (write a gpu_id), `mem_limit` and `proc/<pid>/`
//! holding one `pasid_<gpu_id>` per device of the process.  This module
//! owns the tree; the files' contents come from the subsystems that know
//! them.
//!
//! # Adding a file
//!
//! A file is an object implementing [`Show`] (and [`Store`] if writable),
//! shared through an [`Arc`]:
//!
//! ```ignore
//! struct Hqds;
//! impl debugfs::Show for Hqds {
//!     fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
//!         writeln!(f, "...")
//!     }
//! }
//! ```
//!
//! - module-wide files (`kfd/<name>`): add one line to [`root_files`];
//! - per-process files (`kfd/proc/<pid>/<name>`): call
//!   [`ProcDir::add`] on the process's directory (`Process::debugfs`).
//!
//! Output goes through a `seq_file`, so it may be longer than a page.
//!
//! # Lifetimes and locking
//!
//! Removing a file (dropping its [`DebugFile`]) waits for every running
//! `show`/`store` of it, then drops the object's `Arc`.  So never drop a
//! [`DebugFile`] or a [`ProcDir`] while holding a lock its callbacks take;
//! the files of this module take no rkfd lock except what each `Show`
//! documents (`mem_limit`: [`crate::device::DEVICES`], a leaf, and the
//! GPU driver's `get_mem_limits`).
//! If debugfs is unavailable (not mounted is fine; not built, or out of
//! memory) directories and files silently do not exist, as upstream.

use kernel::{
    debugfs::{self, Dir},
    fmt,
    prelude::*,
    str::CString,
    sync::Arc,
    uaccess::UserSliceReader, //
};

/// Formats a debugfs file.
pub(crate) trait Show: Send + Sync + 'static {
    /// Writes the file's content.
    fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
}

/// Handles a write to a debugfs file.
pub(crate) trait Store: Send + Sync + 'static {
    /// `input` is what the writer wrote (at most [`MAX_STORE`] bytes).
    fn store(&self, input: &[u8]) -> Result;
}

/// Most bytes one write to a writable file may carry (upstream's
/// `hang_hws` rejects 16 and more).
pub(crate) const MAX_STORE: usize = 64;

/// Adapts a [`Show`] to the kernel's debugfs `Writer`.
struct Shown<T: Show>(Arc<T>);

impl<T: Show> debugfs::Writer for Shown<T> {
    fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.show(f)
    }
}

/// Adapts a [`Show`] + [`Store`] to the kernel's `Writer` + `Reader`.
struct Stored<T: Show + Store>(Arc<T>);

impl<T: Show + Store> debugfs::Writer for Stored<T> {
    fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.show(f)
    }
}

impl<T: Show + Store> debugfs::Reader for Stored<T> {
    fn read_from_slice(&self, reader: &mut UserSliceReader) -> Result {
        let n = reader.len();
        if n > MAX_STORE {
            return Err(EINVAL);
        }
        let mut buf = [0u8; MAX_STORE];
        reader.read_slice(&mut buf[..n])?;
        self.0.store(&buf[..n])
    }
}

/// One debugfs file; removed when dropped.
pub(crate) struct DebugFile {
    /// A `Pin<KBox<debugfs::File<..>>>`, type-erased.
    _file: KBox<dyn Send + Sync>,
}

/// A debugfs directory (removed when it and every child are dropped).
#[derive(Clone)]
pub(crate) struct DebugDir(Dir);

impl DebugDir {
    /// A read-only file `name` showing `data`.
    pub(crate) fn file<T: Show>(&self, name: &CStr, data: Arc<T>) -> Result<DebugFile> {
        let file = KBox::pin_init(self.0.read_only_file(name, Shown(data)), GFP_KERNEL)?;
        Ok(DebugFile { _file: KBox::new(file, GFP_KERNEL)? })
    }

    /// A read-write file `name` showing `data` and handing writes to it.
    pub(crate) fn file_rw<T: Show + Store>(&self, name: &CStr, data: Arc<T>) -> Result<DebugFile> {
        let file = KBox::pin_init(self.0.read_write_file(name, Stored(data)), GFP_KERNEL)?;
        Ok(DebugFile { _file: KBox::new(file, GFP_KERNEL)? })
    }

    /// A subdirectory.
    pub(crate) fn subdir(&self, name: &CStr) -> DebugDir {
        DebugDir(self.0.subdir(name))
    }
}

/// `kfd/` and its module-wide files.
struct Root {
    /// `kfd/proc`, parent of the per-process directories.
    proc: DebugDir,
    /// The files; dropped before the directories.
    _files: KVec<DebugFile>,
    /// `kfd/`, kept while the module is loaded.
    _root: DebugDir,
}

kernel::sync::global_lock! {
    // SAFETY: Initialised in module init (`init`) before any process exists.
    unsafe(uninit) static ROOT: Mutex<Option<Root>> = None;
}

/// `kfd/mem_limit`: the GPU driver's system-memory limits, as amdgpu's
/// `kfd_debugfs_kfd_mem_limits`.
struct MemLimit;

impl Show for MemLimit {
    fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let l = crate::device::all()
            .ok()
            .and_then(|d| d.first().map(|d| d.kgd.mem_limits()))
            .unwrap_or_default();
        writeln!(f, "System mem used {}M out of {}M", l.system_used >> 20, l.system_limit >> 20)?;
        writeln!(f, "TTM mem used {}M out of {}M", l.ttm_used >> 20, l.ttm_limit >> 20)
    }
}

/// The module-wide files under `kfd/`.  Add new ones here.
fn root_files(root: &DebugDir, files: &mut KVec<DebugFile>) -> Result {
    files.push(root.file(c"mem_limit", Arc::new(MemLimit, GFP_KERNEL)?)?, GFP_KERNEL)?;
    crate::queue::debugfs_files(root, files)?;
    Ok(())
}

/// Creates `kfd/` (module init).  A failure leaves debugfs without rkfd's
/// files but does not fail the module, as upstream.
pub(crate) fn init() {
    // SAFETY: Called exactly once, from module init, before any other use.
    unsafe { ROOT.init() };
    let root = DebugDir(Dir::new(c"kfd"));
    let proc = root.subdir(c"proc");
    let mut files = KVec::new();
    if let Err(e) = root_files(&root, &mut files) {
        crate::kabi::log::kfd_warn!("debugfs files not created: {:?}\n", e);
    }
    *ROOT.lock() = Some(Root { proc, _files: files, _root: root });
}

/// Removes `kfd/` (module exit; no process exists any more).
pub(crate) fn exit() {
    let root = ROOT.lock().take();
    drop(root);
}

/// `kfd/proc/<pid>/` of one process; removed with its files when dropped.
pub(crate) struct ProcDir {
    /// The process's files; dropped before the directory.
    files: KVec<DebugFile>,
    dir: DebugDir,
}

impl ProcDir {
    /// Creates `kfd/proc/<pid>/` (`ENODEV` once the module is unloading).
    pub(crate) fn new(pid: i32) -> Result<Self> {
        let name = CString::try_from_fmt(fmt!("{}", pid))?;
        let guard = ROOT.lock();
        let root = guard.as_ref().ok_or(ENODEV)?;
        Ok(ProcDir { files: KVec::new(), dir: root.proc.subdir(&name) })
    }

    /// Adds file `name` showing `data`.
    pub(crate) fn add<T: Show>(&mut self, name: &CStr, data: Arc<T>) -> Result {
        let file = self.dir.file(name, data)?;
        self.files.push(file, GFP_KERNEL)?;
        Ok(())
    }
}

impl Drop for ProcDir {
    fn drop(&mut self) {
        // Files first, then the directory (field order would do the same;
        // explicit because it matters).
        self.files.clear();
    }
}

#[kunit_tests(rkfd_debugfs)]
mod tests {
    use super::*;
    use kernel::sync::atomic::{Atomic, Relaxed};

    struct Counter(Atomic<u32>);

    impl Show for Counter {
        fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            writeln!(f, "{}", self.0.load(Relaxed))
        }
    }

    impl Store for Counter {
        fn store(&self, input: &[u8]) -> Result {
            let s = core::str::from_utf8(input).map_err(|_| EINVAL)?;
            let v = s.trim().parse::<u32>().map_err(|_| EINVAL)?;
            self.0.store(v, Relaxed);
            Ok(())
        }
    }

    #[test]
    fn files_come_and_go() -> Result {
        let dir = DebugDir(Dir::new(c"rkfd-kunit"));
        let c = Arc::new(Counter(Atomic::new(7)), GFP_KERNEL)?;
        let sub = dir.subdir(c"sub");
        let f1 = sub.file(c"ro", c.clone())?;
        let f2 = sub.file_rw(c"rw", c.clone())?;
        c.store(b"42\n")?;
        assert_eq!(c.0.load(Relaxed), 42);
        assert!(c.store(b"x").is_err());
        drop(f1);
        drop(f2);
        drop(sub);
        // Only the test's reference is left once the files are gone.
        assert!(Arc::into_unique_or_drop(c).is_some());
        Ok(())
    }

    #[test]
    fn proc_dir_holds_files() -> Result {
        let mut p = ProcDir::new(-1)?;
        let c = Arc::new(Counter(Atomic::new(1)), GFP_KERNEL)?;
        p.add(c"pasid_0", c.clone())?;
        drop(p);
        assert!(Arc::into_unique_or_drop(c).is_some());
        Ok(())
    }
}
