// SPDX-License-Identifier: GPL-2.0

//! `mqd.rs` as the kernel crates compile it: rkfd builds MQDs with it
//! (`src/mqd.rs`), the virtual GPU reads them back (`vgpu/mqd.rs`).  Each
//! includes this file with `#[path]` as a module whose parent has the GPU
//! generations in scope as `gfx`; `mqd.rs` names them and the generated
//! upstream layouts through `super::`, as it does in this host crate
//! (`lib.rs`), which does not build this file.

/// The parent's GPU generations (`kfd-logic`'s `gfx.rs`), for `mqd`.
use super::gfx;

/// MQD layouts and the MQD managers' field logic (pure logic, `core`
/// only, host-tested).
#[path = "mqd.rs"]
#[allow(dead_code, unreachable_pub, reason = "a file shared with the host crate, rkfd and the virtual GPU")]
pub(crate) mod mqd;

/// The generated upstream layouts and register fields `mqd` names
/// (`scripts/gen-hw-rs`).
mod generated {
    pub(super) use super::{
        gc_10_1_0_sh_mask, gc_10_3_0_offset, gc_11_0_0_offset, gc_11_0_0_sh_mask, gc_9_0_offset, gc_9_0_sh_mask, sdma0_4_0_sh_mask,
        sdma0_4_2_2_offset, v10_structs, v11_structs, v9_structs,
    };
}
#[path = "generated/v9_structs.rs"]
#[allow(dead_code, unreachable_pub, non_camel_case_types, non_snake_case, clippy::all)]
mod v9_structs;
#[path = "generated/v10_structs.rs"]
#[allow(dead_code, unreachable_pub, non_camel_case_types, non_snake_case, clippy::all)]
mod v10_structs;
#[path = "generated/v11_structs.rs"]
#[allow(dead_code, unreachable_pub, non_camel_case_types, non_snake_case, clippy::all)]
mod v11_structs;
#[path = "generated/gc_9_0_sh_mask.rs"]
#[allow(dead_code, unreachable_pub)]
mod gc_9_0_sh_mask;
#[path = "generated/gc_10_1_0_sh_mask.rs"]
#[allow(dead_code, unreachable_pub)]
mod gc_10_1_0_sh_mask;
#[path = "generated/gc_11_0_0_sh_mask.rs"]
#[allow(dead_code, unreachable_pub)]
mod gc_11_0_0_sh_mask;
#[path = "generated/sdma0_4_0_sh_mask.rs"]
#[allow(dead_code, unreachable_pub)]
mod sdma0_4_0_sh_mask;
#[path = "generated/gc_9_0_offset.rs"]
#[allow(dead_code, unreachable_pub, non_upper_case_globals)]
mod gc_9_0_offset;
#[path = "generated/sdma0_4_2_2_offset.rs"]
#[allow(dead_code, unreachable_pub, non_upper_case_globals)]
mod sdma0_4_2_2_offset;
#[path = "generated/gc_10_3_0_offset.rs"]
#[allow(dead_code, unreachable_pub, non_upper_case_globals)]
mod gc_10_3_0_offset;
#[path = "generated/gc_11_0_0_offset.rs"]
#[allow(dead_code, unreachable_pub, non_upper_case_globals)]
mod gc_11_0_0_offset;
