// SPDX-License-Identifier: MIT
//! The /dev/kfd (amdkfd, interface 1.23) user-space ABI: structs, constants
//! and ioctl numbers of `include/uapi/linux/kfd_ioctl.h`, for host tools and
//! tests.  Everything lives in `abi.rs`, which the kernel module includes
//! directly; this crate only wraps it.

#![no_std]

mod abi;

pub use abi::*;
