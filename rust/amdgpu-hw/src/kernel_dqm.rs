// SPDX-License-Identifier: GPL-2.0

//! The driver's HWS files as rkfd compiles them: `pm4.rs` (packets,
//! runlists), `kernel_queue.rs` (the HIQ ring) and `dqm.rs` (the
//! runlist/preemption logic), without the firmware model `hws.rs` that
//! the virtual GPU adds (`kernel_hws.rs`).  Included with `#[path]` as a
//! module whose parent has the GPU generations in scope as `gfx`, like
//! `kernel_mqd.rs`; the files name each other and the generated upstream
//! layouts through `super::`, as in this host crate (`lib.rs`), which does
//! not build this file.

/// The parent's GPU generations, for `pm4`.
use super::gfx;

/// PM4 packets of the HWS (`kfd_pm4_headers_ai.h`), runlists, parser.
#[path = "pm4.rs"]
#[allow(dead_code, unreachable_pub, reason = "a file shared with the host crate, rkfd and the virtual GPU")]
pub(crate) mod pm4;
/// The HIQ ring (`kfd_kernel_queue.c`) and the CP's reader of it.
#[path = "kernel_queue.rs"]
#[allow(dead_code, unreachable_pub, reason = "a file shared with the host crate, rkfd and the virtual GPU")]
pub(crate) mod kernel_queue;
/// The HWS half of the device queue manager.
#[path = "dqm.rs"]
#[allow(dead_code, unreachable_pub, reason = "a file shared with the host crate, rkfd and the virtual GPU")]
pub(crate) mod dqm;

/// The generated upstream layouts the files name (`scripts/gen-hw-rs`).
mod generated {
    pub(super) use super::{gc_10_1_0_sh_mask, kfd_pm4_headers_ai, kfd_pm4_headers_aldebaran, kfd_pm4_opcodes};
}
#[path = "generated/kfd_pm4_headers_ai.rs"]
#[allow(dead_code, unreachable_pub, non_camel_case_types, non_snake_case, non_upper_case_globals, unsafe_op_in_unsafe_fn, unnecessary_transmutes, missing_docs, clippy::all)]
mod kfd_pm4_headers_ai;
#[path = "generated/kfd_pm4_headers_aldebaran.rs"]
#[allow(dead_code, unreachable_pub, non_camel_case_types, non_snake_case, non_upper_case_globals, unsafe_op_in_unsafe_fn, unnecessary_transmutes, missing_docs, clippy::all)]
mod kfd_pm4_headers_aldebaran;
#[path = "generated/kfd_pm4_opcodes.rs"]
#[allow(dead_code, unreachable_pub, non_camel_case_types)]
mod kfd_pm4_opcodes;
#[path = "generated/gc_10_1_0_sh_mask.rs"]
#[allow(dead_code, unreachable_pub)]
mod gc_10_1_0_sh_mask;
