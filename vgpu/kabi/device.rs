// SPDX-License-Identifier: GPL-2.0

//! The per-GPU devices of the C shim (parent device, DRM render node,
//! sysfs, hwmon) and the callbacks they make into Rust (`vgpu_rs_*`).
//!
//! C header: `vgpu/vgpu_shim.h`.

use core::ptr::NonNull;

use kernel::{
    bindings,
    ffi::{
        c_int,
        c_ulong,
        c_void, //
    },
    prelude::*,
    str::CString,
    sync::{
        Arc,
        ArcBorrow, //
    },
    types::ForeignOwnable, //
};

use super::{
    shim,
    to_result, //
};
use crate::{
    gpu::Core,
    mem::Mem,
    vm::Vm, //
};

/// One GPU's devices in C: a faux device named like a PCI function with
/// amdgpu's sysfs attributes, a DRM device with a render node and a hwmon.
///
/// # Invariants
///
/// `dev` was created by `vgpu_shim_dev_create` with `Arc::as_ptr(&core)` as
/// its GPU, and is destroyed only by `drop`.
pub(crate) struct Devices {
    /// The C object.
    dev: NonNull<shim::vgpu_shim_dev>,
    /// The GPU the devices call back into; outlives `dev`.
    _core: Arc<Core>,
}

// SAFETY: After creation the C object is only read (and the functions that
// read it are safe to call concurrently); it is destroyed once, in `drop`.
unsafe impl Send for Devices {}
// SAFETY: As above, `&Devices` only allows concurrent reads.
unsafe impl Sync for Devices {}

/// Copies `s` into a NUL-terminated C buffer, truncating it.
fn copy_str<const N: usize>(dst: &mut [u8; N], s: &[u8]) {
    let n = s.len().min(N - 1);
    dst[..n].copy_from_slice(&s[..n]);
    dst[n..].fill(0);
}

impl Devices {
    /// Creates the devices of `core`.
    pub(crate) fn create(core: &Arc<Core>) -> Result<Self> {
        let profile = core.profile();
        let mut info = shim::vgpu_shim_dev_info {
            vendor_id: 0x1002,
            device_id: profile.device_id,
            unique_id: profile.unique_id(core.index()),
            vram_total: core.vram().size(),
            sclk_mhz: profile.max_engine_clk_mhz,
            mclk_mhz: profile.mem_clk_max_mhz,
            temp_mdeg: 45_000,
            vddgfx_mv: profile.vddgfx_mv,
            power_avg_uw: profile.idle_power_w * 1_000_000,
            power_cap_uw: profile.power_cap_w * 1_000_000,
            ..Default::default()
        };
        let name = CString::try_from_fmt(fmt!("0000:{:02x}:00.0", core.bus()))?;
        copy_str(&mut info.name, name.to_bytes());
        let vbios = CString::try_from_fmt(fmt!("rkfd-vgpu-{}", profile.name))?;
        copy_str(&mut info.vbios_version, vbios.to_bytes());

        let mut dev = core::ptr::null_mut();
        // SAFETY: `info` and `dev` are valid for the call.  The GPU pointer
        // stays valid while the devices exist: `Devices` holds a reference
        // on `core` and destroys the devices before releasing it.
        to_result(unsafe {
            shim::vgpu_shim_dev_create(&info, Arc::as_ptr(core).cast_mut().cast(), &mut dev)
        })?;
        let dev = NonNull::new(dev).ok_or(ENODEV)?;
        // INVARIANT: Created above with `core` as the GPU.
        Ok(Devices {
            dev,
            _core: core.clone(),
        })
    }

    /// The minor of the render node, `/dev/dri/renderD<minor>`.
    pub(crate) fn render_minor(&self) -> u32 {
        // SAFETY: By the type invariant `dev` is live.
        unsafe { shim::vgpu_shim_dev_render_minor(self.dev.as_ptr()) }
    }

    /// The minor of the primary node, `/dev/dri/card<minor>`.
    #[cfg(CONFIG_KUNIT = "y")]
    pub(crate) fn primary_minor(&self) -> u32 {
        // SAFETY: By the type invariant `dev` is live.
        unsafe { shim::vgpu_shim_dev_primary_minor(self.dev.as_ptr()) }
    }

    /// Logs `msg` as amdgpu logs device messages: `amdgpu 0000:c1:00.0: msg`.
    pub(crate) fn log(&self, msg: &CStr) {
        // SAFETY: By the type invariant `dev` is live; `msg` is NUL-terminated.
        unsafe { shim::vgpu_shim_dev_log(self.dev.as_ptr(), msg.as_char_ptr()) }
    }

    /// The VM of an open file of this GPU's render node; `EINVAL` for any
    /// other file (another driver's, another GPU's, or a primary node).
    ///
    /// # Safety
    ///
    /// `file` is null or a `struct file *` the caller holds a reference on
    /// for the duration of the call.
    pub(crate) unsafe fn file_vm(&self, file: *mut c_void) -> Result<Arc<Vm>> {
        let mut vm = core::ptr::null_mut();
        // SAFETY: `dev` is live by the type invariant; the caller keeps
        // `file` alive.  The shim checks `file` is one of our DRM files
        // before it looks at its private data.
        to_result(unsafe { shim::vgpu_shim_file_vm(self.dev.as_ptr(), file.cast(), &mut vm) })?;
        // SAFETY: The shim returned the file's `driver_priv`, which
        // `vgpu_rs_file_open` set from `into_foreign` and which stays valid
        // while the file is open (the caller holds it).
        let vm = unsafe { <Arc<Vm> as ForeignOwnable>::borrow(vm) };
        Ok(vm.into())
    }
}

impl Drop for Devices {
    fn drop(&mut self) {
        // SAFETY: By the type invariant `dev` is live and this is the only
        // place that destroys it.  No DRM file is open: they hold a module
        // reference.  `core` is released only after this (field drop).
        unsafe { shim::vgpu_shim_dev_destroy(self.dev.as_ptr()) };
    }
}

/// Borrows the [`Core`] the shim passes back as `gpu`.
///
/// # Safety
///
/// `gpu` is the pointer a live [`Devices`] was created with.
unsafe fn core_from_raw<'a>(gpu: *mut c_void) -> ArcBorrow<'a, Core> {
    // SAFETY: `gpu` is `Arc::as_ptr` of the `Core` that the `Devices` keeps
    // a reference on, so the count cannot reach zero while the C device
    // calls back (the caller's requirement).
    unsafe { ArcBorrow::from_raw(gpu.cast::<Core>().cast_const()) }
}

/// DRM `open`: every file gets its own VM, stored in `driver_priv`.
///
/// # Safety
///
/// Called by the shim with the `gpu` of live devices and a valid `vm` slot.
#[no_mangle]
unsafe extern "C" fn vgpu_rs_file_open(gpu: *mut c_void, vm: *mut *mut c_void) -> c_int {
    // SAFETY: The caller's requirement.
    let core = unsafe { core_from_raw(gpu) };
    match Vm::new(core.into()) {
        Ok(new) => {
            // SAFETY: `vm` is valid for writes (the caller's requirement).
            unsafe { *vm = new.into_foreign() };
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// DRM `postclose`: drops the file's reference on its VM.
///
/// # Safety
///
/// Called by the shim once per successful `vgpu_rs_file_open`, with the
/// value it stored.
#[no_mangle]
unsafe extern "C" fn vgpu_rs_file_close(vm: *mut c_void) {
    // SAFETY: `vm` came from `into_foreign` in `vgpu_rs_file_open` and this
    // is its last use (postclose runs once, after every ioctl and mmap).
    drop(unsafe { <Arc<Vm> as ForeignOwnable>::from_foreign(vm) });
}

/// DRM `mmap`: the object at `pgoff` in the file's VM, with a reference for
/// the new VMA in `*mem`.
///
/// # Safety
///
/// Called by the shim's mmap with the `driver_priv` of an open file and a
/// valid `mem` slot.
#[no_mangle]
unsafe extern "C" fn vgpu_rs_mmap(
    vm: *mut c_void,
    pgoff: c_ulong,
    npages: c_ulong,
    mem: *mut *mut c_void,
) -> c_int {
    // SAFETY: `vm` came from `into_foreign` and the file is open.
    let vm = unsafe { <Arc<Vm> as ForeignOwnable>::borrow(vm) };
    match vm.mmap_lookup(pgoff as u64, npages as u64) {
        Ok(m) => {
            // SAFETY: `mem` is valid for writes (the caller's requirement).
            unsafe { *mem = m.into_foreign() };
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// VMA fault: the page at `pgoff`, or null (`SIGBUS`).
///
/// # Safety
///
/// `mem` is a VMA's reference from `vgpu_rs_mmap` or `vgpu_rs_mem_get`.
#[no_mangle]
unsafe extern "C" fn vgpu_rs_mem_page(mem: *mut c_void, pgoff: c_ulong) -> *mut bindings::page {
    // SAFETY: The VMA holds a reference, so the object is alive; its
    // pages live as long as it does.
    let mem = unsafe { <Arc<Mem> as ForeignOwnable>::borrow(mem) };
    mem.page_at(pgoff as u64)
        .map_or(core::ptr::null_mut(), |p| p.as_ptr())
}

/// VMA `open` (split, fork, mremap): a reference for the new VMA.
///
/// # Safety
///
/// `mem` is a live VMA's reference.
#[no_mangle]
unsafe extern "C" fn vgpu_rs_mem_get(mem: *mut c_void) {
    // SAFETY: The VMA being copied holds a reference.
    let borrowed = unsafe { <Arc<Mem> as ForeignOwnable>::borrow(mem) };
    let new: Arc<Mem> = borrowed.into();
    // The new reference now belongs to the new VMA; `into_foreign` returns
    // the same pointer, so the C side keeps using `mem`.
    let _ = new.into_foreign();
}

/// VMA `close`: drops the VMA's reference.
///
/// # Safety
///
/// `mem` is the closing VMA's reference, used for the last time.
#[no_mangle]
unsafe extern "C" fn vgpu_rs_mem_put(mem: *mut c_void) {
    // SAFETY: The caller's requirement: this reference is ours to drop.
    drop(unsafe { <Arc<Mem> as ForeignOwnable>::from_foreign(mem) });
}

/// sysfs `mem_info_vram_used`.
///
/// # Safety
///
/// `gpu` is the pointer live devices were created with.
#[no_mangle]
unsafe extern "C" fn vgpu_rs_vram_used(gpu: *mut c_void) -> u64 {
    // SAFETY: The caller's requirement.
    let core = unsafe { core_from_raw(gpu) };
    core.vram().used()
}

/// DRM ioctl `AMDGPU_VGPU_ACCESS` (the GPU-access test interface): the GPU
/// reads or writes `size` bytes at `va` of the file's VM from or into the
/// user buffer `buf`, raising retry faults; `*faults` counts them.
///
/// # Safety
///
/// Called by the shim's ioctl with the `driver_priv` of an open file and a
/// valid `faults` slot.
#[no_mangle]
unsafe extern "C" fn vgpu_rs_gpu_access(
    vm: *mut c_void,
    va: u64,
    size: u64,
    buf: u64,
    write: bool,
    faults: *mut u32,
) -> c_int {
    // SAFETY: `vm` came from `into_foreign` and the file is open.
    let vm = unsafe { <Arc<Vm> as ForeignOwnable>::borrow(vm) };
    let mut count = 0u32;
    let ret = vm.gpu_access(va, size, buf, write, &mut count);
    // SAFETY: `faults` is valid for writes (the caller's requirement).
    unsafe { *faults = count };
    match ret {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}
