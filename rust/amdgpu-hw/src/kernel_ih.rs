// SPDX-License-Identifier: GPL-2.0

//! `ih.rs` as the kernel crates compile it: rkfd decodes with it
//! (`src/interrupt.rs`), the virtual GPU encodes with it (`vgpu/ih.rs`).
//! Each includes this file with `#[path]` as a module whose parent has the
//! GPU generations in scope as `gfx`; `ih.rs` names them and the generated
//! upstream constants through `super::`, as it does in this host crate
//! (`lib.rs`), which does not build this file.

/// The parent's GPU generations (`kfd-logic`'s `gfx.rs`), for `ih`.
use super::gfx;

/// SOC15 IH entries and the KFD payloads (pure logic, `core` only,
/// host-tested).
#[path = "ih.rs"]
#[allow(dead_code, unreachable_pub, reason = "a file shared with the host crate, rkfd and the virtual GPU")]
pub(crate) mod ih;

/// The generated upstream constants `ih` names (`scripts/gen-hw-rs`).
mod generated {
    pub(super) use super::{amdgpu_gmc, kfd_int_process_v10, kfd_int_process_v11, kfd_int_process_v9, soc15_int};
}
#[path = "generated/amdgpu_gmc.rs"]
#[allow(dead_code, unreachable_pub)]
mod amdgpu_gmc;
#[path = "generated/kfd_int_process_v10.rs"]
#[allow(dead_code, unreachable_pub, non_camel_case_types)]
mod kfd_int_process_v10;
#[path = "generated/kfd_int_process_v11.rs"]
#[allow(dead_code, unreachable_pub, non_camel_case_types)]
mod kfd_int_process_v11;
#[path = "generated/kfd_int_process_v9.rs"]
#[allow(dead_code, unreachable_pub, non_camel_case_types)]
mod kfd_int_process_v9;
#[path = "generated/soc15_int.rs"]
#[allow(dead_code, unreachable_pub, non_camel_case_types, non_upper_case_globals)]
mod soc15_int;
