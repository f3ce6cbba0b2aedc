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
    kfd_ioctl_create_event_args,
    kfd_ioctl_destroy_event_args,
    kfd_ioctl_set_event_args,
    kfd_ioctl_reset_event_args,
    kfd_ioctl_wait_events_args,
);

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
