// SPDX-License-Identifier: GPL-2.0

//! File operations of `/dev/kfd`, above the raw entry points in [`crate::kabi`].
//!
//! C: `drivers/gpu/drm/amd/amdkfd/kfd_chardev.c` (`kfd_open`, `kfd_release`,
//! `kfd_ioctl`, `kfd_mmap`).

use kernel::{prelude::*, sync::Arc};

use crate::{ioctl, process::Process};

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

/// Maps doorbells, events or MMIO pages.  No mappable object exists yet.
pub(crate) fn mmap(_process: &Process, _start: usize, _end: usize, _pgoff: usize) -> Result {
    Err(EINVAL)
}
