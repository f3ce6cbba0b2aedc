// SPDX-License-Identifier: GPL-2.0

//! What the software engines (`engine.rs` above) need from C: the
//! scheduler thread and local mappings of the pages the GPU accesses
//! (`vgpu/engine_shim.c`).

use core::{
    marker::PhantomData,
    ptr::NonNull, //
};

use kernel::{
    bindings,
    ffi::{
        c_int,
        c_ulong,
        c_void, //
    },
    page::{Page, PAGE_SIZE},
    prelude::*,
    sync::{
        atomic::{
            Atomic,
            Full, //
        },
        Arc,
    },
    time::Delta,
    types::ForeignOwnable,
};

use super::to_result;

use super::shim::{
    vgpu_engine_cond_resched,
    vgpu_engine_direct_pfn,
    vgpu_engine_kmap_page,
    vgpu_engine_kmap_pfn,
    vgpu_engine_kunmap,
    vgpu_engine_online_cpus,
    vgpu_engine_shader_workers,
    vgpu_engine_thread_should_stop,
    vgpu_engine_thread_sleep_us,
    vgpu_engine_thread_start,
    vgpu_engine_thread_stop, //
};

/// The body of a [`Thread`].
pub(crate) trait ThreadMain: Send + Sync + 'static {
    /// Runs until [`should_stop`] says so; must not return before.  Its
    /// timed sleeps ([`sleep_unless_stopped`]) end when the thread is
    /// stopped, so that stopping it (module unload) does not wait for them.
    fn main(&self);
}

/// A kernel thread running `T::main`, stopped (and waited for) on drop.
///
/// # Invariants
///
/// `task` was started by `vgpu_engine_thread_start` and is stopped only by
/// `drop`; its function returns only after `kthread_should_stop()`.
pub(crate) struct Thread {
    /// The task.
    task: NonNull<bindings::task_struct>,
}

// SAFETY: A kthread may be stopped from any thread.
unsafe impl Send for Thread {}
// SAFETY: `&Thread` allows nothing.
unsafe impl Sync for Thread {}

/// The thread function: owns one reference on the `T`.
///
/// # Safety
///
/// `data` is an `Arc<T>` turned foreign by [`Thread::start`].
unsafe extern "C" fn thread_fn<T: ThreadMain>(data: *mut c_void) -> c_int {
    // SAFETY: The reference `start` handed over; reclaimed once, here.
    let body = unsafe { <Arc<T> as ForeignOwnable>::from_foreign(data) };
    body.main();
    // `main` returns only once `kthread_stop` was called: wait for it to
    // finish the protocol (it does not let the task exit before).
    while !should_stop() {
        sleep_unless_stopped(Delta::from_millis(1000));
    }
    drop(body);
    0
}

impl Thread {
    /// Starts `vgpu-<role>/<index>.<worker>` running `body.main()`.
    pub(crate) fn start<T: ThreadMain>(body: Arc<T>, role: &'static CStr, index: u32, worker: u32) -> Result<Self> {
        let data = body.into_foreign();
        let mut task = core::ptr::null_mut();
        // SAFETY: `thread_fn::<T>` takes ownership of `data` if the thread
        // starts; `role` is a NUL-terminated string (kthread_run copies the
        // name); `task` is valid for writes.
        let ret = unsafe { vgpu_engine_thread_start(Some(thread_fn::<T>), data, role.as_char_ptr(), index, worker, &mut task) };
        if let Err(e) = to_result(ret) {
            // SAFETY: The thread never ran (kthread_run failed), so the
            // reference is still ours.
            drop(unsafe { <Arc<T> as ForeignOwnable>::from_foreign(data) });
            return Err(e);
        }
        // INVARIANT: Started above.
        Ok(Thread {
            task: NonNull::new(task).ok_or(ENOMEM)?,
        })
    }
}

impl Drop for Thread {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the task is live until this call,
        // which waits for its function to return.
        unsafe { vgpu_engine_thread_stop(self.task.as_ptr()) };
    }
}

/// Lets other tasks run if the current one should yield (a polling
/// [`Thread`] between polls).
pub(crate) fn cond_resched() {
    // SAFETY: Called from a kthread, in process context with no lock held.
    unsafe { vgpu_engine_cond_resched() }
}

/// The number of online CPUs.
pub(crate) fn online_cpus() -> u32 {
    // SAFETY: Reads a global count.
    unsafe { vgpu_engine_online_cpus() }
}

/// The `shader_workers` module parameter: how many workers run one
/// dispatch's workgroups (0: all).
pub(crate) fn shader_workers() -> u32 {
    // SAFETY: Reads a module parameter (READ_ONCE); no preconditions.
    unsafe { vgpu_engine_shader_workers() }
}

/// Whether the current [`Thread`] is being stopped.
pub(crate) fn should_stop() -> bool {
    // SAFETY: Called from a kthread (the engine's), as the function requires.
    unsafe { vgpu_engine_thread_should_stop() }
}

/// Sleeps for `d` (a quarter more at most), or less: returns at once when
/// the current [`Thread`] is being stopped ([`should_stop`] is true then),
/// where `fsleep` would sleep on and hold up `kthread_stop`.
pub(crate) fn sleep_unless_stopped(d: Delta) {
    let us = c_ulong::try_from(d.as_micros_ceil().max(0)).unwrap_or(c_ulong::MAX);
    // SAFETY: Called from a kthread (a `Thread`'s), in process context
    // with no spinlock held, as sleeping requires.
    unsafe { vgpu_engine_thread_sleep_us(us) }
}

/// Where the kernel's direct map has a page of memory (`page_address`, on
/// kernels without HIGHMEM, where every page has one for its lifetime).
/// Only an address: [`PageMap::of`] accesses it for a page known to stay
/// allocated.
#[derive(Copy, Clone)]
pub(crate) struct Direct(NonNull<u8>);

impl Direct {
    /// The direct-map address of the page at `pfn`; `None` if it is not
    /// memory or the kernel has HIGHMEM (pages must be kmapped then).
    pub(crate) fn of_pfn(pfn: u64) -> Option<Direct> {
        let pfn = c_ulong::try_from(pfn).ok()?;
        // SAFETY: Only computes an address (the shim checks `pfn_valid`).
        NonNull::new(unsafe { vgpu_engine_direct_pfn(pfn) }.cast()).map(Direct)
    }
}

/// The memory behind a GPU page-table entry, as the engines reach it.
pub(crate) enum GpuTarget<'a> {
    /// A system page (GTT, or another GPU's VRAM through its BAR), by frame.
    Pfn(u64),
    /// A page of this GPU's VRAM.
    Page(&'a Page),
    /// A user-pointer page, by user address (not reachable by the engines
    /// yet: they have no reference on the process's mm).
    User(#[allow(dead_code)] u64),
    /// A system page or a page of this GPU's VRAM, where the kernel maps it.
    Direct(Direct),
}

/// What an engine reaches through one PTE while the VM's mappings are held
/// (the GPU driver's `Vm::gpu_pages`).
///
/// # Invariants
///
/// The memory `target` names stays allocated for `'a`.
pub(crate) struct GpuPage<'a> {
    /// The memory.
    target: GpuTarget<'a>,
    /// The GPU may write it.
    writable: bool,
}

impl<'a> GpuPage<'a> {
    /// What a PTE points at.
    ///
    /// # Safety
    ///
    /// The memory `target` names (for [`GpuTarget::Pfn`]: that frame; for
    /// [`GpuTarget::Direct`]: the page at that address) stays allocated for
    /// `'a`.
    pub(crate) unsafe fn new(target: GpuTarget<'a>, writable: bool) -> Self {
        // INVARIANT: The caller's contract.
        GpuPage { target, writable }
    }

    /// The memory.
    pub(crate) fn target(&self) -> &GpuTarget<'a> {
        &self.target
    }

    /// Whether the GPU may write it.
    pub(crate) fn writable(&self) -> bool {
        self.writable
    }
}

/// A local kernel mapping (`kmap_local_page`) of a page the GPU reaches
/// through a VM, valid while that VM's mappings are held (`'a`); unmapped
/// on drop.  Mappings must be dropped in the reverse order of their
/// creation (locals drop in reverse order of declaration).
///
/// # Invariants
///
/// `addr` maps `PAGE_SIZE` bytes of a page that stays allocated for `'a`.
pub(crate) struct PageMap<'a> {
    /// The mapping.
    addr: NonNull<u8>,
    /// `addr` is a `kmap_local_page` mapping (else the direct map).
    kmapped: bool,
    /// The VM mappings that keep the page allocated.
    _held: PhantomData<&'a ()>,
}

impl<'a> PageMap<'a> {
    /// Maps what `page` points at; `None` if the engines cannot reach it
    /// (user-pointer pages: no mm reference yet).
    pub(crate) fn of(page: &GpuPage<'a>) -> Option<Self> {
        let addr = match page.target() {
            // SAFETY: The frame stays allocated for `'a` (the `GpuPage`
            // invariant); the shim checks `pfn_valid`.
            GpuTarget::Pfn(pfn) => unsafe { vgpu_engine_kmap_pfn(c_ulong::try_from(*pfn).ok()?) },
            // SAFETY: `p` lives for `'a`.
            GpuTarget::Page(p) => unsafe { vgpu_engine_kmap_page(p.as_ptr()) },
            GpuTarget::User(_) => return None,
            // INVARIANT: The direct map covers the page for its lifetime,
            // which lasts for `'a` (as above); nothing to unmap.
            GpuTarget::Direct(d) => {
                return Some(PageMap {
                    addr: d.0,
                    kmapped: false,
                    _held: PhantomData,
                })
            }
        };
        // INVARIANT: As argued above.
        NonNull::new(addr.cast()).map(|addr| PageMap {
            addr,
            kmapped: true,
            _held: PhantomData,
        })
    }

    /// Checks that `[off, off + len)` is within the page.
    fn check(off: usize, len: usize) -> bool {
        off.checked_add(len).is_some_and(|end| end <= PAGE_SIZE)
    }

    /// Copies `buf.len()` bytes at `off` into `buf`.
    pub(crate) fn read(&self, off: usize, buf: &mut [u8]) {
        if Self::check(off, buf.len()) {
            // SAFETY: In bounds of the mapped page (checked); `buf` is a
            // distinct kernel buffer.  User space may write the page
            // concurrently, as with any memory a device shares with it.
            unsafe {
                core::ptr::copy_nonoverlapping(self.addr.as_ptr().add(off), buf.as_mut_ptr(), buf.len())
            };
        }
    }

    /// Copies `data` to `off`.
    pub(crate) fn write(&self, off: usize, data: &[u8]) {
        if Self::check(off, data.len()) {
            // SAFETY: As in `read`.
            unsafe {
                core::ptr::copy_nonoverlapping(data.as_ptr(), self.addr.as_ptr().add(off), data.len())
            };
        }
    }

    /// Copies `len` bytes from `src` at `src_off` to `dst_off` (the two
    /// may be the same page: `memmove`).
    pub(crate) fn copy_from(&self, dst_off: usize, src: &PageMap<'_>, src_off: usize, len: usize) {
        if Self::check(dst_off, len) && Self::check(src_off, len) {
            // SAFETY: Both ranges are in bounds of mapped pages (checked).
            let (s, d) = unsafe { (src.addr.as_ptr().add(src_off), self.addr.as_ptr().add(dst_off)) };
            if (s as usize).abs_diff(d as usize) >= len {
                // SAFETY: As above, and the ranges do not overlap.
                unsafe { core::ptr::copy_nonoverlapping(s, d, len) };
            } else {
                // SAFETY: As above (`memmove` for one page onto itself).
                unsafe { core::ptr::copy(s, d, len) };
            }
        }
    }

    /// Fills `len` bytes at `off` with `pattern` (little-endian) repeated,
    /// starting with byte `phase` of the pattern.
    pub(crate) fn fill(&self, off: usize, pattern: u32, phase: usize, len: usize) {
        if !Self::check(off, len) {
            return;
        }
        let bytes = pattern.to_le_bytes();
        for i in 0..len {
            // SAFETY: In bounds (checked).
            unsafe { self.addr.as_ptr().add(off + i).write(bytes[(phase + i) % 4]) };
        }
    }

    /// Atomically adds `v` to the 64-bit word at `off` (8-byte aligned),
    /// returning the old value; `None` if `off` is not aligned.
    pub(crate) fn atomic_add_u64(&self, off: usize, v: u64) -> Option<u64> {
        if off % 8 != 0 || !Self::check(off, 8) {
            return None;
        }
        // SAFETY: An aligned word in the mapped page; the CPU side accesses
        // it atomically too (signals).
        let a = unsafe { Atomic::<u64>::from_ptr(self.addr.as_ptr().add(off).cast()) };
        Some(a.fetch_add(v, Full))
    }
}

impl Drop for PageMap<'_> {
    fn drop(&mut self) {
        if self.kmapped {
            // SAFETY: By the type invariant `addr` is a live local mapping.
            unsafe { vgpu_engine_kunmap(self.addr.as_ptr().cast()) };
        }
    }
}
