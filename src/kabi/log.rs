// SPDX-License-Identifier: GPL-2.0

//! rkfd's own dmesg output, gated by the writable `log_level` module
//! parameter (an rkfd extension; see the README), and messages printed as
//! the kfd device (`kfd kfd: ...`) like upstream's `dev_info(kfd_device, ..)`.

use kernel::{fmt, prelude::*, str::CString};

use super::shim_ffi as shim;

/// Whether messages of `level` (1 error, 2 warning, 3 info) are printed.
pub(crate) fn enabled(level: i32) -> bool {
    // SAFETY: Reads an int module parameter.
    unsafe { shim::rkfd_shim_log_level() >= level }
}

/// Prints an info line as the kfd device, `kfd kfd: <msg>`.
pub(crate) fn kfd_dev_info(args: fmt::Arguments<'_>) {
    if !enabled(3) {
        return;
    }
    if let Ok(msg) = CString::try_from_fmt(args) {
        // SAFETY: `msg` is a NUL-terminated string that outlives the call.
        unsafe { shim::rkfd_shim_kfd_dev_info(msg.as_char_ptr()) };
    }
}

/// `pr_err!` unless `log_level` < 1.
macro_rules! kfd_err {
    ($($arg:tt)*) => {
        if $crate::kabi::log::enabled(1) {
            kernel::pr_err!($($arg)*);
        }
    };
}

/// `pr_warn!` unless `log_level` < 2.
macro_rules! kfd_warn {
    ($($arg:tt)*) => {
        if $crate::kabi::log::enabled(2) {
            kernel::pr_warn!($($arg)*);
        }
    };
}

/// `pr_info!` unless `log_level` < 3.
macro_rules! kfd_info {
    ($($arg:tt)*) => {
        if $crate::kabi::log::enabled(3) {
            kernel::pr_info!($($arg)*);
        }
    };
}

pub(crate) use {kfd_err, kfd_info, kfd_warn};
