// SPDX-License-Identifier: GPL-2.0 OR MIT
//! Instruction decoder for GFX9 as gfx90a implements it and GFX10.3
//! (gfx1030).
//!
//! Field layouts follow LLVM's `llvm/lib/Target/AMDGPU/SIInstrFormats.td`,
//! `SOPInstructions.td`, `SMInstructions.td`, `VOPInstructions.td`,
//! `VOP3PInstructions.td`, `DSInstructions.td`, `FLATInstructions.td` and
//! `BUFInstructions.td` (the `_vi`/gfx9/gfx90a and `_gfx10` encodings);
//! opcode numbers come from [`super::opcodes`] (gfx90a) and
//! [`super::opcodes10`] (gfx1030), generated from LLVM's disassembler.
//!
//! There is one opcode space, GFX9's: a GFX10 instruction GFX9 also has is
//! decoded to its GFX9 opcode, one GFX9 lacks to an opcode past GFX9's
//! (`opcodes10::<class>::EXT_BASE`), so the interpreter has one ALU; the
//! few instructions whose meaning differs between the generations (GFX10's
//! `v_cmpx` writes EXEC only) look at [`Instruction::gen`].
//!
//! VALU instructions of every form (VOP1/VOP2/VOPC in their 32-bit, SDWA and
//! DPP forms, VOP3) are normalised into [`Encoding::Vop3`] opcode space
//! (VOPC `op`, VOP2 `0x100 + op`, VOP1 `0x140 + op`, as GFX9's VOP3 encoding
//! numbers them), with the implicit VCC operands of the 32-bit forms made
//! explicit, so the interpreter has one ALU.

use super::opcodes;
use super::opcodes10;

/// The instruction-set generation a wave runs, picked by the virtual GPU
/// from its `GfxVersion`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum Generation {
    /// GFX9 as gfx90a implements it (wave64).
    #[default]
    Gfx9 = 0,
    /// GFX10.3 (gfx1030; wave32 or wave64).
    Gfx10 = 1,
}

/// An encoding class (the instruction's format).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Sop2,
    Sopk,
    Sop1,
    Sopc,
    Sopp,
    Smem,
    /// Every VALU form except VOP3P; see the module comment.
    Vop3,
    Vop3p,
    Ds,
    Flat,
    Scratch,
    Global,
    Mubuf,
}

impl Encoding {
    /// The encoding's name, as the ISA manual writes it.
    pub const fn name(self) -> &'static str {
        match self {
            Encoding::Sop2 => "SOP2",
            Encoding::Sopk => "SOPK",
            Encoding::Sop1 => "SOP1",
            Encoding::Sopc => "SOPC",
            Encoding::Sopp => "SOPP",
            Encoding::Smem => "SMEM",
            Encoding::Vop3 => "VALU",
            Encoding::Vop3p => "VOP3P",
            Encoding::Ds => "DS",
            Encoding::Flat => "FLAT",
            Encoding::Scratch => "SCRATCH",
            Encoding::Global => "GLOBAL",
            Encoding::Mubuf => "MUBUF",
        }
    }

    /// LLVM's (opcode, mnemonic) table for this class.
    pub const fn names(self) -> &'static [(u16, &'static str)] {
        match self {
            Encoding::Sop2 => opcodes::sop2::NAMES,
            Encoding::Sopk => opcodes::sopk::NAMES,
            Encoding::Sop1 => opcodes::sop1::NAMES,
            Encoding::Sopc => opcodes::sopc::NAMES,
            Encoding::Sopp => opcodes::sopp::NAMES,
            Encoding::Smem => opcodes::smem::NAMES,
            Encoding::Vop3 => opcodes::vop3::NAMES,
            Encoding::Vop3p => opcodes::vop3p::NAMES,
            Encoding::Ds => opcodes::ds::NAMES,
            Encoding::Flat => opcodes::flat::NAMES,
            Encoding::Scratch => opcodes::scratch::NAMES,
            Encoding::Global => opcodes::global::NAMES,
            Encoding::Mubuf => opcodes::mubuf::NAMES,
        }
    }
}

/// The mnemonic LLVM gives `op` in `encoding`, if LLVM decodes it.
/// VALU opcodes without a VOP3 form (v_readfirstlane_b32, v_madmk_f32, ...)
/// are named from the VOP1/VOP2 tables.
pub fn mnemonic(encoding: Encoding, op: u16) -> Option<&'static str> {
    let found = lookup(encoding.names(), op).or_else(|| lookup(ext_names(encoding), op));
    if found.is_none() && encoding == Encoding::Vop3 {
        if (VOP3_FROM_VOP1..VOP3_FROM_VOP1 + 0x80).contains(&op) {
            return lookup(opcodes::vop1::NAMES, op - VOP3_FROM_VOP1);
        }
        if (VOP3_FROM_VOP2..VOP3_FROM_VOP1).contains(&op) {
            return lookup(opcodes::vop2::NAMES, op - VOP3_FROM_VOP2);
        }
    }
    found
}

fn lookup(table: &'static [(u16, &'static str)], op: u16) -> Option<&'static str> {
    table.binary_search_by_key(&op, |&(o, _)| o).ok().map(|i| table[i].1)
}

/// The GFX10-only instructions of a class (opcodes past GFX9's).
pub const fn ext_names(encoding: Encoding) -> &'static [(u16, &'static str)] {
    match encoding {
        Encoding::Sop2 => opcodes10::sop2::EXT_NAMES,
        Encoding::Sopk => opcodes10::sopk::EXT_NAMES,
        Encoding::Sop1 => opcodes10::sop1::EXT_NAMES,
        Encoding::Sopc => opcodes10::sopc::EXT_NAMES,
        Encoding::Sopp => opcodes10::sopp::EXT_NAMES,
        Encoding::Smem => opcodes10::smem::EXT_NAMES,
        Encoding::Vop3 => opcodes10::vop3::EXT_NAMES,
        Encoding::Vop3p => opcodes10::vop3p::EXT_NAMES,
        Encoding::Ds => opcodes10::ds::EXT_NAMES,
        Encoding::Flat => opcodes10::flat::EXT_NAMES,
        Encoding::Scratch => opcodes10::scratch::EXT_NAMES,
        Encoding::Global => opcodes10::global::EXT_NAMES,
        Encoding::Mubuf => opcodes10::mubuf::EXT_NAMES,
    }
}

/// (GFX10 opcode, mnemonic) of a class (VALU: GFX10 VOP3 numbering).
const fn gfx10_names(encoding: Encoding) -> &'static [(u16, &'static str)] {
    match encoding {
        Encoding::Sop2 => opcodes10::sop2::NAMES,
        Encoding::Sopk => opcodes10::sopk::NAMES,
        Encoding::Sop1 => opcodes10::sop1::NAMES,
        Encoding::Sopc => opcodes10::sopc::NAMES,
        Encoding::Sopp => opcodes10::sopp::NAMES,
        Encoding::Smem => opcodes10::smem::NAMES,
        Encoding::Vop3 => opcodes10::vop3::NAMES,
        Encoding::Vop3p => opcodes10::vop3p::NAMES,
        Encoding::Ds => opcodes10::ds::NAMES,
        Encoding::Flat => opcodes10::flat::NAMES,
        Encoding::Scratch => opcodes10::scratch::NAMES,
        Encoding::Global => opcodes10::global::NAMES,
        Encoding::Mubuf => opcodes10::mubuf::NAMES,
    }
}

/// GFX10 opcode -> interpreter opcode for a class.
const fn gfx10_map(encoding: Encoding) -> &'static [(u16, u16)] {
    match encoding {
        Encoding::Sop2 => opcodes10::sop2::MAP,
        Encoding::Sopk => opcodes10::sopk::MAP,
        Encoding::Sop1 => opcodes10::sop1::MAP,
        Encoding::Sopc => opcodes10::sopc::MAP,
        Encoding::Sopp => opcodes10::sopp::MAP,
        Encoding::Smem => opcodes10::smem::MAP,
        Encoding::Vop3 => opcodes10::vop3::MAP,
        Encoding::Vop3p => opcodes10::vop3p::MAP,
        Encoding::Ds => opcodes10::ds::MAP,
        Encoding::Flat => opcodes10::flat::MAP,
        Encoding::Scratch => opcodes10::scratch::MAP,
        Encoding::Global => opcodes10::global::MAP,
        Encoding::Mubuf => opcodes10::mubuf::MAP,
    }
}

/// The interpreter opcode of GFX10 opcode `raw` of `encoding` (VALU: in
/// GFX10 VOP3 numbering), or the decode error for an unknown one.
fn gfx10_opcode(encoding: Encoding, raw: u16, word: u32) -> Result<u16, DecodeError> {
    let map = gfx10_map(encoding);
    match map.binary_search_by_key(&raw, |&(o, _)| o) {
        Ok(i) => Ok(map[i].1),
        Err(_) => Err(DecodeError::UnknownOpcode { encoding, opcode: raw, word }),
    }
}

/// Scalar source operand codes (9-bit `SSrc`/`Src` fields), SIDefines.h.
pub mod src {
    pub const VCC_LO: u16 = 106;
    pub const VCC_HI: u16 = 107;
    /// GFX10 SGPR_NULL: reads 0, writes are dropped; "off" in GFX10's
    /// FLAT `saddr` and MUBUF/SMEM `soffset`.
    pub const NULL: u16 = 125;
    pub const M0: u16 = 124;
    pub const EXEC_LO: u16 = 126;
    pub const EXEC_HI: u16 = 127;
    pub const SDWA: u16 = 249;
    pub const DPP: u16 = 250;
    /// GFX10 DPP8 (and DPP8 with fetch-inactive).
    pub const DPP8: u16 = 233;
    pub const DPP8_FI: u16 = 234;
    pub const VCCZ: u16 = 251;
    pub const EXECZ: u16 = 252;
    pub const SCC: u16 = 253;
    pub const LITERAL: u16 = 255;
    pub const VGPR0: u16 = 256;
    /// `off` / no SGPR in FLAT `saddr` and similar 7-bit fields.
    pub const OFF_7BIT: u16 = 0x7f;
}

/// Input modifiers of one VALU source.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SourceModifiers {
    pub neg: bool,
    pub abs: bool,
}

/// The SDWA second dword (VOP_SDWA9 in VOPInstructions.td, gfx9 layout).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sdwa {
    pub dst_sel: u8,
    pub dst_unused: u8,
    pub src0_sel: u8,
    pub src0_sext: bool,
    pub src1_sel: u8,
    pub src1_sext: bool,
}

/// The DPP second dword (VOP_DPP in VOPInstructions.td).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dpp {
    pub control: u16,
    pub bound_ctrl: bool,
    pub bank_mask: u8,
    pub row_mask: u8,
    /// GFX10 FI: inactive source lanes give their value, not 0.
    pub fetch_inactive: bool,
}

/// Which VALU form an instruction was encoded in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValuForm {
    E32,
    E64,
    Sdwa(Sdwa),
    Dpp(Dpp),
    /// GFX10 DPP8: lane L reads lane `(L & !7) | selector[3*(L&7)..][..3]`.
    Dpp8 { selector: u32, fetch_inactive: bool },
}

/// A decoded instruction. Operand fields not used by an encoding are 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Instruction {
    /// The generation it was decoded for.
    pub gen: Generation,
    pub encoding: Encoding,
    pub opcode: u16,
    /// Size in bytes, literal included.
    pub size: u8,
    /// Scalar/vector destination (SDST, VDST, SDATA, DS/FLAT/MUBUF vdst or vdata).
    pub dst: u16,
    /// Second destination: VOP3b/VOPC carry/compare SGPR pair.
    pub sdst: u16,
    /// Sources in 9-bit operand space (VGPRs at 256..); src[1] of VOP2 and
    /// VOPC forms is the VGPR field plus 256.
    pub src: [u16; 3],
    pub literal: u32,
    /// SOPK/SOPP 16-bit immediate, SMEM/DS/FLAT/MUBUF offset (sign-extended).
    pub imm: i32,
    pub modifiers: [SourceModifiers; 3],
    pub clamp: bool,
    pub omod: u8,
    /// VOP3/VOP3P op_sel, VOP3P op_sel_hi, VOP3P neg_hi (3 bits each).
    pub op_sel: u8,
    pub op_sel_hi: u8,
    pub neg_hi: u8,
    pub form: ValuForm,
    /// Memory instruction bits.
    pub glc: bool,
    pub slc: bool,
    /// DS offset1 (offset0 is `imm`), DS gds.
    pub offset1: u8,
    pub gds: bool,
    /// MUBUF offen / idxen.
    pub offen: bool,
    pub idxen: bool,
    /// gfx90a: vdst/vdata is an AGPR.
    pub acc: bool,
    /// SMEM: offset is an immediate (else `soffset`/SGPR in `src[1]`).
    pub imm_offset: bool,
}

impl Instruction {
    const fn empty(encoding: Encoding, opcode: u16, size: u8) -> Self {
        Instruction {
            gen: Generation::Gfx9,
            encoding,
            opcode,
            size,
            dst: 0,
            sdst: 0,
            src: [0; 3],
            literal: 0,
            imm: 0,
            modifiers: [SourceModifiers { neg: false, abs: false }; 3],
            clamp: false,
            omod: 0,
            op_sel: 0,
            op_sel_hi: 0,
            neg_hi: 0,
            form: ValuForm::E64,
            glc: false,
            slc: false,
            offset1: 0,
            gds: false,
            offen: false,
            idxen: false,
            acc: false,
            imm_offset: false,
        }
    }

    /// LLVM's mnemonic for the instruction's opcode in the interpreter's
    /// (GFX9) opcode space, without `_e32`/`_e64`: for a GFX10 instruction
    /// GFX9 also has, GFX9's name (`v_add_u32` for `v_add_nc_u32`).
    pub fn mnemonic(&self) -> Option<&'static str> {
        mnemonic(self.encoding, self.opcode)
    }

    /// LLVM's mnemonic for the instruction on its own generation (GFX10:
    /// `v_add_nc_u32`); a linear search, for messages and tests.
    pub fn llvm_mnemonic(&self) -> Option<&'static str> {
        if self.gen == Generation::Gfx10 {
            let (map, names) = (gfx10_map(self.encoding), gfx10_names(self.encoding));
            let raw = map.iter().find(|&&(_, o)| o == self.opcode)?.0;
            return lookup(names, raw);
        }
        self.mnemonic()
    }
}

/// Why a word sequence is not an instruction this decoder knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The opcode field names nothing LLVM decodes for gfx90a.
    UnknownOpcode { encoding: Encoding, opcode: u16, word: u32 },
    /// The word is of an encoding class gfx90a compute code does not use
    /// (MTBUF, VINTRP, EXP, MIMG).
    UnsupportedEncoding { word: u32 },
    /// Fewer words than the encoding needs.
    Truncated,
}

const fn bits(word: u32, lo: u32, width: u32) -> u32 {
    (word >> lo) & ((1u32 << width) - 1)
}

const fn sign_extend(value: u32, width: u32) -> i32 {
    ((value << (32 - width)) as i32) >> (32 - width)
}

fn check(encoding: Encoding, opcode: u16, word: u32) -> Result<(), DecodeError> {
    if mnemonic(encoding, opcode).is_some() {
        Ok(())
    } else {
        Err(DecodeError::UnknownOpcode { encoding, opcode, word })
    }
}

/// VOP3 opcode of a VOP2 opcode (GFX9 numbering).
pub const VOP3_FROM_VOP2: u16 = 0x100;
/// VOP3 opcode of a VOP1 opcode (GFX9 numbering).
pub const VOP3_FROM_VOP1: u16 = 0x140;

/// Decodes the GFX9 (gfx90a) instruction at the start of `words`.
pub fn decode(words: &[u32]) -> Result<Instruction, DecodeError> {
    decode_for(Generation::Gfx9, words)
}

/// Decodes the instruction of generation `gen` at the start of `words`.
pub fn decode_for(gen: Generation, words: &[u32]) -> Result<Instruction, DecodeError> {
    let mut inst = match gen {
        Generation::Gfx9 => decode_gfx9(words)?,
        Generation::Gfx10 => decode_gfx10(words)?,
    };
    inst.gen = gen;
    Ok(inst)
}

/// The scalar ALU format of `w0` and its raw opcode, if it is one: SOP1,
/// SOPC and SOPP by their 9-bit prefix, SOPK by 4 bits, SOP2 by 2 (the
/// same on GFX9 and GFX10; the opcode numbers differ).
fn scalar_format(w0: u32) -> Option<(Encoding, u32)> {
    let top9 = bits(w0, 23, 9);
    Some(match top9 {
        0x17d => (Encoding::Sop1, bits(w0, 8, 8)),
        0x17e => (Encoding::Sopc, bits(w0, 16, 7)),
        0x17f => (Encoding::Sopp, bits(w0, 16, 7)),
        _ if bits(w0, 28, 4) == 0xb => (Encoding::Sopk, bits(w0, 23, 5)),
        _ if bits(w0, 30, 2) == 0b10 => (Encoding::Sop2, bits(w0, 23, 7)),
        _ => return None,
    })
}

fn decode_gfx9(words: &[u32]) -> Result<Instruction, DecodeError> {
    let w0 = *words.first().ok_or(DecodeError::Truncated)?;
    let w1 = || words.get(1).copied().ok_or(DecodeError::Truncated);
    let top6 = bits(w0, 26, 6);

    if let Some((encoding, opcode)) = scalar_format(w0) {
        let opcode = opcode as u16;
        check(encoding, opcode, w0)?;
        return scalar_operands(encoding, opcode, words);
    }

    // Vector ALU, 32-bit forms: VOP2 (bit 31 = 0), VOPC, VOP1.
    if bits(w0, 31, 1) == 0 {
        let prefix = bits(w0, 25, 7);
        let mut inst;
        let vop2_op;
        match prefix {
            0x3e => {
                let op = bits(w0, 17, 8) as u16;
                check(Encoding::Vop3, op, w0)?;
                inst = Instruction::empty(Encoding::Vop3, op, 4);
                inst.sdst = src::VCC_LO;
                inst.src[1] = src::VGPR0 + bits(w0, 9, 8) as u16;
                vop2_op = None;
            }
            0x3f => {
                let op = VOP3_FROM_VOP1 + bits(w0, 9, 8) as u16;
                if lookup(opcodes::vop1::NAMES, op - VOP3_FROM_VOP1).is_none() {
                    return Err(DecodeError::UnknownOpcode { encoding: Encoding::Vop3, opcode: op, word: w0 });
                }
                inst = Instruction::empty(Encoding::Vop3, op, 4);
                inst.dst = bits(w0, 17, 8) as u16;
                vop2_op = None;
            }
            _ => {
                let op = bits(w0, 25, 6) as u16;
                // VOP2-only opcodes (madmk/madak) have no VOP3 form: check
                // against the VOP2 table.
                if mnemonic_vop2(op).is_none() {
                    return Err(DecodeError::UnknownOpcode { encoding: Encoding::Vop3, opcode: VOP3_FROM_VOP2 + op, word: w0 });
                }
                inst = Instruction::empty(Encoding::Vop3, VOP3_FROM_VOP2 + op, 4);
                inst.dst = bits(w0, 17, 8) as u16;
                inst.src[1] = src::VGPR0 + bits(w0, 9, 8) as u16;
                vop2_op = Some(op);
            }
        }
        inst.form = ValuForm::E32;
        inst.src[0] = bits(w0, 0, 9) as u16;
        if let Some(op) = vop2_op {
            vop2_implicit_operands(&mut inst, op);
        }
        match inst.src[0] {
            src::LITERAL => {
                inst.literal = w1()?;
                inst.size = 8;
            }
            src::SDWA => {
                inst.size = 8;
                sdwa_operands(&mut inst, w1()?, prefix == 0x3e);
            }
            src::DPP => {
                inst.size = 8;
                dpp16_operands(&mut inst, w1()?, false);
            }
            _ => {}
        }
        if matches!(vop2_op, Some(opcodes::vop2::V_MADMK_F32 | opcodes::vop2::V_MADAK_F32 | opcodes::vop2::V_MADMK_F16 | opcodes::vop2::V_MADAK_F16))
            && inst.size == 4
        {
            inst.literal = w1()?;
            inst.size = 8;
        }
        return Ok(inst);
    }

    match top6 {
        // SMEM (SMEM_Real_vi): sbase in SGPR pairs, 21-bit signed offset on gfx9.
        0b110000 => {
            let opcode = bits(w0, 18, 8) as u16;
            check(Encoding::Smem, opcode, w0)?;
            let w = w1()?;
            let mut inst = Instruction::empty(Encoding::Smem, opcode, 8);
            inst.dst = bits(w0, 6, 7) as u16;
            inst.src[0] = (bits(w0, 0, 6) << 1) as u16;
            inst.glc = bits(w0, 16, 1) == 1;
            inst.imm_offset = bits(w0, 17, 1) == 1;
            let soe = bits(w0, 14, 1) == 1;
            if inst.imm_offset {
                inst.imm = sign_extend(bits(w, 0, 21), 21);
                inst.src[1] = if soe { bits(w, 25, 7) as u16 } else { src::OFF_7BIT };
            } else {
                inst.src[1] = bits(w, 0, 8) as u16;
            }
            Ok(inst)
        }
        // VOP3 (VOP3a/VOP3b) and VOP3P share the 0b110100 prefix.
        0b110100 => {
            let w = w1()?;
            let vop3p = bits(w0, 23, 3) == 0b111;
            let (encoding, opcode) = if vop3p { (Encoding::Vop3p, bits(w0, 16, 7) as u16) } else { (Encoding::Vop3, bits(w0, 16, 10) as u16) };
            check(encoding, opcode, w0)?;
            let mut inst = Instruction::empty(encoding, opcode, 8);
            inst.dst = bits(w0, 0, 8) as u16;
            inst.clamp = bits(w0, 15, 1) == 1;
            inst.src = [bits(w, 0, 9) as u16, bits(w, 9, 9) as u16, bits(w, 18, 9) as u16];
            let neg = bits(w, 29, 3);
            if vop3p {
                inst.op_sel = bits(w0, 11, 3) as u8;
                inst.op_sel_hi = (bits(w, 27, 2) | bits(w0, 14, 1) << 2) as u8;
                inst.neg_hi = bits(w0, 8, 3) as u8;
                for i in 0..3 {
                    inst.modifiers[i].neg = neg >> i & 1 == 1;
                }
            } else {
                inst.omod = bits(w, 27, 2) as u8;
                if vop3b(opcode) {
                    inst.sdst = bits(w0, 8, 7) as u16;
                } else {
                    inst.op_sel = bits(w0, 11, 4) as u8;
                    let abs = bits(w0, 8, 3);
                    for i in 0..3 {
                        inst.modifiers[i] = SourceModifiers { neg: neg >> i & 1 == 1, abs: abs >> i & 1 == 1 };
                    }
                }
                // VOPC in VOP3 form writes its SGPR pair through vdst.
                if opcode < VOP3_FROM_VOP2 {
                    inst.sdst = inst.dst;
                }
            }
            if inst.src.contains(&src::LITERAL) {
                // gfx90a has no VOP3 literals (FeatureVOP3Literal is gfx10+).
                return Err(DecodeError::UnsupportedEncoding { word: w0 });
            }
            Ok(inst)
        }
        // DS (DS_Real_vi; acc at bit 25 on gfx90a).
        0b110110 => {
            let opcode = bits(w0, 17, 8) as u16;
            check(Encoding::Ds, opcode, w0)?;
            let w = w1()?;
            let mut inst = Instruction::empty(Encoding::Ds, opcode, 8);
            inst.imm = bits(w0, 0, 8) as i32;
            inst.offset1 = bits(w0, 8, 8) as u8;
            inst.gds = bits(w0, 16, 1) == 1;
            inst.acc = bits(w0, 25, 1) == 1;
            inst.src = [src::VGPR0 + bits(w, 0, 8) as u16, src::VGPR0 + bits(w, 8, 8) as u16, src::VGPR0 + bits(w, 16, 8) as u16];
            inst.dst = bits(w, 24, 8) as u16;
            Ok(inst)
        }
        // FLAT/SCRATCH/GLOBAL (FLAT_Real_vi): seg in [15:14]; 13-bit signed
        // offset for global/scratch, 12-bit unsigned for flat.
        0b110111 => {
            let encoding = match bits(w0, 14, 2) {
                0 => Encoding::Flat,
                1 => Encoding::Scratch,
                2 => Encoding::Global,
                _ => return Err(DecodeError::UnsupportedEncoding { word: w0 }),
            };
            let opcode = bits(w0, 18, 7) as u16;
            check(encoding, opcode, w0)?;
            let w = w1()?;
            let mut inst = Instruction::empty(encoding, opcode, 8);
            inst.imm = if encoding == Encoding::Flat { bits(w0, 0, 12) as i32 } else { sign_extend(bits(w0, 0, 13), 13) };
            inst.glc = bits(w0, 16, 1) == 1;
            inst.slc = bits(w0, 17, 1) == 1;
            inst.src[0] = src::VGPR0 + bits(w, 0, 8) as u16; // addr
            inst.src[1] = src::VGPR0 + bits(w, 8, 8) as u16; // data
            inst.src[2] = bits(w, 16, 7) as u16; // saddr
            inst.acc = bits(w, 23, 1) == 1;
            inst.dst = bits(w, 24, 8) as u16;
            Ok(inst)
        }
        // MUBUF (MUBUF_Real_vi).
        0b111000 => {
            let opcode = bits(w0, 18, 7) as u16;
            check(Encoding::Mubuf, opcode, w0)?;
            let w = w1()?;
            let mut inst = Instruction::empty(Encoding::Mubuf, opcode, 8);
            inst.imm = bits(w0, 0, 12) as i32;
            inst.offen = bits(w0, 12, 1) == 1;
            inst.idxen = bits(w0, 13, 1) == 1;
            inst.glc = bits(w0, 14, 1) == 1;
            inst.slc = bits(w0, 17, 1) == 1;
            inst.src[0] = src::VGPR0 + bits(w, 0, 8) as u16; // vaddr
            inst.dst = bits(w, 8, 8) as u16; // vdata
            inst.src[1] = (bits(w, 16, 5) << 2) as u16; // srsrc
            inst.acc = bits(w, 23, 1) == 1;
            inst.src[2] = bits(w, 24, 8) as u16; // soffset
            Ok(inst)
        }
        _ => Err(DecodeError::UnsupportedEncoding { word: w0 }),
    }
}

fn mnemonic_vop2(op: u16) -> Option<&'static str> {
    lookup(opcodes::vop2::NAMES, op)
}

/// The 32-bit VOP2 forms whose carry/condition operands are implicit VCC.
fn vop2_implicit_operands(inst: &mut Instruction, op: u16) {
    use opcodes::vop2::*;
    match op {
        V_CNDMASK_B32 => inst.src[2] = src::VCC_LO,
        V_ADD_CO_U32 | V_SUB_CO_U32 | V_SUBREV_CO_U32 => inst.sdst = src::VCC_LO,
        V_ADDC_CO_U32 | V_SUBB_CO_U32 | V_SUBBREV_CO_U32 => {
            inst.sdst = src::VCC_LO;
            inst.src[2] = src::VCC_LO;
        }
        _ => {}
    }
}

/// VOP3b opcodes: bits [14:8] are an SGPR destination, not abs/op_sel
/// (VOP3be in VOPInstructions.td: carry ops and v_div_scale, v_mad_*64_*32).
pub fn vop3b(opcode: u16) -> bool {
    use opcodes::vop3::*;
    matches!(
        opcode,
        V_ADD_CO_U32 | V_SUB_CO_U32 | V_SUBREV_CO_U32 | V_ADDC_CO_U32 | V_SUBB_CO_U32 | V_SUBBREV_CO_U32 | V_DIV_SCALE_F32 | V_DIV_SCALE_F64 | V_MAD_U64_U32 | V_MAD_I64_I32
    )
}

/// Decodes a GFX10.3 (gfx1030) instruction (the `_gfx10` encodings of
/// LLVM's .td files) into the interpreter's opcode space.
fn decode_gfx10(words: &[u32]) -> Result<Instruction, DecodeError> {
    let w0 = *words.first().ok_or(DecodeError::Truncated)?;
    let w1 = || words.get(1).copied().ok_or(DecodeError::Truncated);
    let top9 = bits(w0, 23, 9);
    let top6 = bits(w0, 26, 6);

    // Scalar ALU: the GFX9 formats, GFX10 opcode numbers.
    if let Some((encoding, raw)) = scalar_format(w0) {
        let opcode = gfx10_opcode(encoding, raw as u16, w0)?;
        return scalar_operands(encoding, opcode, words);
    }

    // Vector ALU, 32-bit forms: VOP2 (bit 31 = 0), VOPC, VOP1; their VOP3
    // opcodes are VOPC op, 0x100 + VOP2 op, 0x180 + VOP1 op.
    if bits(w0, 31, 1) == 0 {
        let prefix = bits(w0, 25, 7);
        let key = match prefix {
            0x3e => bits(w0, 17, 8),
            0x3f => 0x180 + bits(w0, 9, 8),
            _ => 0x100 + bits(w0, 25, 6),
        } as u16;
        let opcode = gfx10_opcode(Encoding::Vop3, key, w0)?;
        let mut inst = Instruction::empty(Encoding::Vop3, opcode, 4);
        inst.form = ValuForm::E32;
        inst.src[0] = bits(w0, 0, 9) as u16;
        match prefix {
            0x3e => {
                inst.sdst = src::VCC_LO;
                inst.src[1] = src::VGPR0 + bits(w0, 9, 8) as u16;
            }
            0x3f => inst.dst = bits(w0, 17, 8) as u16,
            _ => {
                inst.dst = bits(w0, 17, 8) as u16;
                inst.src[1] = src::VGPR0 + bits(w0, 9, 8) as u16;
                e32_implicit_operands(&mut inst);
            }
        }
        match inst.src[0] {
            src::LITERAL => {
                inst.literal = w1()?;
                inst.size = 8;
            }
            src::SDWA => {
                // VOP_SDWA9 (gfx9 and gfx10 share it).
                inst.size = 8;
                sdwa_operands(&mut inst, w1()?, prefix == 0x3e);
            }
            src::DPP => {
                // VOP_DPP16: as gfx9's, with fi at 18.
                let w = w1()?;
                inst.size = 8;
                dpp16_operands(&mut inst, w, bits(w, 18, 1) == 1);
            }
            src::DPP8 | src::DPP8_FI => {
                // VOP_DPP8: src0 [7:0], eight 3-bit lane selects [31:8].
                let w = w1()?;
                inst.size = 8;
                let fetch_inactive = inst.src[0] == src::DPP8_FI;
                inst.src[0] = src::VGPR0 + bits(w, 0, 8) as u16;
                inst.form = ValuForm::Dpp8 { selector: bits(w, 8, 24), fetch_inactive };
            }
            _ => {}
        }
        if matches!(opcode, opcodes10::vop3::V_FMAMK_F32 | opcodes10::vop3::V_FMAAK_F32) && inst.size == 4 {
            inst.literal = w1()?;
            inst.size = 8;
        }
        return Ok(inst);
    }

    match top6 {
        // SMEM (SMEM_Real_gfx10): sbase [5:0] in SGPR pairs, sdata [12:6],
        // glc 16, op [25:18]; offset [52:32] signed, soffset [63:57]
        // (SGPR_NULL for none).
        0b111101 => {
            let opcode = gfx10_opcode(Encoding::Smem, bits(w0, 18, 8) as u16, w0)?;
            let w = w1()?;
            let mut inst = Instruction::empty(Encoding::Smem, opcode, 8);
            inst.dst = bits(w0, 6, 7) as u16;
            inst.src[0] = (bits(w0, 0, 6) << 1) as u16;
            inst.glc = bits(w0, 16, 1) == 1;
            inst.imm_offset = true;
            inst.imm = sign_extend(bits(w, 0, 21), 21);
            let soffset = bits(w, 25, 7) as u16;
            inst.src[1] = if soffset == src::NULL { src::OFF_7BIT } else { soffset };
            Ok(inst)
        }
        // VOP3 (VOP3_Real_gfx10): op [25:16], clamp 15, op_sel [14:11],
        // abs [10:8] (VOP3b: sdst [14:8]), vdst [7:0]; one literal may follow.
        0b110101 => {
            let w = w1()?;
            let opcode = gfx10_opcode(Encoding::Vop3, bits(w0, 16, 10) as u16, w0)?;
            let mut inst = Instruction::empty(Encoding::Vop3, opcode, 8);
            inst.dst = bits(w0, 0, 8) as u16;
            inst.clamp = bits(w0, 15, 1) == 1;
            inst.src = [bits(w, 0, 9) as u16, bits(w, 9, 9) as u16, bits(w, 18, 9) as u16];
            inst.omod = bits(w, 27, 2) as u8;
            let neg = bits(w, 29, 3);
            if vop3b(opcode) {
                inst.sdst = bits(w0, 8, 7) as u16;
                for i in 0..3 {
                    inst.modifiers[i].neg = neg >> i & 1 == 1;
                }
            } else {
                inst.op_sel = bits(w0, 11, 4) as u8;
                let abs = bits(w0, 8, 3);
                for i in 0..3 {
                    inst.modifiers[i] = SourceModifiers { neg: neg >> i & 1 == 1, abs: abs >> i & 1 == 1 };
                }
            }
            // VOPC in VOP3 form writes its lane mask through vdst.
            if opcode < VOP3_FROM_VOP2 {
                inst.sdst = inst.dst;
            }
            if inst.src.contains(&src::LITERAL) {
                inst.literal = *words.get(2).ok_or(DecodeError::Truncated)?;
                inst.size = 12;
            }
            Ok(inst)
        }
        // VOP3P (VOP3P_Real_gfx10): [31:23] = 0x198, op [22:16].
        0b110011 if top9 == 0x198 => {
            let w = w1()?;
            let opcode = gfx10_opcode(Encoding::Vop3p, bits(w0, 16, 7) as u16, w0)?;
            let mut inst = Instruction::empty(Encoding::Vop3p, opcode, 8);
            inst.dst = bits(w0, 0, 8) as u16;
            inst.clamp = bits(w0, 15, 1) == 1;
            inst.src = [bits(w, 0, 9) as u16, bits(w, 9, 9) as u16, bits(w, 18, 9) as u16];
            inst.op_sel = bits(w0, 11, 3) as u8;
            inst.op_sel_hi = (bits(w, 27, 2) | bits(w0, 14, 1) << 2) as u8;
            inst.neg_hi = bits(w0, 8, 3) as u8;
            let neg = bits(w, 29, 3);
            for i in 0..3 {
                inst.modifiers[i].neg = neg >> i & 1 == 1;
            }
            if inst.src.contains(&src::LITERAL) {
                inst.literal = *words.get(2).ok_or(DecodeError::Truncated)?;
                inst.size = 12;
            }
            Ok(inst)
        }
        // DS (DS_Real_gfx10): offset0 [7:0], offset1 [15:8], gds 17, op [25:18].
        0b110110 => {
            let opcode = gfx10_opcode(Encoding::Ds, bits(w0, 18, 8) as u16, w0)?;
            let w = w1()?;
            let mut inst = Instruction::empty(Encoding::Ds, opcode, 8);
            inst.imm = bits(w0, 0, 8) as i32;
            inst.offset1 = bits(w0, 8, 8) as u8;
            inst.gds = bits(w0, 17, 1) == 1;
            inst.src = [src::VGPR0 + bits(w, 0, 8) as u16, src::VGPR0 + bits(w, 8, 8) as u16, src::VGPR0 + bits(w, 16, 8) as u16];
            inst.dst = bits(w, 24, 8) as u16;
            Ok(inst)
        }
        // FLAT/SCRATCH/GLOBAL (FLAT_Real_gfx10): 12-bit signed offset,
        // seg [15:14], op [24:18]; saddr SGPR_NULL is "off".
        0b110111 => {
            let encoding = match bits(w0, 14, 2) {
                0 => Encoding::Flat,
                1 => Encoding::Scratch,
                2 => Encoding::Global,
                _ => return Err(DecodeError::UnsupportedEncoding { word: w0 }),
            };
            let opcode = gfx10_opcode(encoding, bits(w0, 18, 7) as u16, w0)?;
            let w = w1()?;
            let mut inst = Instruction::empty(encoding, opcode, 8);
            inst.imm = sign_extend(bits(w0, 0, 12), 12);
            inst.glc = bits(w0, 16, 1) == 1;
            inst.slc = bits(w0, 17, 1) == 1;
            inst.src[0] = src::VGPR0 + bits(w, 0, 8) as u16;
            inst.src[1] = src::VGPR0 + bits(w, 8, 8) as u16;
            let saddr = bits(w, 16, 7) as u16;
            inst.src[2] = if saddr == src::NULL { src::OFF_7BIT } else { saddr };
            inst.dst = bits(w, 24, 8) as u16;
            Ok(inst)
        }
        // MUBUF (MUBUF_Real_gfx10): op [24:18] with op[7] at 25.
        0b111000 => {
            let raw = (bits(w0, 18, 7) | bits(w0, 25, 1) << 7) as u16;
            let opcode = gfx10_opcode(Encoding::Mubuf, raw, w0)?;
            let w = w1()?;
            let mut inst = Instruction::empty(Encoding::Mubuf, opcode, 8);
            inst.imm = bits(w0, 0, 12) as i32;
            inst.offen = bits(w0, 12, 1) == 1;
            inst.idxen = bits(w0, 13, 1) == 1;
            inst.glc = bits(w0, 14, 1) == 1;
            inst.slc = bits(w, 22, 1) == 1;
            inst.src[0] = src::VGPR0 + bits(w, 0, 8) as u16;
            inst.dst = bits(w, 8, 8) as u16;
            inst.src[1] = (bits(w, 16, 5) << 2) as u16;
            inst.src[2] = bits(w, 24, 8) as u16;
            Ok(inst)
        }
        _ => Err(DecodeError::UnsupportedEncoding { word: w0 }),
    }
}

/// The implicit VCC operands of a 32-bit VOP2 form, by interpreter opcode.
fn e32_implicit_operands(inst: &mut Instruction) {
    use opcodes::vop3::*;
    match inst.opcode {
        V_CNDMASK_B32 => inst.src[2] = src::VCC_LO,
        V_ADD_CO_U32 | V_SUB_CO_U32 | V_SUBREV_CO_U32 => inst.sdst = src::VCC_LO,
        V_ADDC_CO_U32 | V_SUBB_CO_U32 | V_SUBBREV_CO_U32 => {
            inst.sdst = src::VCC_LO;
            inst.src[2] = src::VCC_LO;
        }
        _ => {}
    }
}

/// The operands of a SOP1/SOPC/SOPP/SOPK/SOP2 instruction (GFX9 and GFX10
/// share the formats), `opcode` already in the interpreter's space.
fn scalar_operands(encoding: Encoding, opcode: u16, words: &[u32]) -> Result<Instruction, DecodeError> {
    let w0 = words[0];
    let w1 = || words.get(1).copied().ok_or(DecodeError::Truncated);
    let mut inst = Instruction::empty(encoding, opcode, 4);
    match encoding {
        Encoding::Sop1 => {
            inst.dst = bits(w0, 16, 7) as u16;
            inst.src[0] = bits(w0, 0, 8) as u16;
        }
        Encoding::Sopc => {
            inst.src[0] = bits(w0, 0, 8) as u16;
            inst.src[1] = bits(w0, 8, 8) as u16;
        }
        Encoding::Sopp => inst.imm = sign_extend(bits(w0, 0, 16), 16),
        Encoding::Sopk => {
            inst.dst = bits(w0, 16, 7) as u16;
            inst.imm = sign_extend(bits(w0, 0, 16), 16);
            if opcode == opcodes::sopk::S_SETREG_IMM32_B32 {
                inst.literal = w1()?;
                inst.size = 8;
            }
        }
        _ => {
            inst.dst = bits(w0, 16, 7) as u16;
            inst.src[0] = bits(w0, 0, 8) as u16;
            inst.src[1] = bits(w0, 8, 8) as u16;
        }
    }
    if inst.src[0] == src::LITERAL || inst.src[1] == src::LITERAL {
        inst.literal = w1()?;
        inst.size = 8;
    }
    Ok(inst)
}

/// The SDWA second dword (VOP_SDWA9, GFX9 and GFX10) into `inst`; `vopc`:
/// a compare, whose [14:8] is an SGPR destination when sd (15) is set.
fn sdwa_operands(inst: &mut Instruction, w: u32, vopc: bool) {
    inst.src[0] = if bits(w, 23, 1) == 1 { bits(w, 0, 8) as u16 } else { src::VGPR0 + bits(w, 0, 8) as u16 };
    // S1: vsrc1 names an SGPR.  A VOP1 has no src1 (0 here): S1 set on
    // one changes nothing.
    if bits(w, 31, 1) == 1 {
        if let Some(sgpr) = inst.src[1].checked_sub(src::VGPR0) {
            inst.src[1] = sgpr;
        }
    }
    inst.modifiers[0] = SourceModifiers { neg: bits(w, 20, 1) == 1, abs: bits(w, 21, 1) == 1 };
    inst.modifiers[1] = SourceModifiers { neg: bits(w, 28, 1) == 1, abs: bits(w, 29, 1) == 1 };
    if vopc {
        // VOPC SDWA: sdst in [14:8] when sd is set, else VCC.
        if bits(w, 15, 1) == 1 {
            inst.sdst = bits(w, 8, 7) as u16;
        }
    } else {
        inst.clamp = bits(w, 13, 1) == 1;
        inst.omod = bits(w, 14, 2) as u8;
    }
    inst.form = ValuForm::Sdwa(Sdwa {
        dst_sel: bits(w, 8, 3) as u8,
        dst_unused: bits(w, 11, 2) as u8,
        src0_sel: bits(w, 16, 3) as u8,
        src0_sext: bits(w, 19, 1) == 1,
        src1_sel: bits(w, 24, 3) as u8,
        src1_sext: bits(w, 27, 1) == 1,
    });
}

/// The DPP16 second dword (VOP_DPP) into `inst`.
fn dpp16_operands(inst: &mut Instruction, w: u32, fetch_inactive: bool) {
    inst.src[0] = src::VGPR0 + bits(w, 0, 8) as u16;
    inst.modifiers[0] = SourceModifiers { neg: bits(w, 20, 1) == 1, abs: bits(w, 21, 1) == 1 };
    inst.modifiers[1] = SourceModifiers { neg: bits(w, 22, 1) == 1, abs: bits(w, 23, 1) == 1 };
    inst.form = ValuForm::Dpp(Dpp {
        control: bits(w, 8, 9) as u16,
        bound_ctrl: bits(w, 19, 1) == 1,
        bank_mask: bits(w, 24, 4) as u8,
        row_mask: bits(w, 28, 4) as u8,
        fetch_inactive,
    });
}
