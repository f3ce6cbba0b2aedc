// SPDX-License-Identifier: GPL-2.0

//! KUnit only: a fake GPU driver behind a real [`KgdDevice`], so rkfd's
//! bookkeeping (memory handles, restartable mapping, accounting) is tested
//! without the virtual GPU.  It counts live objects and mappings and can be
//! told to fail the next map.

use core::ptr::NonNull;

use kernel::{
    ffi::{c_int, c_void},
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc,
    },
};

use super::{interface, DrmFile, GpuInfo, KgdDevice, KgdVm};

use super::super::shim_ffi::rkfd_shim_kunit_file;

/// The fake driver's state; must outlive every device made from it.
pub(crate) struct FakeGpu {
    /// Memory objects allocated and not freed.
    pub(crate) live_mems: Atomic<i64>,
    /// Mappings made and not unmapped.
    pub(crate) live_maps: Atomic<i64>,
    /// VMs acquired and not released.
    pub(crate) live_vms: Atomic<i64>,
    /// `map_memory_to_gpu` calls left before one fails with `-ENOMEM`
    /// (negative: never).
    pub(crate) fail_map_in: Atomic<i32>,
    /// The PASID `acquire_vm` reports for a VM (0: a VM without one).
    pub(crate) pasid: Atomic<u32>,
    /// Bytes reserved with `reserve_mem_limit` and not given back.
    pub(crate) reserved: Atomic<u64>,
    /// The most `reserved` may reach.
    pub(crate) limit: Atomic<u64>,
}

impl FakeGpu {
    pub(crate) fn new() -> Result<Arc<Self>> {
        Ok(Arc::new(
            FakeGpu {
                live_mems: Atomic::new(0),
                live_maps: Atomic::new(0),
                live_vms: Atomic::new(0),
                fail_map_in: Atomic::new(-1),
                pasid: Atomic::new(0x8001),
                reserved: Atomic::new(0),
                limit: Atomic::new(u64::MAX),
            },
            GFP_KERNEL,
        )?)
    }

    fn from_kgd<'a>(kgd: *mut interface::kgd_dev) -> &'a FakeGpu {
        // SAFETY: Every fake device's `kgd` is `Arc::as_ptr` of a `FakeGpu`
        // the test keeps alive longer than the device (`device`'s contract).
        unsafe { &*kgd.cast::<FakeGpu>() }
    }
}

/// A fake memory object: its size is the whole state.
struct FakeMem {
    _size: u64,
}

unsafe extern "C" fn acquire_vm(
    kgd: *mut interface::kgd_dev,
    _file: *mut c_void,
    _context_id: u16,
    vm: *mut *mut c_void,
    pasid: *mut u32,
    _ef: *mut *mut interface::dma_fence,
) -> c_int {
    let gpu = FakeGpu::from_kgd(kgd);
    gpu.live_vms.fetch_add(1, Relaxed);
    // SAFETY: `vm` and `pasid` are valid out pointers (the contract); any
    // non-null value is a VM handle for this driver.
    unsafe {
        *vm = NonNull::<u64>::dangling().as_ptr().cast();
        *pasid = gpu.pasid.load(Relaxed);
    }
    0
}

unsafe extern "C" fn release_vm(kgd: *mut interface::kgd_dev, _vm: *mut c_void) {
    FakeGpu::from_kgd(kgd).live_vms.fetch_sub(1, Relaxed);
}

unsafe extern "C" fn alloc_memory_of_gpu(
    kgd: *mut interface::kgd_dev,
    _vm: *mut c_void,
    alloc: *const interface::kgd_mem_alloc,
    mem: *mut *mut c_void,
    mmap_offset: *mut u64,
) -> c_int {
    // SAFETY: Valid pointers (the contract).
    let a = unsafe { &*alloc };
    let Ok(obj) = KBox::new(FakeMem { _size: a.size }, GFP_KERNEL) else {
        return ENOMEM.to_errno();
    };
    FakeGpu::from_kgd(kgd).live_mems.fetch_add(1, Relaxed);
    // SAFETY: Valid out pointers (the contract).
    unsafe {
        *mmap_offset = a.va | 1 << 40;
        *mem = KBox::into_raw(obj).cast();
    }
    0
}

unsafe extern "C" fn free_memory_of_gpu(kgd: *mut interface::kgd_dev, _vm: *mut c_void, mem: *mut c_void) {
    // SAFETY: `mem` came from `alloc_memory_of_gpu` and is freed once.
    drop(unsafe { KBox::from_raw(mem.cast::<FakeMem>()) });
    FakeGpu::from_kgd(kgd).live_mems.fetch_sub(1, Relaxed);
}

unsafe extern "C" fn map_memory_to_gpu(kgd: *mut interface::kgd_dev, _vm: *mut c_void, _mem: *mut c_void) -> c_int {
    let gpu = FakeGpu::from_kgd(kgd);
    if gpu.fail_map_in.fetch_sub(1, Relaxed) == 0 {
        return ENOMEM.to_errno();
    }
    gpu.live_maps.fetch_add(1, Relaxed);
    0
}

unsafe extern "C" fn unmap_memory_from_gpu(kgd: *mut interface::kgd_dev, _vm: *mut c_void, _mem: *mut c_void) -> c_int {
    FakeGpu::from_kgd(kgd).live_maps.fetch_sub(1, Relaxed);
    0
}

unsafe extern "C" fn reserve_mem_limit(kgd: *mut interface::kgd_dev, size: u64, _flags: u32) -> c_int {
    let g = FakeGpu::from_kgd(kgd);
    let cur = g.reserved.load(Relaxed);
    match cur.checked_add(size).filter(|&n| n <= g.limit.load(Relaxed)) {
        Some(n) => {
            g.reserved.store(n, Relaxed);
            0
        }
        None => ENOMEM.to_errno(),
    }
}

unsafe extern "C" fn unreserve_mem_limit(kgd: *mut interface::kgd_dev, size: u64, _flags: u32) {
    FakeGpu::from_kgd(kgd).reserved.fetch_sub(size, Relaxed);
}

static FAKE_CALLS: interface::kfd2kgd_calls = interface::kfd2kgd_calls {
    acquire_vm: Some(acquire_vm),
    restore_process_bos: None,
    release_vm: Some(release_vm),
    get_process_page_dir: None,
    get_process_doorbell_index: None,
    alloc_memory_of_gpu: Some(alloc_memory_of_gpu),
    free_memory_of_gpu: Some(free_memory_of_gpu),
    map_memory_to_gpu: Some(map_memory_to_gpu),
    unmap_memory_from_gpu: Some(unmap_memory_from_gpu),
    map_gtt_to_kernel: None,
    get_dmabuf_info: None,
    import_dmabuf: None,
    available_vram: None,
    get_gpu_clock_counter: None,
    mmap_doorbells: None,
    mmap_mmio_remap: None,
    hqd_load: None,
    hqd_sdma_load: None,
    hqd_destroy: None,
    hqd_sdma_destroy: None,
    hqd_is_occupied: None,
    hqd_sdma_is_occupied: None,
    hqd_dump: None,
    hqd_sdma_dump: None,
    alloc_gtt_mem: None,
    free_gtt_mem: None,
    hiq_mqd_load: None,
    ring_kernel_doorbell: None,
    mes_add_hw_queue: None,
    mes_remove_hw_queue: None,
    mes_suspend_all: None,
    mes_resume_all: None,
    hws_hang: None,
    gpu_reset: None,
    get_mem_limits: None,
    reserve_mem_limit: Some(reserve_mem_limit),
    unreserve_mem_limit: Some(unreserve_mem_limit),
    svm_alloc_vram: None,
    svm_alloc_vram_block: None,
    svm_free_vram: None,
    svm_copy: None,
    svm_map: None,
    svm_unmap: None,
};

/// What the fake devices report (a plausible GFX9 part).
pub(crate) fn info() -> GpuInfo {
    GpuInfo {
        gfx_target_version: 90010,
        vendor_id: 0x1002,
        device_id: 0x740f,
        drm_render_minor: 128,
        num_shader_engines: 1,
        sh_per_se: 1,
        cu_per_sh: 4,
        simd_per_cu: 4,
        wave_front_size: 64,
        doorbell_process_size: 8192,
        ..Default::default()
    }
}

/// A device of the fake driver `gpu`.
///
/// The caller keeps `gpu` alive for as long as the device and anything
/// made from it (VMs, memory) exist.
pub(crate) fn device(gpu: &Arc<FakeGpu>) -> KgdDevice {
    // INVARIANT: `kgd` and `calls` stay valid while the test keeps `gpu`
    // (the caller's contract) and for ever (a static).
    KgdDevice {
        kgd: NonNull::from(&**gpu).cast(),
        calls: NonNull::from(&FAKE_CALLS),
        owner: core::ptr::null_mut(),
    }
}

/// A VM of `dev` (a fake device), acquired through a stand-in file.
pub(crate) fn vm(dev: &KgdDevice) -> Result<KgdVm> {
    // SAFETY: The shim returns a new file reference or NULL.
    let file = NonNull::new(unsafe { rkfd_shim_kunit_file() }).ok_or(ENOMEM)?;
    // INVARIANT: we own the reference just taken.
    dev.acquire_vm(DrmFile(file), interface::KGD_CONTEXT_ID_PRIMARY as u16).map(|(vm, _)| vm)
}
