// SPDX-License-Identifier: GPL-2.0

//! KFD devices: GPUs offered by GPU drivers through the device interface.
//!
//! C: `struct kfd_dev` / `struct kfd_node` (`kfd_device.c`).  A device is
//! created by `kgd2kfd_probe`, published by `kgd2kfd_device_init` (it then
//! appears in topology and new processes get a per-device context for it) and
//! withdrawn by `kgd2kfd_device_exit`.  rkfd does not know what kind of GPU
//! it drives: everything it asks goes through [`KgdDevice`].
//!
//! Lock order: see the crate root (`src/rkfd_main.rs`).  [`DEVICES`] is
//! released before the topology is updated and before anything is asked of
//! the GPU driver: callers take a snapshot ([`all`]).

use crate::kabi::log::{kfd_dev_info, kfd_err, kfd_info};
use kernel::{
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc,
    }, //
};

use crate::{
    gfx::GfxVersion,
    kabi::{
        hmm::VramPagemap,
        kgd::{GpuInfo, IhRingEntry, Kgd2Kfd, KgdDevice},
    },
    topology::Topology,
};

/// A KFD device (one GPU node).
pub(crate) struct Device {
    /// The GPU driver's side.
    pub(crate) kgd: KgdDevice,
    /// What the GPU reported about itself at probe.
    pub(crate) info: GpuInfo,
    /// Its generation, from `info.gfx_target_version` (C: `KFD_GC_VERSION`).
    pub(crate) gfx: GfxVersion,
    /// The id user space names this GPU by (topology `gpu_id`); assigned
    /// by the topology when the device is published, 0 before.
    gpu_id: Atomic<u32>,
    /// Its VRAM as device-private pages (a `dev_pagemap`), if the GPU
    /// driver serves SVM (upstream `svm_migrate_init`, `kfd.pgmap`).
    pub(crate) vram_pagemap: Option<VramPagemap>,
    /// Queues on this device (upstream `dqm`), see `crate::queue`.
    pub(crate) queues: crate::queue::DeviceQueues,
    /// Suspend, reset and lock state, see `crate::power`.
    pub(crate) power: crate::power::DevicePower,
    /// Uncorrectable SRAM ECC errors the GPU driver reported since the last
    /// reset (C: `node->sram_ecc_flag`, `kgd2kfd_set_sram_ecc_flag`): the
    /// next reset event says `KFD_HW_EXCEPTION_ECC`; `post_reset` clears it.
    pub(crate) sram_ecc_flag: Atomic<u32>,
    /// The VM fault fast path's per-PASID flags (`kgd2kfd_vmfault_fast_path`,
    /// C: `p->gpu_page_fault`), see [`crate::interrupt::FaultFilter`]:
    /// lock-free, read in atomic context.
    pub(crate) faults: crate::interrupt::FaultFilter,
}

/// Lets the kernel's `fmt!` print a [`GfxVersion`] as its target name
/// (`gfx90a`), through the host crate's `core::fmt::Display`.
impl kernel::fmt::Display for GfxVersion {
    fn fmt(&self, f: &mut kernel::fmt::Formatter<'_>) -> kernel::fmt::Result {
        core::fmt::Display::fmt(self, f)
    }
}

/// The published devices, in topology order.
pub(crate) struct DeviceList {
    devices: KVec<Arc<Device>>,
    /// The topology devices are added to (set while the module is live).
    topology: Option<Arc<Topology>>,
}

kernel::sync::global_lock! {
    // SAFETY: Initialised in module init (`init_module_state`) before any
    // device can be probed or any file opened.
    pub(crate) unsafe(uninit) static DEVICES: Mutex<DeviceList> = DeviceList {
        devices: KVec::new(),
        topology: None,
    };
}

/// Initialises the module-global device list.  Called once from module init.
pub(crate) fn init_module_state() {
    // SAFETY: Called exactly once, from module init, before any other use.
    unsafe { DEVICES.init() };
}

/// Sets the topology that published devices appear in.
pub(crate) fn set_topology(topology: Arc<Topology>) {
    DEVICES.lock().topology = Some(topology);
}

/// Frees the device list's storage at module exit (statics are never
/// dropped).  GPU drivers depend on rkfd's symbols, so none is loaded then.
pub(crate) fn exit_module_state() {
    let (old, topology) = {
        let mut list = DEVICES.lock();
        (core::mem::replace(&mut list.devices, KVec::new()), list.topology.take())
    };
    drop(old);
    drop(topology);
}

/// `HSA_CAP_SVMAPI_SUPPORTED` (`include/uapi/linux/kfd_sysfs.h`).
const HSA_CAP_SVMAPI_SUPPORTED: u32 = 0x0800_0000;

/// Checks what a GPU reports before rkfd relies on it (user space divides
/// by some of these and asserts on others), and returns its generation: a
/// target rkfd does not know (pre-SOC15 GPUs among them) is refused, as
/// upstream `kgd2kfd_probe` refuses a GC version it has no entry for.
fn validate(info: &GpuInfo) -> Result<GfxVersion> {
    let cus = info.num_shader_engines * info.sh_per_se * info.cu_per_sh;
    if cus == 0 || info.simd_per_cu == 0 || info.wave_front_size == 0 {
        return Err(EINVAL);
    }
    if !(128..=255).contains(&info.drm_render_minor) {
        return Err(EINVAL);
    }
    if info.num_caches as usize > info.caches.len() {
        return Err(EINVAL);
    }
    GfxVersion::from_target_version(info.gfx_target_version).ok_or_else(|| {
        kfd_err!("gfx_target_version {} not supported\n", info.gfx_target_version);
        EINVAL
    })
}

/// `kgd2kfd_probe`: builds the device (not yet visible).
pub(crate) fn probe(kgd: KgdDevice, info: GpuInfo) -> Result<Arc<Device>> {
    let gfx = validate(&info)?;
    let vram_pagemap = if info.vram_size != 0 {
        match VramPagemap::new(&kgd, info.vram_size) {
            Ok(s) => Some(s),
            Err(e) if e == EOPNOTSUPP => None,
            Err(e) => {
                kfd_info!("SVM disabled: device-private VRAM not registered: {:?}\n", e);
                None
            }
        }
    } else {
        None
    };
    let queues = crate::queue::DeviceQueues::new(&info)?;
    let power = crate::power::DevicePower::new()?;
    let faults = crate::interrupt::FaultFilter::new()?;
    Ok(Arc::new(
        Device { kgd, info, gfx, gpu_id: Atomic::new(0), vram_pagemap, queues, power, sram_ecc_flag: Atomic::new(0), faults },
        GFP_KERNEL,
    )?)
}

/// `kgd2kfd_device_init`: publishes the device.
pub(crate) fn init(dev: Arc<Device>) -> Result {
    if dev.gpu_id() != 0 {
        return Err(EEXIST);
    }
    let topology = DEVICES.lock().topology.clone().ok_or(ENODEV)?;
    let gpu_id = topology.add_gpu(&dev.info)?;
    if dev.svm_supported() {
        // As upstream kfd_topology.c: SVM works on this GPU.
        if let Err(e) = topology.update_capability(gpu_id, HSA_CAP_SVMAPI_SUPPORTED, 0) {
            kfd_info!("gpu_id {}: SVM capability not advertised: {:?}\n", gpu_id, e);
        }
    }
    dev.gpu_id.store(gpu_id, Relaxed);
    // The HWS runs before any process can see the device.
    crate::queue::hws_start(&dev);
    let mut list = DEVICES.lock();
    if let Err(e) = list.devices.push(dev.clone(), GFP_KERNEL) {
        drop(list);
        crate::queue::device_exit(&dev);
        let _ = topology.remove_gpu(gpu_id);
        return Err(e.into());
    }
    kfd_dev_info(fmt!(
        "added device {:x}:{:x} ({}, gfx_target_version {}, gpu_id {})",
        dev.info.vendor_id,
        dev.info.device_id,
        dev.gfx,
        dev.gfx.target_version(),
        gpu_id
    ));
    crate::queue::device_init(&dev);
    Ok(())
}

/// `kgd2kfd_device_exit`: withdraws the device.  Processes that use it hold
/// a module reference on its driver, so this only runs once none does.
pub(crate) fn exit(dev: Arc<Device>) {
    let topology = {
        let mut list = DEVICES.lock();
        list.devices.retain(|d| !Arc::ptr_eq(d, &dev));
        list.topology.clone()
    };
    crate::power::device_exit(&dev);
    crate::queue::device_exit(&dev);
    let gpu_id = dev.gpu_id();
    if gpu_id != 0 {
        if let Some(t) = topology {
            let _ = t.remove_gpu(gpu_id);
        }
        kfd_info!("removed device gpu_id {}\n", gpu_id);
    }
}

/// The `kgd2kfd_*` entry points GPU drivers call (upstream `kfd_device.c`
/// and friends): registered with [`crate::kabi::kgd::Kgd2KfdRegistration`]
/// at module init.
pub(crate) struct Kgd2KfdEntries;

impl Kgd2Kfd for Kgd2KfdEntries {
    type Device = Device;

    fn probe(kgd: KgdDevice, info: GpuInfo) -> Result<Arc<Device>> {
        probe(kgd, info)
    }

    fn device_init(dev: Arc<Device>) -> Result {
        init(dev)
    }

    fn device_exit(dev: Arc<Device>) {
        exit(dev);
    }

    fn interrupt(dev: &Device, entry: &IhRingEntry) {
        crate::interrupt::handle(dev, entry);
    }

    fn svm_fault(dev: &Device, pasid: u32, vm: *const core::ffi::c_void, addr: u64, write: bool) -> Result {
        crate::svm::fault::gpu_fault(dev, pasid, crate::kabi::hmm::VmId::of_raw(vm), addr, write)
    }

    fn smi_event_throttle(dev: &Device, bitmask: u64, counter: u64) {
        crate::smi::thermal_throttle(dev, bitmask, counter);
    }

    fn set_sram_ecc_flag(dev: &Device) {
        dev.sram_ecc_flag.fetch_add(1, Relaxed);
    }

    fn suspend(dev: &Device, procs: bool) {
        crate::power::suspend(dev, procs);
    }

    fn resume(dev: &Device, procs: bool) -> Result {
        crate::power::resume(dev, procs)
    }

    fn suspend_process(dev: &Device) {
        crate::power::suspend_process(dev);
    }

    fn resume_process(dev: &Device) -> Result {
        crate::power::resume_process(dev)
    }

    fn pre_reset(dev: &Device, cause: &[u8]) -> Result {
        crate::power::pre_reset(dev, cause)
    }

    fn post_reset(dev: &Device) -> Result {
        crate::power::post_reset(dev)
    }

    fn check_and_lock_kfd(dev: &Device) -> Result {
        crate::power::check_and_lock(dev)
    }

    fn unlock_kfd(dev: &Device) {
        crate::power::unlock(dev);
    }

    fn start_sched(dev: &Device, start: bool) -> Result {
        crate::power::start_sched(dev, start)
    }

    fn compute_active(dev: &Device) -> bool {
        crate::power::compute_active(dev)
    }

    fn teardown_processes(dev: &Device) {
        crate::power::teardown_processes(dev);
    }

    fn svm_evict_vram(dev: &Device) -> Result {
        crate::svm::migrate::evict_vram(dev)
    }

    fn quiesce_mm(mm: crate::kabi::kgd::MmId, trigger: u32) -> Result {
        crate::eviction::quiesce_mm(mm, trigger)
    }

    fn resume_mm(mm: crate::kabi::kgd::MmId) -> Result {
        crate::eviction::resume_mm(mm)
    }

    fn queue_restore_rescheduled(mm: crate::kabi::kgd::MmId) {
        crate::eviction::queue_restore_rescheduled(mm);
    }

    fn vmfault_fast_path(dev: &Device, pasid: u32) -> bool {
        dev.faults.fast_path(pasid)
    }

    fn clear_mappings(dev: &Device) {
        crate::chardev::clear_mappings(dev);
    }

    fn signal_userptr_fault(tgid: i32, va: u64) {
        crate::event::signal_vm_fault_with_userptr(tgid, va);
    }
}

/// A snapshot of the published devices.
pub(crate) fn all() -> Result<KVec<Arc<Device>>> {
    let list = DEVICES.lock();
    let mut out = KVec::with_capacity(list.devices.len(), GFP_KERNEL)?;
    for d in list.devices.iter() {
        out.push(d.clone(), GFP_KERNEL)?;
    }
    Ok(out)
}

/// The published device whose `kfd_dev` handle (what `kgd2kfd_probe`
/// returned to its GPU driver) is `handle`, compared by address only.
pub(crate) fn by_kfd_handle(handle: *const core::ffi::c_void) -> Result<Option<Arc<Device>>> {
    Ok(all()?.into_iter().find(|d| Arc::as_ptr(d).cast() == handle))
}

impl Device {
    /// The device's `gpu_id` (0 until published).
    pub(crate) fn gpu_id(&self) -> u32 {
        self.gpu_id.load(Relaxed)
    }

    /// KUnit: gives an unpublished device a gpu_id.
    #[cfg(CONFIG_KUNIT = "y")]
    pub(crate) fn set_gpu_id_for_tests(&self, gpu_id: u32) {
        self.gpu_id.store(gpu_id, Relaxed);
    }

    /// Whether SVM works on this GPU: its VRAM is registered as
    /// device-private memory and it supports per-process XNACK.  Upstream
    /// `kfd_topology.c` sets `HSA_CAP_SVMAPI_SUPPORTED` when
    /// `KFD_IS_SVM_API_SUPPORTED` (the device-private pagemap exists) and
    /// the GPU is GFX9+.  Here the retry-fault path is the working part, so
    /// it is also required: gfx90a (GC 9.4.2) qualifies.
    pub(crate) fn svm_supported(&self) -> bool {
        self.vram_pagemap.is_some() && self.supports_xnack_per_process()
    }

    /// Whether the GPU can retry faults (XNACK) per process (upstream
    /// `KFD_SUPPORT_XNACK_PER_PROCESS`).
    pub(crate) fn supports_xnack_per_process(&self) -> bool {
        self.gfx.supports_xnack_per_process()
    }
}
