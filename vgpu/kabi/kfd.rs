// SPDX-License-Identifier: GPL-2.0

//! The device interface with rkfd: registration through rkfd's exported
//! `kgd2kfd_*` functions and the `kfd2kgd` callbacks rkfd makes.
//!
//! C header: `include/rkfd/kgd_kfd_interface.h` (the contract); its bindgen
//! output is `rust/kgd-kfd/src/interface.rs`.
//!
//! Handles given to rkfd: the `kgd` is a [`Kgd`]; a VM is an `Arc<Vm>` and a
//! memory object an `Arc<Mem>`, each turned into a foreign pointer that owns
//! one reference until rkfd hands it back (`release_vm`, `free_memory_of_gpu`).

use core::ptr::NonNull;

use kernel::{
    ffi::{
        c_int,
        c_void, //
    },
    prelude::*,
    sync::Arc,
    types::ForeignOwnable, //
};

use super::to_result;
use crate::{
    engine::{
        self,
        Hqd,
        IhEntry,
        QueueDesc, //
    },
    gpu::{Core, Kgd},
    mem::{
        AllocRequest,
        Mem, //
    },
    profile::Profile,
    vm::Vm, //
};

#[path = "../../rust/kgd-kfd/src/interface.rs"]
mod kgd;

/// A GPU registered with rkfd; removed (`kgd2kfd_device_exit`) on drop.
///
/// # Invariants
///
/// `kfd` was returned by `kgd2kfd_probe` for a `Kgd` that outlives this
/// value, and `info` is what it was probed with.
pub(crate) struct KfdDevice {
    /// rkfd's device.
    kfd: NonNull<kgd::kfd_dev>,
    /// The properties rkfd was given; kept for as long as rkfd has the device.
    _info: KBox<kgd::kgd_gpu_info>,
}

// SAFETY: rkfd's device handle may be used from any thread.
unsafe impl Send for KfdDevice {}
// SAFETY: `&KfdDevice` allows nothing.
unsafe impl Sync for KfdDevice {}

impl KfdDevice {
    /// Probes and initialises `kgd` in rkfd (`kgd2kfd_probe` +
    /// `kgd2kfd_device_init`).
    ///
    /// # Safety
    ///
    /// `kgd` does not move and is not dropped or changed until the returned
    /// value is dropped: rkfd calls back with its address until then.
    pub(crate) unsafe fn register(kgd: &Kgd, module: &'static ThisModule) -> Result<Self> {
        let info = KBox::new(gpu_info(kgd)?, GFP_KERNEL)?;
        // SAFETY: `CALLS` and `info` outlive the device (static; kept in
        // `Self`); the `kgd` pointer stays valid as the caller promises;
        // `module` is this module, which rkfd pins while processes use the GPU.
        let kfd = unsafe {
            kgd::kgd2kfd_probe(
                core::ptr::from_ref(kgd).cast_mut().cast(),
                module.as_ptr().cast(),
                &CALLS,
                &*info,
            )
        };
        let kfd = NonNull::new(kfd).ok_or(ENODEV)?;
        // Retry faults name the device by it (`kgd2kfd_svm_fault`).
        kgd.core().set_kfd_handle(kfd.as_ptr() as usize);
        // INVARIANT: Probed above.  From here on `drop` calls
        // `kgd2kfd_device_exit`, which upstream also calls after a failed
        // `kgd2kfd_device_init` (`amdgpu_amdkfd_device_fini_sw`).
        let dev = KfdDevice { kfd, _info: info };
        // SAFETY: `kfd` is live by the type invariant.
        to_result(unsafe { kgd::kgd2kfd_device_init(dev.kfd.as_ptr()) })?;
        Ok(dev)
    }
}

impl KfdDevice {
    /// The handle the engines raise interrupts with.
    pub(crate) fn irq(&self) -> KfdIrq {
        KfdIrq { kfd: self.kfd }
    }
}

/// rkfd's `kgd2kfd_interrupt` for one device.
///
/// # Invariants
///
/// `kfd` is the device of a [`KfdDevice`]; its owner stops using the handle
/// before the device is removed (`EngineHandle::shutdown` runs before
/// `KfdDevice` drops, see `gpu::Gpu`).
#[derive(Copy, Clone)]
pub(crate) struct KfdIrq {
    /// rkfd's device.
    kfd: NonNull<kgd::kfd_dev>,
}

// SAFETY: `kgd2kfd_interrupt` may be called from any non-atomic context.
unsafe impl Send for KfdIrq {}
// SAFETY: As above.
unsafe impl Sync for KfdIrq {}

// The engine's mirrors of the interface's constants.
const _: () = {
    assert!(engine::IH_SIGNAL == kgd::KGD_IH_SIGNAL);
    assert!(engine::IH_QUEUE_ERROR == kgd::KGD_IH_QUEUE_ERROR);
    assert!(engine::IH_VM_FAULT == kgd::KGD_IH_VM_FAULT);
    assert!(engine::VM_FAULT_WRITE == kgd::KGD_VM_FAULT_WRITE);
    assert!(engine::VM_FAULT_NO_RETRY == kgd::KGD_VM_FAULT_NO_RETRY);
    assert!(engine::QUEUE_ERROR_INVALID_PACKET == kgd::KGD_QUEUE_ERROR_INVALID_PACKET);
    assert!(engine::QUEUE_ERROR_UNSUPPORTED == kgd::KGD_QUEUE_ERROR_UNSUPPORTED);
    assert!(engine::QUEUE_ERROR_VM_FAULT == kgd::KGD_QUEUE_ERROR_VM_FAULT);
    assert!(engine::QUEUE_ERROR_RESET == kgd::KGD_QUEUE_ERROR_RESET);
};

impl KfdIrq {
    /// Passes a decoded IH entry to rkfd (never with a lock of ours held).
    pub(crate) fn interrupt(&self, e: &IhEntry) {
        let entry = kgd::kgd_ih_entry {
            source: e.source,
            pasid: e.pasid,
            context_id: e.context_id,
            data: e.data,
            addr: e.addr,
        };
        // SAFETY: By the type invariant the device is registered; `entry`
        // is valid for reads during the call.
        unsafe { kgd::kgd2kfd_interrupt(self.kfd.as_ptr(), core::ptr::from_ref(&entry).cast()) };
    }
}

impl KfdIrq {
    /// rkfd's `kgd2kfd_smi_event_throttle`: the GPU throttles for the
    /// reasons in `bitmask`; `counter` throttling interrupts so far.
    /// Process context, with no lock held that a kfd2kgd callback takes.
    pub(crate) fn throttle(&self, bitmask: u64, counter: u64) {
        // SAFETY: By the type invariant the device is registered.
        unsafe { kgd::kgd2kfd_smi_event_throttle(self.kfd.as_ptr(), bitmask, counter) };
    }
}

impl Drop for KfdDevice {
    fn drop(&mut self) {
        // No DRM file is open (they pin the module), so no retry fault is
        // in flight.
        // SAFETY: By the type invariant `kfd` is live; this is its last use.
        // After it returns rkfd makes no further call with the `kgd`.
        unsafe { kgd::kgd2kfd_device_exit(self.kfd.as_ptr()) };
    }
}

/// The properties topology shows for `kgd`'s GPU.
fn gpu_info(kgd: &Kgd) -> Result<kgd::kgd_gpu_info> {
    let core = kgd.core();
    let p: &Profile = core.profile();
    let save = p.save_area();
    let mut info = kgd::kgd_gpu_info {
        gfx_target_version: p.gfx.target_version(),
        vendor_id: 0x1002,
        device_id: p.device_id,
        domain: 0,
        location_id: core.location_id(),
        drm_render_minor: kgd.devices().render_minor(),
        unique_id: p.unique_id(core.index()),
        num_shader_engines: p.num_shader_engines,
        sh_per_se: p.sh_per_se,
        cu_per_sh: p.cu_per_sh,
        simd_per_cu: p.simd_per_cu,
        max_waves_per_simd: p.max_waves_per_simd,
        wave_front_size: p.wave_front_size,
        lds_size_in_kb: p.lds_size_kib,
        max_slots_scratch_cu: p.max_slots_scratch_cu,
        num_sdma_engines: p.num_sdma_engines,
        num_sdma_xgmi_engines: p.num_sdma_xgmi_engines,
        num_sdma_queues_per_engine: p.num_sdma_queues_per_engine,
        num_cp_queues: p.num_cp_queues,
        num_xcc: 1,
        max_engine_clk_fcompute: p.max_engine_clk_mhz,
        fw_version: p.fw_version,
        sdma_fw_version: p.sdma_fw_version,
        capability: p.capability(),
        capability2: 0,
        debug_prop: 0,
        cwsr_size: save.cwsr_size,
        ctl_stack_size: save.ctl_stack_size,
        vram_size: core.vram().size(),
        vram_width: p.vram_width,
        mem_clk_max: p.mem_clk_max_mhz,
        vram_is_public: u32::from(p.vram_is_public),
        doorbell_process_size: p.doorbell_process_size(),
        gb_addr_config: p.gb_addr_config(),
        ..Default::default()
    };
    let name = p.asic_name.as_bytes();
    if name.len() >= info.name.len() || p.caches.len() > info.caches.len() {
        return Err(EINVAL);
    }
    for (dst, &src) in info.name.iter_mut().zip(name) {
        *dst = core::ffi::c_char::from_ne_bytes([src]);
    }
    for (dst, c) in info.caches.iter_mut().zip(p.caches) {
        *dst = kgd::kgd_cache_info {
            level: c.level,
            size_kib: c.size_kib,
            cache_line_size: c.line_size,
            type_: c.cache_type,
            cus_per_cache: p.cus_sharing(c),
            ..Default::default()
        };
    }
    info.num_caches = u32::try_from(p.caches.len())?;
    Ok(info)
}

/// What rkfd calls.
static CALLS: kgd::kfd2kgd_calls = kgd::kfd2kgd_calls {
    acquire_vm: Some(acquire_vm),
    release_vm: Some(release_vm),
    alloc_memory_of_gpu: Some(alloc_memory_of_gpu),
    free_memory_of_gpu: Some(free_memory_of_gpu),
    map_memory_to_gpu: Some(map_memory_to_gpu),
    unmap_memory_from_gpu: Some(unmap_memory_from_gpu),
    map_gtt_to_kernel: Some(map_gtt_to_kernel),
    available_vram: Some(available_vram),
    get_gpu_clock_counter: Some(get_gpu_clock_counter),
    set_vm_pasid: Some(set_vm_pasid),
    get_mem_limits: Some(get_mem_limits),
    reserve_mem_limit: Some(reserve_mem_limit),
    unreserve_mem_limit: Some(unreserve_mem_limit),
    mmap_doorbells: Some(mmap_doorbells),
    mmap_mmio_remap: Some(mmap_mmio_remap),
    hqd_load: Some(hqd_load),
    hqd_destroy: Some(hqd_destroy),
    hqd_update: Some(hqd_update),
    hqd_get_state: Some(hqd_get_state),
    hws_hang: Some(hws_hang),
    gpu_reset: Some(gpu_reset),
    svm_alloc_vram: Some(svm_alloc_vram),
    svm_alloc_vram_block: Some(svm_alloc_vram_block),
    svm_free_vram: Some(svm_free_vram),
    svm_copy: Some(svm_copy),
    svm_map: Some(svm_map),
    svm_unmap: Some(svm_unmap),
};

/// `KGD_SVM_PTE_VALID`: an `svm_map` entry maps its page.
pub(crate) const SVM_PTE_VALID: u64 = kgd::KGD_SVM_PTE_VALID as u64;
/// `KGD_SVM_PTE_VRAM`: the frame is a VRAM page index.
pub(crate) const SVM_PTE_VRAM: u64 = kgd::KGD_SVM_PTE_VRAM;
/// `KGD_SVM_PTE_WRITE`: the GPU may write.
pub(crate) const SVM_PTE_WRITE: u64 = kgd::KGD_SVM_PTE_WRITE;
/// `KGD_SVM_PTE_FRAME_MASK`.
pub(crate) const SVM_PTE_FRAME_MASK: u64 = kgd::KGD_SVM_PTE_FRAME_MASK;

/// Raises a retry fault for a GPU access at `addr` in `vm`
/// (`kgd2kfd_svm_fault`): `Ok` once rkfd mapped the page (retry the
/// access), `EAGAIN` to retry later, `EFAULT` for a fatal fault, which
/// with `report_fatal` is also reported to rkfd as a `KGD_IH_VM_FAULT`
/// interrupt (as the IH ring would carry it; the engines report their own,
/// followed by the queue error).  Must be called with no lock of this
/// driver held.
pub(crate) fn svm_fault(core: &Core, vm: &Vm, addr: u64, write: bool, report_fatal: bool) -> Result {
    let (Some(kfd), Some(handle)) = (core.kfd_handle(), vm.kfd_handle()) else {
        // No KFD process uses this VM: nothing can resolve the fault.
        return Err(EFAULT);
    };
    let flags = if write { kgd::KGD_VM_FAULT_WRITE } else { 0 };
    // SAFETY: `kfd` is the live device handle (set after probe, cleared
    // only when the device is removed, which waits for open DRM files);
    // `handle` is the VM handle rkfd holds (set while acquired).
    let ret = unsafe {
        kgd::kgd2kfd_svm_fault(kfd as *mut kgd::kfd_dev, vm.pasid(), handle as *mut c_void, addr, flags)
    };
    if report_fatal && (ret == EFAULT.to_errno() || ret == ENOMEM.to_errno()) {
        let entry = kgd::kgd_ih_entry {
            source: kgd::KGD_IH_VM_FAULT,
            pasid: vm.pasid(),
            context_id: 0,
            data: flags | kgd::KGD_VM_FAULT_NO_RETRY,
            addr,
        };
        // SAFETY: As above; `entry` is valid for the call.
        unsafe {
            kgd::kgd2kfd_interrupt(
                kfd as *mut kgd::kfd_dev,
                core::ptr::from_ref(&entry).cast::<c_void>(),
            )
        };
    }
    to_result(ret)
}

/// Borrows the frame and page arrays of an SVM call.
///
/// # Safety
///
/// `ptr` is valid for reads of `n` elements (the interface contract).
unsafe fn svm_slice<'a, T>(ptr: *const T, n: u64) -> Result<&'a [T]> {
    let n = usize::try_from(n).map_err(|_| EINVAL)?;
    if n == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: The caller's contract.
    Ok(unsafe { core::slice::from_raw_parts(ptr, n) })
}

/// `svm_alloc_vram`.
///
/// # Safety
///
/// Called only by rkfd through [`CALLS`], as `kgd_kfd_interface.h` allows:
/// with the `kgd` of a registered device and `frames` valid for `npages`
/// writes.
unsafe extern "C" fn svm_alloc_vram(kgd: *mut kgd::kgd_dev, npages: u64, frames: *mut u64) -> c_int {
    // SAFETY: rkfd calls with its registered handle.
    let kgd = unsafe { kgd_from_raw(kgd) };
    let Ok(n) = usize::try_from(npages) else {
        return ENOMEM.to_errno();
    };
    if n != 0 && frames.is_null() {
        return EINVAL.to_errno();
    }
    let out = if n == 0 {
        &mut []
    } else {
        // SAFETY: `frames` is valid for `npages` writes (the contract).
        unsafe { core::slice::from_raw_parts_mut(frames, n) }
    };
    match kgd.core().vram().svm_alloc(out) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `svm_alloc_vram_block`.
///
/// # Safety
///
/// Called only by rkfd through [`CALLS`]: with the `kgd` of a registered
/// device and `first` valid for a write.
unsafe extern "C" fn svm_alloc_vram_block(kgd: *mut kgd::kgd_dev, order: u32, first: *mut u64) -> c_int {
    // SAFETY: rkfd calls with its registered handle.
    let kgd = unsafe { kgd_from_raw(kgd) };
    if first.is_null() {
        return EINVAL.to_errno();
    }
    match kgd.core().vram().svm_alloc_block(order) {
        Ok(f) => {
            // SAFETY: `first` is valid for a write (the contract).
            unsafe { first.write(f) };
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// `svm_free_vram`: never sleeps.
///
/// # Safety
///
/// Called only by rkfd through [`CALLS`]: registered `kgd`, `frames` valid
/// for `npages` reads.
unsafe extern "C" fn svm_free_vram(kgd: *mut kgd::kgd_dev, frames: *const u64, npages: u64) {
    // SAFETY: rkfd calls with its registered handle.
    let kgd = unsafe { kgd_from_raw(kgd) };
    // SAFETY: The contract.
    if let Ok(frames) = unsafe { svm_slice(frames, npages) } {
        kgd.core().vram().svm_free(frames);
    }
}

/// `svm_copy`: the copy engine.
///
/// # Safety
///
/// Called only by rkfd through [`CALLS`]: registered `kgd`; `frames` and
/// `pages` valid for `npages` reads; each page a `struct page *` (or null
/// for a clear) that stays allocated during the call.
unsafe extern "C" fn svm_copy(
    kgd: *mut kgd::kgd_dev,
    frames: *const u64,
    pages: *const *mut c_void,
    npages: u64,
    direction: u32,
) -> c_int {
    // SAFETY: rkfd calls with its registered handle.
    let kgd = unsafe { kgd_from_raw(kgd) };
    // SAFETY: The contract.
    let (Ok(frames), Ok(pages)) = (unsafe { svm_slice(frames, npages) }, unsafe {
        svm_slice(pages.cast::<*mut c_void>(), npages)
    }) else {
        return EINVAL.to_errno();
    };
    let to_vram = direction == kgd::KGD_SVM_COPY_TO_VRAM;
    for (&frame, &page) in frames.iter().zip(pages) {
        let sys = page.cast::<kernel::bindings::page>();
        if !to_vram && sys.is_null() {
            return EINVAL.to_errno();
        }
        let r = kgd.core().vram().svm_with_page(frame, |vram| {
            // SAFETY: Both pages are allocated for the call (the VRAM page
            // is held under the pool lock, the system page by rkfd).
            unsafe {
                if to_vram {
                    super::mm::copy_page(vram.as_ptr(), sys)
                } else {
                    super::mm::copy_page(sys, vram.as_ptr())
                }
            }
        });
        if let Err(e) = r {
            return e.to_errno();
        }
    }
    0
}

/// `svm_map`.
///
/// # Safety
///
/// Called only by rkfd through [`CALLS`]: a VM handle it acquired, `ptes`
/// valid for `npages` reads.
unsafe extern "C" fn svm_map(
    _kgd: *mut kgd::kgd_dev,
    vm: *mut c_void,
    va: u64,
    npages: u64,
    ptes: *const u64,
) -> c_int {
    // SAFETY: rkfd passes a VM it acquired.
    let vm = unsafe { vm_from_raw(vm) };
    // SAFETY: The contract.
    match unsafe { svm_slice(ptes, npages) }.and_then(|p| vm.svm_map(va, p)) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `svm_unmap`.
///
/// # Safety
///
/// Called only by rkfd through [`CALLS`]: a VM handle it acquired.
unsafe extern "C" fn svm_unmap(_kgd: *mut kgd::kgd_dev, vm: *mut c_void, va: u64, npages: u64) {
    // SAFETY: rkfd passes a VM it acquired.
    let vm = unsafe { vm_from_raw(vm) };
    vm.svm_unmap(va, npages);
}

/// Borrows the [`Kgd`] behind rkfd's handle.
///
/// # Safety
///
/// `kgd` is the handle of a registered [`KfdDevice`] (rkfd only calls
/// between probe and device exit).
unsafe fn kgd_from_raw<'a>(kgd: *mut kgd::kgd_dev) -> &'a Kgd {
    // SAFETY: `register` passed the address of a `Kgd` that is neither moved
    // nor dropped while the device is registered.
    unsafe { &*kgd.cast::<Kgd>().cast_const() }
}

/// Borrows a VM handle.
///
/// # Safety
///
/// `vm` came from `acquire_vm` and was not released yet.
unsafe fn vm_from_raw<'a>(vm: *mut c_void) -> kernel::sync::ArcBorrow<'a, Vm> {
    // SAFETY: The handle owns a reference until `release_vm`.
    unsafe { <Arc<Vm> as ForeignOwnable>::borrow(vm) }
}

/// Borrows a memory handle.
///
/// # Safety
///
/// `mem` came from `alloc_memory_of_gpu` and was not freed yet.
unsafe fn mem_from_raw<'a>(mem: *mut c_void) -> kernel::sync::ArcBorrow<'a, Mem> {
    // SAFETY: The handle owns a reference until `free_memory_of_gpu`.
    unsafe { <Arc<Mem> as ForeignOwnable>::borrow(mem) }
}

/// `acquire_vm`: the VM of one of this GPU's open render-node files.
///
/// # Safety
///
/// Called only by rkfd through [`CALLS`], as `kgd_kfd_interface.h` allows:
/// with the `kgd` of a registered device, VM and memory handles this driver
/// gave out and has not had back, and valid pointers.
unsafe extern "C" fn acquire_vm(
    kgd: *mut kgd::kgd_dev,
    drm_file: *mut c_void,
    vm: *mut *mut c_void,
) -> c_int {
    // SAFETY: rkfd calls with its registered handle.
    let kgd = unsafe { kgd_from_raw(kgd) };
    // SAFETY: The contract: `drm_file` is a `struct file *` rkfd holds a
    // reference on (it got it with `fget`).
    match unsafe { kgd.devices().file_vm(drm_file) }.and_then(|found| found.acquire().map(|()| found)) {
        Ok(found) => {
            let vm_ref = found.clone();
            let handle = found.into_foreign();
            vm_ref.set_kfd_handle(handle as usize);
            // SAFETY: `vm` is valid for writes (the contract).
            unsafe { *vm = handle };
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// `release_vm`: drops rkfd's reference.
///
/// # Safety
///
/// Called only by rkfd through [`CALLS`], as `kgd_kfd_interface.h` allows:
/// with the `kgd` of a registered device, VM and memory handles this driver
/// gave out and has not had back, and valid pointers.
unsafe extern "C" fn release_vm(_kgd: *mut kgd::kgd_dev, vm: *mut c_void) {
    // SAFETY: `vm` came from `acquire_vm`; rkfd releases it once.
    let vm = unsafe { <Arc<Vm> as ForeignOwnable>::from_foreign(vm) };
    vm.set_kfd_handle(0);
    vm.release();
}

/// `alloc_memory_of_gpu`.
///
/// # Safety
///
/// Called only by rkfd through [`CALLS`], as `kgd_kfd_interface.h` allows:
/// with the `kgd` of a registered device, VM and memory handles this driver
/// gave out and has not had back, and valid pointers.
unsafe extern "C" fn alloc_memory_of_gpu(
    _kgd: *mut kgd::kgd_dev,
    vm: *mut c_void,
    alloc: *const kgd::kgd_mem_alloc,
    mem: *mut *mut c_void,
    mmap_offset: *mut u64,
) -> c_int {
    // SAFETY: rkfd passes a VM it acquired.
    let vm = unsafe { vm_from_raw(vm) };
    // SAFETY: `alloc` is valid for reads (the contract).
    let a = unsafe { &*alloc };
    let req = AllocRequest {
        va: a.va,
        size: a.size,
        user_addr: a.user_addr,
        flags: a.flags,
    };
    match vm.alloc(&req) {
        Ok(m) => {
            // SAFETY: `mmap_offset` and `mem` are valid for writes (the contract).
            unsafe {
                *mmap_offset = m.mmap_offset();
                *mem = m.into_foreign();
            }
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// `free_memory_of_gpu`: takes rkfd's reference back.
///
/// # Safety
///
/// Called only by rkfd through [`CALLS`], as `kgd_kfd_interface.h` allows:
/// with the `kgd` of a registered device, VM and memory handles this driver
/// gave out and has not had back, and valid pointers.
unsafe extern "C" fn free_memory_of_gpu(
    _kgd: *mut kgd::kgd_dev,
    vm: *mut c_void,
    mem: *mut c_void,
) {
    // SAFETY: rkfd passes a VM it acquired.
    let vm = unsafe { vm_from_raw(vm) };
    // SAFETY: `mem` came from `alloc_memory_of_gpu`; rkfd frees it once.
    let mem = unsafe { <Arc<Mem> as ForeignOwnable>::from_foreign(mem) };
    if vm.free(mem).is_err() {
        pr_warn!("free_memory_of_gpu: the object is not in this VM\n");
    }
}

/// `map_memory_to_gpu`: `mem` may come from any VM of any of our GPUs.
///
/// # Safety
///
/// Called only by rkfd through [`CALLS`], as `kgd_kfd_interface.h` allows:
/// with the `kgd` of a registered device, VM and memory handles this driver
/// gave out and has not had back, and valid pointers.
unsafe extern "C" fn map_memory_to_gpu(
    _kgd: *mut kgd::kgd_dev,
    vm: *mut c_void,
    mem: *mut c_void,
) -> c_int {
    // SAFETY: Live handles from rkfd.
    let (vm, mem) = unsafe { (vm_from_raw(vm), mem_from_raw(mem)) };
    // The VM keeps its own reference while the object is mapped.
    let mem: Arc<Mem> = mem.into();
    match vm.map(&mem) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `unmap_memory_from_gpu`.
///
/// # Safety
///
/// Called only by rkfd through [`CALLS`], as `kgd_kfd_interface.h` allows:
/// with the `kgd` of a registered device, VM and memory handles this driver
/// gave out and has not had back, and valid pointers.
unsafe extern "C" fn unmap_memory_from_gpu(
    _kgd: *mut kgd::kgd_dev,
    vm: *mut c_void,
    mem: *mut c_void,
) -> c_int {
    // SAFETY: Live handles from rkfd.
    let (vm, mem) = unsafe { (vm_from_raw(vm), mem_from_raw(mem)) };
    match vm.unmap(&mem) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `map_gtt_to_kernel`: a kernel mapping valid until the object is freed.
///
/// # Safety
///
/// Called only by rkfd through [`CALLS`], as `kgd_kfd_interface.h` allows:
/// with the `kgd` of a registered device, VM and memory handles this driver
/// gave out and has not had back, and valid pointers.
unsafe extern "C" fn map_gtt_to_kernel(
    _kgd: *mut kgd::kgd_dev,
    mem: *mut c_void,
    size: *mut u64,
) -> *mut c_void {
    // SAFETY: A live handle from rkfd.
    let mem = unsafe { mem_from_raw(mem) };
    match mem.kernel_map() {
        Ok(addr) => {
            if !size.is_null() {
                // SAFETY: `size` is valid for writes when not null (the contract).
                unsafe { *size = mem.size() };
            }
            addr
        }
        Err(_) => core::ptr::null_mut(),
    }
}

/// `available_vram`.
///
/// # Safety
///
/// Called only by rkfd through [`CALLS`], as `kgd_kfd_interface.h` allows:
/// with the `kgd` of a registered device, VM and memory handles this driver
/// gave out and has not had back, and valid pointers.
unsafe extern "C" fn available_vram(kgd: *mut kgd::kgd_dev) -> u64 {
    // SAFETY: rkfd calls with its registered handle.
    let kgd = unsafe { kgd_from_raw(kgd) };
    kgd.core().vram().available()
}

/// `set_vm_pasid`: the PASID the VM's interrupt entries carry.
///
/// # Safety
///
/// Called only by rkfd through [`CALLS`], as `kgd_kfd_interface.h` allows:
/// with the `kgd` of a registered device, VM and memory handles this driver
/// gave out and has not had back, and valid pointers.
unsafe extern "C" fn set_vm_pasid(_kgd: *mut kgd::kgd_dev, vm: *mut c_void, pasid: u32) {
    // SAFETY: rkfd passes a VM it acquired.
    let vm = unsafe { vm_from_raw(vm) };
    vm.set_pasid(pasid);
}

/// `mmap_doorbells`: the VM's doorbell pages into a `/dev/kfd` VMA.
///
/// # Safety
///
/// Called only by rkfd through [`CALLS`], as `kgd_kfd_interface.h` allows:
/// with the `kgd` of a registered device, VM and memory handles this driver
/// gave out and has not had back, and valid pointers; `vma` is the VMA of
/// an `mmap` in progress.
unsafe extern "C" fn mmap_doorbells(_kgd: *mut kgd::kgd_dev, vm: *mut c_void, vma: *mut c_void) -> c_int {
    // SAFETY: rkfd passes a VM it acquired.
    let vm = unsafe { vm_from_raw(vm) };
    // SAFETY: `vma` is the VMA of the mmap in progress (the contract).
    match unsafe { vm.doorbell_pages().mmap(vma) } {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `mmap_mmio_remap`: the GPU's MMIO remap page into a `/dev/kfd` VMA.
///
/// # Safety
///
/// As for [`mmap_doorbells`].
unsafe extern "C" fn mmap_mmio_remap(kgd: *mut kgd::kgd_dev, vma: *mut c_void) -> c_int {
    // SAFETY: rkfd calls with its registered handle.
    let kgd = unsafe { kgd_from_raw(kgd) };
    // SAFETY: `vma` is the VMA of the mmap in progress (the contract).
    match unsafe { kgd.core().mmio_remap().mmap(vma) } {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `get_mem_limits`: the module's system-memory accounts (amdgpu's
/// `kfd_mem_limit`: system = GTT + user pointers, TTM = GTT).
///
/// # Safety
///
/// Called only by rkfd through [`CALLS`], as `kgd_kfd_interface.h` allows:
/// with the `kgd` of a registered device, VM and memory handles this driver
/// gave out and has not had back, and valid pointers.
unsafe extern "C" fn get_mem_limits(kgd: *mut kgd::kgd_dev, out: *mut kgd::kgd_mem_limits) {
    // SAFETY: rkfd calls with its registered handle.
    let kgd = unsafe { kgd_from_raw(kgd) };
    let m = kgd.core().sysmem();
    let limits = kgd::kgd_mem_limits {
        system_used: m.used(),
        system_limit: m.limit(),
        ttm_used: m.gtt_used(),
        ttm_limit: m.gtt_limit(),
    };
    // SAFETY: `out` is valid for writes (the contract).
    unsafe { out.write(limits) };
}

/// Which accounts `flags` name (`reserve_mem_limit`): user pointers
/// (system) or GTT (system and TTM); anything else is `EINVAL`.
fn limit_domain(flags: u32) -> Result<bool> {
    match flags {
        crate::uapi::KFD_IOC_ALLOC_MEM_FLAGS_USERPTR => Ok(false),
        crate::uapi::KFD_IOC_ALLOC_MEM_FLAGS_GTT => Ok(true),
        _ => Err(EINVAL),
    }
}

/// `reserve_mem_limit`: accounts `size` bytes without an object (amdgpu's
/// `amdgpu_amdkfd_reserve_mem_limit(NULL, ..)`; rkfd's XNACK-off SVM ranges).
///
/// # Safety
///
/// Called only by rkfd through [`CALLS`], as `kgd_kfd_interface.h` allows:
/// with the `kgd` of a registered device, VM and memory handles this driver
/// gave out and has not had back, and valid pointers.
unsafe extern "C" fn reserve_mem_limit(kgd: *mut kgd::kgd_dev, size: u64, flags: u32) -> c_int {
    // SAFETY: rkfd calls with its registered handle.
    let kgd = unsafe { kgd_from_raw(kgd) };
    match limit_domain(flags).and_then(|gtt| kgd.core().sysmem().reserve_bytes(size, gtt)) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `unreserve_mem_limit`: gives back what `reserve_mem_limit` accounted.
///
/// # Safety
///
/// As [`reserve_mem_limit`].
unsafe extern "C" fn unreserve_mem_limit(kgd: *mut kgd::kgd_dev, size: u64, flags: u32) {
    // SAFETY: rkfd calls with its registered handle.
    let kgd = unsafe { kgd_from_raw(kgd) };
    if let Ok(gtt) = limit_domain(flags) {
        kgd.core().sysmem().unreserve_bytes(size, gtt);
    }
}

/// `get_gpu_clock_counter`.
///
/// # Safety
///
/// Called only by rkfd through [`CALLS`], as `kgd_kfd_interface.h` allows:
/// with the `kgd` of a registered device, VM and memory handles this driver
/// gave out and has not had back, and valid pointers.
unsafe extern "C" fn get_gpu_clock_counter(kgd: *mut kgd::kgd_dev) -> u64 {
    // SAFETY: rkfd calls with its registered handle.
    let kgd = unsafe { kgd_from_raw(kgd) };
    kgd.core().clock_counter()
}

/// `hqd_load`: the engine starts serving the queue; `*hqd` owns a
/// reference on it (and through it on the VM) until `hqd_destroy`.
///
/// # Safety
///
/// Called only by rkfd through [`CALLS`], as `kgd_kfd_interface.h` allows:
/// with the `kgd` of a registered device, VM and queue handles this driver
/// gave out and has not had back, and valid pointers.
unsafe extern "C" fn hqd_load(
    kgd: *mut kgd::kgd_dev,
    vm: *mut c_void,
    q: *const kgd::kgd_queue_desc,
    hqd: *mut *mut c_void,
) -> c_int {
    // SAFETY: rkfd calls with its registered handle and a VM it acquired.
    let (kgd, vm) = unsafe { (kgd_from_raw(kgd), vm_from_raw(vm)) };
    // SAFETY: `q` is valid for reads (the contract).
    let q = unsafe { &*q };
    let desc = QueueDesc {
        ty: q.type_,
        queue_id: q.queue_id,
        doorbell_offset: q.doorbell_offset,
        priority: q.priority,
        percentage: q.percentage,
        sdma_engine: q.sdma_engine,
        ring_base: q.ring_base,
        ring_size: q.ring_size,
        rptr_va: q.rptr_va,
        wptr_va: q.wptr_va,
    };
    match kgd.engine().load(vm.into(), &desc) {
        Ok(h) => {
            // SAFETY: `hqd` is valid for writes (the contract).
            unsafe { *hqd = h.into_foreign() };
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// Borrows a queue handle.
///
/// # Safety
///
/// `hqd` came from `hqd_load` and was not destroyed yet.
unsafe fn hqd_from_raw<'a>(hqd: *mut c_void) -> kernel::sync::ArcBorrow<'a, Hqd> {
    // SAFETY: The handle owns a reference until `hqd_destroy`.
    unsafe { <Arc<Hqd> as ForeignOwnable>::borrow(hqd) }
}

/// `hqd_destroy`: preempts and frees the queue; `-ETIME` if the scheduler
/// is hung (freed all the same).
///
/// # Safety
///
/// As [`hqd_load`]; rkfd destroys each queue once.
unsafe extern "C" fn hqd_destroy(kgd: *mut kgd::kgd_dev, hqd: *mut c_void) -> c_int {
    // SAFETY: rkfd calls with its registered handle.
    let kgd = unsafe { kgd_from_raw(kgd) };
    // SAFETY: `hqd` came from `hqd_load`; rkfd gives it back once.
    let hqd = unsafe { <Arc<Hqd> as ForeignOwnable>::from_foreign(hqd) };
    match kgd.engine().destroy(hqd) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `hqd_update`.
///
/// # Safety
///
/// As [`hqd_load`].
unsafe extern "C" fn hqd_update(
    kgd: *mut kgd::kgd_dev,
    hqd: *mut c_void,
    ring_base: u64,
    ring_size: u64,
    priority: u32,
    percentage: u32,
) -> c_int {
    // SAFETY: Live handles from rkfd.
    let (kgd, hqd) = unsafe { (kgd_from_raw(kgd), hqd_from_raw(hqd)) };
    match kgd
        .engine()
        .update(&hqd, ring_base, ring_size, priority, percentage)
    {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `hqd_get_state`.
///
/// # Safety
///
/// As [`hqd_load`].
unsafe extern "C" fn hqd_get_state(
    kgd: *mut kgd::kgd_dev,
    hqd: *mut c_void,
    state: *mut kgd::kgd_hqd_state,
) {
    // SAFETY: Live handles from rkfd.
    let (kgd, hqd) = unsafe { (kgd_from_raw(kgd), hqd_from_raw(hqd)) };
    let s = kgd.engine().state(&hqd);
    // SAFETY: `state` is valid for writes (the contract).
    unsafe {
        *state = kgd::kgd_hqd_state {
            rptr: s.rptr,
            wptr: s.wptr,
            doorbell: s.doorbell,
            packets: s.packets,
            active: u32::from(s.active),
            error: s.error,
        }
    };
}

/// `hws_hang`.
///
/// # Safety
///
/// As [`hqd_load`].
unsafe extern "C" fn hws_hang(kgd: *mut kgd::kgd_dev) -> c_int {
    // SAFETY: rkfd calls with its registered handle.
    let kgd = unsafe { kgd_from_raw(kgd) };
    kgd.engine().hang();
    0
}

/// `gpu_reset`.
///
/// # Safety
///
/// As [`hqd_load`].
unsafe extern "C" fn gpu_reset(kgd: *mut kgd::kgd_dev) -> c_int {
    // SAFETY: rkfd calls with its registered handle.
    let kgd = unsafe { kgd_from_raw(kgd) };
    match kgd.engine().reset() {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}
