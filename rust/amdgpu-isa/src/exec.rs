// SPDX-License-Identifier: GPL-2.0 OR MIT
//! The interpreter: one instruction of one wave per [`step`].
//!
//! Semantics follow AMD's "AMD Instinct MI200 Instruction Set Architecture"
//! (gfx90a) and agree with gem5's `src/arch/amdgpu/vega/insts/instructions.cc`;
//! for GFX10.3, AMD's "RDNA 2 Instruction Set Architecture": wave32 lane
//! masks (EXEC_LO, VCC_LO, one SGPR per mask operand), `v_cmpx` writing
//! EXEC only, SGPR_NULL, DPP8 and row_share/row_xmask, `s_denorm_mode`.
//! Memory operations complete within their instruction, so `s_waitcnt` has
//! nothing to wait for. An opcode the interpreter does not implement is an
//! [`ExecError::UnsupportedOpcode`], never a silent no-op.

use super::decode::{self, src, DecodeError, Encoding, Generation, Instruction, ValuForm, VOP3_FROM_VOP1, VOP3_FROM_VOP2};
use super::opcodes10;

/// v_readfirstlane_b32 has only the VOP1 form.
const READFIRSTLANE_B32: u16 = VOP3_FROM_VOP1 + vop1::V_READFIRSTLANE_B32;
use super::memory::{Apertures, Environment, MemoryFault, BUFFER_ADD_TID_ENABLE};
use super::opcodes::{ds, smem, sop1, sop2, sopc, sopk, sopp, vop1, vop2, vop3};
use super::softfloat::{self as sf, Denormals};
use super::softfloat64 as sf64;
use super::{half, transcendental};
use super::wave::{Wave, WAVE_SIZE};
use core::fmt;

/// What the wave does after a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepOutcome {
    Continue,
    /// `s_barrier`: the wave waits until every wave of its workgroup has
    /// arrived (the pc is already past the barrier).
    Barrier,
    /// `s_endpgm`.
    Ended,
}

/// Why a wave cannot go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecError {
    Decode { pc: u64, error: DecodeError },
    UnsupportedOpcode { pc: u64, encoding: Encoding, opcode: u16 },
    /// A decodable instruction used in a way the interpreter does not
    /// implement (e.g. an SDWA or DPP form of an opcode, clamp on an integer op).
    UnsupportedForm { pc: u64, encoding: Encoding, opcode: u16, what: &'static str },
    Memory { pc: u64, fault: MemoryFault },
    /// An LDS or scratch access outside the allocation.
    OutOfBounds { pc: u64, space: &'static str, offset: u64 },
    Trap { pc: u64, code: u16 },
}

impl fmt::Display for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ExecError::Decode { pc, error } => write!(f, "undecodable instruction at pc {:#x}: {:?}", pc, error),
            ExecError::UnsupportedOpcode { pc, encoding, opcode } => write!(
                f,
                "unsupported opcode {} ({} {:#x}) at pc {:#x}",
                decode::mnemonic(encoding, opcode).unwrap_or("?"),
                encoding.name(),
                opcode,
                pc
            ),
            ExecError::UnsupportedForm { pc, encoding, opcode, what } => write!(
                f,
                "unsupported {} of {} ({} {:#x}) at pc {:#x}",
                what,
                decode::mnemonic(encoding, opcode).unwrap_or("?"),
                encoding.name(),
                opcode,
                pc
            ),
            ExecError::Memory { pc, fault } => write!(f, "memory fault at {:#x} (write: {}) at pc {:#x}", fault.address, fault.write, pc),
            ExecError::OutOfBounds { pc, space, offset } => write!(f, "{} access at offset {:#x} out of bounds at pc {:#x}", space, offset, pc),
            ExecError::Trap { pc, code } => write!(f, "s_trap {} at pc {:#x}", code, pc),
        }
    }
}

/// Fetches and decodes the instruction at the wave's pc.
pub fn fetch(wave: &Wave, env: &mut Environment<'_>) -> Result<Instruction, ExecError> {
    let pc = wave.pc;
    let mut words = [0u32; 3];
    // One word, then as many more as the decoder asks for (GFX10 VOP3
    // with a literal takes three): no read beyond the instruction.
    for n in 1..=words.len() {
        let mut b = [0u8; 4];
        env.global.read(pc + 4 * (n as u64 - 1), &mut b).map_err(|fault| ExecError::Memory { pc, fault })?;
        words[n - 1] = u32::from_le_bytes(b);
        match decode::decode_for(wave.gen, &words[..n]) {
            Err(DecodeError::Truncated) if n < words.len() => continue,
            other => return other.map_err(|error| ExecError::Decode { pc, error }),
        }
    }
    Err(ExecError::Decode { pc, error: DecodeError::Truncated })
}

/// Executes one instruction of `wave`.
pub fn step(wave: &mut Wave, env: &mut Environment<'_>) -> Result<StepOutcome, ExecError> {
    let inst = fetch(wave, env)?;
    execute(wave, env, &inst)
}

/// Executes a decoded instruction located at `wave.pc`.
pub fn execute(wave: &mut Wave, env: &mut Environment<'_>, inst: &Instruction) -> Result<StepOutcome, ExecError> {
    let mut cx = Context { pc: wave.pc, inst, wave, next_pc: 0, apertures: env.apertures };
    cx.next_pc = cx.pc + inst.size as u64;
    let outcome = match inst.encoding {
        Encoding::Sop2 => cx.sop2()?,
        Encoding::Sopk => cx.sopk()?,
        Encoding::Sop1 => cx.sop1()?,
        Encoding::Sopc => cx.sopc()?,
        Encoding::Sopp => cx.sopp()?,
        Encoding::Smem => cx.smem(env)?,
        Encoding::Vop3 => cx.valu()?,
        Encoding::Ds => cx.ds(env)?,
        Encoding::Flat | Encoding::Global | Encoding::Scratch => cx.flat(env)?,
        Encoding::Vop3p => cx.vop3p()?,
        Encoding::Mubuf => cx.mubuf(env)?,
    };
    cx.wave.pc = cx.next_pc;
    if outcome == StepOutcome::Ended {
        cx.wave.ended = true;
    }
    Ok(outcome)
}

struct Context<'w, 'i> {
    apertures: Apertures,
    pc: u64,
    inst: &'i Instruction,
    wave: &'w mut Wave,
    next_pc: u64,
}

/// f32 inline constants 240..248 (0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 4.0, -4.0, 1/(2*pi)).
const F32_INLINE: [u32; 9] = [0x3f00_0000, 0xbf00_0000, 0x3f80_0000, 0xbf80_0000, 0x4000_0000, 0xc000_0000, 0x4080_0000, 0xc080_0000, 0x3e22_f983];

impl Context<'_, '_> {
    fn gfx10(&self) -> bool {
        self.inst.gen == Generation::Gfx10
    }

    /// A lane-mask operand (carry in, v_cndmask's selector): one SGPR in
    /// wave32, a pair in wave64.
    fn read_mask(&self, code: u16) -> Result<u64, ExecError> {
        if self.wave.wave32 {
            Ok(self.scalar32(code)? as u64)
        } else {
            self.scalar64(code, false)
        }
    }

    /// Writes a lane mask (compare result, carry out): one SGPR in wave32
    /// (VCC_LO for VCC), a pair in wave64.
    fn write_mask(&mut self, code: u16, value: u64) -> Result<(), ExecError> {
        if self.wave.wave32 {
            self.write_scalar32(code, value as u32)
        } else {
            self.write_scalar64(code, value)
        }
    }

    fn unsupported(&self) -> ExecError {
        ExecError::UnsupportedOpcode { pc: self.pc, encoding: self.inst.encoding, opcode: self.inst.opcode }
    }

    fn unsupported_form(&self, what: &'static str) -> ExecError {
        ExecError::UnsupportedForm { pc: self.pc, encoding: self.inst.encoding, opcode: self.inst.opcode, what }
    }

    // ---- scalar operands -------------------------------------------------

    /// A 32-bit scalar operand (also the scalar value of a VALU source).
    fn scalar32(&self, code: u16) -> Result<u32, ExecError> {
        let w = &*self.wave;
        if self.gfx10() {
            // s102..s105 are SGPRs, SGPR_NULL reads 0.
            match code {
                102..=105 => return Ok(w.sgpr[code as usize]),
                src::NULL => return Ok(0),
                _ => {}
            }
        }
        Ok(match code {
            0..=101 => w.sgpr[code as usize],
            102 => w.flat_scratch as u32,
            103 => (w.flat_scratch >> 32) as u32,
            104 | 105 => 0, // XNACK_MASK: no replay
            src::VCC_LO => w.vcc as u32,
            src::VCC_HI => (w.vcc >> 32) as u32,
            108..=123 => w.ttmp[(code - 108) as usize],
            src::M0 => w.m0,
            src::EXEC_LO => w.exec as u32,
            src::EXEC_HI => (w.exec >> 32) as u32,
            128..=192 => (code - 128) as u32,
            193..=208 => (-((code - 192) as i32)) as u32,
            240..=248 => F32_INLINE[(code - 240) as usize],
            // src_shared_base/limit, src_private_base/limit as 32-bit
            // operands: the aperture's high half.
            235 | 236 => self.apertures.shared_base_hi,
            237 | 238 => self.apertures.private_base_hi,
            src::VCCZ => (w.vcc & w.lane_mask() == 0) as u32,
            src::EXECZ => (w.exec & w.lane_mask() == 0) as u32,
            src::SCC => w.scc as u32,
            src::LITERAL => self.inst.literal,
            _ => return Err(self.unsupported_form("source operand")),
        })
    }

    /// A 64-bit scalar operand; `float` selects the f64 meaning of the
    /// float inline constants. 32-bit literals are zero-extended for
    /// integers and are the high half of an f64.
    fn scalar64(&self, code: u16, float: bool) -> Result<u64, ExecError> {
        let w = &*self.wave;
        if self.gfx10() {
            match code {
                101..=104 => return Ok(w.sgpr[code as usize] as u64 | (w.sgpr[code as usize + 1] as u64) << 32),
                src::NULL => return Ok(0),
                _ => {}
            }
        }
        Ok(match code {
            0..=100 => w.sgpr[code as usize] as u64 | (w.sgpr[code as usize + 1] as u64) << 32,
            102 => w.flat_scratch,
            src::VCC_LO => w.vcc,
            108..=122 => w.ttmp[(code - 108) as usize] as u64 | (w.ttmp[(code - 107) as usize] as u64) << 32,
            src::EXEC_LO => w.exec,
            128..=192 => (code - 128) as u64,
            193..=208 => (-((code - 192) as i64)) as u64,
            240..=248 if float => {
                const F64: [u64; 9] = [
                    0x3fe0_0000_0000_0000,
                    0xbfe0_0000_0000_0000,
                    0x3ff0_0000_0000_0000,
                    0xbff0_0000_0000_0000,
                    0x4000_0000_0000_0000,
                    0xc000_0000_0000_0000,
                    0x4010_0000_0000_0000,
                    0xc010_0000_0000_0000,
                    0x3fc4_5f30_6dc9_c882,
                ];
                F64[(code - 240) as usize]
            }
            240..=248 => F32_INLINE[(code - 240) as usize] as u64,
            src::VCCZ | src::EXECZ | src::SCC => self.scalar32(code)? as u64,
            235 => (self.apertures.shared_base_hi as u64) << 32,
            236 => (self.apertures.shared_base_hi as u64) << 32 | 0xffff_ffff,
            237 => (self.apertures.private_base_hi as u64) << 32,
            238 => (self.apertures.private_base_hi as u64) << 32 | 0xffff_ffff,
            src::LITERAL if float => (self.inst.literal as u64) << 32,
            src::LITERAL => self.inst.literal as u64,
            _ => return Err(self.unsupported_form("64-bit source operand")),
        })
    }

    fn write_scalar32(&mut self, code: u16, value: u32) -> Result<(), ExecError> {
        let gfx10 = self.gfx10();
        let w = &mut *self.wave;
        match code {
            102..=105 if gfx10 => w.sgpr[code as usize] = value,
            src::NULL if gfx10 => {}
            0..=101 => w.sgpr[code as usize] = value,
            102 => w.flat_scratch = (w.flat_scratch & !0xffff_ffff) | value as u64,
            103 => w.flat_scratch = (w.flat_scratch & 0xffff_ffff) | (value as u64) << 32,
            104 | 105 => {}
            src::VCC_LO => w.vcc = (w.vcc & !0xffff_ffff) | value as u64,
            src::VCC_HI => w.vcc = (w.vcc & 0xffff_ffff) | (value as u64) << 32,
            108..=123 => w.ttmp[(code - 108) as usize] = value,
            src::M0 => w.m0 = value,
            src::EXEC_LO => w.exec = (w.exec & !0xffff_ffff) | value as u64,
            src::EXEC_HI => w.exec = (w.exec & 0xffff_ffff) | (value as u64) << 32,
            _ => return Err(self.unsupported_form("destination operand")),
        }
        Ok(())
    }

    fn write_scalar64(&mut self, code: u16, value: u64) -> Result<(), ExecError> {
        let gfx10 = self.gfx10();
        match code {
            src::VCC_LO => self.wave.vcc = value,
            src::EXEC_LO => self.wave.exec = value,
            src::NULL if gfx10 => {}
            101..=104 if gfx10 => {
                self.write_scalar32(code, value as u32)?;
                self.write_scalar32(code + 1, (value >> 32) as u32)?;
            }
            102 => self.wave.flat_scratch = value,
            0..=100 | 108..=122 => {
                self.write_scalar32(code, value as u32)?;
                self.write_scalar32(code + 1, (value >> 32) as u32)?;
            }
            _ => return Err(self.unsupported_form("64-bit destination operand")),
        }
        Ok(())
    }

    // ---- SOP2 --------------------------------------------------------------

    fn sop2(&mut self) -> Result<StepOutcome, ExecError> {
        let i = self.inst;
        let op = i.opcode;
        let wide = matches!(
            op,
            sop2::S_CSELECT_B64
                | sop2::S_AND_B64
                | sop2::S_OR_B64
                | sop2::S_XOR_B64
                | sop2::S_ANDN2_B64
                | sop2::S_ORN2_B64
                | sop2::S_NAND_B64
                | sop2::S_NOR_B64
                | sop2::S_XNOR_B64
        );
        if wide {
            let a = self.scalar64(i.src[0], false)?;
            let b = self.scalar64(i.src[1], false)?;
            let d = match op {
                sop2::S_CSELECT_B64 => {
                    let d = if self.wave.scc { a } else { b };
                    return self.write_scalar64(i.dst, d).map(|_| StepOutcome::Continue);
                }
                sop2::S_AND_B64 => a & b,
                sop2::S_OR_B64 => a | b,
                sop2::S_XOR_B64 => a ^ b,
                sop2::S_ANDN2_B64 => a & !b,
                sop2::S_ORN2_B64 => a | !b,
                sop2::S_NAND_B64 => !(a & b),
                sop2::S_NOR_B64 => !(a | b),
                _ => !(a ^ b),
            };
            self.wave.scc = d != 0;
            self.write_scalar64(i.dst, d)?;
            return Ok(StepOutcome::Continue);
        }
        if matches!(op, sop2::S_LSHL_B64 | sop2::S_LSHR_B64 | sop2::S_ASHR_I64 | sop2::S_BFE_U64 | sop2::S_BFE_I64 | sop2::S_BFM_B64) {
            let a = self.scalar64(i.src[0], false)?;
            let b = self.scalar32(i.src[1])?;
            let d = match op {
                sop2::S_LSHL_B64 => a << (b & 63),
                sop2::S_LSHR_B64 => a >> (b & 63),
                sop2::S_ASHR_I64 => ((a as i64) >> (b & 63)) as u64,
                sop2::S_BFM_B64 => {
                    let a = self.scalar32(i.src[0])?;
                    let d = (((1u128 << (a & 63)) - 1) as u64) << (b & 63);
                    return self.write_scalar64(i.dst, d).map(|_| StepOutcome::Continue);
                }
                _ => {
                    let offset = b & 63;
                    let width = (b >> 16) & 127;
                    let field = if width == 0 { 0 } else { (a >> offset) & (((1u128 << width.min(64)) - 1) as u64) };
                    if op == sop2::S_BFE_I64 && width > 0 && width < 64 {
                        (((field << (64 - width)) as i64) >> (64 - width)) as u64
                    } else {
                        field
                    }
                }
            };
            self.wave.scc = d != 0;
            self.write_scalar64(i.dst, d)?;
            return Ok(StepOutcome::Continue);
        }
        let a = self.scalar32(i.src[0])?;
        let b = self.scalar32(i.src[1])?;
        let scc = self.wave.scc;
        let (d, new_scc) = match op {
            sop2::S_ADD_U32 => {
                let (d, c) = a.overflowing_add(b);
                (d, Some(c))
            }
            sop2::S_SUB_U32 => (a.wrapping_sub(b), Some(b > a)),
            sop2::S_ADD_I32 => {
                let (d, o) = (a as i32).overflowing_add(b as i32);
                (d as u32, Some(o))
            }
            sop2::S_SUB_I32 => {
                let (d, o) = (a as i32).overflowing_sub(b as i32);
                (d as u32, Some(o))
            }
            sop2::S_ADDC_U32 => {
                let sum = a as u64 + b as u64 + scc as u64;
                (sum as u32, Some(sum >> 32 != 0))
            }
            sop2::S_SUBB_U32 => {
                let borrow = (b as u64 + scc as u64) > a as u64;
                (a.wrapping_sub(b).wrapping_sub(scc as u32), Some(borrow))
            }
            sop2::S_MIN_I32 => ((a as i32).min(b as i32) as u32, Some((a as i32) < (b as i32))),
            sop2::S_MIN_U32 => (a.min(b), Some(a < b)),
            sop2::S_MAX_I32 => ((a as i32).max(b as i32) as u32, Some((a as i32) > (b as i32))),
            sop2::S_MAX_U32 => (a.max(b), Some(a > b)),
            sop2::S_CSELECT_B32 => (if scc { a } else { b }, None),
            sop2::S_AND_B32 => nz(a & b),
            sop2::S_OR_B32 => nz(a | b),
            sop2::S_XOR_B32 => nz(a ^ b),
            sop2::S_ANDN2_B32 => nz(a & !b),
            sop2::S_ORN2_B32 => nz(a | !b),
            sop2::S_NAND_B32 => nz(!(a & b)),
            sop2::S_NOR_B32 => nz(!(a | b)),
            sop2::S_XNOR_B32 => nz(!(a ^ b)),
            sop2::S_LSHL_B32 => nz(a << (b & 31)),
            sop2::S_LSHR_B32 => nz(a >> (b & 31)),
            sop2::S_ASHR_I32 => nz(((a as i32) >> (b & 31)) as u32),
            sop2::S_BFM_B32 => ((((1u64 << (a & 31)) - 1) as u32) << (b & 31), None),
            sop2::S_MUL_I32 => ((a as i32).wrapping_mul(b as i32) as u32, None),
            sop2::S_MUL_HI_U32 => (((a as u64 * b as u64) >> 32) as u32, None),
            sop2::S_MUL_HI_I32 => (((a as i32 as i64 * b as i32 as i64) >> 32) as u32, None),
            sop2::S_BFE_U32 | sop2::S_BFE_I32 => {
                let offset = b & 31;
                let width = (b >> 16) & 127;
                let field = if width == 0 { 0 } else { ((a as u64 >> offset) & ((1u64 << width.min(32)) - 1)) as u32 };
                let d = if op == sop2::S_BFE_I32 && width > 0 && width < 32 { ((field << (32 - width)) as i32 >> (32 - width)) as u32 } else { field };
                nz(d)
            }
            sop2::S_ABSDIFF_I32 => nz((a as i32).wrapping_sub(b as i32).unsigned_abs()),
            sop2::S_LSHL1_ADD_U32 | sop2::S_LSHL2_ADD_U32 | sop2::S_LSHL3_ADD_U32 | sop2::S_LSHL4_ADD_U32 => {
                let shift = (op - sop2::S_LSHL1_ADD_U32 + 1) as u32;
                let d = ((a as u64) << shift) + b as u64;
                (d as u32, Some(d >> 32 != 0))
            }
            sop2::S_PACK_LL_B32_B16 => (a & 0xffff | b << 16, None),
            sop2::S_PACK_LH_B32_B16 => (a & 0xffff | b & 0xffff_0000, None),
            sop2::S_PACK_HH_B32_B16 => (a >> 16 | b & 0xffff_0000, None),
            _ => return Err(self.unsupported()),
        };
        if let Some(s) = new_scc {
            self.wave.scc = s;
        }
        self.write_scalar32(i.dst, d)?;
        Ok(StepOutcome::Continue)
    }

    // ---- SOPK --------------------------------------------------------------

    fn sopk(&mut self) -> Result<StepOutcome, ExecError> {
        let i = self.inst;
        let simm = i.imm;
        let uimm = (simm as u32) & 0xffff;
        match i.opcode {
            sopk::S_MOVK_I32 => self.write_scalar32(i.dst, simm as u32)?,
            sopk::S_CMOVK_I32 => {
                if self.wave.scc {
                    self.write_scalar32(i.dst, simm as u32)?
                }
            }
            sopk::S_ADDK_I32 => {
                let a = self.scalar32(i.dst)? as i32;
                let (d, o) = a.overflowing_add(simm);
                self.wave.scc = o;
                self.write_scalar32(i.dst, d as u32)?;
            }
            sopk::S_MULK_I32 => {
                let a = self.scalar32(i.dst)? as i32;
                self.write_scalar32(i.dst, a.wrapping_mul(simm) as u32)?;
            }
            op @ sopk::S_CMPK_EQ_I32..=sopk::S_CMPK_LE_U32 => {
                let a = self.scalar32(i.dst)?;
                let signed = op <= sopk::S_CMPK_LE_I32;
                let (x, y) = if signed { (a as i32 as i64, simm as i64) } else { (a as i64, uimm as i64) };
                let k = if signed { op - sopk::S_CMPK_EQ_I32 } else { op - sopk::S_CMPK_EQ_U32 };
                self.wave.scc = match k {
                    0 => x == y,
                    1 => x != y,
                    2 => x > y,
                    3 => x >= y,
                    4 => x < y,
                    _ => x <= y,
                };
            }
            opcodes10::sopk::S_WAITCNT_VSCNT | opcodes10::sopk::S_WAITCNT_VMCNT | opcodes10::sopk::S_WAITCNT_EXPCNT | opcodes10::sopk::S_WAITCNT_LGKMCNT => {}
            sopk::S_GETREG_B32 => {
                let (id, offset, size) = hwreg(uimm);
                let value = self.read_hwreg(id)?;
                let mask = if size == 32 { u32::MAX } else { (1u32 << size) - 1 };
                self.write_scalar32(i.dst, (value >> offset) & mask)?;
            }
            sopk::S_SETREG_B32 | sopk::S_SETREG_IMM32_B32 => {
                let (id, offset, size) = hwreg(uimm);
                let value = if i.opcode == sopk::S_SETREG_B32 { self.scalar32(i.dst)? } else { i.literal };
                let mask = (if size == 32 { u32::MAX } else { (1u32 << size) - 1 }) << offset;
                match id {
                    HWREG_MODE => self.wave.mode.0 = (self.wave.mode.0 & !mask) | ((value << offset) & mask),
                    // GFX10 sets FLAT_SCRATCH through hardware registers.
                    HWREG_FLAT_SCR_LO | HWREG_FLAT_SCR_HI if self.gfx10() => {
                        let shift = if id == HWREG_FLAT_SCR_LO { 0 } else { 32 };
                        let old = (self.wave.flat_scratch >> shift) as u32;
                        let new = (old & !mask) | ((value << offset) & mask);
                        self.wave.flat_scratch = (self.wave.flat_scratch & !(0xffff_ffffu64 << shift)) | (new as u64) << shift;
                    }
                    _ => return Err(self.unsupported_form("s_setreg of a hardware register other than MODE")),
                }
            }
            _ => return Err(self.unsupported()),
        }
        Ok(StepOutcome::Continue)
    }

    fn read_hwreg(&self, id: u32) -> Result<u32, ExecError> {
        match id {
            HWREG_MODE => Ok(self.wave.mode.0),
            // SH_MEM_BASES: PRIVATE_BASE [15:0], SHARED_BASE [31:16], each
            // bits 63:48 of its aperture.
            HWREG_SH_MEM_BASES => Ok(self.apertures.private_base_hi >> 16 | self.apertures.shared_base_hi & 0xffff_0000),
            HWREG_FLAT_SCR_LO if self.gfx10() => Ok(self.wave.flat_scratch as u32),
            HWREG_FLAT_SCR_HI if self.gfx10() => Ok((self.wave.flat_scratch >> 32) as u32),
            // STATUS, TRAPSTS, HW_ID, GPR_ALLOC, LDS_ALLOC, IB_STS: nothing a
            // compute kernel depends on is modelled yet.
            _ => Err(self.unsupported_form("s_getreg of a hardware register other than MODE")),
        }
    }

    // ---- SOP1 --------------------------------------------------------------

    fn sop1(&mut self) -> Result<StepOutcome, ExecError> {
        let i = self.inst;
        match i.opcode {
            sop1::S_MOV_B32 => {
                let v = self.scalar32(i.src[0])?;
                self.write_scalar32(i.dst, v)?;
            }
            sop1::S_MOV_B64 => {
                let v = self.scalar64(i.src[0], false)?;
                self.write_scalar64(i.dst, v)?;
            }
            sop1::S_CMOV_B32 => {
                let v = self.scalar32(i.src[0])?;
                if self.wave.scc {
                    self.write_scalar32(i.dst, v)?;
                }
            }
            sop1::S_CMOV_B64 => {
                let v = self.scalar64(i.src[0], false)?;
                if self.wave.scc {
                    self.write_scalar64(i.dst, v)?;
                }
            }
            sop1::S_NOT_B32 => {
                let v = !self.scalar32(i.src[0])?;
                self.wave.scc = v != 0;
                self.write_scalar32(i.dst, v)?;
            }
            sop1::S_NOT_B64 => {
                let v = !self.scalar64(i.src[0], false)?;
                self.wave.scc = v != 0;
                self.write_scalar64(i.dst, v)?;
            }
            sop1::S_BREV_B64 => {
                let v = self.scalar64(i.src[0], false)?.reverse_bits();
                self.write_scalar64(i.dst, v)?;
            }
            sop1::S_BCNT0_I32_B32 | sop1::S_BCNT0_I32_B64 => {
                let v = if i.opcode == sop1::S_BCNT0_I32_B32 { self.scalar32(i.src[0])?.count_zeros() } else { self.scalar64(i.src[0], false)?.count_zeros() };
                self.wave.scc = v != 0;
                self.write_scalar32(i.dst, v)?;
            }
            sop1::S_FF0_I32_B32 | sop1::S_FF0_I32_B64 => {
                let v = if i.opcode == sop1::S_FF0_I32_B32 { self.scalar32(i.src[0])? as u64 | !0xffff_ffffu64 } else { self.scalar64(i.src[0], false)? };
                self.write_scalar32(i.dst, if v == u64::MAX { u32::MAX } else { v.trailing_ones() })?;
            }
            sop1::S_BITSET0_B64 | sop1::S_BITSET1_B64 => {
                let bit = self.scalar32(i.src[0])? & 63;
                let d = self.scalar64(i.dst, false)?;
                let d = if i.opcode == sop1::S_BITSET1_B64 { d | 1 << bit } else { d & !(1 << bit) };
                self.write_scalar64(i.dst, d)?;
            }
            sop1::S_BREV_B32 => {
                let v = self.scalar32(i.src[0])?.reverse_bits();
                self.write_scalar32(i.dst, v)?;
            }
            sop1::S_BCNT1_I32_B32 => {
                let v = self.scalar32(i.src[0])?.count_ones();
                self.wave.scc = v != 0;
                self.write_scalar32(i.dst, v)?;
            }
            sop1::S_BCNT1_I32_B64 => {
                let v = self.scalar64(i.src[0], false)?.count_ones();
                self.wave.scc = v != 0;
                self.write_scalar32(i.dst, v)?;
            }
            sop1::S_FF1_I32_B32 => {
                let v = self.scalar32(i.src[0])?;
                self.write_scalar32(i.dst, if v == 0 { u32::MAX } else { v.trailing_zeros() })?;
            }
            sop1::S_FF1_I32_B64 => {
                let v = self.scalar64(i.src[0], false)?;
                self.write_scalar32(i.dst, if v == 0 { u32::MAX } else { v.trailing_zeros() })?;
            }
            sop1::S_FLBIT_I32_B32 => {
                let v = self.scalar32(i.src[0])?;
                self.write_scalar32(i.dst, if v == 0 { u32::MAX } else { v.leading_zeros() })?;
            }
            sop1::S_FLBIT_I32_B64 => {
                let v = self.scalar64(i.src[0], false)?;
                self.write_scalar32(i.dst, if v == 0 { u32::MAX } else { v.leading_zeros() })?;
            }
            sop1::S_SEXT_I32_I8 => {
                let v = self.scalar32(i.src[0])? as i8 as i32 as u32;
                self.write_scalar32(i.dst, v)?;
            }
            sop1::S_SEXT_I32_I16 => {
                let v = self.scalar32(i.src[0])? as i16 as i32 as u32;
                self.write_scalar32(i.dst, v)?;
            }
            sop1::S_BITSET0_B32 | sop1::S_BITSET1_B32 => {
                let bit = self.scalar32(i.src[0])? & 31;
                let d = self.scalar32(i.dst)?;
                let d = if i.opcode == sop1::S_BITSET1_B32 { d | 1 << bit } else { d & !(1 << bit) };
                self.write_scalar32(i.dst, d)?;
            }
            sop1::S_ABS_I32 => {
                let v = (self.scalar32(i.src[0])? as i32).unsigned_abs();
                self.wave.scc = v != 0;
                self.write_scalar32(i.dst, v)?;
            }
            sop1::S_GETPC_B64 => self.write_scalar64(i.dst, self.next_pc)?,
            sop1::S_SETPC_B64 => self.next_pc = self.scalar64(i.src[0], false)?,
            sop1::S_SWAPPC_B64 => {
                let target = self.scalar64(i.src[0], false)?;
                self.write_scalar64(i.dst, self.next_pc)?;
                self.next_pc = target;
            }
            op @ (sop1::S_AND_SAVEEXEC_B64
            | sop1::S_OR_SAVEEXEC_B64
            | sop1::S_XOR_SAVEEXEC_B64
            | sop1::S_ANDN2_SAVEEXEC_B64
            | sop1::S_ORN2_SAVEEXEC_B64
            | sop1::S_NAND_SAVEEXEC_B64
            | sop1::S_NOR_SAVEEXEC_B64
            | sop1::S_XNOR_SAVEEXEC_B64
            | sop1::S_ANDN1_SAVEEXEC_B64
            | sop1::S_ORN1_SAVEEXEC_B64) => {
                let s = self.scalar64(i.src[0], false)?;
                let exec = self.wave.exec;
                let new_exec = match op {
                    sop1::S_AND_SAVEEXEC_B64 => s & exec,
                    sop1::S_OR_SAVEEXEC_B64 => s | exec,
                    sop1::S_XOR_SAVEEXEC_B64 => s ^ exec,
                    sop1::S_ANDN2_SAVEEXEC_B64 => s & !exec,
                    sop1::S_ORN2_SAVEEXEC_B64 => s | !exec,
                    sop1::S_NAND_SAVEEXEC_B64 => !(s & exec),
                    sop1::S_NOR_SAVEEXEC_B64 => !(s | exec),
                    sop1::S_XNOR_SAVEEXEC_B64 => !(s ^ exec),
                    sop1::S_ANDN1_SAVEEXEC_B64 => !s & exec,
                    _ => !s | exec,
                };
                self.write_scalar64(i.dst, exec)?;
                self.wave.exec = new_exec;
                self.wave.scc = new_exec != 0;
            }
            op @ (opcodes10::sop1::S_AND_SAVEEXEC_B32
            | opcodes10::sop1::S_OR_SAVEEXEC_B32
            | opcodes10::sop1::S_XOR_SAVEEXEC_B32
            | opcodes10::sop1::S_ANDN2_SAVEEXEC_B32
            | opcodes10::sop1::S_ORN2_SAVEEXEC_B32
            | opcodes10::sop1::S_NAND_SAVEEXEC_B32
            | opcodes10::sop1::S_NOR_SAVEEXEC_B32
            | opcodes10::sop1::S_XNOR_SAVEEXEC_B32
            | opcodes10::sop1::S_ANDN1_SAVEEXEC_B32
            | opcodes10::sop1::S_ORN1_SAVEEXEC_B32
            | opcodes10::sop1::S_ANDN1_WREXEC_B32
            | opcodes10::sop1::S_ANDN2_WREXEC_B32) => {
                // The wave32 forms: EXEC_LO only.
                let s = self.scalar32(i.src[0])?;
                let exec = self.wave.exec as u32;
                let new_exec = match op {
                    opcodes10::sop1::S_AND_SAVEEXEC_B32 => s & exec,
                    opcodes10::sop1::S_OR_SAVEEXEC_B32 => s | exec,
                    opcodes10::sop1::S_XOR_SAVEEXEC_B32 => s ^ exec,
                    opcodes10::sop1::S_ANDN2_SAVEEXEC_B32 | opcodes10::sop1::S_ANDN2_WREXEC_B32 => s & !exec,
                    opcodes10::sop1::S_ORN2_SAVEEXEC_B32 => s | !exec,
                    opcodes10::sop1::S_NAND_SAVEEXEC_B32 => !(s & exec),
                    opcodes10::sop1::S_NOR_SAVEEXEC_B32 => !(s | exec),
                    opcodes10::sop1::S_XNOR_SAVEEXEC_B32 => !(s ^ exec),
                    opcodes10::sop1::S_ANDN1_SAVEEXEC_B32 | opcodes10::sop1::S_ANDN1_WREXEC_B32 => !s & exec,
                    _ => !s | exec,
                };
                if matches!(op, opcodes10::sop1::S_ANDN1_WREXEC_B32 | opcodes10::sop1::S_ANDN2_WREXEC_B32) {
                    // s_*_wrexec: the new EXEC goes to the destination too.
                    self.write_scalar32(i.dst, new_exec)?;
                } else {
                    self.write_scalar32(i.dst, exec)?;
                }
                self.wave.exec = (self.wave.exec & !0xffff_ffff) | new_exec as u64;
                self.wave.scc = new_exec != 0;
            }
            _ => return Err(self.unsupported()),
        }
        Ok(StepOutcome::Continue)
    }

    // ---- SOPC --------------------------------------------------------------

    fn sopc(&mut self) -> Result<StepOutcome, ExecError> {
        let i = self.inst;
        let op = i.opcode;
        if op == sopc::S_CMP_EQ_U64 || op == sopc::S_CMP_LG_U64 {
            let a = self.scalar64(i.src[0], false)?;
            let b = self.scalar64(i.src[1], false)?;
            self.wave.scc = (a == b) == (op == sopc::S_CMP_EQ_U64);
            return Ok(StepOutcome::Continue);
        }
        let a = self.scalar32(i.src[0])?;
        let b = self.scalar32(i.src[1])?;
        self.wave.scc = match op {
            sopc::S_CMP_EQ_I32 | sopc::S_CMP_EQ_U32 => a == b,
            sopc::S_CMP_LG_I32 | sopc::S_CMP_LG_U32 => a != b,
            sopc::S_CMP_GT_I32 => (a as i32) > (b as i32),
            sopc::S_CMP_GE_I32 => (a as i32) >= (b as i32),
            sopc::S_CMP_LT_I32 => (a as i32) < (b as i32),
            sopc::S_CMP_LE_I32 => (a as i32) <= (b as i32),
            sopc::S_CMP_GT_U32 => a > b,
            sopc::S_CMP_GE_U32 => a >= b,
            sopc::S_CMP_LT_U32 => a < b,
            sopc::S_CMP_LE_U32 => a <= b,
            sopc::S_BITCMP0_B32 => a >> (b & 31) & 1 == 0,
            sopc::S_BITCMP1_B32 => a >> (b & 31) & 1 == 1,
            sopc::S_BITCMP0_B64 | sopc::S_BITCMP1_B64 => {
                let a = self.scalar64(i.src[0], false)?;
                (a >> (b & 63) & 1 == 1) == (op == sopc::S_BITCMP1_B64)
            }
            _ => return Err(self.unsupported()),
        };
        Ok(StepOutcome::Continue)
    }

    // ---- SOPP --------------------------------------------------------------

    fn sopp(&mut self) -> Result<StepOutcome, ExecError> {
        let i = self.inst;
        let target = (self.pc as i64 + 4 + 4 * i.imm as i64) as u64;
        let w = &*self.wave;
        let taken = match i.opcode {
            sopp::S_NOP | sopp::S_WAITCNT | sopp::S_SLEEP | sopp::S_SETPRIO | sopp::S_ICACHE_INV => return Ok(StepOutcome::Continue),
            sopp::S_ENDPGM => return Ok(StepOutcome::Ended),
            sopp::S_BARRIER => return Ok(StepOutcome::Barrier),
            sopp::S_TRAP => return Err(ExecError::Trap { pc: self.pc, code: (i.imm & 0xff) as u16 }),
            sopp::S_BRANCH => true,
            sopp::S_CBRANCH_SCC0 => !w.scc,
            sopp::S_CBRANCH_SCC1 => w.scc,
            sopp::S_CBRANCH_VCCZ => w.vcc & w.lane_mask() == 0,
            sopp::S_CBRANCH_VCCNZ => w.vcc & w.lane_mask() != 0,
            sopp::S_CBRANCH_EXECZ => w.exec & w.lane_mask() == 0,
            sopp::S_CBRANCH_EXECNZ => w.exec & w.lane_mask() != 0,
            // GFX10: instruction-clause and prefetch hints, dependency waits.
            opcodes10::sopp::S_CLAUSE | opcodes10::sopp::S_INST_PREFETCH | opcodes10::sopp::S_WAITCNT_DEPCTR => return Ok(StepOutcome::Continue),
            // MODE.FP_ROUND [3:0] and MODE.FP_DENORM [7:4] from the immediate.
            opcodes10::sopp::S_ROUND_MODE => {
                self.wave.mode.0 = (self.wave.mode.0 & !0xf) | (i.imm as u32 & 0xf);
                return Ok(StepOutcome::Continue);
            }
            opcodes10::sopp::S_DENORM_MODE => {
                self.wave.mode.0 = (self.wave.mode.0 & !0xf0) | (i.imm as u32 & 0xf) << 4;
                return Ok(StepOutcome::Continue);
            }
            _ => return Err(self.unsupported()),
        };
        if taken {
            self.next_pc = target;
        }
        Ok(StepOutcome::Continue)
    }

    // ---- SMEM --------------------------------------------------------------

    fn smem(&mut self, env: &mut Environment<'_>) -> Result<StepOutcome, ExecError> {
        let i = self.inst;
        let dwords = match i.opcode {
            smem::S_LOAD_DWORD => 1,
            smem::S_LOAD_DWORDX2 => 2,
            smem::S_LOAD_DWORDX4 => 4,
            smem::S_LOAD_DWORDX8 => 8,
            smem::S_LOAD_DWORDX16 => 16,
            smem::S_DCACHE_INV | smem::S_DCACHE_WB | smem::S_DCACHE_INV_VOL | smem::S_DCACHE_WB_VOL | opcodes10::smem::S_GL1_INV => return Ok(StepOutcome::Continue),
            smem::S_MEMTIME | smem::S_MEMREALTIME => {
                let t = if i.opcode == smem::S_MEMTIME { env.global.shader_clock() } else { env.global.real_time() };
                self.write_scalar64(i.dst, t)?;
                return Ok(StepOutcome::Continue);
            }
            _ => return Err(self.unsupported()),
        };
        let base = self.scalar64(i.src[0], false)?;
        let mut offset = if i.imm_offset { i.imm as i64 } else { self.scalar32(i.src[1])? as i64 };
        if i.imm_offset && i.src[1] != src::OFF_7BIT {
            offset += self.scalar32(i.src[1])? as i64;
        }
        // The scalar unit ignores the low two address bits.
        let address = (base as i64).wrapping_add(offset) as u64 & !3;
        // Checked whole first: a fault leaves the SGPRs as they were (see `flat`).
        env.global.probe(address, 4 * dwords as usize, false).map_err(|fault| ExecError::Memory { pc: self.pc, fault })?;
        for k in 0..dwords {
            let mut b = [0u8; 4];
            env.global.read(address + 4 * k as u64, &mut b).map_err(|fault| ExecError::Memory { pc: self.pc, fault })?;
            self.write_scalar32(i.dst + k, u32::from_le_bytes(b))?;
        }
        Ok(StepOutcome::Continue)
    }

    // ---- VALU --------------------------------------------------------------

    fn vgpr(&self, reg: u16, lane: usize) -> u32 {
        self.wave.vgpr[reg as usize & 0xff][lane]
    }

    /// A 32-bit VALU source for one lane, before modifiers.
    fn vsrc32(&self, code: u16, lane: usize) -> Result<u32, ExecError> {
        if code >= src::VGPR0 {
            Ok(self.vgpr(code - src::VGPR0, lane))
        } else {
            self.scalar32(code)
        }
    }

    /// VALU source `n` for `lane`; a DPP form's src0 comes from the lane its
    /// control selects (0 when that lane is outside the row or inactive and
    /// bound_ctrl is set — lanes with no source are not written at all, see
    /// [`Self::dpp_write_mask`]).
    fn valu_src32(&self, n: usize, lane: usize) -> Result<u32, ExecError> {
        if n == 0 {
            if let Some((source, fetch_inactive)) = self.dpp_source(lane) {
                return Ok(match source {
                    Some(l) if fetch_inactive || self.wave.lane_active(l) => self.vgpr(self.inst.src[0] - src::VGPR0, l),
                    _ => 0,
                });
            }
        }
        self.vsrc32(self.inst.src[n], lane)
    }

    /// For a DPP16 or DPP8 form: the lane `lane` reads src0 from (None:
    /// none) and whether inactive lanes may be read (GFX10 FI).
    fn dpp_source(&self, lane: usize) -> Option<(Option<usize>, bool)> {
        match self.inst.form {
            ValuForm::Dpp(dpp) => {
                let l = dpp_source_lane(self.inst.gen, dpp.control, lane).filter(|&l| l < self.wave.lanes());
                Some((l, dpp.fetch_inactive))
            }
            ValuForm::Dpp8 { selector, fetch_inactive } => Some((Some((lane & !7) | (selector >> (3 * (lane & 7)) & 7) as usize), fetch_inactive)),
            _ => None,
        }
    }

    /// Lanes a DPP instruction writes: those in row_mask/bank_mask whose
    /// source lane exists and is active, or any lane with bound_ctrl set.
    fn dpp_write_mask(&self) -> u64 {
        let ValuForm::Dpp(dpp) = self.inst.form else { return u64::MAX };
        let mut mask = 0u64;
        for lane in 0..self.wave.lanes() {
            let row_ok = dpp.row_mask >> (lane / 16) & 1 == 1;
            let bank_ok = dpp.bank_mask >> ((lane / 4) % 4) & 1 == 1;
            let source_ok = matches!(self.dpp_source(lane), Some((Some(l), fi)) if fi || self.wave.lane_active(l));
            if row_ok && bank_ok && (source_ok || dpp.bound_ctrl) {
                mask |= 1 << lane;
            }
        }
        mask
    }

    fn vsrc64(&self, code: u16, lane: usize, float: bool) -> Result<u64, ExecError> {
        if code >= src::VGPR0 {
            let r = code - src::VGPR0;
            Ok(self.vgpr(r, lane) as u64 | (self.vgpr(r + 1, lane) as u64) << 32)
        } else {
            self.scalar64(code, float)
        }
    }

    /// An f32 source with abs/neg applied.
    fn fsrc(&self, n: usize, lane: usize) -> Result<u32, ExecError> {
        if let ValuForm::Sdwa(s) = self.inst.form {
            let sel = if n == 0 { s.src0_sel } else { s.src1_sel };
            if sel != SDWA_DWORD {
                return Err(self.unsupported_form("SDWA sub-dword select of an f32 operand"));
            }
        }
        let mut v = self.valu_src32(n, lane)?;
        let m = self.inst.modifiers[n];
        if m.abs {
            v &= 0x7fff_ffff;
        }
        if m.neg {
            v ^= 0x8000_0000;
        }
        Ok(v)
    }

    /// An integer source; SDWA forms select a byte or word of sources 0 and 1.
    fn int_src(&self, n: usize, lane: usize) -> Result<u32, ExecError> {
        let v = self.valu_src32(n, lane)?;
        Ok(match self.inst.form {
            ValuForm::Sdwa(s) if n == 0 => sdwa_select(v, s.src0_sel, s.src0_sext),
            ValuForm::Sdwa(s) if n == 1 => sdwa_select(v, s.src1_sel, s.src1_sext),
            _ => v,
        })
    }

    /// Writes a 32-bit VALU result; SDWA forms write only `dst_sel` and pad,
    /// sign-extend or keep the rest as `dst_unused` says.
    fn write_vdst(&mut self, lane: usize, d: u32) -> Result<(), ExecError> {
        let reg = self.inst.dst as usize;
        let d = match self.inst.form {
            ValuForm::Sdwa(s) if s.dst_sel != SDWA_DWORD => {
                let (shift, width) = match s.dst_sel {
                    0..=3 => (8 * s.dst_sel as u32, 8),
                    4 | 5 => (16 * (s.dst_sel as u32 - 4), 16),
                    _ => return Err(self.unsupported_form("SDWA dst_sel")),
                };
                let field_mask = ((1u32 << width) - 1) << shift;
                let field = (d << shift) & field_mask;
                match s.dst_unused {
                    0 => field,
                    1 => {
                        // sign-extend the field upward
                        let top = shift + width;
                        let v = ((field << (32 - top)) as i32 >> (32 - top)) as u32;
                        v & !((1u32 << shift) - 1)
                    }
                    2 => (self.wave.vgpr[reg][lane] & !field_mask) | field,
                    _ => return Err(self.unsupported_form("SDWA dst_unused")),
                }
            }
            _ => d,
        };
        self.wave.vgpr[reg][lane] = d;
        Ok(())
    }

    /// An f64 source with abs/neg applied (inline constants as f64).
    fn fsrc64(&self, n: usize, lane: usize) -> Result<u64, ExecError> {
        let mut v = self.vsrc64(self.inst.src[n], lane, true)?;
        let m = self.inst.modifiers[n];
        if m.abs {
            v &= !(1 << 63);
        }
        if m.neg {
            v ^= 1 << 63;
        }
        Ok(v)
    }

    /// Output modifiers and clamp of an f64 result.
    fn f64_output(&self, v: u64, denormals: Denormals) -> u64 {
        let v = match self.inst.omod {
            1 => sf64::ldexp(v, 1, denormals),
            2 => sf64::ldexp(v, 2, denormals),
            3 => sf64::ldexp(v, -1, denormals),
            _ => v,
        };
        if self.inst.clamp {
            if sf64::is_nan(v) || v >> 63 == 1 {
                0
            } else if v > 0x3ff0_0000_0000_0000 {
                0x3ff0_0000_0000_0000
            } else {
                v
            }
        } else {
            v
        }
    }

    /// Applies output modifiers and clamp to an f32 result.
    fn f32_output(&self, v: u32, denormals: Denormals) -> u32 {
        let v = match self.inst.omod {
            1 => sf::mul(v, 0x4000_0000, denormals),
            2 => sf::mul(v, 0x4080_0000, denormals),
            3 => sf::mul(v, 0x3f00_0000, denormals),
            _ => v,
        };
        if self.inst.clamp {
            // clamp to [0, 1]; NaN becomes 0 (DX10 clamp)
            if sf::is_nan(v) || v & 0x8000_0000 != 0 {
                0
            } else if v > 0x3f80_0000 {
                0x3f80_0000
            } else {
                v
            }
        } else {
            v
        }
    }

    fn valu(&mut self) -> Result<StepOutcome, ExecError> {
        let i = self.inst;
        let op = i.opcode;
        if let ValuForm::Dpp(_) | ValuForm::Dpp8 { .. } = i.form {
            if op < VOP3_FROM_VOP2 || matches!(op, vop3::V_ADDC_CO_U32 | vop3::V_SUBB_CO_U32 | vop3::V_SUBBREV_CO_U32 | vop3::V_ADD_CO_U32 | vop3::V_SUB_CO_U32 | vop3::V_SUBREV_CO_U32) {
                return Err(self.unsupported_form("DPP form of a compare or carry operation"));
            }
        }
        if op < VOP3_FROM_VOP2 {
            return self.vopc();
        }
        if matches!(op, READFIRSTLANE_B32 | vop3::V_READLANE_B32 | vop3::V_WRITELANE_B32) {
            return self.lane_access();
        }
        if is_f16_op(op) {
            return self.valu_f16();
        }
        if matches!(op, opcodes10::vop3::V_ADD_NC_U16 | opcodes10::vop3::V_SUB_NC_U16) {
            return self.valu_nc_u16();
        }
        let den = self.wave.mode.f32_denormals();
        let exec = self.wave.exec_lanes();
        // Integer ops take no float modifiers and no output modifiers.
        let float_op = is_f32_op(op);
        let f64_op = is_f64_result_op(op) || matches!(op, vop3::V_CVT_F32_F64 | vop3::V_CVT_I32_F64 | vop3::V_CVT_U32_F64 | vop3::V_FREXP_EXP_I32_F64);
        // Clamp on a 32-bit integer add or subtract saturates.
        let saturate = i.clamp && saturating_int_op(op);
        if !float_op && !f64_op && ((i.clamp && !saturate) || i.omod != 0 || i.modifiers.iter().any(|m| m.neg || m.abs)) && !integer_op_taking_source_modifiers(op) {
            return Err(self.unsupported_form("modifiers on an integer operation"));
        }
        if i.op_sel != 0 {
            return Err(self.unsupported_form("op_sel"));
        }
        let mut carry_out: u64 = 0;
        // (sdst 0 is s[0:1], a carry destination like any other.)
        let writes_carry = matches!(
            op,
            vop3::V_ADD_CO_U32 | vop3::V_SUB_CO_U32 | vop3::V_SUBREV_CO_U32 | vop3::V_ADDC_CO_U32 | vop3::V_SUBB_CO_U32 | vop3::V_SUBBREV_CO_U32 | vop3::V_MAD_U64_U32 | vop3::V_MAD_I64_I32 | vop3::V_DIV_SCALE_F32 | vop3::V_DIV_SCALE_F64
        );
        let carry_in = if matches!(op, vop3::V_ADDC_CO_U32 | vop3::V_SUBB_CO_U32 | vop3::V_SUBBREV_CO_U32 | vop3::V_CNDMASK_B32) {
            self.read_mask(i.src[2])?
        } else {
            0
        };
        let vcc_at_start = self.wave.vcc;
        // GFX10's 16-bit results keep the high half of D (GFX9 zeroes it);
        // SDWA forms write as their dst_sel says.
        let keeps_high_half = i.gen == Generation::Gfx10 && !matches!(i.form, ValuForm::Sdwa(_)) && is_16bit_result_op(op);
        let wide_result = matches!(op, vop3::V_LSHLREV_B64 | vop3::V_LSHRREV_B64 | vop3::V_ASHRREV_I64 | vop3::V_MAD_U64_U32 | vop3::V_MAD_I64_I32) || is_f64_result_op(op);
        let written = exec & self.dpp_write_mask();
        for lane in 0..WAVE_SIZE {
            if written >> lane & 1 == 0 {
                continue;
            }
            if wide_result {
                let d = self.valu_lane64(lane, &mut carry_out)?;
                self.wave.vgpr[i.dst as usize][lane] = d as u32;
                self.wave.vgpr[(i.dst as usize + 1) & 0xff][lane] = (d >> 32) as u32;
                continue;
            }
            let cin = (carry_in >> lane & 1) as u32;
            let d = match op {
                vop3::V_MOV_B32 => self.int_src(0, lane)?,
                vop3::V_NOT_B32 => !self.int_src(0, lane)?,
                vop3::V_BFREV_B32 => self.int_src(0, lane)?.reverse_bits(),
                vop3::V_FFBH_U32 => {
                    let v = self.int_src(0, lane)?;
                    if v == 0 {
                        u32::MAX
                    } else {
                        v.leading_zeros()
                    }
                }
                vop3::V_FFBL_B32 => {
                    let v = self.int_src(0, lane)?;
                    if v == 0 {
                        u32::MAX
                    } else {
                        v.trailing_zeros()
                    }
                }
                vop3::V_CVT_F32_I32 => sf::from_i32(self.int_src(0, lane)? as i32),
                vop3::V_CVT_F32_U32 => sf::from_u32(self.int_src(0, lane)?),
                vop3::V_CVT_I32_F32 => sf::to_i32(self.fsrc(0, lane)?, den) as u32,
                vop3::V_CVT_U32_F32 => sf::to_u32(self.fsrc(0, lane)?, den),
                vop3::V_CVT_F32_UBYTE0 | vop3::V_CVT_F32_UBYTE1 | vop3::V_CVT_F32_UBYTE2 | vop3::V_CVT_F32_UBYTE3 => {
                    let byte = (op - vop3::V_CVT_F32_UBYTE0) as u32;
                    sf::from_u32(self.int_src(0, lane)? >> (8 * byte) & 0xff)
                }
                vop3::V_CNDMASK_B32 => {
                    if cin == 1 {
                        self.fsrc(1, lane)?
                    } else {
                        self.fsrc(0, lane)?
                    }
                }
                vop3::V_ADD_F32 => sf::add(self.fsrc(0, lane)?, self.fsrc(1, lane)?, den),
                vop3::V_SUB_F32 => sf::sub(self.fsrc(0, lane)?, self.fsrc(1, lane)?, den),
                vop3::V_SUBREV_F32 => sf::sub(self.fsrc(1, lane)?, self.fsrc(0, lane)?, den),
                vop3::V_MUL_F32 => sf::mul(self.fsrc(0, lane)?, self.fsrc(1, lane)?, den),
                vop3::V_MIN_F32 => sf::min(self.fsrc(0, lane)?, self.fsrc(1, lane)?, den),
                vop3::V_MAX_F32 => sf::max(self.fsrc(0, lane)?, self.fsrc(1, lane)?, den),
                vop3::V_FMA_F32 => sf::fma(self.fsrc(0, lane)?, self.fsrc(1, lane)?, self.fsrc(2, lane)?, den),
                vop3::V_FMAC_F32 => sf::fma(self.fsrc(0, lane)?, self.fsrc(1, lane)?, self.vgpr(i.dst, lane), den),
                // GFX10 v_fmamk_f32 d = s0 * K + s1, v_fmaak_f32 d = s0 * s1 + K.
                opcodes10::vop3::V_FMAMK_F32 => sf::fma(self.fsrc(0, lane)?, i.literal, self.fsrc(1, lane)?, den),
                opcodes10::vop3::V_FMAAK_F32 => sf::fma(self.fsrc(0, lane)?, self.fsrc(1, lane)?, i.literal, den),
                opcodes10::vop3::V_XOR3_B32 => self.int_src(0, lane)? ^ self.int_src(1, lane)? ^ self.int_src(2, lane)?,
                op if op == VOP3_FROM_VOP2 + vop2::V_MADMK_F32 || op == VOP3_FROM_VOP2 + vop2::V_MADAK_F32 => {
                    // v_mad*: multiply and add rounded separately, f32
                    // denormals flushed (MAD does not support them).
                    let (a, b, c) = if op == VOP3_FROM_VOP2 + vop2::V_MADMK_F32 {
                        (self.fsrc(0, lane)?, i.literal, self.fsrc(1, lane)?)
                    } else {
                        (self.fsrc(0, lane)?, self.fsrc(1, lane)?, i.literal)
                    };
                    sf::add(sf::mul(a, b, Denormals::Flush), c, Denormals::Flush)
                }
                vop3::V_MAC_F32 | vop3::V_MAD_F32 => {
                    let c = if op == vop3::V_MAC_F32 { self.vgpr(i.dst, lane) } else { self.fsrc(2, lane)? };
                    sf::add(sf::mul(self.fsrc(0, lane)?, self.fsrc(1, lane)?, Denormals::Flush), c, Denormals::Flush)
                }
                vop3::V_MUL_I32_I24 => (sext24(self.int_src(0, lane)?) as i64 * sext24(self.int_src(1, lane)?) as i64) as u32,
                vop3::V_MUL_HI_I32_I24 => ((sext24(self.int_src(0, lane)?) as i64 * sext24(self.int_src(1, lane)?) as i64) >> 32) as u32,
                vop3::V_MUL_U32_U24 => (self.int_src(0, lane)? & 0xff_ffff).wrapping_mul(self.int_src(1, lane)? & 0xff_ffff),
                vop3::V_MUL_HI_U32_U24 => (((self.int_src(0, lane)? & 0xff_ffff) as u64 * (self.int_src(1, lane)? & 0xff_ffff) as u64) >> 32) as u32,
                vop3::V_MAD_U32_U24 => (self.int_src(0, lane)? & 0xff_ffff).wrapping_mul(self.int_src(1, lane)? & 0xff_ffff).wrapping_add(self.int_src(2, lane)?),
                vop3::V_MAD_I32_I24 => (sext24(self.int_src(0, lane)?).wrapping_mul(sext24(self.int_src(1, lane)?)) as u32).wrapping_add(self.int_src(2, lane)?),
                vop3::V_MUL_LO_U32 => self.int_src(0, lane)?.wrapping_mul(self.int_src(1, lane)?),
                vop3::V_MUL_HI_U32 => ((self.int_src(0, lane)? as u64 * self.int_src(1, lane)? as u64) >> 32) as u32,
                vop3::V_MUL_HI_I32 => ((self.int_src(0, lane)? as i32 as i64 * self.int_src(1, lane)? as i32 as i64) >> 32) as u32,
                vop3::V_MIN_I32 => (self.int_src(0, lane)? as i32).min(self.int_src(1, lane)? as i32) as u32,
                vop3::V_MAX_I32 => (self.int_src(0, lane)? as i32).max(self.int_src(1, lane)? as i32) as u32,
                vop3::V_MIN_U32 => self.int_src(0, lane)?.min(self.int_src(1, lane)?),
                vop3::V_MAX_U32 => self.int_src(0, lane)?.max(self.int_src(1, lane)?),
                vop3::V_LSHRREV_B32 => self.int_src(1, lane)? >> (self.int_src(0, lane)? & 31),
                vop3::V_ASHRREV_I32 => ((self.int_src(1, lane)? as i32) >> (self.int_src(0, lane)? & 31)) as u32,
                vop3::V_LSHLREV_B32 => self.int_src(1, lane)? << (self.int_src(0, lane)? & 31),
                vop3::V_AND_B32 => self.int_src(0, lane)? & self.int_src(1, lane)?,
                vop3::V_OR_B32 => self.int_src(0, lane)? | self.int_src(1, lane)?,
                vop3::V_XOR_B32 => self.int_src(0, lane)? ^ self.int_src(1, lane)?,
                vop3::V_XNOR_B32 => !(self.int_src(0, lane)? ^ self.int_src(1, lane)?),
                vop3::V_ADD_U32 | vop3::V_SUB_U32 | vop3::V_SUBREV_U32 => {
                    let (a, b) = (self.int_src(0, lane)?, self.int_src(1, lane)?);
                    let (a, b) = if op == vop3::V_SUBREV_U32 { (b, a) } else { (a, b) };
                    match (op == vop3::V_ADD_U32, saturate) {
                        (true, false) => a.wrapping_add(b),
                        (true, true) => a.saturating_add(b),
                        (false, false) => a.wrapping_sub(b),
                        (false, true) => a.saturating_sub(b),
                    }
                }
                vop3::V_ADD_CO_U32 | vop3::V_ADDC_CO_U32 => {
                    let cin = if op == vop3::V_ADDC_CO_U32 { cin } else { 0 };
                    let s = self.int_src(0, lane)? as u64 + self.int_src(1, lane)? as u64 + cin as u64;
                    carry_out |= (s >> 32 & 1) << lane;
                    s as u32
                }
                vop3::V_SUB_CO_U32 | vop3::V_SUBB_CO_U32 | vop3::V_SUBREV_CO_U32 | vop3::V_SUBBREV_CO_U32 => {
                    let cin = if matches!(op, vop3::V_SUBB_CO_U32 | vop3::V_SUBBREV_CO_U32) { cin } else { 0 };
                    let (a, b) = if matches!(op, vop3::V_SUBREV_CO_U32 | vop3::V_SUBBREV_CO_U32) {
                        (self.int_src(1, lane)?, self.int_src(0, lane)?)
                    } else {
                        (self.int_src(0, lane)?, self.int_src(1, lane)?)
                    };
                    let borrow = (b as u64 + cin as u64) > a as u64;
                    carry_out |= (borrow as u64) << lane;
                    a.wrapping_sub(b).wrapping_sub(cin)
                }
                vop3::V_BFE_U32 | vop3::V_BFE_I32 => {
                    let (v, offset, width) = (self.int_src(0, lane)?, self.int_src(1, lane)? & 31, self.int_src(2, lane)? & 31);
                    if width == 0 {
                        0
                    } else {
                        let field = (v >> offset) & ((1u64 << width) - 1) as u32;
                        if op == vop3::V_BFE_I32 {
                            ((field << (32 - width)) as i32 >> (32 - width)) as u32
                        } else {
                            field
                        }
                    }
                }
                vop3::V_BFI_B32 => {
                    let (m, a, b) = (self.int_src(0, lane)?, self.int_src(1, lane)?, self.int_src(2, lane)?);
                    (m & a) | (!m & b)
                }
                vop3::V_ALIGNBIT_B32 => ((((self.int_src(0, lane)? as u64) << 32) | self.int_src(1, lane)? as u64) >> (self.int_src(2, lane)? & 31)) as u32,
                vop3::V_ALIGNBYTE_B32 => ((((self.int_src(0, lane)? as u64) << 32) | self.int_src(1, lane)? as u64) >> (8 * (self.int_src(2, lane)? & 3))) as u32,
                vop3::V_ADD3_U32 => self.int_src(0, lane)?.wrapping_add(self.int_src(1, lane)?).wrapping_add(self.int_src(2, lane)?),
                vop3::V_LSHL_ADD_U32 => (self.int_src(0, lane)? << (self.int_src(1, lane)? & 31)).wrapping_add(self.int_src(2, lane)?),
                vop3::V_ADD_LSHL_U32 => self.int_src(0, lane)?.wrapping_add(self.int_src(1, lane)?) << (self.int_src(2, lane)? & 31),
                vop3::V_LSHL_OR_B32 => (self.int_src(0, lane)? << (self.int_src(1, lane)? & 31)) | self.int_src(2, lane)?,
                vop3::V_AND_OR_B32 => (self.int_src(0, lane)? & self.int_src(1, lane)?) | self.int_src(2, lane)?,
                vop3::V_OR3_B32 => self.int_src(0, lane)? | self.int_src(1, lane)? | self.int_src(2, lane)?,
                vop3::V_XAD_U32 => (self.int_src(0, lane)? ^ self.int_src(1, lane)?).wrapping_add(self.int_src(2, lane)?),
                vop3::V_MIN3_I32 | vop3::V_MAX3_I32 | vop3::V_MED3_I32 => {
                    let mut v = [self.int_src(0, lane)? as i32, self.int_src(1, lane)? as i32, self.int_src(2, lane)? as i32];
                    v.sort_unstable();
                    v[[vop3::V_MIN3_I32, vop3::V_MED3_I32, vop3::V_MAX3_I32].iter().position(|&o| o == op).unwrap_or(0)] as u32
                }
                vop3::V_MIN3_U32 | vop3::V_MAX3_U32 | vop3::V_MED3_U32 => {
                    let mut v = [self.int_src(0, lane)?, self.int_src(1, lane)?, self.int_src(2, lane)?];
                    v.sort_unstable();
                    v[[vop3::V_MIN3_U32, vop3::V_MED3_U32, vop3::V_MAX3_U32].iter().position(|&o| o == op).unwrap_or(0)]
                }
                vop3::V_MIN3_F32 => sf::min(sf::min(self.fsrc(0, lane)?, self.fsrc(1, lane)?, den), self.fsrc(2, lane)?, den),
                vop3::V_MAX3_F32 => sf::max(sf::max(self.fsrc(0, lane)?, self.fsrc(1, lane)?, den), self.fsrc(2, lane)?, den),
                vop3::V_MBCNT_LO_U32_B32 => (self.int_src(0, lane)? & ((1u64 << lane.min(32)) - 1) as u32).count_ones().wrapping_add(self.int_src(1, lane)?),
                vop3::V_MBCNT_HI_U32_B32 => {
                    let below = if lane > 32 { (1u64 << (lane - 32)) - 1 } else { 0 } as u32;
                    (self.int_src(0, lane)? & below).count_ones().wrapping_add(self.int_src(1, lane)?)
                }
                vop3::V_RCP_F32 | vop3::V_RCP_IFLAG_F32 => sf::div(0x3f80_0000, self.fsrc(0, lane)?, den),
                vop3::V_LOG_F32 => transcendental::log2(self.fsrc(0, lane)?),
                vop3::V_EXP_F32 => transcendental::exp2(self.fsrc(0, lane)?),
                vop3::V_SIN_F32 => transcendental::sin_revolutions(self.fsrc(0, lane)?),
                vop3::V_COS_F32 => transcendental::cos_revolutions(self.fsrc(0, lane)?),
                vop3::V_FREXP_EXP_I32_F64 => {
                    let a = self.fsrc64(0, lane)?;
                    if sf64::is_nan(a) || a & !(1 << 63) == 0x7ff0_0000_0000_0000 || a << 1 == 0 {
                        0
                    } else {
                        frexp64(a).1 as u32
                    }
                }
                vop3::V_SQRT_F32 => sf::sqrt(self.fsrc(0, lane)?, den),
                // 1/sqrt(x) with two roundings: within the 1 ULP the ISA allows.
                vop3::V_RSQ_F32 => sf::div(0x3f80_0000, sf::sqrt(self.fsrc(0, lane)?, den), den),
                vop3::V_FLOOR_F32 => sf::round_integral(self.fsrc(0, lane)?, sf::Integral::Floor, den),
                vop3::V_CEIL_F32 => sf::round_integral(self.fsrc(0, lane)?, sf::Integral::Ceil, den),
                vop3::V_TRUNC_F32 => sf::round_integral(self.fsrc(0, lane)?, sf::Integral::Trunc, den),
                vop3::V_RNDNE_F32 => sf::round_integral(self.fsrc(0, lane)?, sf::Integral::NearestEven, den),
                vop3::V_FRACT_F32 => sf::fract(self.fsrc(0, lane)?, den),
                vop3::V_LDEXP_F32 => sf::ldexp(self.fsrc(0, lane)?, self.int_src(1, lane)? as i32, den),
                vop3::V_FREXP_MANT_F32 => {
                    let a = self.fsrc(0, lane)?;
                    if sf::is_nan(a) || a & 0x7fff_ffff == 0x7f80_0000 || a & 0x7fff_ffff == 0 {
                        a
                    } else {
                        // mantissa in [0.5, 1) with the sign of a
                        let e = frexp_exponent(a);
                        sf::ldexp(a, -e, Denormals::Keep)
                    }
                }
                vop3::V_FREXP_EXP_I32_F32 => {
                    let a = self.fsrc(0, lane)?;
                    if sf::is_nan(a) || a & 0x7fff_ffff == 0x7f80_0000 || a & 0x7fff_ffff == 0 {
                        0
                    } else {
                        frexp_exponent(a) as u32
                    }
                }
                vop3::V_CVT_FLR_I32_F32 => sf::to_i32(sf::round_integral(self.fsrc(0, lane)?, sf::Integral::Floor, den), den) as u32,
                vop3::V_CVT_RPI_I32_F32 => sf::to_i32(sf::round_integral(sf::add(self.fsrc(0, lane)?, 0x3f00_0000, den), sf::Integral::Floor, den), den) as u32,
                vop3::V_CVT_F16_F32 => sf::f32_to_f16(self.fsrc(0, lane)?) as u32,
                vop3::V_CVT_F32_F64 => sf64::to_f32(self.fsrc64(0, lane)?, den),
                vop3::V_CVT_I32_F64 => sf64::to_i32(self.fsrc64(0, lane)?) as u32,
                vop3::V_CVT_U32_F64 => sf64::to_u32(self.fsrc64(0, lane)?),
                vop3::V_CVT_F32_F16 => {
                    let h = self.int_src(0, lane)? as u16;
                    let m = self.inst.modifiers[0];
                    let h = if m.abs { h & 0x7fff } else { h };
                    sf::f16_to_f32(if m.neg { h ^ 0x8000 } else { h })
                }
                vop3::V_DIV_SCALE_F32 => {
                    let (s0, s1, s2) = (self.fsrc(0, lane)?, self.fsrc(1, lane)?, self.fsrc(2, lane)?);
                    let (d, flag) = div_scale_f32(s0, s1, s2);
                    carry_out |= (flag as u64) << lane;
                    d
                }
                vop3::V_DIV_FMAS_F32 => {
                    let (s0, s1, s2) = (self.fsrc(0, lane)?, self.fsrc(1, lane)?, self.fsrc(2, lane)?);
                    if vcc_at_start >> lane & 1 == 1 {
                        let scale = if sf::exponent_field(s2) > 127 { 64 } else { -64 };
                        sf::fma_scaled(s0, s1, s2, scale, den)
                    } else {
                        sf::fma(s0, s1, s2, den)
                    }
                }
                vop3::V_DIV_FIXUP_F32 => div_fixup_f32(self.fsrc(0, lane)?, self.fsrc(1, lane)?, self.fsrc(2, lane)?),
                // 16-bit integer ops: the low halves; gfx9 zeroes the high half
                // of the result (GCNSubtarget::zeroesHigh16BitsOfDest).
                vop3::V_ADD_U16 => (self.int_src(0, lane)? as u16).wrapping_add(self.int_src(1, lane)? as u16) as u32,
                vop3::V_SUB_U16 => (self.int_src(0, lane)? as u16).wrapping_sub(self.int_src(1, lane)? as u16) as u32,
                vop3::V_SUBREV_U16 => (self.int_src(1, lane)? as u16).wrapping_sub(self.int_src(0, lane)? as u16) as u32,
                vop3::V_MUL_LO_U16 => (self.int_src(0, lane)? as u16).wrapping_mul(self.int_src(1, lane)? as u16) as u32,
                vop3::V_LSHLREV_B16 => ((self.int_src(1, lane)? as u16) << (self.int_src(0, lane)? & 15)) as u32,
                vop3::V_LSHRREV_B16 => ((self.int_src(1, lane)? as u16) >> (self.int_src(0, lane)? & 15)) as u32,
                vop3::V_ASHRREV_I16 => ((self.int_src(1, lane)? as i16) >> (self.int_src(0, lane)? & 15)) as u16 as u32,
                vop3::V_MAX_U16 => (self.int_src(0, lane)? as u16).max(self.int_src(1, lane)? as u16) as u32,
                vop3::V_MIN_U16 => (self.int_src(0, lane)? as u16).min(self.int_src(1, lane)? as u16) as u32,
                vop3::V_MAX_I16 => (self.int_src(0, lane)? as i16).max(self.int_src(1, lane)? as i16) as u16 as u32,
                vop3::V_MIN_I16 => (self.int_src(0, lane)? as i16).min(self.int_src(1, lane)? as i16) as u16 as u32,
                vop3::V_BCNT_U32_B32 => self.int_src(0, lane)?.count_ones().wrapping_add(self.int_src(1, lane)?),
                vop3::V_BFM_B32 => (((1u64 << (self.int_src(0, lane)? & 31)) - 1) as u32) << (self.int_src(1, lane)? & 31),
                vop3::V_PERM_B32 => byte_permute(self.int_src(0, lane)?, self.int_src(1, lane)?, self.int_src(2, lane)?),
                vop3::V_MED3_F32 => {
                    let (a, b, c) = (self.fsrc(0, lane)?, self.fsrc(1, lane)?, self.fsrc(2, lane)?);
                    // median as max(min(a, b), min(max(a, b), c)) with NaN-avoiding min/max
                    sf::max(sf::min(a, b, den), sf::min(sf::max(a, b, den), c, den), den)
                }
                vop3::V_ADD_I32 | vop3::V_SUB_I32 => {
                    let (a, b) = (self.int_src(0, lane)? as i32, self.int_src(1, lane)? as i32);
                    (match (op == vop3::V_ADD_I32, saturate) {
                        (true, false) => a.wrapping_add(b),
                        (true, true) => a.saturating_add(b),
                        (false, false) => a.wrapping_sub(b),
                        (false, true) => a.saturating_sub(b),
                    }) as u32
                }
                vop3::V_MAD_U32_U16 => (self.int_src(0, lane)? & 0xffff).wrapping_mul(self.int_src(1, lane)? & 0xffff).wrapping_add(self.int_src(2, lane)?),
                vop3::V_MAD_I32_I16 => ((self.int_src(0, lane)? as i16 as i32).wrapping_mul(self.int_src(1, lane)? as i16 as i32) as u32).wrapping_add(self.int_src(2, lane)?),
                vop3::V_FFBH_I32 => {
                    // leading bits equal to the sign bit, -1 for 0 and -1
                    let v = self.int_src(0, lane)? as i32;
                    if v == 0 || v == -1 {
                        u32::MAX
                    } else if v < 0 {
                        (!v).leading_zeros()
                    } else {
                        v.leading_zeros()
                    }
                }
                // Both read and write VGPR/AGPR src0: in a VOP3 word it can
                // name an SGPR or a constant, which they cannot take.
                op if op == VOP3_FROM_VOP1 + vop1::V_SWAP_B32 => {
                    let r = i.src[0].checked_sub(src::VGPR0).ok_or_else(|| self.unsupported_form("v_swap_b32 with a scalar src0"))?;
                    let (a, b) = (self.vgpr(i.dst, lane), self.int_src(0, lane)?);
                    self.wave.vgpr[r as usize & 0xff][lane] = a;
                    b
                }
                op if op == VOP3_FROM_VOP1 + vop1::V_ACCVGPR_MOV_B32 => {
                    let r = i.src[0].checked_sub(src::VGPR0).ok_or_else(|| self.unsupported_form("v_accvgpr_mov_b32 with a scalar src0"))?;
                    let v = self.wave.agpr[r as usize & 0xff][lane];
                    self.wave.agpr[i.dst as usize][lane] = v;
                    continue;
                }
                vop3::V_NOP | opcodes10::vop3::V_PIPEFLUSH => return Ok(StepOutcome::Continue),
                _ => return Err(self.unsupported()),
            };
            let d = if float_op { self.f32_output(d, den) } else { d };
            let d = if keeps_high_half { (self.vgpr(i.dst, lane) & 0xffff_0000) | (d & 0xffff) } else { d };
            self.write_vdst(lane, d)?;
        }
        if writes_carry {
            // Lanes outside EXEC read back as 0 in the carry mask.
            self.write_mask(i.sdst, carry_out)?;
        }
        Ok(StepOutcome::Continue)
    }

    /// The 64-bit-result integer ops for one lane.
    fn valu_lane64(&self, lane: usize, carry_out: &mut u64) -> Result<u64, ExecError> {
        let i = self.inst;
        Ok(match i.opcode {
            op if is_f64_result_op(op) => {
                let den = self.wave.mode.f64_denormals();
                let d = match op {
                    vop3::V_ADD_F64 => sf64::add(self.fsrc64(0, lane)?, self.fsrc64(1, lane)?, den),
                    vop3::V_MUL_F64 => sf64::mul(self.fsrc64(0, lane)?, self.fsrc64(1, lane)?, den),
                    vop3::V_FMA_F64 => sf64::fma(self.fsrc64(0, lane)?, self.fsrc64(1, lane)?, self.fsrc64(2, lane)?, den),
                    vop3::V_FMAC_F64 => {
                        let acc = self.vgpr(i.dst, lane) as u64 | (self.vgpr(i.dst + 1, lane) as u64) << 32;
                        sf64::fma(self.fsrc64(0, lane)?, self.fsrc64(1, lane)?, acc, den)
                    }
                    vop3::V_MIN_F64 => sf64::min_max(self.fsrc64(0, lane)?, self.fsrc64(1, lane)?, true, den),
                    vop3::V_MAX_F64 => sf64::min_max(self.fsrc64(0, lane)?, self.fsrc64(1, lane)?, false, den),
                    vop3::V_LDEXP_F64 => sf64::ldexp(self.fsrc64(0, lane)?, self.int_src(1, lane)? as i32, den),
                    vop3::V_CVT_F64_F32 => sf64::from_f32(self.fsrc(0, lane)?),
                    vop3::V_RCP_F64 => sf64::div(0x3ff0_0000_0000_0000, self.fsrc64(0, lane)?, den),
                    vop3::V_SQRT_F64 => sf64::sqrt(self.fsrc64(0, lane)?, den),
                    // two roundings: within the ISA's stated accuracy
                    vop3::V_RSQ_F64 => sf64::div(0x3ff0_0000_0000_0000, sf64::sqrt(self.fsrc64(0, lane)?, den), den),
                    vop3::V_FLOOR_F64 => sf64::floor(self.fsrc64(0, lane)?, den),
                    vop3::V_CEIL_F64 => sf64::round_integral(self.fsrc64(0, lane)?, sf::Integral::Ceil, den),
                    vop3::V_TRUNC_F64 => sf64::round_integral(self.fsrc64(0, lane)?, sf::Integral::Trunc, den),
                    vop3::V_RNDNE_F64 => sf64::round_integral(self.fsrc64(0, lane)?, sf::Integral::NearestEven, den),
                    vop3::V_FRACT_F64 => sf64::fract(self.fsrc64(0, lane)?, den),
                    vop3::V_FREXP_MANT_F64 => {
                        let a = self.fsrc64(0, lane)?;
                        if sf64::is_nan(a) || a & !(1 << 63) == 0x7ff0_0000_0000_0000 || a << 1 == 0 {
                            a
                        } else {
                            frexp64(a).0
                        }
                    }
                    vop3::V_DIV_SCALE_F64 => {
                        let (d, flag) = div_scale_f64(self.fsrc64(0, lane)?, self.fsrc64(1, lane)?, self.fsrc64(2, lane)?);
                        *carry_out |= (flag as u64) << lane;
                        d
                    }
                    vop3::V_DIV_FMAS_F64 => {
                        let (s0, s1, s2) = (self.fsrc64(0, lane)?, self.fsrc64(1, lane)?, self.fsrc64(2, lane)?);
                        if self.wave.vcc >> lane & 1 == 1 {
                            let scale = if sf64::exponent_field(s2) > 1023 { 128 } else { -128 };
                            sf64::fma_scaled(s0, s1, s2, scale, den)
                        } else {
                            sf64::fma(s0, s1, s2, den)
                        }
                    }
                    vop3::V_DIV_FIXUP_F64 => div_fixup_f64(self.fsrc64(0, lane)?, self.fsrc64(1, lane)?, self.fsrc64(2, lane)?),
                    vop3::V_CVT_F64_I32 => sf64::from_i32(self.int_src(0, lane)? as i32),
                    _ => sf64::from_u32(self.int_src(0, lane)?), // V_CVT_F64_U32
                };
                self.f64_output(d, den)
            }
            vop3::V_LSHLREV_B64 => self.vsrc64(i.src[1], lane, false)? << (self.int_src(0, lane)? & 63),
            vop3::V_LSHRREV_B64 => self.vsrc64(i.src[1], lane, false)? >> (self.int_src(0, lane)? & 63),
            vop3::V_ASHRREV_I64 => ((self.vsrc64(i.src[1], lane, false)? as i64) >> (self.int_src(0, lane)? & 63)) as u64,
            vop3::V_MAD_U64_U32 => {
                let p = self.int_src(0, lane)? as u128 * self.int_src(1, lane)? as u128 + self.vsrc64(i.src[2], lane, false)? as u128;
                *carry_out |= ((p >> 64) as u64 & 1) << lane;
                p as u64
            }
            _ => {
                let p = self.int_src(0, lane)? as i32 as i128 * self.int_src(1, lane)? as i32 as i128 + self.vsrc64(i.src[2], lane, false)? as i64 as i128;
                *carry_out |= ((p > i64::MAX as i128 || p < i64::MIN as i128) as u64) << lane;
                p as u64
            }
        })
    }

    /// An f16 VALU source: the low half of the operand (the high half with
    /// the VOP3 op_sel bit of the source), f16 inline constants, abs/neg.
    fn hsrc(&self, n: usize, lane: usize) -> Result<u16, ExecError> {
        let code = self.inst.src[n];
        let v = if (240..=248).contains(&code) {
            half::INLINE[(code - 240) as usize]
        } else {
            (self.int_src(n, lane)? >> (16 * (self.inst.op_sel >> n & 1))) as u16
        };
        let m = self.inst.modifiers[n];
        let v = if m.abs { v & 0x7fff } else { v };
        Ok(if m.neg { v ^ 0x8000 } else { v })
    }

    /// The f16 VALU ops: results in the low half with the high half zeroed
    /// (gfx9: GCNSubtarget::zeroesHigh16BitsOfDest) or kept (GFX10, and
    /// v_fmac_f16), or in the high half with the low half kept when
    /// op_sel[3] is set; v_pack_b32_f16 writes both halves.  Denormals as
    /// MODE's f16/f64 field says.
    fn valu_f16(&mut self) -> Result<StepOutcome, ExecError> {
        let i = self.inst;
        let op = i.opcode;
        let den = self.wave.mode.f64_denormals();
        if op == opcodes10::vop3::V_FMAC_F16 && i.op_sel != 0 {
            // Its VOP3 form has no op_sel (the accumulator is D's low half).
            return Err(self.unsupported_form("op_sel on v_fmac_f16"));
        }
        let written = self.wave.exec_lanes() & self.dpp_write_mask();
        for lane in 0..WAVE_SIZE {
            if written >> lane & 1 == 0 {
                continue;
            }
            let a = self.hsrc(0, lane)?;
            let d = match op {
                vop3::V_PACK_B32_F16 => {
                    let b = self.hsrc(1, lane)?;
                    self.write_vdst(lane, a as u32 | (b as u32) << 16)?;
                    continue;
                }
                vop3::V_SQRT_F16 => half::sqrt(a, den),
                vop3::V_FMA_F16 => half::fma(a, self.hsrc(1, lane)?, self.hsrc(2, lane)?, den),
                // GFX10: D.f16 = S0.f16 * S1.f16 + D.f16, one rounding.
                opcodes10::vop3::V_FMAC_F16 => half::fma(a, self.hsrc(1, lane)?, self.vgpr(i.dst, lane) as u16, den),
                _ => {
                    let b = self.hsrc(1, lane)?;
                    match op {
                        vop3::V_ADD_F16 => half::add(a, b, den),
                        vop3::V_SUB_F16 => half::add(a, b ^ 0x8000, den),
                        vop3::V_SUBREV_F16 => half::add(b, a ^ 0x8000, den),
                        vop3::V_MUL_F16 => half::mul(a, b, den),
                        // exact in f32, so exact back in f16
                        vop3::V_MAX_F16 => sf::f32_to_f16(sf::max(sf::f16_to_f32(a), sf::f16_to_f32(b), Denormals::Keep)),
                        vop3::V_MIN_F16 => sf::f32_to_f16(sf::min(sf::f16_to_f32(a), sf::f16_to_f32(b), Denormals::Keep)),
                        _ => return Err(self.unsupported()),
                    }
                }
            };
            let d = match i.omod {
                1 => half::mul(d, 0x4000, den),
                2 => half::mul(d, 0x4400, den),
                3 => half::mul(d, 0x3800, den),
                _ => d,
            };
            let d = if i.clamp { half::clamp(d) } else { d };
            let d = if i.op_sel & 8 != 0 {
                (self.vgpr(i.dst, lane) & 0xffff) | (d as u32) << 16
            } else if op == opcodes10::vop3::V_FMAC_F16 || (i.gen == Generation::Gfx10 && !matches!(i.form, ValuForm::Sdwa(_))) {
                // v_fmac_f16 keeps the high half on GFX9 and GFX10 alike,
                // every 16-bit op on GFX10 (GCNSubtarget::zeroesHigh16BitsOfDest).
                (self.vgpr(i.dst, lane) & 0xffff_0000) | d as u32
            } else {
                d as u32
            };
            self.write_vdst(lane, d)?;
        }
        Ok(StepOutcome::Continue)
    }

    /// GFX10's VOP3-only `v_add_nc_u16` / `v_sub_nc_u16`: D.u16 = S0.u16
    /// +/- S1.u16, no carry out; clamp saturates to [0, 0xffff]; op_sel[0]
    /// and op_sel[1] take a source's high half, op_sel[3] writes the high
    /// half; the other half of D is kept (GFX10's 16-bit ops preserve it).
    fn valu_nc_u16(&mut self) -> Result<StepOutcome, ExecError> {
        let i = self.inst;
        if i.omod != 0 || i.modifiers.iter().any(|m| m.neg || m.abs) {
            return Err(self.unsupported_form("modifiers on an integer operation"));
        }
        let written = self.wave.exec_lanes() & self.dpp_write_mask();
        for lane in 0..WAVE_SIZE {
            if written >> lane & 1 == 0 {
                continue;
            }
            let a = (self.int_src(0, lane)? >> (16 * (i.op_sel & 1))) as u16;
            let b = (self.int_src(1, lane)? >> (16 * (i.op_sel >> 1 & 1))) as u16;
            let d = match (i.opcode == opcodes10::vop3::V_ADD_NC_U16, i.clamp) {
                (true, false) => a.wrapping_add(b),
                (true, true) => a.saturating_add(b),
                (false, false) => a.wrapping_sub(b),
                (false, true) => a.saturating_sub(b),
            } as u32;
            let old = self.vgpr(i.dst, lane);
            let d = if i.op_sel & 8 != 0 { (old & 0xffff) | d << 16 } else { (old & 0xffff_0000) | d };
            self.write_vdst(lane, d)?;
        }
        Ok(StepOutcome::Continue)
    }

    fn lane_access(&mut self) -> Result<StepOutcome, ExecError> {
        let i = self.inst;
        match i.opcode {
            READFIRSTLANE_B32 => {
                let exec = self.wave.exec & self.wave.lane_mask();
                let lane = if exec == 0 { 0 } else { exec.trailing_zeros() as usize };
                let v = self.vsrc32(i.src[0], lane)?;
                self.write_scalar32(i.dst, v)?;
            }
            vop3::V_READLANE_B32 => {
                let lane = self.scalar32(i.src[1])? as usize & (self.wave.lanes() - 1);
                let v = self.vsrc32(i.src[0], lane)?;
                self.write_scalar32(i.dst, v)?;
            }
            _ => {
                let lane = self.scalar32(i.src[1])? as usize & (self.wave.lanes() - 1);
                let v = self.scalar32(i.src[0])?;
                self.wave.vgpr[i.dst as usize][lane] = v;
            }
        }
        Ok(StepOutcome::Continue)
    }

    /// VOPC: compares (v_cmp_*) and v_cmpx_* (which also write EXEC).
    fn vopc(&mut self) -> Result<StepOutcome, ExecError> {
        let i = self.inst;
        let name = i.mnemonic().unwrap_or("");
        let Some(cmp) = Comparison::parse(name) else {
            return Err(self.unsupported());
        };
        let den = self.wave.mode.f32_denormals();
        let exec = self.wave.exec_lanes();
        let mut mask = 0u64;
        for lane in 0..WAVE_SIZE {
            if exec >> lane & 1 == 0 {
                continue;
            }
            let result = match cmp.kind {
                Kind::F32 => {
                    let ord = sf::compare(self.fsrc(0, lane)?, self.fsrc(1, lane)?, den);
                    cmp.float_result(ord)
                }
                Kind::I32 | Kind::U32 => {
                    let (a, b) = (self.int_src(0, lane)?, self.int_src(1, lane)?);
                    let ord = if cmp.kind == Kind::I32 { (a as i32).cmp(&(b as i32)) } else { a.cmp(&b) };
                    cmp.int_result(ord)
                }
                Kind::F64 => {
                    let ord = sf64::compare(self.fsrc64(0, lane)?, self.fsrc64(1, lane)?, self.wave.mode.f64_denormals());
                    cmp.float_result(ord)
                }
                Kind::I16 | Kind::U16 => {
                    let (a, b) = (self.int_src(0, lane)? as u16, self.int_src(1, lane)? as u16);
                    let ord = if cmp.kind == Kind::I16 { (a as i16).cmp(&(b as i16)) } else { a.cmp(&b) };
                    cmp.int_result(ord)
                }
                Kind::I64 | Kind::U64 => {
                    let (a, b) = (self.vsrc64(i.src[0], lane, false)?, self.vsrc64(i.src[1], lane, false)?);
                    let ord = if cmp.kind == Kind::I64 { (a as i64).cmp(&(b as i64)) } else { a.cmp(&b) };
                    cmp.int_result(ord)
                }
                Kind::ClassF64 => {
                    let v = self.fsrc64(0, lane)?;
                    self.int_src(1, lane)? >> sf64::class(v) & 1 == 1
                }
                Kind::ClassF32 => {
                    let v = self.fsrc(0, lane)?;
                    let classes = self.int_src(1, lane)?;
                    classes >> f32_class(v) & 1 == 1
                }
                Kind::F16 => {
                    // f16 values compare exactly as f32
                    let h = |v: u16| sf::f16_to_f32(if self.wave.mode.f64_denormals() == Denormals::Flush && v & 0x7c00 == 0 { v & 0x8000 } else { v });
                    let ord = sf::compare(h(self.hsrc(0, lane)?), h(self.hsrc(1, lane)?), Denormals::Keep);
                    cmp.float_result(ord)
                }
                Kind::ClassF16 => {
                    let v = self.hsrc(0, lane)?;
                    self.int_src(1, lane)? >> half::class(v) & 1 == 1
                }
            };
            mask |= (result as u64) << lane;
        }
        // GFX10's v_cmpx writes EXEC only; GFX9's also its SGPR destination.
        if !(cmp.writes_exec && self.gfx10()) {
            self.write_mask(i.sdst, mask)?;
        }
        if cmp.writes_exec {
            self.wave.exec = mask;
        }
        Ok(StepOutcome::Continue)
    }

    // ---- VOP3P -------------------------------------------------------------

    /// A 64-bit VOP3P source (a VGPR pair or a scalar value) as two halves.
    fn pk_src(&self, n: usize, lane: usize) -> Result<[u32; 2], ExecError> {
        let code = self.inst.src[n];
        if code >= src::VGPR0 {
            let r = code - src::VGPR0;
            Ok([self.vgpr(r, lane), self.vgpr(r + 1, lane)])
        } else {
            let v = self.scalar32(code)?;
            Ok([v, if (128..=208).contains(&code) || code == src::LITERAL { 0 } else { self.scalar32(code + 1).unwrap_or(0) }])
        }
    }

    /// A 32-bit VOP3P source of two f16 halves: a VGPR or SGPR as it is; an
    /// inline constant (an f16 one for 240..248) in both halves, as LLVM
    /// only encodes packed inline constants whose halves are equal.
    fn pk16_src(&self, n: usize, lane: usize) -> Result<u32, ExecError> {
        let code = self.inst.src[n];
        let h = match code {
            240..=248 => half::INLINE[(code - 240) as usize],
            128..=208 => self.scalar32(code)? as u16,
            _ => return self.vsrc32(code, lane),
        };
        Ok(h as u32 | (h as u32) << 16)
    }

    fn vop3p(&mut self) -> Result<StepOutcome, ExecError> {
        use super::opcodes::vop3p;
        let i = self.inst;
        let exec = self.wave.exec_lanes();
        let den = self.wave.mode.f32_denormals();
        for lane in 0..WAVE_SIZE {
            if exec >> lane & 1 == 0 {
                continue;
            }
            match i.opcode {
                vop3p::V_ACCVGPR_WRITE_B32 => {
                    let v = self.vsrc32(i.src[0], lane)?;
                    self.wave.agpr[i.dst as usize][lane] = v;
                }
                vop3p::V_ACCVGPR_READ_B32 => {
                    // src0 names an AGPR in the VGPR operand space
                    let a = i.src[0].checked_sub(src::VGPR0).ok_or(self.unsupported_form("non-AGPR source"))?;
                    self.wave.vgpr[i.dst as usize][lane] = self.wave.agpr[a as usize][lane];
                }
                vop3p::V_PK_MOV_B32 | vop3p::V_PK_ADD_F32 | vop3p::V_PK_MUL_F32 | vop3p::V_PK_FMA_F32 => {
                    if i.clamp {
                        return Err(self.unsupported_form("clamp on packed f32"));
                    }
                    let nsrc = match i.opcode {
                        vop3p::V_PK_FMA_F32 => 3,
                        _ => 2,
                    };
                    let mut lo = [0u32; 3];
                    let mut hi = [0u32; 3];
                    for n in 0..nsrc {
                        let v = self.pk_src(n, lane)?;
                        lo[n] = v[(i.op_sel >> n & 1) as usize];
                        hi[n] = v[(i.op_sel_hi >> n & 1) as usize];
                        if i.modifiers[n].neg {
                            lo[n] ^= 0x8000_0000;
                        }
                        if i.neg_hi >> n & 1 == 1 {
                            hi[n] ^= 0x8000_0000;
                        }
                    }
                    let (d0, d1) = match i.opcode {
                        // v_pk_mov_b32: lane halves from src0 and src1 by op_sel
                        vop3p::V_PK_MOV_B32 => (lo[0], self.pk_src(1, lane)?[(i.op_sel >> 1 & 1) as usize]),
                        vop3p::V_PK_ADD_F32 => (sf::add(lo[0], lo[1], den), sf::add(hi[0], hi[1], den)),
                        vop3p::V_PK_MUL_F32 => (sf::mul(lo[0], lo[1], den), sf::mul(hi[0], hi[1], den)),
                        _ => (sf::fma(lo[0], lo[1], lo[2], den), sf::fma(hi[0], hi[1], hi[2], den)),
                    };
                    self.wave.vgpr[i.dst as usize][lane] = d0;
                    self.wave.vgpr[(i.dst as usize + 1) & 0xff][lane] = d1;
                }
                vop3p::V_PK_FMA_F16 | vop3p::V_PK_ADD_F16 | vop3p::V_PK_MUL_F16 => {
                    let hden = self.wave.mode.f64_denormals();
                    let nsrc = if i.opcode == vop3p::V_PK_FMA_F16 { 3 } else { 2 };
                    // lo[n]/hi[n]: the halves op_sel/op_sel_hi pick, with
                    // neg (low result) and neg_hi (high result).
                    let mut lo = [0u16; 3];
                    let mut hi = [0u16; 3];
                    for n in 0..nsrc {
                        let v = self.pk16_src(n, lane)?;
                        lo[n] = (v >> (16 * (i.op_sel >> n & 1))) as u16 ^ if i.modifiers[n].neg { 0x8000 } else { 0 };
                        hi[n] = (v >> (16 * (i.op_sel_hi >> n & 1))) as u16 ^ if i.neg_hi >> n & 1 == 1 { 0x8000 } else { 0 };
                    }
                    let f = |s: &[u16; 3]| match i.opcode {
                        vop3p::V_PK_FMA_F16 => half::fma(s[0], s[1], s[2], hden),
                        vop3p::V_PK_ADD_F16 => half::add(s[0], s[1], hden),
                        _ => half::mul(s[0], s[1], hden),
                    };
                    let (d0, d1) = (f(&lo), f(&hi));
                    let (d0, d1) = if i.clamp { (half::clamp(d0), half::clamp(d1)) } else { (d0, d1) };
                    self.wave.vgpr[i.dst as usize][lane] = d0 as u32 | (d1 as u32) << 16;
                }
                vop3p::V_FMA_MIX_F32 | vop3p::V_FMA_MIXLO_F16 | vop3p::V_FMA_MIXHI_F16 => {
                    // Each source is f32, or (op_sel_hi[n]) the f16 half
                    // op_sel[n] picks, converted exactly; neg_hi is abs.
                    let mut v = [0u32; 3];
                    for (n, v) in v.iter_mut().enumerate() {
                        let code = i.src[n];
                        *v = if i.op_sel_hi >> n & 1 == 1 {
                            let h = if (240..=248).contains(&code) {
                                half::INLINE[(code - 240) as usize]
                            } else {
                                (self.vsrc32(code, lane)? >> (16 * (i.op_sel >> n & 1))) as u16
                            };
                            sf::f16_to_f32(h)
                        } else {
                            self.vsrc32(code, lane)?
                        };
                        if i.neg_hi >> n & 1 == 1 {
                            *v &= 0x7fff_ffff;
                        }
                        if i.modifiers[n].neg {
                            *v ^= 0x8000_0000;
                        }
                    }
                    let mut d = sf::fma(v[0], v[1], v[2], den);
                    if i.clamp {
                        d = if sf::is_nan(d) || d >> 31 == 1 { 0 } else { d.min(0x3f80_0000) };
                    }
                    let old = self.vgpr(i.dst, lane);
                    self.wave.vgpr[i.dst as usize][lane] = match i.opcode {
                        vop3p::V_FMA_MIX_F32 => d,
                        vop3p::V_FMA_MIXLO_F16 => (old & 0xffff_0000) | sf::f32_to_f16(d) as u32,
                        _ => (old & 0xffff) | (sf::f32_to_f16(d) as u32) << 16,
                    };
                }
                _ => return Err(self.unsupported()),
            }
        }
        Ok(StepOutcome::Continue)
    }

    // ---- MUBUF ---------------------------------------------------------------

    fn mubuf(&mut self, env: &mut Environment<'_>) -> Result<StepOutcome, ExecError> {
        let i = self.inst;
        let name = i.mnemonic().unwrap_or("");
        if matches!(name, "buffer_wbl2" | "buffer_invl2" | "buffer_wbinvl1" | "buffer_wbinvl1_vol" | "buffer_gl0_inv" | "buffer_gl1_inv") {
            return Ok(StepOutcome::Continue); // no caches
        }
        let access = match FlatAccess::parse(name) {
            Some(a @ (FlatAccess::Load { .. } | FlatAccess::Store { .. })) => a,
            _ => return Err(self.unsupported()),
        };
        if i.acc {
            return Err(self.unsupported_form("AGPR data"));
        }
        let rsrc = [self.scalar32(i.src[1])?, self.scalar32(i.src[1] + 1)?, self.scalar32(i.src[1] + 2)?, self.scalar32(i.src[1] + 3)?];
        let soffset = self.scalar32(i.src[2])?;
        let swizzled = rsrc[3] & BUFFER_ADD_TID_ENABLE != 0;
        // The compiler's scratch offsets count wave bytes: a lane's is
        // the offset over the lanes of the wave.
        let lanes = self.wave.lanes() as u32;
        if swizzled && soffset % lanes != 0 {
            return Err(self.unsupported_form("swizzled buffer access with soffset not a multiple of the wave size"));
        }
        let base = rsrc[0] as u64 | ((rsrc[1] & 0xffff) as u64) << 32;
        let stride = (rsrc[1] >> 16) & 0x3fff;
        let num_records = rsrc[2];
        let vaddr = i.src[0] - src::VGPR0;
        let exec = self.wave.exec_lanes();
        for lane in 0..WAVE_SIZE {
            if exec >> lane & 1 == 0 {
                continue;
            }
            let (index, voffset) = match (i.idxen, i.offen) {
                (true, true) => (self.vgpr(vaddr, lane), self.vgpr(vaddr + 1, lane)),
                (true, false) => (self.vgpr(vaddr, lane), 0),
                (false, true) => (0, self.vgpr(vaddr, lane)),
                (false, false) => (0, 0),
            };
            let offset = (i.imm as u32).wrapping_add(voffset);
            let space = if swizzled {
                Space::Scratch { lane, offset: (soffset / lanes).wrapping_add(offset) }
            } else {
                // Raw buffer: out-of-range accesses read 0 and drop writes.
                let in_range = if stride == 0 { offset < num_records } else { index < num_records };
                if !in_range {
                    if let FlatAccess::Load { bytes, .. } = access {
                        for k in 0..bytes.div_ceil(4) {
                            self.wave.vgpr[(i.dst as usize + k) & 0xff][lane] = 0;
                        }
                    }
                    continue;
                }
                Space::Global(base.wrapping_add(soffset as u64).wrapping_add(offset as u64).wrapping_add(index as u64 * stride as u64))
            };
            self.load_store_lane(env, access, space, lane, i.dst)?;
        }
        Ok(StepOutcome::Continue)
    }

    /// One lane of a plain load or store; `data` is the VGPR loaded into or stored from.
    fn load_store_lane(&mut self, env: &mut Environment<'_>, access: FlatAccess, space: Space, lane: usize, data: u16) -> Result<(), ExecError> {
        match access {
            FlatAccess::Load { bytes, signed } => {
                let mut buf = [0u8; 16];
                self.mem_read(env, space, &mut buf[..bytes])?;
                let mut words = [0u32; 4];
                for (k, b) in buf[..bytes].iter().enumerate() {
                    words[k / 4] |= (*b as u32) << (8 * (k % 4));
                }
                if signed {
                    words[0] = if bytes == 1 { words[0] as i8 as i32 as u32 } else { words[0] as i16 as i32 as u32 };
                }
                for (k, w) in words.iter().enumerate().take(bytes.div_ceil(4)) {
                    self.wave.vgpr[(data as usize + k) & 0xff][lane] = *w;
                }
            }
            FlatAccess::Store { bytes } => {
                let mut buf = [0u8; 16];
                for (k, b) in buf.iter_mut().enumerate().take(bytes) {
                    *b = (self.vgpr(data + (k / 4) as u16, lane) >> (8 * (k % 4))) as u8;
                }
                self.mem_write(env, space, &buf[..bytes])?;
            }
            FlatAccess::StoreHigh16 { bytes } => {
                let v = self.vgpr(data, lane) >> 16;
                self.mem_write(env, space, &v.to_le_bytes()[..bytes])?;
            }
            FlatAccess::Atomic { .. } => return Err(self.unsupported()),
        }
        Ok(())
    }

    // ---- DS (LDS) ------------------------------------------------------------

    fn lds_range(&self, lds_len: usize, address: u32, bytes: usize) -> Result<usize, ExecError> {
        let a = address as usize;
        if a.checked_add(bytes).is_none_or(|end| end > lds_len) {
            return Err(ExecError::OutOfBounds { pc: self.pc, space: "LDS", offset: address as u64 });
        }
        Ok(a)
    }

    fn ds(&mut self, env: &mut Environment<'_>) -> Result<StepOutcome, ExecError> {
        let i = self.inst;
        if i.gds {
            return Err(self.unsupported_form("GDS access"));
        }
        let offset16 = (i.imm as u32) | (i.offset1 as u32) << 8;
        let addr_reg = i.src[0] - src::VGPR0;
        let data0 = i.src[1] - src::VGPR0;
        let data1 = i.src[2] - src::VGPR0;
        let exec = self.wave.exec_lanes();
        if matches!(i.opcode, ds::DS_BPERMUTE_B32 | ds::DS_PERMUTE_B32 | ds::DS_SWIZZLE_B32) {
            self.ds_cross_lane(addr_reg, data0, offset16);
            return Ok(StepOutcome::Continue);
        }
        let lds_len = env.lds.len();
        for lane in 0..WAVE_SIZE {
            if exec >> lane & 1 == 0 {
                continue;
            }
            let base = self.vgpr(addr_reg, lane);
            match i.opcode {
                ds::DS_WRITE_B32 | ds::DS_WRITE_B64 | ds::DS_WRITE_B96 | ds::DS_WRITE_B128 | ds::DS_WRITE_B8 | ds::DS_WRITE_B16 => {
                    let bytes = match i.opcode {
                        ds::DS_WRITE_B96 => 12,
                        ds::DS_WRITE_B8 => 1,
                        ds::DS_WRITE_B16 => 2,
                        ds::DS_WRITE_B32 => 4,
                        ds::DS_WRITE_B64 => 8,
                        _ => 16,
                    };
                    let a = self.lds_range(lds_len, base.wrapping_add(offset16), bytes)?;
                    for k in 0..bytes {
                        let word = self.vgpr(data0 + (k / 4) as u16, lane);
                        env.lds[a + k] = (word >> (8 * (k % 4))) as u8;
                    }
                }
                ds::DS_READ_B32 | ds::DS_READ_B64 | ds::DS_READ_B96 | ds::DS_READ_B128 | ds::DS_READ_U8 | ds::DS_READ_I8 | ds::DS_READ_U16 | ds::DS_READ_I16 => {
                    let bytes = match i.opcode {
                        ds::DS_READ_B96 => 12,
                        ds::DS_READ_U8 | ds::DS_READ_I8 => 1,
                        ds::DS_READ_U16 | ds::DS_READ_I16 => 2,
                        ds::DS_READ_B32 => 4,
                        ds::DS_READ_B64 => 8,
                        _ => 16,
                    };
                    let a = self.lds_range(lds_len, base.wrapping_add(offset16), bytes)?;
                    let mut words = [0u32; 4];
                    for k in 0..bytes {
                        words[k / 4] |= (env.lds[a + k] as u32) << (8 * (k % 4));
                    }
                    words[0] = match i.opcode {
                        ds::DS_READ_I8 => words[0] as i8 as i32 as u32,
                        ds::DS_READ_I16 => words[0] as i16 as i32 as u32,
                        _ => words[0],
                    };
                    for (k, w) in words.iter().enumerate().take(bytes.div_ceil(4)) {
                        self.wave.vgpr[(i.dst as usize + k) & 0xff][lane] = *w;
                    }
                }
                ds::DS_WRITE2_B64 | ds::DS_WRITE2ST64_B64 => {
                    let scale = if i.opcode == ds::DS_WRITE2_B64 { 8 } else { 512 };
                    for (off, reg) in [(i.imm as u32, data0), (i.offset1 as u32, data1)] {
                        let a = self.lds_range(lds_len, base.wrapping_add(off * scale), 8)?;
                        env.lds[a..a + 4].copy_from_slice(&self.vgpr(reg, lane).to_le_bytes());
                        env.lds[a + 4..a + 8].copy_from_slice(&self.vgpr(reg + 1, lane).to_le_bytes());
                    }
                }
                ds::DS_READ2_B64 | ds::DS_READ2ST64_B64 => {
                    let scale = if i.opcode == ds::DS_READ2_B64 { 8 } else { 512 };
                    for (n, off) in [i.imm as u32, i.offset1 as u32].into_iter().enumerate() {
                        let a = self.lds_range(lds_len, base.wrapping_add(off * scale), 8)?;
                        for k in 0..2 {
                            let b = a + 4 * k;
                            let v = u32::from_le_bytes([env.lds[b], env.lds[b + 1], env.lds[b + 2], env.lds[b + 3]]);
                            self.wave.vgpr[(i.dst as usize + 2 * n + k) & 0xff][lane] = v;
                        }
                    }
                }
                ds::DS_WRITE2_B32 | ds::DS_WRITE2ST64_B32 => {
                    let scale = if i.opcode == ds::DS_WRITE2_B32 { 4 } else { 256 };
                    for (off, reg) in [(i.imm as u32, data0), (i.offset1 as u32, data1)] {
                        let a = self.lds_range(lds_len, base.wrapping_add(off * scale), 4)?;
                        env.lds[a..a + 4].copy_from_slice(&self.vgpr(reg, lane).to_le_bytes());
                    }
                }
                ds::DS_READ2_B32 | ds::DS_READ2ST64_B32 => {
                    let scale = if i.opcode == ds::DS_READ2_B32 { 4 } else { 256 };
                    for (n, off) in [i.imm as u32, i.offset1 as u32].into_iter().enumerate() {
                        let a = self.lds_range(lds_len, base.wrapping_add(off * scale), 4)?;
                        let v = u32::from_le_bytes([env.lds[a], env.lds[a + 1], env.lds[a + 2], env.lds[a + 3]]);
                        self.wave.vgpr[(i.dst as usize + n) & 0xff][lane] = v;
                    }
                }
                op @ (ds::DS_ADD_U32
                | ds::DS_SUB_U32
                | ds::DS_MIN_I32
                | ds::DS_MAX_I32
                | ds::DS_MIN_U32
                | ds::DS_MAX_U32
                | ds::DS_AND_B32
                | ds::DS_OR_B32
                | ds::DS_XOR_B32
                | ds::DS_ADD_F32
                | ds::DS_ADD_RTN_U32
                | ds::DS_SUB_RTN_U32
                | ds::DS_MIN_RTN_I32
                | ds::DS_MAX_RTN_I32
                | ds::DS_MIN_RTN_U32
                | ds::DS_MAX_RTN_U32
                | ds::DS_AND_RTN_B32
                | ds::DS_OR_RTN_B32
                | ds::DS_XOR_RTN_B32
                | ds::DS_ADD_RTN_F32
                | ds::DS_WRXCHG_RTN_B32
                | ds::DS_CMPST_B32
                | ds::DS_CMPST_RTN_B32
                | ds::DS_MIN_F32
                | ds::DS_MAX_F32
                | ds::DS_MIN_RTN_F32
                | ds::DS_MAX_RTN_F32
                | ds::DS_INC_U32
                | ds::DS_DEC_U32
                | ds::DS_INC_RTN_U32
                | ds::DS_DEC_RTN_U32
                | ds::DS_RSUB_U32
                | ds::DS_RSUB_RTN_U32) => {
                    let a = self.lds_range(lds_len, base.wrapping_add(offset16), 4)?;
                    let old = u32::from_le_bytes([env.lds[a], env.lds[a + 1], env.lds[a + 2], env.lds[a + 3]]);
                    let d0 = self.vgpr(data0, lane);
                    let d1 = self.vgpr(data1, lane);
                    let new = atomic32(op_as_atomic(op), old, d0, d1, self.wave.mode.f32_denormals());
                    env.lds[a..a + 4].copy_from_slice(&new.to_le_bytes());
                    // Only the _RTN forms (and ds_wrxchg, which has no other)
                    // write the old value: the others have no vdst, and the
                    // field's 0 is not v0.
                    if ds_atomic_returns(op) {
                        self.wave.vgpr[i.dst as usize][lane] = old;
                    }
                }
                op if ds_atomic64(op).is_some() => {
                    let (atomic, returns) = ds_atomic64(op).unwrap_or((AtomicOp::Add, false));
                    let a = self.lds_range(lds_len, base.wrapping_add(offset16), 8)?;
                    let mut b = [0u8; 8];
                    b.copy_from_slice(&env.lds[a..a + 8]);
                    let old = u64::from_le_bytes(b);
                    let d0 = self.vgpr(data0, lane) as u64 | (self.vgpr(data0 + 1, lane) as u64) << 32;
                    let d1 = self.vgpr(data1, lane) as u64 | (self.vgpr(data1 + 1, lane) as u64) << 32;
                    // DS cmpst: data0 is the compare value, data1 the new
                    // one (atomic64 takes FLAT's order, new value first).
                    let new = if atomic == AtomicOp::CmpSwap { atomic64(atomic, old, d1, d0) } else { atomic64(atomic, old, d0, d1) };
                    env.lds[a..a + 8].copy_from_slice(&new.to_le_bytes());
                    if returns {
                        self.wave.vgpr[i.dst as usize][lane] = old as u32;
                        self.wave.vgpr[(i.dst as usize + 1) & 0xff][lane] = (old >> 32) as u32;
                    }
                }
                _ => return Err(self.unsupported()),
            }
        }
        Ok(StepOutcome::Continue)
    }

    /// ds_bpermute_b32 (read another lane's data0), ds_permute_b32 (write to
    /// another lane) and ds_swizzle_b32: lane exchanges through the LDS
    /// crossbar, no LDS memory touched. Inactive source lanes read as 0.
    fn ds_cross_lane(&mut self, addr_reg: u16, data0: u16, offset: u32) {
        let i = self.inst;
        let exec = self.wave.exec_lanes();
        // ds_swizzle_b32 takes its data in the address field.
        let source = if i.opcode == ds::DS_SWIZZLE_B32 { addr_reg } else { data0 };
        let data = |l: usize| if exec >> l & 1 == 1 { self.vgpr(source, l) } else { 0 };
        let mut result = [0u32; WAVE_SIZE];
        match i.opcode {
            ds::DS_BPERMUTE_B32 => {
                for (lane, r) in result.iter_mut().enumerate() {
                    let from = (self.vgpr(addr_reg, lane).wrapping_add(offset) >> 2) as usize & (self.wave.lanes() - 1);
                    *r = data(from);
                }
            }
            ds::DS_PERMUTE_B32 => {
                for lane in (0..WAVE_SIZE).filter(|&l| exec >> l & 1 == 1) {
                    let to = (self.vgpr(addr_reg, lane).wrapping_add(offset) >> 2) as usize & (self.wave.lanes() - 1);
                    result[to] = self.vgpr(data0, lane);
                }
            }
            _ => {
                for (lane, r) in result.iter_mut().enumerate() {
                    let from = if offset & 0x8000 != 0 {
                        // quad permute: 2-bit selectors per lane of each quad
                        (lane & !3) | ((offset >> (2 * (lane & 3))) & 3) as usize
                    } else {
                        // bit masks within groups of 32 lanes
                        let (and, or, xor) = (offset & 31, (offset >> 5) & 31, (offset >> 10) & 31);
                        (lane & !31) | ((((lane as u32 & 31) & and) | or) ^ xor) as usize
                    };
                    *r = data(from);
                }
            }
        }
        for (lane, r) in result.iter().enumerate() {
            if exec >> lane & 1 == 1 {
                self.wave.vgpr[i.dst as usize][lane] = *r;
            }
        }
    }

    // ---- FLAT / GLOBAL / SCRATCH ------------------------------------------------

    /// The lane's address: FLAT/GLOBAL 64-bit VGPR pair, or SGPR pair base plus
    /// 32-bit VGPR offset (GLOBAL with saddr); SCRATCH a 32-bit offset.
    fn flat_address(&self, lane: usize) -> Result<u64, ExecError> {
        let i = self.inst;
        let offset = i.imm as i64;
        let saddr = i.src[2];
        let base = match i.encoding {
            Encoding::Scratch => {
                let v = if saddr != src::OFF_7BIT { self.scalar32(saddr)? } else { 0 };
                // With saddr, vaddr is not used (gfx9 scratch has either).
                let a = if saddr != src::OFF_7BIT { 0 } else { self.vgpr(i.src[0] - src::VGPR0, lane) };
                (v.wrapping_add(a)) as u64
            }
            Encoding::Global if saddr != src::OFF_7BIT => self.scalar64(saddr, false)?.wrapping_add(self.vgpr(i.src[0] - src::VGPR0, lane) as u64),
            _ => self.vsrc64(i.src[0], lane, false)?,
        };
        Ok((base as i64).wrapping_add(offset) as u64)
    }

    fn flat(&mut self, env: &mut Environment<'_>) -> Result<StepOutcome, ExecError> {
        let i = self.inst;
        let name = i.mnemonic().unwrap_or("");
        let Some(access) = FlatAccess::parse(name) else {
            return Err(self.unsupported());
        };
        if i.acc {
            return Err(self.unsupported_form("AGPR data"));
        }
        let exec = self.wave.exec_lanes();
        let data = i.src[1] - src::VGPR0;
        // Every lane's global address is checked before any lane's access:
        // a fault leaves the wave as it was (pc, registers, memory), so
        // the instruction can be executed again once it is resolved
        // (XNACK: a retry fault).
        let (bytes, write) = access.extent();
        for lane in 0..WAVE_SIZE {
            if exec >> lane & 1 == 0 {
                continue;
            }
            let address = self.flat_address(lane)?;
            if let Space::Global(a) = self.space(env, address, lane)? {
                env.global.probe(a, bytes, write).map_err(|fault| ExecError::Memory { pc: self.pc, fault })?;
            }
        }
        for lane in 0..WAVE_SIZE {
            if exec >> lane & 1 == 0 {
                continue;
            }
            let address = self.flat_address(lane)?;
            let space = self.space(env, address, lane)?;
            match access {
                FlatAccess::Load { .. } | FlatAccess::Store { .. } | FlatAccess::StoreHigh16 { .. } => {
                    let reg = if matches!(access, FlatAccess::Load { .. }) { i.dst } else { data };
                    self.load_store_lane(env, access, space, lane, reg)?;
                }
                FlatAccess::Atomic { op, wide: false } => {
                    let mut buf = [0u8; 4];
                    self.mem_read(env, space, &mut buf)?;
                    let old = u32::from_le_bytes(buf);
                    // FLAT cmpswap data is {src, cmp}; atomic32 takes (cmp, src) as DS does.
                    let (d0, d1) = if op == AtomicOp::CmpSwap { (self.vgpr(data + 1, lane), self.vgpr(data, lane)) } else { (self.vgpr(data, lane), 0) };
                    let new = atomic32(op, old, d0, d1, self.wave.mode.f32_denormals());
                    self.mem_write(env, space, &new.to_le_bytes())?;
                    if i.glc {
                        self.wave.vgpr[i.dst as usize][lane] = old;
                    }
                }
                FlatAccess::Atomic { op, wide: true } => {
                    let mut buf = [0u8; 8];
                    self.mem_read(env, space, &mut buf)?;
                    let old = u64::from_le_bytes(buf);
                    let d = |k: u16| self.vgpr(data + k, lane) as u64 | (self.vgpr(data + k + 1, lane) as u64) << 32;
                    let new = atomic64(op, old, d(0), d(2));
                    self.mem_write(env, space, &new.to_le_bytes())?;
                    if i.glc {
                        self.wave.vgpr[i.dst as usize][lane] = old as u32;
                        self.wave.vgpr[(i.dst as usize + 1) & 0xff][lane] = (old >> 32) as u32;
                    }
                }
            }
        }
        Ok(StepOutcome::Continue)
    }

    /// Which memory a lane's FLAT/GLOBAL/SCRATCH address falls in.
    fn space(&self, env: &Environment<'_>, address: u64, lane: usize) -> Result<Space, ExecError> {
        let hi = (address >> 32) as u32;
        Ok(match self.inst.encoding {
            Encoding::Scratch => Space::Scratch { lane, offset: address as u32 },
            Encoding::Flat if hi == env.apertures.shared_base_hi => Space::Lds(address as u32),
            Encoding::Flat if hi == env.apertures.private_base_hi => Space::Scratch { lane, offset: address as u32 },
            _ => Space::Global(address),
        })
    }

    fn scratch_index(&self, env: &Environment<'_>, lane: usize, offset: u32, len: usize) -> Result<usize, ExecError> {
        let lane_bytes = env.scratch_lane_bytes as usize;
        let o = offset as usize;
        if o + len > lane_bytes {
            return Err(ExecError::OutOfBounds { pc: self.pc, space: "scratch", offset: offset as u64 });
        }
        Ok(lane * lane_bytes + o)
    }

    fn mem_read(&self, env: &mut Environment<'_>, space: Space, buf: &mut [u8]) -> Result<(), ExecError> {
        match space {
            Space::Global(a) => env.global.read(a, buf).map_err(|fault| ExecError::Memory { pc: self.pc, fault }),
            Space::Lds(a) => {
                let a = self.lds_range(env.lds.len(), a, buf.len())?;
                buf.copy_from_slice(&env.lds[a..a + buf.len()]);
                Ok(())
            }
            Space::Scratch { lane, offset } => {
                let a = self.scratch_index(env, lane, offset, buf.len())?;
                buf.copy_from_slice(&env.scratch[a..a + buf.len()]);
                Ok(())
            }
        }
    }

    fn mem_write(&self, env: &mut Environment<'_>, space: Space, buf: &[u8]) -> Result<(), ExecError> {
        match space {
            Space::Global(a) => env.global.write(a, buf).map_err(|fault| ExecError::Memory { pc: self.pc, fault }),
            Space::Lds(a) => {
                let a = self.lds_range(env.lds.len(), a, buf.len())?;
                env.lds[a..a + buf.len()].copy_from_slice(buf);
                Ok(())
            }
            Space::Scratch { lane, offset } => {
                let a = self.scratch_index(env, lane, offset, buf.len())?;
                env.scratch[a..a + buf.len()].copy_from_slice(buf);
                Ok(())
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Space {
    Global(u64),
    Lds(u32),
    Scratch { lane: usize, offset: u32 },
}

/// The lane a DPP control (VOP_DPP dpp_ctrl, gfx9) reads `lane`'s src0
/// from, or None when it falls outside the row / wave.
fn dpp_source_lane(gen: Generation, control: u16, lane: usize) -> Option<usize> {
    let row = lane & !15;
    let in_row = lane & 15;
    let c = control as usize;
    if gen == Generation::Gfx10 {
        // GFX10 DPP16: no wave shifts or row broadcasts; row_share and
        // row_xmask instead.
        match c {
            0x130..=0x13f | 0x142 | 0x143 => return None,
            0x150..=0x15f => return Some(row | (c & 15)),
            0x160..=0x16f => return Some(row | (in_row ^ (c & 15))),
            _ => {}
        }
    }
    match c {
        0x000..=0x0ff => Some((lane & !3) | (c >> (2 * (lane & 3))) & 3),
        0x101..=0x10f => (in_row + (c & 15) < 16).then(|| lane + (c & 15)),
        0x111..=0x11f => (in_row >= (c & 15)).then(|| lane - (c & 15)),
        0x121..=0x12f => Some(row | ((in_row + 16 - (c & 15)) & 15)),
        0x130 => (lane < 63).then_some(lane + 1),      // wave_shl:1
        0x134 => Some((lane + 1) & 63),                 // wave_rol:1
        0x138 => lane.checked_sub(1),                   // wave_shr:1
        0x13c => Some((lane + 63) & 63),                // wave_ror:1
        0x140 => Some(row | (15 - in_row)),             // row_mirror
        0x141 => Some((lane & !7) | (7 - (lane & 7))),  // row_half_mirror
        // row_bcast:15: the last lane of each row feeds the next row
        0x142 => (row >= 16).then(|| row - 1),
        // row_bcast:31: lane 31 feeds rows 2 and 3
        0x143 => (row >= 32).then_some(31),
        _ => None,
    }
}

/// v_perm_b32: each byte of the result picks a byte of {s0, s1} (s1 is
/// bytes 0-3) by the matching byte of `sel`; 8-11 replicate the sign bit of
/// bytes 1, 3, 5, 7; 12 gives 0x00 and 13 and above 0xff.
fn byte_permute(s0: u32, s1: u32, sel: u32) -> u32 {
    let input = (s0 as u64) << 32 | s1 as u64;
    let byte = |k: u32| (input >> (8 * k)) as u8;
    (0..4).fold(0u32, |acc, n| {
        let b = match (sel >> (8 * n)) & 0xff {
            k @ 0..=7 => byte(k),
            k @ 8..=11 => {
                if byte(2 * (k - 8) + 1) & 0x80 != 0 {
                    0xff
                } else {
                    0
                }
            }
            12 => 0,
            _ => 0xff,
        };
        acc | (b as u32) << (8 * n)
    })
}

/// SDWA select value for the whole dword.
const SDWA_DWORD: u8 = 6;

/// The byte (sel 0-3) or word (4-5) of `v` an SDWA source select names,
/// zero- or sign-extended; sel 6 is the whole dword.
fn sdwa_select(v: u32, sel: u8, sext: bool) -> u32 {
    let (shift, width) = match sel {
        0..=3 => (8 * sel as u32, 8),
        4 | 5 => (16 * (sel as u32 - 4), 16),
        _ => return v,
    };
    let field = (v >> shift) & ((1u32 << width) - 1);
    if sext {
        ((field << (32 - width)) as i32 >> (32 - width)) as u32
    } else {
        field
    }
}

fn nz(v: u32) -> (u32, Option<bool>) {
    (v, Some(v != 0))
}

fn sext24(v: u32) -> i32 {
    ((v << 8) as i32) >> 8
}

const HWREG_MODE: u32 = 1;
const HWREG_SH_MEM_BASES: u32 = 15;
/// GFX10 HW_REG_FLAT_SCR_LO / _HI.
const HWREG_FLAT_SCR_LO: u32 = 20;
const HWREG_FLAT_SCR_HI: u32 = 21;

/// (id, offset, size) of a SOPK hwreg immediate: id [5:0], offset [10:6], size-1 [15:11].
fn hwreg(imm: u32) -> (u32, u32, u32) {
    (imm & 63, (imm >> 6) & 31, ((imm >> 11) & 31) + 1)
}

/// VALU opcodes whose operands and result are f32 (take abs/neg/clamp/omod).
fn is_f32_op(op: u16) -> bool {
    matches!(
        op,
        vop3::V_ADD_F32
            | vop3::V_SUB_F32
            | vop3::V_SUBREV_F32
            | vop3::V_MUL_F32
            | vop3::V_MIN_F32
            | vop3::V_MAX_F32
            | vop3::V_FMA_F32
            | vop3::V_FMAC_F32
            | opcodes10::vop3::V_FMAMK_F32
            | opcodes10::vop3::V_FMAAK_F32
            | vop3::V_MAC_F32
            | vop3::V_MAD_F32
            | vop3::V_MIN3_F32
            | vop3::V_MAX3_F32
            | vop3::V_MED3_F32
            | vop3::V_CVT_F32_I32
            | vop3::V_CVT_F32_U32
            | vop3::V_CVT_I32_F32
            | vop3::V_CVT_U32_F32
            | vop3::V_CNDMASK_B32
            | vop3::V_RCP_F32
            | vop3::V_RCP_IFLAG_F32
            | vop3::V_SQRT_F32
            | vop3::V_RSQ_F32
            | vop3::V_FLOOR_F32
            | vop3::V_CEIL_F32
            | vop3::V_TRUNC_F32
            | vop3::V_RNDNE_F32
            | vop3::V_FRACT_F32
            | vop3::V_LDEXP_F32
            | vop3::V_FREXP_MANT_F32
            | vop3::V_FREXP_EXP_I32_F32
            | vop3::V_CVT_FLR_I32_F32
            | vop3::V_CVT_RPI_I32_F32
            | vop3::V_CVT_F16_F32
            | vop3::V_DIV_SCALE_F32
            | vop3::V_DIV_FMAS_F32
            | vop3::V_DIV_FIXUP_F32
            | vop3::V_LOG_F32
            | vop3::V_EXP_F32
            | vop3::V_SIN_F32
            | vop3::V_COS_F32
    ) || op == VOP3_FROM_VOP2 + vop2::V_MADMK_F32
        || op == VOP3_FROM_VOP2 + vop2::V_MADAK_F32
}

/// VALU opcodes with an f64 result (written to a VGPR pair).
fn is_f64_result_op(op: u16) -> bool {
    matches!(
        op,
        vop3::V_ADD_F64
            | vop3::V_MUL_F64
            | vop3::V_FMA_F64
            | vop3::V_FMAC_F64
            | vop3::V_MIN_F64
            | vop3::V_MAX_F64
            | vop3::V_LDEXP_F64
            | vop3::V_CVT_F64_F32
            | vop3::V_CVT_F64_I32
            | vop3::V_CVT_F64_U32
            | vop3::V_RCP_F64
            | vop3::V_SQRT_F64
            | vop3::V_RSQ_F64
            | vop3::V_FLOOR_F64
            | vop3::V_CEIL_F64
            | vop3::V_TRUNC_F64
            | vop3::V_RNDNE_F64
            | vop3::V_FRACT_F64
            | vop3::V_DIV_SCALE_F64
            | vop3::V_DIV_FMAS_F64
            | vop3::V_DIV_FIXUP_F64
            | vop3::V_FREXP_MANT_F64
    )
}

/// The 16-bit-result ops of [`Context::valu`] (the integer ones and
/// v_cvt_f16_f32), whose high half GFX10 keeps.
fn is_16bit_result_op(op: u16) -> bool {
    matches!(
        op,
        vop3::V_ADD_U16
            | vop3::V_SUB_U16
            | vop3::V_SUBREV_U16
            | vop3::V_MUL_LO_U16
            | vop3::V_LSHLREV_B16
            | vop3::V_LSHRREV_B16
            | vop3::V_ASHRREV_I16
            | vop3::V_MAX_U16
            | vop3::V_MIN_U16
            | vop3::V_MAX_I16
            | vop3::V_MIN_I16
            | vop3::V_CVT_F16_F32
    )
}

/// VALU opcodes on binary16 values ([`Context::valu_f16`]).
fn is_f16_op(op: u16) -> bool {
    matches!(
        op,
        vop3::V_ADD_F16
            | vop3::V_SUB_F16
            | vop3::V_SUBREV_F16
            | vop3::V_MUL_F16
            | vop3::V_MAX_F16
            | vop3::V_MIN_F16
            | vop3::V_FMA_F16
            | vop3::V_SQRT_F16
            | vop3::V_PACK_B32_F16
            | opcodes10::vop3::V_FMAC_F16
    )
}

/// 32-bit integer adds and subtracts whose clamp bit saturates the result.
fn saturating_int_op(op: u16) -> bool {
    matches!(op, vop3::V_ADD_U32 | vop3::V_SUB_U32 | vop3::V_SUBREV_U32 | vop3::V_ADD_I32 | vop3::V_SUB_I32)
}

/// frexp of a finite non-zero f64: (mantissa with |m| in [0.5, 1) and the
/// sign of a, exponent) with a = m 2^e.
fn frexp64(a: u64) -> (u64, i32) {
    let field = ((a >> 52) & 0x7ff) as i32;
    let e = if field == 0 {
        // denormal: 0.frac * 2^-1022
        -1022 - ((a & 0x000f_ffff_ffff_ffff).leading_zeros() as i32 - 12)
    } else {
        field - 1022
    };
    (sf64::ldexp(a, -e, Denormals::Keep), e)
}

/// Integer ops whose VOP3 form may carry source modifiers: v_cvt_f32_f16
/// (an f16 source) is the only one so far.
fn integer_op_taking_source_modifiers(op: u16) -> bool {
    op == vop3::V_CVT_F32_F16
}

/// The exponent frexp reports: a = mant * 2^e with |mant| in [0.5, 1).
fn frexp_exponent(a: u32) -> i32 {
    let field = sf::exponent_field(a);
    if field == 0 {
        // denormal: 0.frac * 2^-126
        let frac = a & 0x7f_ffff;
        -126 - (frac.leading_zeros() as i32 - 9)
    } else {
        field - 126
    }
}

/// v_div_scale_f32 (MI200 ISA, VOP3 pseudo-code): scales the operand
/// `s0` (the numerator or the denominator of `s2 / s1`) by 2^+-64 when the
/// division would otherwise lose range; the flag tells v_div_fmas to undo it.
fn div_scale_f32(s0: u32, s1: u32, s2: u32) -> (u32, bool) {
    let zero = |x: u32| x & 0x7fff_ffff == 0;
    if zero(s2) || zero(s1) {
        return (sf::QUIET_NAN, false);
    }
    if sf::is_nan(s0) || sf::is_nan(s1) || sf::is_nan(s2) {
        return (sf::QUIET_NAN, false);
    }
    let e1 = sf::exponent_field(s1);
    let e2 = sf::exponent_field(s2);
    let scale_up = |x: u32| sf::ldexp(x, 64, Denormals::Keep);
    let scale_down = |x: u32| sf::ldexp(x, -64, Denormals::Keep);
    // Exponents of the reciprocal and of the quotient, by the exponent fields.
    let rcp_denormal = e1 >= 253;
    // Borderline cases may go either way: scaling is exact and undone by
    // v_div_fmas with one rounding.
    let quotient_denormal = e2 - e1 <= -126;
    if e2 - e1 >= 96 {
        // N/D near the largest float: scale the denominator up
        (if s0 == s1 { scale_up(s0) } else { s0 }, true)
    } else if e1 == 0 {
        (scale_up(s0), false)
    } else if rcp_denormal && quotient_denormal {
        // Huge denominator, tiny quotient: the denominator scaled down makes
        // the quotient 2^64 larger; v_div_fmas (small S2) scales back down.
        (if s0 == s1 { scale_down(s0) } else { s0 }, true)
    } else if rcp_denormal {
        (scale_down(s0), false)
    } else if quotient_denormal {
        (if s0 == s2 { scale_up(s0) } else { s0 }, true)
    } else if e2 <= 23 {
        // tiny numerator
        (scale_up(s0), false)
    } else {
        (s0, false)
    }
}

/// v_div_scale_f64: [`div_scale_f32`] with binary64's exponent range and a
/// 2^+-128 scale.
fn div_scale_f64(s0: u64, s1: u64, s2: u64) -> (u64, bool) {
    let zero = |x: u64| x << 1 == 0;
    if zero(s2) || zero(s1) || sf64::is_nan(s0) || sf64::is_nan(s1) || sf64::is_nan(s2) {
        return (sf64::QUIET_NAN, false);
    }
    let e1 = sf64::exponent_field(s1);
    let e2 = sf64::exponent_field(s2);
    let up = |x: u64| sf64::ldexp(x, 128, Denormals::Keep);
    let down = |x: u64| sf64::ldexp(x, -128, Denormals::Keep);
    let rcp_denormal = e1 >= 2045;
    let quotient_denormal = e2 - e1 <= -1022;
    if e2 - e1 >= 768 {
        (if s0 == s1 { up(s0) } else { s0 }, true)
    } else if e1 == 0 {
        (up(s0), false)
    } else if rcp_denormal && quotient_denormal {
        (if s0 == s1 { down(s0) } else { s0 }, true)
    } else if rcp_denormal {
        (down(s0), false)
    } else if quotient_denormal {
        (if s0 == s2 { up(s0) } else { s0 }, true)
    } else if e2 <= 53 {
        (up(s0), false)
    } else {
        (s0, false)
    }
}

/// v_div_fixup_f64: as [`div_fixup_f32`].
fn div_fixup_f64(s0: u64, s1: u64, s2: u64) -> u64 {
    const INF: u64 = 0x7ff0_0000_0000_0000;
    let sign = (s1 ^ s2) & 1 << 63;
    let (abs1, abs2) = (s1 & !(1 << 63), s2 & !(1 << 63));
    if sf64::is_nan(s2) {
        return s2 | 1 << 51;
    }
    if sf64::is_nan(s1) {
        return s1 | 1 << 51;
    }
    if abs1 == 0 && abs2 == 0 || abs1 == INF && abs2 == INF {
        return sf64::QUIET_NAN;
    }
    if abs1 == 0 || abs2 == INF {
        return sign | INF;
    }
    if abs1 == INF || abs2 == 0 {
        return sign;
    }
    if s0 & INF == INF {
        // the scaled chain overflowed: see div_fixup_f32
        return sf64::div(s2, s1, Denormals::Keep);
    }
    sign | (s0 & !(1 << 63))
}

/// v_div_fixup_f32: the special cases of `s2 / s1` around the quotient `s0`
/// v_div_fmas computed.
fn div_fixup_f32(s0: u32, s1: u32, s2: u32) -> u32 {
    let sign = (s1 ^ s2) & 0x8000_0000;
    let abs1 = s1 & 0x7fff_ffff;
    let abs2 = s2 & 0x7fff_ffff;
    if sf::is_nan(s2) {
        return s2 | 0x0040_0000;
    }
    if sf::is_nan(s1) {
        return s1 | 0x0040_0000;
    }
    if abs1 == 0 && abs2 == 0 || abs1 == 0x7f80_0000 && abs2 == 0x7f80_0000 {
        return sf::QUIET_NAN;
    }
    if abs1 == 0 || abs2 == 0x7f80_0000 {
        return sign | 0x7f80_0000;
    }
    if abs1 == 0x7f80_0000 || abs2 == 0 {
        return sign;
    }
    if s0 & 0x7f80_0000 == 0x7f80_0000 {
        // The scaled v_div_fmas chain overflowed (|s2 / s1| beyond 2^192 or
        // so): the ISA text leaves this result to the hardware's internals;
        // the IEEE quotient is what a correctly rounded division must give.
        return sf::div(s2, s1, Denormals::Keep);
    }
    sign | (s0 & 0x7fff_ffff)
}

/// The bit of v_cmp_class's mask that `v` belongs to: 0 sNaN, 1 qNaN,
/// 2 -inf, 3 -normal, 4 -denormal, 5 -0, 6 +0, 7 +denormal, 8 +normal, 9 +inf.
fn f32_class(v: u32) -> u32 {
    let negative = v >> 31 == 1;
    let exp = (v >> 23) & 0xff;
    let frac = v & 0x7f_ffff;
    match (exp, frac) {
        (0xff, 0) => {
            if negative {
                2
            } else {
                9
            }
        }
        (0xff, f) => {
            if f & 0x40_0000 != 0 {
                1
            } else {
                0
            }
        }
        (0, 0) => {
            if negative {
                5
            } else {
                6
            }
        }
        (0, _) => {
            if negative {
                4
            } else {
                7
            }
        }
        _ => {
            if negative {
                3
            } else {
                8
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    F32,
    F64,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    ClassF32,
    ClassF64,
    F16,
    ClassF16,
}

/// A VOPC compare, from its LLVM mnemonic `v_cmp[x]_<cond>_<type>`.
struct Comparison {
    kind: Kind,
    cond: &'static str,
    writes_exec: bool,
}

impl Comparison {
    fn parse(name: &'static str) -> Option<Comparison> {
        let (writes_exec, rest) = if let Some(r) = name.strip_prefix("v_cmpx_") {
            (true, r)
        } else {
            (false, name.strip_prefix("v_cmp_")?)
        };
        let (cond, ty) = rest.split_once('_')?;
        let kind = match (cond, ty) {
            ("class", "f32") => Kind::ClassF32,
            (_, "f32") => Kind::F32,
            ("class", "f64") => Kind::ClassF64,
            (_, "f64") => Kind::F64,
            ("class", "f16") => Kind::ClassF16,
            (_, "f16") => Kind::F16,
            (_, "i16") => Kind::I16,
            (_, "u16") => Kind::U16,
            (_, "i32") => Kind::I32,
            (_, "u32") => Kind::U32,
            (_, "i64") => Kind::I64,
            (_, "u64") => Kind::U64,
            _ => return None,
        };
        Some(Comparison { kind, cond, writes_exec })
    }

    fn int_result(&self, ord: core::cmp::Ordering) -> bool {
        use core::cmp::Ordering::*;
        match self.cond {
            "f" => false,
            "lt" => ord == Less,
            "eq" => ord == Equal,
            "le" => ord != Greater,
            "gt" => ord == Greater,
            "ne" | "lg" => ord != Equal,
            "ge" => ord != Less,
            _ => true, // "t"
        }
    }

    fn float_result(&self, ord: sf::Ordering) -> bool {
        use sf::Ordering::*;
        let (lt, eq, gt, un) = (ord == Less, ord == Equal, ord == Greater, ord == Unordered);
        match self.cond {
            "f" => false,
            "lt" => lt,
            "eq" => eq,
            "le" => lt || eq,
            "gt" => gt,
            "lg" => lt || gt,
            "ge" => gt || eq,
            "o" => !un,
            "u" => un,
            "nge" => !(gt || eq),
            "nlg" => !(lt || gt),
            "ngt" => !gt,
            "nle" => !(lt || eq),
            "neq" => !eq,
            "nlt" => !lt,
            _ => true, // "tru"
        }
    }
}

/// Read-modify-write operations shared by DS and FLAT/GLOBAL atomics.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum AtomicOp {
    Swap,
    CmpSwap,
    Add,
    Sub,
    MinI,
    MaxI,
    MinU,
    MaxU,
    And,
    Or,
    Xor,
    Inc,
    Dec,
    Rsub,
    AddF32,
    MinF32,
    MaxF32,
    AddF64,
    MinF64,
    MaxF64,
}

fn op_as_atomic(op: u16) -> AtomicOp {
    match op {
        ds::DS_ADD_U32 | ds::DS_ADD_RTN_U32 => AtomicOp::Add,
        ds::DS_SUB_U32 | ds::DS_SUB_RTN_U32 => AtomicOp::Sub,
        ds::DS_MIN_I32 | ds::DS_MIN_RTN_I32 => AtomicOp::MinI,
        ds::DS_MAX_I32 | ds::DS_MAX_RTN_I32 => AtomicOp::MaxI,
        ds::DS_MIN_U32 | ds::DS_MIN_RTN_U32 => AtomicOp::MinU,
        ds::DS_MAX_U32 | ds::DS_MAX_RTN_U32 => AtomicOp::MaxU,
        ds::DS_AND_B32 | ds::DS_AND_RTN_B32 => AtomicOp::And,
        ds::DS_OR_B32 | ds::DS_OR_RTN_B32 => AtomicOp::Or,
        ds::DS_XOR_B32 | ds::DS_XOR_RTN_B32 => AtomicOp::Xor,
        ds::DS_ADD_F32 | ds::DS_ADD_RTN_F32 => AtomicOp::AddF32,
        ds::DS_WRXCHG_RTN_B32 => AtomicOp::Swap,
        ds::DS_MIN_F32 | ds::DS_MIN_RTN_F32 => AtomicOp::MinF32,
        ds::DS_MAX_F32 | ds::DS_MAX_RTN_F32 => AtomicOp::MaxF32,
        ds::DS_INC_U32 | ds::DS_INC_RTN_U32 => AtomicOp::Inc,
        ds::DS_DEC_U32 | ds::DS_DEC_RTN_U32 => AtomicOp::Dec,
        ds::DS_RSUB_U32 | ds::DS_RSUB_RTN_U32 => AtomicOp::Rsub,
        _ => AtomicOp::CmpSwap,
    }
}

/// A 64-bit DS atomic: its operation and whether it returns the old value
/// (the _RTN forms, numbered 32 above the plain ones, and ds_wrxchg).
fn ds_atomic64(op: u16) -> Option<(AtomicOp, bool)> {
    let (plain, returns) = match op {
        ds::DS_ADD_F64 => return Some((AtomicOp::AddF64, false)),
        ds::DS_ADD_RTN_F64 => return Some((AtomicOp::AddF64, true)),
        ds::DS_WRXCHG_RTN_B64 => return Some((AtomicOp::Swap, true)),
        ds::DS_ADD_RTN_U64..=ds::DS_MAX_RTN_F64 => (op - 32, true),
        _ => (op, false),
    };
    let atomic = match plain {
        ds::DS_ADD_U64 => AtomicOp::Add,
        ds::DS_SUB_U64 => AtomicOp::Sub,
        ds::DS_RSUB_U64 => AtomicOp::Rsub,
        ds::DS_INC_U64 => AtomicOp::Inc,
        ds::DS_DEC_U64 => AtomicOp::Dec,
        ds::DS_MIN_I64 => AtomicOp::MinI,
        ds::DS_MAX_I64 => AtomicOp::MaxI,
        ds::DS_MIN_U64 => AtomicOp::MinU,
        ds::DS_MAX_U64 => AtomicOp::MaxU,
        ds::DS_AND_B64 => AtomicOp::And,
        ds::DS_OR_B64 => AtomicOp::Or,
        ds::DS_XOR_B64 => AtomicOp::Xor,
        ds::DS_CMPST_B64 => AtomicOp::CmpSwap,
        ds::DS_MIN_F64 => AtomicOp::MinF64,
        ds::DS_MAX_F64 => AtomicOp::MaxF64,
        _ => return None,
    };
    Some((atomic, returns))
}

/// Whether a 32-bit DS atomic returns the old value in vdst.
fn ds_atomic_returns(op: u16) -> bool {
    matches!(
        op,
        ds::DS_ADD_RTN_U32
            | ds::DS_SUB_RTN_U32
            | ds::DS_RSUB_RTN_U32
            | ds::DS_INC_RTN_U32
            | ds::DS_DEC_RTN_U32
            | ds::DS_MIN_RTN_I32
            | ds::DS_MAX_RTN_I32
            | ds::DS_MIN_RTN_U32
            | ds::DS_MAX_RTN_U32
            | ds::DS_AND_RTN_B32
            | ds::DS_OR_RTN_B32
            | ds::DS_XOR_RTN_B32
            | ds::DS_ADD_RTN_F32
            | ds::DS_WRXCHG_RTN_B32
            | ds::DS_CMPST_RTN_B32
            | ds::DS_MIN_RTN_F32
            | ds::DS_MAX_RTN_F32
    )
}

/// The new value of a 32-bit atomic (whether the old one is returned is the
/// caller's: DS by opcode, [`ds_atomic_returns`]; FLAT by GLC). CmpSwap stores `d1` if memory equals `d0` (DS
/// cmpst's data0/data1 order).
fn atomic32(op: AtomicOp, old: u32, d0: u32, d1: u32, den: Denormals) -> u32 {
    match op {
        AtomicOp::Swap => d0,
        AtomicOp::CmpSwap => {
            if old == d0 {
                d1
            } else {
                old
            }
        }
        AtomicOp::Add => old.wrapping_add(d0),
        AtomicOp::Sub => old.wrapping_sub(d0),
        AtomicOp::MinI => (old as i32).min(d0 as i32) as u32,
        AtomicOp::MaxI => (old as i32).max(d0 as i32) as u32,
        AtomicOp::MinU => old.min(d0),
        AtomicOp::MaxU => old.max(d0),
        AtomicOp::And => old & d0,
        AtomicOp::Or => old | d0,
        AtomicOp::Xor => old ^ d0,
        AtomicOp::Inc => {
            if old >= d0 {
                0
            } else {
                old + 1
            }
        }
        AtomicOp::Dec => {
            if old == 0 || old > d0 {
                d0
            } else {
                old - 1
            }
        }
        AtomicOp::AddF32 => sf::add(old, d0, den),
        AtomicOp::MinF32 => sf::min(old, d0, den),
        AtomicOp::MaxF32 => sf::max(old, d0, den),
        AtomicOp::Rsub => d0.wrapping_sub(old),
        // f64 operations are 64-bit only (FlatAccess::parse never pairs them with 32-bit data)
        AtomicOp::AddF64 | AtomicOp::MinF64 | AtomicOp::MaxF64 => old,
    }
}

fn atomic64(op: AtomicOp, old: u64, d0: u64, d1: u64) -> u64 {
    match op {
        AtomicOp::Swap => d0,
        AtomicOp::CmpSwap => {
            if old == d1 {
                d0
            } else {
                old
            }
        }
        AtomicOp::Add => old.wrapping_add(d0),
        AtomicOp::Sub => old.wrapping_sub(d0),
        AtomicOp::MinI => (old as i64).min(d0 as i64) as u64,
        AtomicOp::MaxI => (old as i64).max(d0 as i64) as u64,
        AtomicOp::MinU => old.min(d0),
        AtomicOp::MaxU => old.max(d0),
        AtomicOp::And => old & d0,
        AtomicOp::Or => old | d0,
        AtomicOp::Xor => old ^ d0,
        AtomicOp::Inc => {
            if old >= d0 {
                0
            } else {
                old + 1
            }
        }
        AtomicOp::Dec => {
            if old == 0 || old > d0 {
                d0
            } else {
                old - 1
            }
        }
        AtomicOp::Rsub => d0.wrapping_sub(old),
        AtomicOp::AddF64 => sf64::add(old, d0, Denormals::Keep),
        AtomicOp::MinF64 => sf64::min_max(old, d0, true, Denormals::Keep),
        AtomicOp::MaxF64 => sf64::min_max(old, d0, false, Denormals::Keep),
        // 32-bit float operations have no 64-bit form
        AtomicOp::AddF32 | AtomicOp::MinF32 | AtomicOp::MaxF32 => old,
    }
}

/// A FLAT/GLOBAL/SCRATCH operation, from its LLVM mnemonic.
#[derive(Clone, Copy)]
enum FlatAccess {
    Load { bytes: usize, signed: bool },
    Store { bytes: usize },
    /// `*_store_byte_d16_hi` / `*_store_short_d16_hi`: bits 31:16 of the data.
    StoreHigh16 { bytes: usize },
    Atomic { op: AtomicOp, wide: bool },
}

impl FlatAccess {
    /// Bytes a lane accesses, and whether it writes.
    fn extent(self) -> (usize, bool) {
        match self {
            FlatAccess::Load { bytes, .. } => (bytes, false),
            FlatAccess::Store { bytes } | FlatAccess::StoreHigh16 { bytes } => (bytes, true),
            FlatAccess::Atomic { wide, .. } => (if wide { 8 } else { 4 }, true),
        }
    }

    fn parse(name: &str) -> Option<FlatAccess> {
        let (_, rest) = name.split_once('_')?;
        if let Some(ty) = rest.strip_prefix("load_") {
            let (bytes, signed) = match ty {
                "ubyte" => (1, false),
                "sbyte" => (1, true),
                "ushort" => (2, false),
                "sshort" => (2, true),
                "dword" => (4, false),
                "dwordx2" => (8, false),
                "dwordx3" => (12, false),
                "dwordx4" => (16, false),
                _ => return None,
            };
            return Some(FlatAccess::Load { bytes, signed });
        }
        if let Some(ty) = rest.strip_prefix("store_") {
            match ty {
                "byte_d16_hi" => return Some(FlatAccess::StoreHigh16 { bytes: 1 }),
                "short_d16_hi" => return Some(FlatAccess::StoreHigh16 { bytes: 2 }),
                _ => {}
            }
            let bytes = match ty {
                "byte" => 1,
                "short" => 2,
                "dword" => 4,
                "dwordx2" => 8,
                "dwordx3" => 12,
                "dwordx4" => 16,
                _ => return None,
            };
            return Some(FlatAccess::Store { bytes });
        }
        let ty = rest.strip_prefix("atomic_")?;
        let (ty, wide) = match ty.strip_suffix("_x2") {
            Some(t) => (t, true),
            None => (ty, false),
        };
        let op = match ty {
            "swap" => AtomicOp::Swap,
            "cmpswap" => AtomicOp::CmpSwap,
            "add" => AtomicOp::Add,
            "sub" => AtomicOp::Sub,
            "smin" => AtomicOp::MinI,
            "smax" => AtomicOp::MaxI,
            "umin" => AtomicOp::MinU,
            "umax" => AtomicOp::MaxU,
            "and" => AtomicOp::And,
            "or" => AtomicOp::Or,
            "xor" => AtomicOp::Xor,
            "inc" => AtomicOp::Inc,
            "dec" => AtomicOp::Dec,
            "add_f32" if !wide => AtomicOp::AddF32,
            "add_f64" => return Some(FlatAccess::Atomic { op: AtomicOp::AddF64, wide: true }),
            "min_f64" => return Some(FlatAccess::Atomic { op: AtomicOp::MinF64, wide: true }),
            "max_f64" => return Some(FlatAccess::Atomic { op: AtomicOp::MaxF64, wide: true }),
            _ => return None,
        };
        Some(FlatAccess::Atomic { op, wide })
    }
}
