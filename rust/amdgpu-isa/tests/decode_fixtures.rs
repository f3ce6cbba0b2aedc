// SPDX-License-Identifier: GPL-2.0 OR MIT
//! The decoder against LLVM: instructions assembled by llvm-mc-15
//! (tests/fixtures/decode.txt) and a whole hipcc code object as
//! llvm-objdump-15 disassembles it (tests/fixtures/kernels.dis), both made by
//! scripts/gen-fixtures.sh; the same for gfx1030 (tests/fixtures/decode10.txt,
//! tests/fixtures/suite_gfx1030.dis). Checked: the mnemonic, the size, and
//! for the ALU classes every register/constant operand, modifier, clamp and omod.

use amdgpu_isa::decode::{decode, decode_for, src, vop3b, Encoding, Generation, Instruction, ValuForm};

const DECODE_TXT: &str = include_str!("fixtures/decode.txt");
const KERNELS_DIS: &str = include_str!("fixtures/kernels.dis");
const DECODE10_TXT: &str = include_str!("fixtures/decode10.txt");
const SUITE10_DIS: &str = include_str!("fixtures/suite_gfx1030.dis");

fn strip_suffix(name: &str) -> &str {
    for s in ["_e32", "_e64", "_sdwa", "_dpp"] {
        if let Some(n) = name.strip_suffix(s) {
            return n;
        }
    }
    name
}

/// (operand code, neg, abs) of one operand as LLVM prints it.
fn operand(tok: &str) -> Option<(u16, bool, bool)> {
    let tok = tok.split_whitespace().next()?;
    let (tok, neg) = match tok.strip_prefix('-') {
        Some(t) if !t.starts_with(|c: char| c.is_ascii_digit()) => (t, true),
        _ => (tok, false),
    };
    let (tok, abs) = match tok.strip_prefix('|').and_then(|t| t.strip_suffix('|')) {
        Some(t) => (t, true),
        None => (tok, false),
    };
    let reg = |t: &str| -> Option<u16> {
        let t = t.strip_prefix('[').map(|r| r.split(':').next().unwrap()).unwrap_or(t);
        t.parse().ok()
    };
    let code = match tok {
        "null" => src::NULL,
        "vcc" | "vcc_lo" => src::VCC_LO,
        "vcc_hi" => src::VCC_HI,
        "exec" | "exec_lo" => src::EXEC_LO,
        "exec_hi" => src::EXEC_HI,
        "m0" => src::M0,
        "scc" => src::SCC,
        "src_shared_base" => 235,
        "0.5" => 240,
        "-0.5" => 241,
        "1.0" => 242,
        "-1.0" => 243,
        "2.0" => 244,
        "-2.0" => 245,
        "4.0" => 246,
        "-4.0" => 247,
        t if t.starts_with("0x") => src::LITERAL,
        t if t.starts_with('s') => reg(&t[1..])?,
        t if t.starts_with('v') => src::VGPR0 + reg(&t[1..])?,
        t => {
            let v: i32 = t.parse().ok()?;
            match v {
                0..=64 => 128 + v as u16,
                -16..=-1 => (192 - v) as u16,
                _ => src::LITERAL,
            }
        }
    };
    Some((code, neg, abs))
}

fn words(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// Source `n` as an operand code; a literal whose value an inline
/// constant has (LLVM 15 prints gfx1030's literal 0xffffffff as -1) as that
/// constant.
fn source(inst: &Instruction, n: usize, llvm: u16) -> u16 {
    if llvm == src::LITERAL {
        return inst.src[n];
    }
    match (inst.src[n], inst.literal as i32) {
        (src::LITERAL, v @ 0..=64) if inst.gen == Generation::Gfx10 => 128 + v as u16,
        (src::LITERAL, v @ -16..=-1) if inst.gen == Generation::Gfx10 => (192 - v) as u16,
        (code, _) => code,
    }
}

/// Checks the operands of the ALU classes against LLVM's text.
fn check_operands(inst: &Instruction, text: &str) -> bool {
    let (name, rest) = text.split_once(' ').unwrap_or((text, ""));
    let toks: Vec<&str> = rest.split(", ").collect();
    let ops: Vec<(u16, bool, bool)> = match toks.iter().map(|t| operand(t)).collect::<Option<Vec<_>>>() {
        Some(o) => o,
        None => return false,
    };
    let mnemonic = strip_suffix(name);
    let as_dst = |code: u16| if code >= src::VGPR0 { code - src::VGPR0 } else { code };
    match inst.encoding {
        Encoding::Sop2 | Encoding::Sop1 if ops.len() == 3 || (inst.encoding == Encoding::Sop1 && ops.len() == 2) => {
            assert_eq!(inst.dst, ops[0].0, "{text}: dst");
            for (k, op) in ops[1..].iter().enumerate() {
                assert_eq!(source(inst, k, op.0), op.0, "{text}: src{k}");
            }
        }
        Encoding::Sopc => {
            assert_eq!(source(inst, 0, ops[0].0), ops[0].0, "{text}: src0");
            assert_eq!(source(inst, 1, ops[1].0), ops[1].0, "{text}: src1");
        }
        Encoding::Vop3 if !(mnemonic.starts_with("v_mad") || mnemonic.starts_with("v_fmamk") || mnemonic.starts_with("v_fmaak")) || mnemonic == "v_mad_f32" || mnemonic == "v_mad_u64_u32" => {
            let is_vopc = inst.opcode < 0x100;
            let carry = vop3b(inst.opcode) || (inst.form != ValuForm::E64 && inst.sdst == src::VCC_LO && !is_vopc);
            let mut k = 1;
            if is_vopc && inst.gen == Generation::Gfx10 && mnemonic.starts_with("v_cmpx") {
                // GFX10's v_cmpx writes EXEC only: no destination operand.
                k = 0;
            } else if is_vopc {
                assert_eq!(inst.sdst, ops[0].0, "{text}: sdst");
            } else {
                assert_eq!(inst.dst, as_dst(ops[0].0), "{text}: dst");
            }
            if carry && !is_vopc {
                assert_eq!(inst.sdst, ops[1].0, "{text}: carry sdst");
                k += 1;
            }
            for (n, op) in ops[k..].iter().enumerate() {
                assert_eq!(source(inst, n, op.0), op.0, "{text}: src{n}");
                assert_eq!((inst.modifiers[n].neg, inst.modifiers[n].abs), (op.1, op.2), "{text}: src{n} modifiers");
            }
            assert_eq!(inst.clamp, text.contains(" clamp"), "{text}: clamp");
            let omod = if text.contains("mul:2") {
                1
            } else if text.contains("mul:4") {
                2
            } else if text.contains("div:2") {
                3
            } else {
                0
            };
            assert_eq!(inst.omod, omod, "{text}: omod");
        }
        _ => return false,
    }
    true
}

#[test]
fn llvm_mc_snippets_decode() {
    let mut checked = 0;
    let mut with_operands = 0;
    let mut classes = std::collections::BTreeSet::new();
    for line in DECODE_TXT.lines() {
        let (bytes, text) = line.split_once(" ; ").expect("fixture line");
        let bytes: Vec<u8> = bytes.split(',').map(|b| u8::from_str_radix(b.trim().trim_start_matches("0x"), 16).unwrap()).collect();
        let inst = decode(&words(&bytes)).unwrap_or_else(|e| panic!("{text}: {e:?}"));
        assert_eq!(inst.size as usize, bytes.len(), "{text}: size");
        let name = text.split_whitespace().next().unwrap();
        assert_eq!(inst.mnemonic(), Some(strip_suffix(name)), "{text}");
        match inst.form {
            ValuForm::Sdwa(_) => assert!(name.ends_with("_sdwa"), "{text}: SDWA form"),
            ValuForm::Dpp(_) => assert!(name.ends_with("_dpp"), "{text}: DPP form"),
            _ => {}
        }
        if text.contains(" a") || text.contains(", a") {
            // AGPR data of memory instructions
            if matches!(inst.encoding, Encoding::Ds | Encoding::Flat | Encoding::Global | Encoding::Scratch | Encoding::Mubuf) {
                assert!(inst.acc, "{text}: acc bit");
            }
        }
        if check_operands(&inst, text) {
            with_operands += 1;
        }
        classes.insert(inst.encoding.name());
        checked += 1;
    }
    eprintln!("{checked} llvm-mc snippets decoded ({with_operands} with every operand checked), classes: {classes:?}");
    assert!(checked >= 180 && with_operands >= 100);
}

#[test]
fn hipcc_code_object_disassembly_decodes() {
    let mut checked = 0;
    for line in KERNELS_DIS.lines() {
        // "\tv_add_f32_e32 v2, v6, v7   // 000000001C9C: 02040F06"
        let Some((asm, hex)) = line.split_once("// ") else { continue };
        if !line.starts_with('\t') {
            continue;
        }
        let hex = hex.split_once(": ").unwrap().1;
        // Branches carry a "<kernel+0x..>" note after the words.
        let words: Vec<u32> = hex.split_whitespace().take_while(|w| w.len() == 8).map(|w| u32::from_str_radix(w, 16).unwrap()).collect();
        let inst = decode(&words).unwrap_or_else(|e| panic!("{asm}: {e:?}"));
        let text = asm.trim();
        assert_eq!(inst.size as usize, 4 * words.len(), "{text}: size");
        assert_eq!(inst.mnemonic(), Some(strip_suffix(text.split_whitespace().next().unwrap())), "{text}");
        check_operands(&inst, text.split("//").next().unwrap().trim());
        checked += 1;
    }
    eprintln!("{checked} instructions of the hipcc code object decoded");
    assert!(checked > 500);
}

#[test]
fn unknown_opcodes_are_errors() {
    // SOPP opcode 0x7f does not exist on gfx90a; VOP3 opcode 0x3ff neither.
    assert!(matches!(decode(&[0xbfff_0000]), Err(amdgpu_isa::decode::DecodeError::UnknownOpcode { .. })));
    assert!(matches!(decode(&[0xd3ff_0000, 0]), Err(amdgpu_isa::decode::DecodeError::UnknownOpcode { .. })));
    // A 64-bit encoding with only one word.
    assert_eq!(decode(&[0xc002_0002]), Err(amdgpu_isa::decode::DecodeError::Truncated));
    // MTBUF (0b111010) is not a class gfx90a compute code uses.
    assert!(matches!(decode(&[0xe800_0000, 0]), Err(amdgpu_isa::decode::DecodeError::UnsupportedEncoding { .. })));
}

/// `llvm_mc_snippets_decode` and `hipcc_code_object_disassembly_decodes`
/// for gfx1030: GFX10 encodings, LLVM's GFX10 mnemonics.
#[test]
fn gfx1030_llvm_mc_snippets_decode() {
    let mut checked = 0;
    let mut with_operands = 0;
    for line in DECODE10_TXT.lines() {
        let (bytes, text) = line.split_once(" ; ").expect("fixture line");
        let bytes: Vec<u8> = bytes.split(',').map(|b| u8::from_str_radix(b.trim().trim_start_matches("0x"), 16).unwrap()).collect();
        let inst = decode_for(Generation::Gfx10, &words(&bytes)).unwrap_or_else(|e| panic!("{text}: {e:?}"));
        assert_eq!(inst.size as usize, bytes.len(), "{text}: size");
        let name = text.split_whitespace().next().unwrap();
        assert_eq!(inst.llvm_mnemonic(), Some(strip_suffix(name)), "{text}");
        match inst.form {
            ValuForm::Sdwa(_) => assert!(name.ends_with("_sdwa"), "{text}: SDWA form"),
            ValuForm::Dpp(_) | ValuForm::Dpp8 { .. } => assert!(name.ends_with("_dpp"), "{text}: DPP form"),
            _ => {}
        }
        if check_operands(&inst, text) {
            with_operands += 1;
        }
        checked += 1;
    }
    eprintln!("{checked} gfx1030 llvm-mc snippets decoded ({with_operands} with every operand checked)");
    assert!(checked >= 140 && with_operands >= 60);
}

#[test]
fn gfx1030_hipcc_code_object_disassembly_decodes() {
    let mut checked = 0;
    for line in SUITE10_DIS.lines() {
        let Some((asm, hex)) = line.split_once("// ") else { continue };
        if !line.starts_with('\t') {
            continue;
        }
        let hex = hex.split_once(": ").unwrap().1;
        let words: Vec<u32> = hex.split_whitespace().take_while(|w| w.len() == 8).map(|w| u32::from_str_radix(w, 16).unwrap()).collect();
        let text = asm.trim();
        // s_code_end pads the code after the last kernel.
        let inst = decode_for(Generation::Gfx10, &words).unwrap_or_else(|e| panic!("{asm}: {e:?}"));
        assert_eq!(inst.size as usize, 4 * words.len(), "{text}: size");
        assert_eq!(inst.llvm_mnemonic(), Some(strip_suffix(text.split_whitespace().next().unwrap())), "{text}");
        check_operands(&inst, text.split("//").next().unwrap().trim());
        checked += 1;
    }
    eprintln!("{checked} instructions of the gfx1030 hipcc code object decoded");
    assert!(checked > 500);
}

#[test]
fn gfx1030_unknown_and_gfx9_only_encodings_are_errors() {
    // SOPP opcode 0x7f does not exist on gfx1030 either.
    assert!(matches!(decode_for(Generation::Gfx10, &[0xbfff_0000]), Err(amdgpu_isa::decode::DecodeError::UnknownOpcode { .. })));
    // GFX9's VOP3 prefix (0b110100) and SMEM prefix (0b110000) are not GFX10's.
    assert!(decode_for(Generation::Gfx10, &[0xd100_0000, 0]).is_err());
    assert!(decode_for(Generation::Gfx10, &[0xc002_0002, 0]).is_err());
    // A VOP3 with a literal needs its third word.
    assert_eq!(decode_for(Generation::Gfx10, &[0xd525_0000, 0x0001_ff01]), Err(amdgpu_isa::decode::DecodeError::Truncated));
}
