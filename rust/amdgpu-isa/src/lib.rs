// SPDX-License-Identifier: GPL-2.0 OR MIT
//! An AMDGPU shader interpreter for the virtual GPU: GFX9 as gfx90a
//! implements it (wave64) and GFX10.3 as gfx1030 does (wave32 and wave64),
//! pure logic over traits the virtual GPU implements.
//!
//! Each module is one `core`-only file, to be included by the kernel module
//! with `#[path]` like `rust/gpu-engines`:
//!
//! - [`opcodes`]: opcode numbers and mnemonics per encoding class, generated
//!   from LLVM's AMDGPU disassembler by `scripts/gen-opcode-tables.py`;
//! - [`opcodes10`]: the gfx1030 opcodes, mapped into the GFX9 opcode space
//!   (`scripts/gen-opcode-tables-gfx10.py`);
//! - [`decode`]: instruction words to [`decode::Instruction`], per
//!   [`decode::Generation`];
//! - [`softfloat`], [`softfloat64`]: IEEE binary32 and binary64 arithmetic in
//!   integers (no FPU in the kernel); [`half`], binary16 on top of them;
//!   [`transcendental`], log2/exp2/sin/cos of f32 in binary64 soft-float;
//! - [`wave`]: one wave's registers (SGPRs, VGPRs, AGPRs, EXEC, VCC, SCC, M0, MODE);
//! - [`memory`]: what a wave sees of memory (GPU VA through a trait, LDS, scratch);
//! - [`exec`]: the interpreter, one instruction per [`exec::step`];
//! - [`code_object`]: the kernel descriptor (`.kd`) and a minimal ELF64 reader
//!   for host tests and tools;
//! - [`dispatch`]: a wave's initial SGPRs/VGPRs from the kernel descriptor and
//!   the dispatch, and running one workgroup's waves with `s_barrier`.

#![no_std]

pub mod code_object;
pub mod decode;
pub mod dispatch;
pub mod exec;
pub mod half;
pub mod memory;
pub mod opcodes;
pub mod opcodes10;
pub mod softfloat;
pub mod softfloat64;
pub mod transcendental;
pub mod wave;
