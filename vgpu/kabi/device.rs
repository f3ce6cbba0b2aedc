// SPDX-License-Identifier: GPL-2.0

//! The per-GPU devices of the C shim (parent device, DRM render node,
//! sysfs, hwmon) and the callbacks they make into Rust ([`RenderNode`]).
//!
//! C header: `vgpu/vgpu_shim.h`.

use core::{marker::PhantomData, ptr::NonNull};

use kernel::{
    bindings,
    ffi::{
        c_int,
        c_ulong,
        c_void, //
    },
    page::Page,
    prelude::*,
    sync::{
        Arc,
        ArcBorrow, //
    },
    types::ForeignOwnable, //
};

use super::{
    kfd::DrmFileRef,
    shim,
    to_result, //
};

/// What the devices of a GPU call back (the DRM driver's `open`,
/// `postclose`, `mmap`, VMA fault and access, the GPU-access ioctl, sysfs
/// and hwmon), implemented by the GPU type.
pub(crate) trait RenderNode: Send + Sync + 'static {
    /// A render-node file's state (amdgpu: its GPU VM), one per open file.
    type File: Send + Sync;
    /// A memory object a render-node VMA maps.
    type Mem: Send + Sync;

    /// DRM `open`: the new file's state.
    fn open(gpu: ArcBorrow<'_, Self>) -> Result<Arc<Self::File>>;

    /// DRM `mmap` of `npages` pages at page offset `pgoff`: the object the
    /// new VMA maps (it keeps this reference until it closes).
    fn mmap(file: ArcBorrow<'_, Self::File>, pgoff: u64, npages: u64) -> Result<Arc<Self::Mem>>;

    /// VMA fault: the page at render-node page offset `pgoff` of `mem`,
    /// `None` for `SIGBUS`.
    fn mem_page(mem: &Self::Mem, pgoff: u64) -> Option<&Page>;

    /// VMA `access` (ptrace, `/proc/PID/mem`): copies `buf.len()` bytes at
    /// render-node byte offset `offset` of `mem` to (`write`) or from the
    /// object.  An error (outside the object, or memory the driver cannot
    /// reach this way) makes the access fail with `-EIO`, as TTM answers.
    fn mem_access(mem: &Self::Mem, offset: u64, buf: &mut [u8], write: bool) -> Result;

    /// sysfs `mem_info_vram_used` and `AMDGPU_INFO_VRAM_USAGE`, bytes.
    fn vram_used(&self) -> u64;

    /// `AMDGPU_INFO_GTT_USAGE`, bytes.
    fn gtt_used(&self) -> u64;

    /// `AMDGPU_INFO_TIMESTAMP`: the GPU's clock counter.
    fn clock_counter(&self) -> u64;

    /// hwmon `vgpu_throttle` (write): a thermal throttling interrupt with
    /// throttler bitmask `bitmask`.
    fn throttle(&self, bitmask: u64);

    /// hwmon `vgpu_power` (write): `op` names what amdgpu would do to the
    /// KFD (suspend, resume, reset, ...); rkfd's errno.
    fn power(&self, op: &[u8]) -> Result;

    /// hwmon `vgpu_power` (read): rkfd's `kgd2kfd_compute_active`;
    /// `ENODEV` while rkfd does not have the GPU.
    fn compute_active(&self) -> Result<bool>;

    /// DRM ioctl `AMDGPU_VGPU_ACCESS` (the GPU-access test interface): the
    /// GPU reads or writes `size` bytes at `va` of the file's VM from or
    /// into the user buffer `buf`, raising retry faults; `faults` counts
    /// them.
    fn gpu_access(file: ArcBorrow<'_, Self::File>, va: u64, size: u64, buf: u64, write: bool, faults: &mut u32) -> Result;

    /// DRM ioctl `AMDGPU_GEM_CREATE` (after the shim's checks): a memory
    /// object of `size` bytes (page aligned, non-zero) in VRAM (`vram`) or
    /// GTT, in no VM, and its render-node mmap offset.
    fn gem_create(gpu: ArcBorrow<'_, Self>, size: u64, vram: bool) -> Result<(Arc<Self::Mem>, u64)>;

    /// DRM `mmap` of `npages` pages of a GEM object's `mem`: whether the
    /// CPU may map them (as [`RenderNode::mmap`] checks KFD objects).
    fn mem_cpu_map(mem: &Self::Mem, npages: u64) -> Result;
}

/// A GEM object of this driver behind a dma-buf file descriptor
/// ([`dmabuf_gem`]).
pub(crate) struct DmabufGem<M> {
    /// Its memory object (a reference of our own).
    pub(crate) mem: Arc<M>,
    /// VRAM is among the domains it was created with (amdgpu's
    /// `preferred_domains`); else GTT is.
    pub(crate) vram: bool,
    /// It was created `AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED`.
    pub(crate) cpu_access: bool,
}

/// The GEM object behind dma-buf `fd` of the current process, if a render
/// node of this driver exported it (PRIME); `EBADF` for no such fd, `EINVAL`
/// for another kind of file or another exporter's dma-buf.
///
/// Every render node of this driver is created by [`Devices::create`] of
/// one GPU type `T` (the module has one), whose `gem_create` made the
/// object: its memory object is an `Arc<T::Mem>`.
pub(crate) fn dmabuf_gem<T: RenderNode>(fd: i32) -> Result<DmabufGem<T::Mem>> {
    let mut mem: *mut c_void = core::ptr::null_mut();
    let mut vram = false;
    let mut cpu_access = false;
    // SAFETY: Valid out pointers; the shim checks `fd` itself.
    to_result(unsafe { shim::vgpu_shim_dmabuf_gem(fd, &mut mem, &mut vram, &mut cpu_access) })?;
    // SAFETY: On success the shim took a reference for us (`mem_get`) on
    // the object `gem_create` returned, an `Arc<T::Mem>` from
    // `into_foreign` (the function's documented single-type premise).
    let mem = unsafe { <Arc<T::Mem> as ForeignOwnable>::from_foreign(mem) };
    Ok(DmabufGem { mem, vram, cpu_access })
}

/// What the render node's `DRM_IOCTL_AMDGPU_INFO` reports besides
/// [`DeviceInfo`] (`struct vgpu_shim_amdgpu_info`; each field is the
/// amdgpu variable the header names).
pub(crate) struct AmdgpuInfo {
    /// `AMDGPU_FAMILY_*`.
    pub(crate) family: u32,
    /// `adev->rev_id`.
    pub(crate) chip_rev: u32,
    /// `adev->external_rev_id`.
    pub(crate) external_rev: u32,
    /// PCI revision ID.
    pub(crate) pci_rev: u32,
    /// GC IP version, `major << 16 | minor << 8 | revision`.
    pub(crate) gc_ip: u32,
    /// SDMA0 IP version, packed as `gc_ip`.
    pub(crate) sdma_ip: u32,
    /// Shader engines.
    pub(crate) num_shader_engines: u32,
    /// Shader arrays per engine.
    pub(crate) sh_per_se: u32,
    /// CUs per shader array.
    pub(crate) cu_per_sh: u32,
    /// Wavefront size.
    pub(crate) wave_front_size: u32,
    /// `AMDGPU_VRAM_TYPE_*`.
    pub(crate) vram_type: u32,
    /// Memory bus width, bits.
    pub(crate) vram_bit_width: u32,
    /// Constant-engine RAM, bytes (0: none).
    pub(crate) ce_ram_size: u32,
    /// `GB_ADDR_CONFIG`.
    pub(crate) gb_addr_config: u32,
    /// MEC firmware version.
    pub(crate) mec_fw_version: u32,
    /// SDMA firmware version (every instance).
    pub(crate) sdma_fw_version: u32,
    /// SDMA instances.
    pub(crate) num_sdma: u32,
    /// An APU.
    pub(crate) apu: bool,
    /// GTT size, bytes.
    pub(crate) gtt_size: u64,
}

/// The properties the per-GPU devices show (`struct vgpu_shim_dev_info`).
pub(crate) struct DeviceInfo<'a> {
    /// Parent device name (`0000:c1:00.0`); truncated to 15 bytes.
    pub(crate) name: &'a CStr,
    /// `vbios_version`; truncated to 31 bytes.
    pub(crate) vbios_version: &'a CStr,
    /// PCI vendor ID.
    pub(crate) vendor_id: u32,
    /// PCI device ID.
    pub(crate) device_id: u32,
    /// `unique_id`.
    pub(crate) unique_id: u64,
    /// `mem_info_vram_total`, bytes.
    pub(crate) vram_total: u64,
    /// `pp_dpm_sclk`, MHz.
    pub(crate) sclk_mhz: u32,
    /// `pp_dpm_mclk`, MHz.
    pub(crate) mclk_mhz: u32,
    /// hwmon `temp1_input`, m°C.
    pub(crate) temp_mdeg: u32,
    /// hwmon `in0_input`, mV.
    pub(crate) vddgfx_mv: u32,
    /// hwmon `power1_average`, µW.
    pub(crate) power_avg_uw: u32,
    /// hwmon `power1_cap`, µW.
    pub(crate) power_cap_uw: u32,
    /// The render node's amdgpu facts.
    pub(crate) amdgpu: AmdgpuInfo,
}

/// One GPU's devices in C: a faux device named like a PCI function with
/// amdgpu's sysfs attributes, a DRM device with a render node and a hwmon.
///
/// # Invariants
///
/// `dev` was created by `vgpu_shim_dev_create` with `Arc::as_ptr(&gpu)` as
/// its GPU and `RenderNodeOps::<T>::OPS` as its table, and is destroyed
/// only by `drop`.
pub(crate) struct Devices<T: RenderNode> {
    /// The C object.
    dev: NonNull<shim::vgpu_shim_dev>,
    /// The GPU the devices call back into; outlives `dev`.
    _gpu: Arc<T>,
}

// SAFETY: After creation the C object is only read (and the functions that
// read it are safe to call concurrently); it is destroyed once, in `drop`.
unsafe impl<T: RenderNode> Send for Devices<T> {}
// SAFETY: As above, `&Devices` only allows concurrent reads.
unsafe impl<T: RenderNode> Sync for Devices<T> {}

/// Copies `s` into a NUL-terminated C buffer, truncating it.
fn copy_str<const N: usize>(dst: &mut [u8; N], s: &[u8]) {
    let n = s.len().min(N - 1);
    dst[..n].copy_from_slice(&s[..n]);
    dst[n..].fill(0);
}

impl<T: RenderNode> Devices<T> {
    /// Creates the devices of `gpu`, showing `info`.
    pub(crate) fn create(gpu: &Arc<T>, info: &DeviceInfo<'_>) -> Result<Self> {
        let mut raw = shim::vgpu_shim_dev_info {
            vendor_id: info.vendor_id,
            device_id: info.device_id,
            unique_id: info.unique_id,
            vram_total: info.vram_total,
            sclk_mhz: info.sclk_mhz,
            mclk_mhz: info.mclk_mhz,
            temp_mdeg: info.temp_mdeg,
            vddgfx_mv: info.vddgfx_mv,
            power_avg_uw: info.power_avg_uw,
            power_cap_uw: info.power_cap_uw,
            amdgpu: shim::vgpu_shim_amdgpu_info {
                family: info.amdgpu.family,
                chip_rev: info.amdgpu.chip_rev,
                external_rev: info.amdgpu.external_rev,
                pci_rev: info.amdgpu.pci_rev,
                gc_ip: info.amdgpu.gc_ip,
                sdma_ip: info.amdgpu.sdma_ip,
                num_shader_engines: info.amdgpu.num_shader_engines,
                sh_per_se: info.amdgpu.sh_per_se,
                cu_per_sh: info.amdgpu.cu_per_sh,
                wave_front_size: info.amdgpu.wave_front_size,
                vram_type: info.amdgpu.vram_type,
                vram_bit_width: info.amdgpu.vram_bit_width,
                ce_ram_size: info.amdgpu.ce_ram_size,
                gb_addr_config: info.amdgpu.gb_addr_config,
                mec_fw_version: info.amdgpu.mec_fw_version,
                sdma_fw_version: info.amdgpu.sdma_fw_version,
                num_sdma: info.amdgpu.num_sdma,
                apu: u32::from(info.amdgpu.apu),
                gtt_size: info.amdgpu.gtt_size,
            },
            ..Default::default()
        };
        copy_str(&mut raw.name, info.name.to_bytes());
        copy_str(&mut raw.vbios_version, info.vbios_version.to_bytes());

        let mut dev = core::ptr::null_mut();
        // SAFETY: `raw` and `dev` are valid for the call.  The GPU pointer
        // stays valid while the devices exist: `Devices` holds a reference
        // on `gpu` and destroys the devices before releasing it.  The table
        // is a `static` (constant promotion) of `T`'s trampolines, which
        // expect that GPU pointer.
        to_result(unsafe {
            shim::vgpu_shim_dev_create(&raw, Arc::as_ptr(gpu).cast_mut().cast(), &RenderNodeOps::<T>::OPS, &mut dev)
        })?;
        let dev = NonNull::new(dev).ok_or(ENODEV)?;
        // INVARIANT: Created above with `gpu` and `T`'s table.
        Ok(Devices { dev, _gpu: gpu.clone() })
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

    /// The state of an open file of this GPU's render node (its VM);
    /// `EINVAL` for any other file (another driver's, another GPU's, or a
    /// primary node).
    pub(crate) fn file_state(&self, file: &DrmFileRef<'_>) -> Result<Arc<T::File>> {
        let mut state = core::ptr::null_mut();
        // SAFETY: `dev` is live by the type invariant; `file` is referenced
        // for the call (its invariant).  The shim checks `file` is one of
        // our DRM files before it looks at its private data.
        to_result(unsafe { shim::vgpu_shim_file_vm(self.dev.as_ptr(), file.as_ptr(), &mut state) })?;
        // SAFETY: The shim returned the file's `driver_priv`, which
        // `RenderNodeOps::<T>::file_open` set from `into_foreign` (this
        // GPU's devices use `T`'s table) and which stays valid while the
        // file is open (it is referenced for the call).
        let state = unsafe { <Arc<T::File> as ForeignOwnable>::borrow(state) };
        Ok(state.into())
    }
}

impl<T: RenderNode> Drop for Devices<T> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant `dev` is live and this is the only
        // place that destroys it.  No DRM file is open: they hold a module
        // reference.  The GPU is released only after this (field drop).
        unsafe { shim::vgpu_shim_dev_destroy(self.dev.as_ptr()) };
    }
}

/// The `extern "C"` trampolines of `T`'s callbacks.
struct RenderNodeOps<T>(PhantomData<T>);

impl<T: RenderNode> RenderNodeOps<T> {
    /// The table the shim calls through.
    const OPS: shim::vgpu_shim_ops = shim::vgpu_shim_ops {
        file_open: Some(Self::file_open),
        file_close: Some(Self::file_close),
        mmap: Some(Self::mmap),
        mem_page: Some(Self::mem_page),
        mem_access: Some(Self::mem_access),
        mem_get: Some(Self::mem_get),
        mem_put: Some(Self::mem_put),
        vram_used: Some(Self::vram_used),
        gtt_used: Some(Self::gtt_used),
        clock_counter: Some(Self::clock_counter),
        throttle: Some(Self::throttle),
        power: Some(Self::power),
        compute_active: Some(Self::compute_active),
        gpu_access: Some(Self::gpu_access),
        gem_create: Some(Self::gem_create),
        mem_cpu_map: Some(Self::mem_cpu_map),
    };

    /// Borrows the GPU the shim passes back as `gpu`.
    ///
    /// # Safety
    ///
    /// `gpu` is the pointer live [`Devices`] of `T` were created with.
    unsafe fn gpu<'a>(gpu: *mut c_void) -> ArcBorrow<'a, T> {
        // SAFETY: `gpu` is `Arc::as_ptr` of the `T` that the `Devices` keeps
        // a reference on, so the count cannot reach zero while the C device
        // calls back (the caller's requirement).
        unsafe { ArcBorrow::from_raw(gpu.cast::<T>().cast_const()) }
    }

    /// DRM `open`: every file gets its own state, stored in `driver_priv`.
    ///
    /// # Safety
    ///
    /// Called by the shim with the `gpu` of live devices and a valid `vm` slot.
    unsafe extern "C" fn file_open(gpu: *mut c_void, vm: *mut *mut c_void) -> c_int {
        // SAFETY: The caller's requirement.
        let gpu = unsafe { Self::gpu(gpu) };
        match T::open(gpu) {
            Ok(new) => {
                // SAFETY: `vm` is valid for writes (the caller's requirement).
                unsafe { *vm = new.into_foreign() };
                0
            }
            Err(e) => e.to_errno(),
        }
    }

    /// DRM `postclose`: drops the file's reference on its state.
    ///
    /// # Safety
    ///
    /// Called by the shim once per successful `file_open`, with the value
    /// it stored.
    unsafe extern "C" fn file_close(vm: *mut c_void) {
        // SAFETY: `vm` came from `into_foreign` in `file_open` and this is
        // its last use (postclose runs once, after every ioctl and mmap).
        drop(unsafe { <Arc<T::File> as ForeignOwnable>::from_foreign(vm) });
    }

    /// DRM `mmap`: the object at `pgoff` of the file, with a reference for
    /// the new VMA in `*mem`.
    ///
    /// # Safety
    ///
    /// Called by the shim's mmap with the `driver_priv` of an open file and
    /// a valid `mem` slot.
    unsafe extern "C" fn mmap(vm: *mut c_void, pgoff: c_ulong, npages: c_ulong, mem: *mut *mut c_void) -> c_int {
        // SAFETY: `vm` came from `into_foreign` and the file is open.
        let vm = unsafe { <Arc<T::File> as ForeignOwnable>::borrow(vm) };
        match T::mmap(vm, pgoff as u64, npages as u64) {
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
    /// `mem` is a VMA's reference from `mmap` or `mem_get`.
    unsafe extern "C" fn mem_page(mem: *mut c_void, pgoff: c_ulong) -> *mut bindings::page {
        // SAFETY: The VMA holds a reference, so the object is alive; its
        // pages live as long as it does.
        let mem = unsafe { <Arc<T::Mem> as ForeignOwnable>::borrow(mem) };
        T::mem_page(&mem, pgoff as u64).map_or(core::ptr::null_mut(), |p| p.as_ptr())
    }

    /// VMA `access` (ptrace, `/proc/PID/mem`): copies `len` bytes at
    /// render-node byte offset `offset` of the object to or from `buf`.  The
    /// byte count, or `-EIO` as TTM answers.
    ///
    /// # Safety
    ///
    /// `mem` is a live VMA's reference; `buf` is valid for reads and writes
    /// of `len > 0` bytes and not otherwise accessed during the call.
    unsafe extern "C" fn mem_access(mem: *mut c_void, offset: u64, buf: *mut c_void, len: c_int, write: bool) -> c_int {
        let Ok(n) = usize::try_from(len) else {
            return EIO.to_errno();
        };
        if n == 0 || buf.is_null() {
            return EIO.to_errno();
        }
        // SAFETY: The VMA holds a reference, so the object is alive.
        let mem = unsafe { <Arc<T::Mem> as ForeignOwnable>::borrow(mem) };
        // SAFETY: The caller's requirement: `buf` is `n` valid bytes, ours
        // for the call.
        let buf = unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), n) };
        match T::mem_access(&mem, offset, buf, write) {
            Ok(()) => len,
            Err(_) => EIO.to_errno(),
        }
    }

    /// VMA `open` (split, fork, mremap): a reference for the new VMA.
    ///
    /// # Safety
    ///
    /// `mem` is a live VMA's reference.
    unsafe extern "C" fn mem_get(mem: *mut c_void) {
        // SAFETY: The VMA being copied holds a reference.
        let borrowed = unsafe { <Arc<T::Mem> as ForeignOwnable>::borrow(mem) };
        let new: Arc<T::Mem> = borrowed.into();
        // The new reference now belongs to the new VMA; `into_foreign`
        // returns the same pointer, so the C side keeps using `mem`.
        let _ = new.into_foreign();
    }

    /// VMA `close`: drops the VMA's reference.
    ///
    /// # Safety
    ///
    /// `mem` is the closing VMA's reference, used for the last time.
    unsafe extern "C" fn mem_put(mem: *mut c_void) {
        // SAFETY: The caller's requirement: this reference is ours to drop.
        drop(unsafe { <Arc<T::Mem> as ForeignOwnable>::from_foreign(mem) });
    }

    /// sysfs `mem_info_vram_used`.
    ///
    /// # Safety
    ///
    /// `gpu` is the pointer live devices were created with.
    unsafe extern "C" fn vram_used(gpu: *mut c_void) -> u64 {
        // SAFETY: The caller's requirement.
        let gpu = unsafe { Self::gpu(gpu) };
        gpu.vram_used()
    }

    /// `AMDGPU_INFO_GTT_USAGE`.
    ///
    /// # Safety
    ///
    /// `gpu` is the pointer live devices were created with.
    unsafe extern "C" fn gtt_used(gpu: *mut c_void) -> u64 {
        // SAFETY: The caller's requirement.
        let gpu = unsafe { Self::gpu(gpu) };
        gpu.gtt_used()
    }

    /// `AMDGPU_INFO_TIMESTAMP`.
    ///
    /// # Safety
    ///
    /// `gpu` is the pointer live devices were created with.
    unsafe extern "C" fn clock_counter(gpu: *mut c_void) -> u64 {
        // SAFETY: The caller's requirement.
        let gpu = unsafe { Self::gpu(gpu) };
        gpu.clock_counter()
    }

    /// hwmon `vgpu_throttle` (write).
    ///
    /// # Safety
    ///
    /// `gpu` is the pointer live devices were created with.
    unsafe extern "C" fn throttle(gpu: *mut c_void, bitmask: u64) {
        // SAFETY: The caller's requirement.
        let gpu = unsafe { Self::gpu(gpu) };
        gpu.throttle(bitmask);
    }

    /// hwmon `vgpu_power` (write).
    ///
    /// # Safety
    ///
    /// `gpu` is the pointer live devices were created with; `op` points
    /// to `len` readable bytes for the call.
    unsafe extern "C" fn power(gpu: *mut c_void, op: *const kernel::ffi::c_char, len: usize) -> c_int {
        // SAFETY: The caller's requirement.
        let gpu = unsafe { Self::gpu(gpu) };
        // SAFETY: `op` points to `len` bytes the store handler was given,
        // read only during the call.
        let op = unsafe { core::slice::from_raw_parts(op.cast::<u8>(), len) };
        match gpu.power(op) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// hwmon `vgpu_power` (read).
    ///
    /// # Safety
    ///
    /// `gpu` is the pointer live devices were created with.
    unsafe extern "C" fn compute_active(gpu: *mut c_void) -> c_int {
        // SAFETY: The caller's requirement.
        let gpu = unsafe { Self::gpu(gpu) };
        match gpu.compute_active() {
            Ok(a) => c_int::from(a),
            Err(e) => e.to_errno(),
        }
    }

    /// DRM ioctl `AMDGPU_VGPU_ACCESS`.
    ///
    /// # Safety
    ///
    /// Called by the shim's ioctl with the `driver_priv` of an open file and
    /// a valid `faults` slot.
    unsafe extern "C" fn gpu_access(vm: *mut c_void, va: u64, size: u64, buf: u64, write: bool, faults: *mut u32) -> c_int {
        // SAFETY: `vm` came from `into_foreign` and the file is open.
        let vm = unsafe { <Arc<T::File> as ForeignOwnable>::borrow(vm) };
        let mut count = 0u32;
        let ret = T::gpu_access(vm, va, size, buf, write, &mut count);
        // SAFETY: `faults` is valid for writes (the caller's requirement).
        unsafe { *faults = count };
        match ret {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// DRM ioctl `AMDGPU_GEM_CREATE`: the new object with the GEM object's
    /// reference in `*mem`, its mmap offset in `*mmap_offset`.
    ///
    /// # Safety
    ///
    /// `gpu` is the pointer live devices were created with; `mem` and
    /// `mmap_offset` are valid for writes.
    unsafe extern "C" fn gem_create(gpu: *mut c_void, size: u64, vram: bool, mem: *mut *mut c_void, mmap_offset: *mut u64) -> c_int {
        // SAFETY: The caller's requirement.
        let gpu = unsafe { Self::gpu(gpu) };
        match T::gem_create(gpu, size, vram) {
            Ok((m, offset)) => {
                // SAFETY: Valid for writes (the caller's requirement).
                unsafe {
                    *mem = m.into_foreign();
                    *mmap_offset = offset;
                }
                0
            }
            Err(e) => e.to_errno(),
        }
    }

    /// DRM `mmap` of a GEM object: may the CPU map `npages` pages of it?
    ///
    /// # Safety
    ///
    /// `mem` is a GEM object's reference (from `gem_create`), held during
    /// the call.
    unsafe extern "C" fn mem_cpu_map(mem: *mut c_void, npages: c_ulong) -> c_int {
        // SAFETY: The GEM object holds a reference, so the object is alive.
        let mem = unsafe { <Arc<T::Mem> as ForeignOwnable>::borrow(mem) };
        match T::mem_cpu_map(&mem, npages as u64) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }
}
