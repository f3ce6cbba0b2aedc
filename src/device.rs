// SPDX-License-Identifier: GPL-2.0

//! KFD devices: GPUs offered by GPU drivers through the device interface.
//!
//! C: `struct kfd_dev` / `struct kfd_node` (`kfd_device.c`).  A device is
//! created by `kgd2kfd_probe`, published by `kgd2kfd_device_init` (it then
//! appears in topology and new processes get a per-device context for it) and
//! withdrawn by `kgd2kfd_device_exit`.  rkfd does not know what kind of GPU
//! it drives: everything it asks goes through [`KgdDevice`].
//!
//! Lock order: [`DEVICES`] is a leaf lock; nothing else is taken under it.

use kernel::{prelude::*, sync::Arc};

use crate::kabi::kgd::{GpuInfo, KgdDevice};

/// A KFD device (one GPU node).
pub(crate) struct Device {
    /// The GPU driver's side.
    pub(crate) kgd: KgdDevice,
    /// What the GPU reported about itself at probe.
    pub(crate) info: GpuInfo,
    /// The id user space names this GPU by (topology `gpu_id`).
    pub(crate) gpu_id: u32,
}

/// The published devices, in topology order.
pub(crate) struct DeviceList {
    devices: KVec<Arc<Device>>,
}

kernel::sync::global_lock! {
    // SAFETY: Initialised in module init (`init_module_state`) before any
    // device can be probed or any file opened.
    pub(crate) unsafe(uninit) static DEVICES: Mutex<DeviceList> = DeviceList {
        devices: KVec::new(),
    };
}

/// Initialises the module-global device list.  Called once from module init.
pub(crate) fn init_module_state() {
    // SAFETY: Called exactly once, from module init, before any other use.
    unsafe { DEVICES.init() };
}

/// Checks what a GPU reports before rkfd relies on it (user space divides
/// by some of these and asserts on others).
fn validate(info: &GpuInfo) -> Result {
    let cus = info.num_shader_engines * info.sh_per_se * info.cu_per_sh;
    if cus == 0 || info.simd_per_cu == 0 || info.wave_front_size == 0 {
        return Err(EINVAL);
    }
    if info.gfx_target_version == 0 || !(128..=255).contains(&info.drm_render_minor) {
        return Err(EINVAL);
    }
    if info.num_caches as usize > info.caches.len() {
        return Err(EINVAL);
    }
    Ok(())
}

/// A stable, non-zero 16-bit id derived from the device's identity, as
/// upstream's `kfd_generate_gpu_id` (a hash of device properties) is.
fn generate_gpu_id(info: &GpuInfo, taken: &[Arc<Device>]) -> u32 {
    let words = [
        info.domain,
        info.location_id,
        info.device_id,
        info.vendor_id,
        info.gfx_target_version,
        info.num_shader_engines * info.sh_per_se * info.cu_per_sh,
        info.unique_id as u32,
        (info.unique_id >> 32) as u32,
    ];
    // FNV-1a over the identity, folded to 16 bits.
    let mut hash: u32 = 0x811c_9dc5;
    for w in words {
        for b in w.to_le_bytes() {
            hash ^= u32::from(b);
            hash = hash.wrapping_mul(0x0100_0193);
        }
    }
    let mut id = (hash ^ (hash >> 16)) & 0xffff;
    // Never 0 (CPU nodes) and never a duplicate.
    while id == 0 || taken.iter().any(|d| d.gpu_id == id) {
        id = (id + 1) & 0xffff;
    }
    id
}

/// `kgd2kfd_probe`: builds the device (not yet visible).
pub(crate) fn probe(kgd: KgdDevice, info: GpuInfo) -> Result<Arc<Device>> {
    validate(&info)?;
    let gpu_id = generate_gpu_id(&info, &DEVICES.lock().devices);
    Ok(Arc::new(Device { kgd, info, gpu_id }, GFP_KERNEL)?)
}

/// `kgd2kfd_device_init`: publishes the device.
pub(crate) fn init(dev: Arc<Device>) -> Result {
    let mut list = DEVICES.lock();
    if list.devices.iter().any(|d| d.gpu_id == dev.gpu_id) {
        return Err(EEXIST);
    }
    pr_info!(
        "added device {:04x}:{:02x}:{:02x}.{} gfx_target_version {} gpu_id {}\n",
        dev.info.domain,
        dev.info.location_id >> 8,
        (dev.info.location_id >> 3) & 0x1f,
        dev.info.location_id & 0x7,
        dev.info.gfx_target_version,
        dev.gpu_id
    );
    list.devices.push(dev, GFP_KERNEL)?;
    Ok(())
}

/// `kgd2kfd_device_exit`: withdraws the device.  Processes that use it hold
/// a module reference on its driver, so this only runs once none does.
pub(crate) fn exit(dev: Arc<Device>) {
    DEVICES.lock().devices.retain(|d| !Arc::ptr_eq(d, &dev));
    pr_info!("removed device gpu_id {}\n", dev.gpu_id);
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

impl Device {
    /// An interrupt from the GPU.  Nothing raises interrupts yet (events
    /// and faults arrive with later issues).
    pub(crate) fn interrupt(&self) {}

    /// Whether the GPU can retry faults (XNACK) per process: GC 9.4.2
    /// (gfx90a), 9.4.3, 9.4.4 and 9.5.0, as upstream's
    /// `KFD_SUPPORT_XNACK_PER_PROCESS`.
    pub(crate) fn supports_xnack_per_process(&self) -> bool {
        matches!(self.info.gfx_target_version, 90010 | 90400 | 90401 | 90402 | 90500)
    }
}
