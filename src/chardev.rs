// SPDX-License-Identifier: GPL-2.0

//! File operations of `/dev/kfd` ([`KfdFile`]), which the `kabi` layer's
//! trampolines ([`kabi::chrdev`]) call.
//!
//! C: `drivers/gpu/drm/amd/amdkfd/kfd_chardev.c` (`kfd_open`, `kfd_release`,
//! `kfd_ioctl`, `kfd_mmap`).

use kernel::{
    page::PAGE_SIZE,
    prelude::*,
    sync::{Arc, ArcBorrow}, //
};

use crate::{
    ioctl,
    kabi::{self, kgd::Vma},
    process::Process, //
};
use mmap_offset::Kind;

/// `/dev/kfd`'s file operations (upstream `kfd_fops`): each open file
/// refers to the opener's [`Process`].
pub(crate) struct KfdFile;

impl kabi::chrdev::FileOps for KfdFile {
    type Data = Arc<Process>;

    /// Opens `/dev/kfd` for the current thread group.
    fn open() -> Result<Arc<Process>> {
        Process::open_current()
    }

    /// Releases a file's reference to its process.
    fn release(process: Arc<Process>) {
        process.release_file();
    }

    /// Dispatches an ioctl; see [`ioctl::dispatch`].
    fn ioctl(process: ArcBorrow<'_, Process>, cmd: u32, arg: usize) -> Result<isize> {
        ioctl::dispatch(&process, cmd, arg)
    }

    /// See [`mmap`].
    fn mmap(process: ArcBorrow<'_, Process>, vma: &Vma<'_>) -> Result {
        mmap(&process, vma)
    }
}

/// `/dev/kfd` mmap offsets, shared with the host crate `kfd-logic`.
#[path = "../rust/kfd-logic/src/mmap_offset.rs"]
#[allow(
    unreachable_pub,
    dead_code,
    reason = "a file shared with a host crate: `pub` items, accessors for its tests"
)]
pub(crate) mod mmap_offset;

/// `mmap` of `/dev/kfd` (upstream `kfd_mmap`): the offset's type and gpu_id
/// choose what is mapped, always of the calling process's own device (a
/// process only ever finds its own pdds):
///
/// - DOORBELL: the process's doorbell slice of the GPU, exactly
///   `doorbell_process_size` bytes (`-EINVAL` otherwise), `-ENODEV` for a
///   gpu_id the process does not have or before `ACQUIRE_VM` (the virtual
///   GPU's doorbells belong to the VM);
/// - MMIO: the GPU's MMIO remap (HDP flush) page, exactly one page;
/// - EVENTS, RESERVED_MEM: `-EINVAL`, as upstream ("no longer supported":
///   libhsakmt allocates the event page itself since ROCm 3.x);
/// - only the creating thread group may map (`-EBADF`).
pub(crate) fn mmap(process: &Process, vma: &Vma<'_>) -> Result {
    if !process.is_caller_opener() {
        return Err(EBADF);
    }
    let (kind, gpu_id) = mmap_offset::decode(vma.offset());
    let target = process.mmap_target(gpu_id);
    match kind {
        Kind::Doorbell => {
            let (dev, vm) = target.ok_or(ENODEV)?;
            if vma.size() != dev.info.doorbell_process_size as usize {
                return Err(EINVAL);
            }
            let vm = vm.ok_or(ENODEV)?;
            dev.kgd.mmap_doorbells(&vm, vma)
        }
        Kind::Events | Kind::ReservedMem => Err(EINVAL),
        Kind::Mmio => {
            let (dev, _) = target.ok_or(ENODEV)?;
            if vma.size() != PAGE_SIZE || PAGE_SIZE > 4096 {
                return Err(EINVAL);
            }
            dev.kgd.mmap_mmio_remap(vma)
        }
    }
}

/// `kgd2kfd_clear_mappings` (C: `amdgpu_amdkfd_clear_kfd_mapping`, two
/// `kfd_dev_unmap_mapping_range` calls): before the GPU driver resets
/// `dev`, every process's doorbell and MMIO remap mappings of it lose
/// their PTEs, so user space cannot touch the GPU across the reset.  All
/// opens of `/dev/kfd` share one address_space (the shim's anonymous
/// inode), so the offsets [`mmap`] decodes name the mappings; the whole
/// offset range of each (type, gpu_id) is zapped
/// ([`mmap_offset::GPU_RANGE_LEN`]).  The VMAs stay, and with no fault
/// handler a later access gets SIGBUS; a new `mmap` maps the slice again.
/// Nothing for a device not yet published (upstream: before
/// `init_complete`).  Takes no rkfd lock.
pub(crate) fn clear_mappings(dev: &crate::device::Device) {
    let gpu_id = dev.gpu_id();
    if gpu_id == 0 {
        return;
    }
    for start in [mmap_offset::doorbell(gpu_id), mmap_offset::mmio(gpu_id)] {
        kabi::chrdev::Chardev::unmap_mapping_range(start, mmap_offset::GPU_RANGE_LEN);
    }
}
