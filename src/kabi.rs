// SPDX-License-Identifier: GPL-2.0

//! The thin layer between rkfd and the kernel's C side.
//!
//! Every call into the C shim (`shim/`) and every entry point the shim calls
//! back (`rkfd_rs_*`) lives below this module, each with its safety argument.
//! Everything above it is safe Rust.  Review rule:
//! `git grep -n 'bindings::\|extern "C"' src/ ':!src/kabi*'` is empty.

use kernel::{ffi::c_int, prelude::*};

mod chrdev;
pub(crate) mod devcgroup;
pub(crate) mod kgd;
pub(crate) mod log;
pub(crate) mod mm;
pub(crate) mod smi;
pub(crate) mod sysfs;
pub(crate) mod time;

pub(crate) use chrdev::Chardev;

/// Converts a C return value (0 or `-errno`) into a [`Result`].
pub(crate) fn to_result(ret: c_int) -> Result {
    if ret < 0 {
        Err(Error::from_errno(ret))
    } else {
        Ok(())
    }
}
