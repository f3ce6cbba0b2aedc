// SPDX-License-Identifier: GPL-2.0

//! File operations of `/dev/kfd`, above the raw entry points in [`crate::kabi`].
//!
//! C: `drivers/gpu/drm/amd/amdkfd/kfd_chardev.c` (`kfd_open`, `kfd_release`,
//! `kfd_ioctl`, `kfd_mmap`).

use kernel::{page::PAGE_SIZE, prelude::*, sync::Arc};

use crate::{ioctl, kabi::kgd::Vma, process::Process};
use mmap_offset::Kind;

/// Opens `/dev/kfd` for the current thread group.
pub(crate) fn open() -> Result<Arc<Process>> {
    Process::open_current()
}

/// Releases a file's reference to its process.
pub(crate) fn release(process: Arc<Process>) {
    process.release_file();
}

/// Dispatches an ioctl; see [`ioctl::dispatch`].
pub(crate) fn ioctl(process: &Process, cmd: u32, arg: usize) -> Result<isize> {
    ioctl::dispatch(process, cmd, arg)
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
