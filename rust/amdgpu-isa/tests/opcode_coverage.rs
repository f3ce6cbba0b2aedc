// SPDX-License-Identifier: GPL-2.0 OR MIT
//! How much of gfx90a the interpreter covers, measured rather than claimed:
//! every opcode of LLVM's tables is encoded (register operands), decoded and
//! executed once on a scratch wave; it counts as executed unless the
//! interpreter answers "unsupported opcode". Prints the per-class counts and
//! checks that every opcode of the hipcc code object is executed.

mod common;
use amdgpu_isa::decode::{decode, VOP3_FROM_VOP1};
use amdgpu_isa::exec::{execute, ExecError};
use amdgpu_isa::memory::Environment;
use amdgpu_isa::opcodes;
use amdgpu_isa::wave::Wave;
use common::*;

const KERNELS_DIS: &str = include_str!("fixtures/kernels.dis");

/// Instruction words for opcode `op` of a class, register operands only.
fn encode(class: &str, op: u32) -> Vec<u32> {
    match class {
        "SOP2" => vec![0x8000_0000 | op << 23, 0],
        "SOPK" => vec![0xb000_0000 | op << 23, 0],
        "SOP1" => vec![0xbe80_0000 | op << 8],
        "SOPC" => vec![0xbf00_0000 | op << 16],
        "SOPP" => vec![0xbf80_0000 | op << 16],
        "SMEM" => vec![0xc000_0000 | op << 18 | 1 << 17, 0],
        "VOP1" => vec![0x7e00_0000 | op << 9 | 0x100, 0],
        "VOP2" => vec![op << 25 | 0x100, 0],
        "VOPC" => vec![0x7c00_0000 | op << 17 | 0x100],
        "VOP3" => vec![0xd000_0000 | op << 16, 0x100 | 0x100 << 9 | 0x100 << 18],
        "VOP3P" => vec![0xd380_0000 | op << 16, 0x100 | 0x100 << 9 | 0x100 << 18],
        "DS" => vec![0xd800_0000 | op << 17, 0],
        "FLAT" => vec![0xdc00_0000 | op << 18, 0x7f << 16],
        "SCRATCH" => vec![0xdc00_4000 | op << 18, 0x7f << 16],
        "GLOBAL" => vec![0xdc00_8000 | op << 18, 0x7f << 16],
        "MUBUF" => vec![0xe000_0000 | op << 18, 0],
        _ => unreachable!(),
    }
}

/// Whether the interpreter runs the instruction: Some(true) fully,
/// Some(false) only in some forms (it answered "unsupported form" for this
/// one), None not at all ("unsupported opcode").
fn executes(words: &[u32]) -> Result<Option<bool>, String> {
    let inst = decode(words).map_err(|e| format!("{e:?}"))?;
    let mut wave = Box::new(Wave::new());
    wave.exec = u64::MAX;
    wave.pc = 0x1000;
    let mut mem = SparseMemory::new();
    mem.map(0, vec![0; 0x10000]);
    let mut lds = vec![0u8; 0x10000];
    let mut scratch = vec![0u8; 64 * 256];
    let mut env = Environment { global: &mut mem, lds: &mut lds, scratch: &mut scratch, scratch_lane_bytes: 256, apertures: APERTURES };
    Ok(match execute(&mut wave, &mut env, &inst) {
        Err(ExecError::UnsupportedOpcode { .. }) => None,
        Err(ExecError::UnsupportedForm { .. }) => Some(false),
        _ => Some(true),
    })
}

#[test]
fn opcode_coverage_per_class() {
    let classes: [(&str, &[(u16, &str)]); 16] = [
        ("SOP2", opcodes::sop2::NAMES),
        ("SOPK", opcodes::sopk::NAMES),
        ("SOP1", opcodes::sop1::NAMES),
        ("SOPC", opcodes::sopc::NAMES),
        ("SOPP", opcodes::sopp::NAMES),
        ("SMEM", opcodes::smem::NAMES),
        ("VOP1", opcodes::vop1::NAMES),
        ("VOP2", opcodes::vop2::NAMES),
        ("VOPC", opcodes::vopc::NAMES),
        ("VOP3", opcodes::vop3::NAMES),
        ("VOP3P", opcodes::vop3p::NAMES),
        ("DS", opcodes::ds::NAMES),
        ("FLAT", opcodes::flat::NAMES),
        ("SCRATCH", opcodes::scratch::NAMES),
        ("GLOBAL", opcodes::global::NAMES),
        ("MUBUF", opcodes::mubuf::NAMES),
    ];
    let mut executed_names = std::collections::BTreeSet::new();
    let (mut total_decoded, mut total_executed) = (0, 0);
    let mut report = String::new();
    for (class, table) in classes {
        let (mut decoded, mut executed, mut partial) = (0, 0, 0);
        let mut not_executed = Vec::new();
        for &(op, name) in table {
            // VOP3 opcodes below 0x1c0 are the VOP1/VOP2/VOPC e64 forms: counted there.
            if class == "VOP3" && op < VOP3_FROM_VOP1 + 0x80 {
                continue;
            }
            let words = encode(class, op as u32);
            match executes(&words) {
                Ok(ran) => {
                    decoded += 1;
                    if ran.is_some() {
                        executed += 1;
                        executed_names.insert(name);
                    }
                    if ran == Some(false) {
                        partial += 1;
                    }
                    if ran.is_none() {
                        not_executed.push(name);
                    }
                }
                Err(e) => panic!("{class} {name} ({op}) does not decode: {e}"),
            }
        }
        report += &format!("{class:>8}: {decoded:>4} decoded, {executed:>4} executed ({partial} of them only in some forms)\n");
        if std::env::var_os("AMDGPU_ISA_LIST_MISSING").is_some() {
            report += &format!("          not executed: {}\n", not_executed.join(" "));
        }
        total_decoded += decoded;
        total_executed += executed;
    }
    eprintln!("\n{report}   total: {total_decoded:>4} decoded, {total_executed:>4} executed\n");
    // Every opcode hipcc emitted for tests/hip/kernels.hip (-O2) runs.
    let mut missing = Vec::new();
    for line in KERNELS_DIS.lines().filter(|l| l.starts_with('\t')) {
        let name = line.split_whitespace().next().unwrap();
        let name = ["_e32", "_e64", "_sdwa", "_dpp"].iter().fold(name, |n, s| n.strip_suffix(s).unwrap_or(n));
        if !executed_names.contains(name) && !missing.contains(&name) {
            missing.push(name);
        }
    }
    assert!(missing.is_empty(), "opcodes of the hipcc kernels not executed: {missing:?}");
}

/// GFX10 instruction words for opcode `op` of a class (gfx1030 layouts).
fn encode10(class: &str, op: u32) -> Vec<u32> {
    match class {
        "SOP2" => vec![0x8000_0000 | op << 23, 0],
        "SOPK" => vec![0xb000_0000 | op << 23, 0],
        "SOP1" => vec![0xbe80_0000 | op << 8],
        "SOPC" => vec![0xbf00_0000 | op << 16],
        "SOPP" => vec![0xbf80_0000 | op << 16],
        "SMEM" => vec![0xf400_0000 | op << 18, 0x7d << 25],
        "VOPC" => vec![0x7c00_0000 | op << 17 | 0x100],
        "VOP2" => vec![(op - 0x100) << 25 | 0x100, 0],
        "VOP1" => vec![0x7e00_0000 | (op - 0x180) << 9 | 0x100, 0],
        "VOP3" => vec![0xd400_0000 | op << 16, 0x100 | 0x100 << 9 | 0x100 << 18],
        "VOP3P" => vec![0xcc00_0000 | op << 16, 0x100 | 0x100 << 9 | 0x100 << 18],
        "DS" => vec![0xd800_0000 | op << 18, 0],
        "FLAT" => vec![0xdc00_0000 | op << 18, 0x7d << 16],
        "SCRATCH" => vec![0xdc00_4000 | op << 18, 0x7d << 16],
        "GLOBAL" => vec![0xdc00_8000 | op << 18, 0x7d << 16],
        "MUBUF" => vec![0xe000_0000 | (op & 0x7f) << 18 | (op >> 7) << 25, 0x80 << 24],
        _ => unreachable!(),
    }
}

/// `opcode_coverage_per_class` for gfx1030: every opcode of LLVM's gfx1030
/// tables (src/opcodes10.rs) encoded in its GFX10 layout, decoded and
/// executed once on a wave32; and every opcode of the gfx1030 hipcc code
/// object of the guest suite executes.
#[test]
fn gfx1030_opcode_coverage_per_class() {
    use amdgpu_isa::decode::{decode_for, Generation};
    use amdgpu_isa::opcodes10;
    let executes10 = |words: &[u32]| -> Result<Option<bool>, String> {
        let inst = decode_for(Generation::Gfx10, words).map_err(|e| format!("{e:?}"))?;
        let mut wave = Box::new(Wave::new());
        wave.gen = Generation::Gfx10;
        wave.wave32 = true;
        wave.exec = 0xffff_ffff;
        wave.pc = 0x1000;
        let mut mem = SparseMemory::new();
        mem.map(0, vec![0; 0x10000]);
        let mut lds = vec![0u8; 0x10000];
        let mut scratch = vec![0u8; 32 * 256];
        let mut env = Environment { global: &mut mem, lds: &mut lds, scratch: &mut scratch, scratch_lane_bytes: 256, apertures: APERTURES };
        Ok(match execute(&mut wave, &mut env, &inst) {
            Err(ExecError::UnsupportedOpcode { .. }) => None,
            Err(ExecError::UnsupportedForm { .. }) => Some(false),
            _ => Some(true),
        })
    };
    let valu = opcodes10::vop3::NAMES;
    let classes: [(&str, Vec<(u16, &str)>); 16] = [
        ("SOP2", opcodes10::sop2::NAMES.to_vec()),
        ("SOPK", opcodes10::sopk::NAMES.to_vec()),
        ("SOP1", opcodes10::sop1::NAMES.to_vec()),
        ("SOPC", opcodes10::sopc::NAMES.to_vec()),
        ("SOPP", opcodes10::sopp::NAMES.to_vec()),
        ("SMEM", opcodes10::smem::NAMES.to_vec()),
        ("VOP1", valu.iter().copied().filter(|&(o, _)| (0x180..0x200).contains(&o)).collect()),
        ("VOP2", valu.iter().copied().filter(|&(o, _)| (0x100..0x140).contains(&o)).collect()),
        ("VOPC", valu.iter().copied().filter(|&(o, _)| o < 0x100).collect()),
        ("VOP3", valu.iter().copied().filter(|&(o, _)| (0x140..0x180).contains(&o) || o >= 0x200).collect()),
        ("VOP3P", opcodes10::vop3p::NAMES.to_vec()),
        ("DS", opcodes10::ds::NAMES.to_vec()),
        ("FLAT", opcodes10::flat::NAMES.to_vec()),
        ("SCRATCH", opcodes10::scratch::NAMES.to_vec()),
        ("GLOBAL", opcodes10::global::NAMES.to_vec()),
        ("MUBUF", opcodes10::mubuf::NAMES.to_vec()),
    ];
    let mut executed_names = std::collections::BTreeSet::new();
    let (mut total_decoded, mut total_executed) = (0, 0);
    let mut report = String::new();
    for (class, table) in classes {
        let (mut decoded, mut executed, mut partial) = (0, 0, 0);
        let mut not_executed = Vec::new();
        for &(op, name) in &table {
            let ran = match executes10(&encode10(class, op as u32)) {
                Ok(ran) => ran,
                // VOP2 keys LLVM decodes in VOP3 form only (the e64 of a
                // VOP2 op whose e32 slot is another instruction) do not
                // decode as e32 words: try the VOP3 word.
                Err(_) if class == "VOP2" => executes10(&encode10("VOP3", op as u32)).unwrap_or_else(|e| panic!("{class} {name} ({op:#x}) does not decode: {e}")),
                Err(e) => panic!("{class} {name} ({op:#x}) does not decode: {e}"),
            };
            decoded += 1;
            if ran.is_some() {
                executed += 1;
                executed_names.insert(name);
            }
            if ran == Some(false) {
                partial += 1;
            }
            if ran.is_none() {
                not_executed.push(name);
            }
        }
        report += &format!("{class:>8}: {decoded:>4} decoded, {executed:>4} executed ({partial} of them only in some forms)\n");
        if std::env::var_os("AMDGPU_ISA_LIST_MISSING").is_some() {
            report += &format!("          not executed: {}\n", not_executed.join(" "));
        }
        total_decoded += decoded;
        total_executed += executed;
    }
    eprintln!("\ngfx1030:\n{report}   total: {total_decoded:>4} decoded, {total_executed:>4} executed\n");
    let mut missing = Vec::new();
    for line in include_str!("fixtures/suite_gfx1030.dis").lines().filter(|l| l.starts_with('\t')) {
        let name = line.split_whitespace().next().unwrap();
        let name = ["_e32", "_e64", "_sdwa", "_dpp"].iter().fold(name, |n, s| n.strip_suffix(s).unwrap_or(n));
        // s_code_end pads the code after the last kernel; never executed.
        if name != "s_code_end" && !executed_names.contains(name) && !missing.contains(&name) {
            missing.push(name);
        }
    }
    assert!(missing.is_empty(), "opcodes of the gfx1030 hipcc suite not executed: {missing:?}");
}
