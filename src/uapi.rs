// SPDX-License-Identifier: GPL-2.0

//! The KFD user-space ABI, shared with the host crate `rust/kfd-uapi`.
//!
//! C header: `include/uapi/linux/kfd_ioctl.h` (ours; checked against
//! upstream by `scripts/abi-check`).  The structs are bindgen output of that
//! header, the command numbers are computed from the struct sizes.
//! This module adds the one audited cast from an ioctl buffer to a typed
//! argument struct.

#[path = "../rust/kfd-uapi/src/abi.rs"]
#[allow(
    dead_code,
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    unreachable_pub,
    clippy::all
)]
mod abi;

pub(crate) use abi::*;

use kernel::prelude::*;

/// An ioctl argument struct that may be viewed in place inside the argument
/// buffer.
///
/// # Safety
///
/// Implementors are `#[repr(C)]` UAPI structs made only of integers, arrays
/// of integers and unions of such: every bit pattern is a valid value.
pub(crate) unsafe trait IoctlArgs: Sized {}

macro_rules! ioctl_args {
    ($($t:ident),* $(,)?) => {
        // SAFETY: Each listed type is a bindgen-generated `#[repr(C)]` struct
        // of `__u32`/`__u64` fields (see `include/uapi/linux/kfd_ioctl.h`).
        $(unsafe impl IoctlArgs for $t {})*
    };
}

ioctl_args!(
    kfd_ioctl_get_version_args,
    kfd_ioctl_get_clock_counters_args,
    kfd_ioctl_get_tile_config_args,
    kfd_ioctl_get_process_apertures_args,
    kfd_ioctl_get_process_apertures_new_args,
    kfd_ioctl_acquire_vm_args,
    kfd_ioctl_set_memory_policy_args,
    kfd_ioctl_set_scratch_backing_va_args,
    kfd_ioctl_set_trap_handler_args,
    kfd_ioctl_set_xnack_mode_args,
    kfd_ioctl_get_available_memory_args,
    kfd_ioctl_alloc_memory_of_gpu_args,
    kfd_ioctl_free_memory_of_gpu_args,
    kfd_ioctl_map_memory_to_gpu_args,
    kfd_ioctl_unmap_memory_from_gpu_args,
    kfd_process_device_apertures,
    kfd_ioctl_create_event_args,
    kfd_ioctl_destroy_event_args,
    kfd_ioctl_set_event_args,
    kfd_ioctl_reset_event_args,
    kfd_ioctl_wait_events_args,
    kfd_ioctl_create_queue_args,
    kfd_ioctl_destroy_queue_args,
    kfd_ioctl_update_queue_args,
    kfd_ioctl_set_cu_mask_args,
    kfd_ioctl_get_queue_wave_state_args,
    kfd_ioctl_alloc_queue_gws_args,
    kfd_ioctl_smi_events_args,
    kfd_ioctl_svm_args,
    kfd_ioctl_get_dmabuf_info_args,
    kfd_ioctl_import_dmabuf_args,
);

/// A UAPI struct without padding bytes, so all of its bytes may be copied
/// to user space.
///
/// # Safety
///
/// Implementors are `IoctlArgs` whose C layout has no padding (checked for
/// each type by a `const` size assertion at the implementation).
pub(crate) unsafe trait NoPadding: IoctlArgs {}

// SAFETY: 6 × u64 + 2 × u32 = 56 bytes, its size: no padding.
unsafe impl NoPadding for kfd_process_device_apertures {}
const _: () = assert!(core::mem::size_of::<kfd_process_device_apertures>() == 6 * 8 + 2 * 4);

/// The bytes of a padding-free UAPI struct.
pub(crate) fn as_bytes<T: NoPadding>(v: &T) -> &[u8] {
    // SAFETY: `v` is a valid `T` with every byte initialised (`NoPadding`);
    // the slice borrows `v`.
    unsafe { core::slice::from_raw_parts(core::ptr::from_ref(v).cast::<u8>(), core::mem::size_of::<T>()) }
}

/// Views the start of an ioctl argument buffer as `T`.
///
/// Fails with `EINVAL` if the buffer is too short or misaligned (the
/// dispatcher always passes an 8-byte aligned buffer of at least the
/// kernel's size, so this does not happen for table commands).
pub(crate) fn args_mut<T: IoctlArgs>(buf: &mut [u8]) -> Result<&mut T> {
    let ptr = buf.as_mut_ptr().cast::<T>();
    if buf.len() < core::mem::size_of::<T>() || !ptr.is_aligned() {
        return Err(EINVAL);
    }
    // SAFETY: `ptr` is aligned and valid for `size_of::<T>()` initialised
    // bytes (checked above); any bit pattern is a valid `T` (`IoctlArgs`);
    // the returned borrow has `buf`'s lifetime and uniqueness.
    Ok(unsafe { &mut *ptr })
}
