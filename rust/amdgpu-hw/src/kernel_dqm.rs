// SPDX-License-Identifier: GPL-2.0

//! The driver's HWS files as rkfd compiles them: `pm4.rs` (packets,
//! runlists), `kernel_queue.rs` (the HIQ ring), `dqm.rs` (the
//! runlist/preemption logic) and `qpd.rs` (a process's SH_MEM settings), without the firmware model `hws.rs` that
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

/// A process's SH_MEM settings (`kfd_device_queue_manager_v9.c` ...).
#[path = "qpd.rs"]
#[allow(dead_code, unreachable_pub, reason = "a file shared with the host crate, rkfd and the virtual GPU")]
pub(crate) mod qpd;

/// The generated upstream layouts the files name (`scripts/gen-hw-rs`).
mod generated {
    pub(super) use super::{
        amdgpu_vm, gc_10_1_0_sh_mask, gc_11_0_0_sh_mask, gc_9_4_3_sh_mask, kfd_pm4_headers_ai, kfd_pm4_headers_aldebaran,
        kfd_pm4_opcodes, navi10_enum, soc21_enum, vega10_enum,
    };
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
#[path = "generated/gc_11_0_0_sh_mask.rs"]
#[allow(dead_code, unreachable_pub)]
mod gc_11_0_0_sh_mask;
#[path = "generated/gc_9_4_3_sh_mask.rs"]
#[allow(dead_code, unreachable_pub)]
mod gc_9_4_3_sh_mask;
#[path = "generated/amdgpu_vm.rs"]
#[allow(dead_code, unreachable_pub)]
mod amdgpu_vm;
#[path = "generated/vega10_enum.rs"]
#[allow(dead_code, unreachable_pub, non_camel_case_types)]
mod vega10_enum;
#[path = "generated/navi10_enum.rs"]
#[allow(dead_code, unreachable_pub, non_camel_case_types)]
mod navi10_enum;
#[path = "generated/soc21_enum.rs"]
#[allow(dead_code, unreachable_pub, non_camel_case_types)]
mod soc21_enum;
