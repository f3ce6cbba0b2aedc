// SPDX-License-Identifier: GPL-2.0

//! Clock reads `GET_CLOCK_COUNTERS` reports (Rust's `kernel::time` keeps
//! absolute nanoseconds crate-private in 7.3).

use kernel::bindings;

/// `ktime_get_raw_ns()`: raw monotonic time in ns.
pub(crate) fn raw_ns() -> u64 {
    // SAFETY: `ktime_get_raw` has no preconditions.
    let t = unsafe { bindings::ktime_get_raw() };
    t as u64
}

/// `ktime_get_boottime_ns()`: time since boot, including suspend, in ns.
pub(crate) fn boottime_ns() -> u64 {
    // SAFETY: `ktime_get_with_offset` has no preconditions for a valid offset.
    let t = unsafe { bindings::ktime_get_with_offset(bindings::tk_offsets_TK_OFFS_BOOT) };
    t as u64
}
