// SPDX-License-Identifier: GPL-2.0

//! The shader interpreter, `rust/amdgpu-isa` (pure logic, `core` only,
//! integer soft-float, host-tested with hipcc-compiled kernels), compiled
//! into this module file by file as `rust/gpu-engines` is.  Its files name
//! each other with `super::`, so they sit side by side under this module.
//! The engine's AQL processor runs kernel dispatches on it
//! (`engine/shader`, [`crate::engine`]).

#[path = "../rust/amdgpu-isa/src/code_object.rs"]
#[allow(dead_code, unreachable_pub)]
pub(crate) mod code_object;
#[path = "../rust/amdgpu-isa/src/decode.rs"]
#[allow(dead_code, unreachable_pub)]
pub(crate) mod decode;
#[path = "../rust/amdgpu-isa/src/dispatch.rs"]
#[allow(dead_code, unreachable_pub)]
pub(crate) mod dispatch;
#[path = "../rust/amdgpu-isa/src/exec.rs"]
#[allow(dead_code, unreachable_pub)]
pub(crate) mod exec;
#[path = "../rust/amdgpu-isa/src/half.rs"]
#[allow(dead_code, unreachable_pub)]
pub(crate) mod half;
#[path = "../rust/amdgpu-isa/src/memory.rs"]
#[allow(dead_code, unreachable_pub)]
pub(crate) mod memory;
#[path = "../rust/amdgpu-isa/src/opcodes.rs"]
#[allow(dead_code, unreachable_pub)]
pub(crate) mod opcodes;
#[path = "../rust/amdgpu-isa/src/opcodes10.rs"]
#[allow(dead_code, unreachable_pub)]
pub(crate) mod opcodes10;
#[path = "../rust/amdgpu-isa/src/softfloat.rs"]
#[allow(dead_code, unreachable_pub)]
pub(crate) mod softfloat;
#[path = "../rust/amdgpu-isa/src/softfloat64.rs"]
#[allow(dead_code, unreachable_pub)]
pub(crate) mod softfloat64;
#[path = "../rust/amdgpu-isa/src/transcendental.rs"]
#[allow(dead_code, unreachable_pub)]
pub(crate) mod transcendental;
#[path = "../rust/amdgpu-isa/src/wave.rs"]
#[allow(dead_code, unreachable_pub)]
pub(crate) mod wave;
