#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR MIT
"""Generates src/opcodes.rs: the gfx90a opcode tables, read out of LLVM's
AMDGPU disassembler (llvm-mc-15), so no opcode number is typed by hand.

For each encoding class, every opcode value is placed into an instruction word
of that class (register operands v0/s0, a zero literal after it) and handed to
`llvm-mc-15 -arch=amdgcn -mcpu=gfx90a -disassemble`; what LLVM names it (from
the encodings in llvm/lib/Target/AMDGPU/{SOPInstructions,SMInstructions,
VOP1Instructions,VOP2Instructions,VOPCInstructions,VOP3Instructions,
VOP3PInstructions,DSInstructions,FLATInstructions,BUFInstructions}.td) is
recorded; values LLVM does not decode are left out.

Run: python3 scripts/gen-opcode-tables.py > src/opcodes.rs
"""
import concurrent.futures
import re
import subprocess
import sys

MC = "llvm-mc-15"

def words_sop2(op): return [0x80000000 | op << 23]
def words_sopk(op): return [0xB0000000 | op << 23]
def words_sop1(op): return [0xBE800000 | op << 8]
def words_sopc(op): return [0xBF000000 | op << 16]
def words_sopp(op): return [0xBF800000 | op << 16]
def words_smem(op): return [[0xC0000000 | op << 18 | imm << 17, 0] for imm in (1, 0)]
def words_vop2(op): return [op << 25 | 0x100]
def words_vop1(op): return [0x7E000000 | op << 9 | 0x100]
def words_vopc(op): return [0x7C000000 | op << 17 | 0x100]
# LLVM's decoder wants unused source fields zero, so the one-, two- and
# three-source shapes are tried in turn.
def words_vop3(op): return [[0xD0000000 | op << 16, src] for src in
                            (0x100 | 0x100 << 9 | 0x100 << 18, 0x100 | 0x100 << 9, 0x100, 0)]
# VOP3P: one to three sources, op_sel_hi set or clear, and for the gfx90a
# MAI instructions (v_accvgpr_*, v_mfma_*) the acc_cd bit 15.
def words_vop3p(op): return [[0xD3800000 | op << 16 | hi14 | acc_cd, src | hi] for src in
                             (0x100 | 0x100 << 9 | 0x100 << 18, 0x100 | 0x100 << 9, 0x100)
                             for hi in (3 << 27, 0) for hi14 in (1 << 14, 0)
                             for acc_cd in (0, 1 << 15)]
def words_ds(op): return [0xD8000000 | op << 17, 0]
def flat(seg): return lambda op: [[0xDC000000 | seg << 14 | op << 18, saddr << 16]
                                  for saddr in (0x7F, 0)]
def words_mubuf(op): return [0xE0000000 | op << 18, 0]

# (table name, LLVM .td file, opcode range, word builder)
CLASSES = [
    ("SOP2", "SOPInstructions.td (SOP2_Real_vi)", range(0, 96), words_sop2),
    ("SOPK", "SOPInstructions.td (SOPK_Real_vi)", range(0, 29), words_sopk),
    ("SOP1", "SOPInstructions.td (SOP1_Real_vi)", range(0, 256), words_sop1),
    ("SOPC", "SOPInstructions.td (SOPC_Real_vi)", range(0, 128), words_sopc),
    ("SOPP", "SOPInstructions.td (SOPP_Real_vi)", range(0, 128), words_sopp),
    ("SMEM", "SMInstructions.td (SMEM_Real_vi)", range(0, 256), words_smem),
    ("VOP2", "VOP2Instructions.td (VOP2_Real_e32_vi, gfx90a)", range(0, 62), words_vop2),
    ("VOP1", "VOP1Instructions.td (VOP1_Real_e32_vi)", range(0, 256), words_vop1),
    ("VOPC", "VOPCInstructions.td (VOPC_Real_vi)", range(0, 256), words_vopc),
    # VOP3 opcodes 0x380 and up share their top bits with the VOP3P prefix.
    ("VOP3", "VOP3Instructions.td + the e64 forms of VOP1/VOP2/VOPC (VOP3_Real_vi)", range(0, 0x380), words_vop3),
    ("VOP3P", "VOP3PInstructions.td (VOP3P_Real_vi, MAI for gfx90a)", range(0, 128), words_vop3p),
    ("DS", "DSInstructions.td (DS_Real_vi, gfx90a)", range(0, 256), words_ds),
    ("FLAT", "FLATInstructions.td (FLAT_Real_vi, seg=0)", range(0, 128), flat(0)),
    ("SCRATCH", "FLATInstructions.td (FLAT_Real_vi, seg=1)", range(0, 128), flat(1)),
    ("GLOBAL", "FLATInstructions.td (FLAT_Real_vi, seg=2)", range(0, 128), flat(2)),
    ("MUBUF", "BUFInstructions.td (MUBUF_Real_vi, gfx90a)", range(0, 128), words_mubuf),
]

def disasm(shapes):
    if isinstance(shapes[0], list):
        for words in shapes:
            name = disasm_one(words)
            if name is not None:
                return name
        return None
    return disasm_one(shapes)

def disasm_one(words):
    data = b"".join(w.to_bytes(4, "little") for w in words + [0])
    text = ",".join("0x%02x" % b for b in data)
    run = subprocess.run([MC, "-arch=amdgcn", "-mcpu=gfx90a", "-disassemble"],
                         input=text, capture_output=True, text=True)
    # LLVM reports an undecodable first word as "<stdin>:1:1: warning:
    # invalid instruction encoding" and goes on with the next dword.
    if "<stdin>:1:1: warning: invalid instruction encoding" in run.stderr:
        return None
    out = run.stdout
    for line in out.splitlines():
        line = line.strip()
        if line and not line.startswith("."):
            return line.split()[0]
    return None

def mnemonic(name):
    return re.sub(r"_e(32|64)$", "", name)

def main():
    jobs = [(c, op) for c in CLASSES for op in c[2]]
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        names = list(pool.map(lambda j: disasm(j[0][3](j[1])), jobs))
    tables = {}
    for (c, op), name in zip(jobs, names):
        if name is not None:
            tables.setdefault(c[0], []).append((op, mnemonic(name)))
    print("// SPDX-License-Identifier: GPL-2.0 OR MIT")
    print("// @generated by scripts/gen-opcode-tables.py from llvm-mc-15 (LLVM AMDGPU")
    print("// disassembler, -mcpu=gfx90a). Do not edit by hand.")
    print("//! gfx90a opcode numbers and mnemonics per encoding class, as LLVM's")
    print("//! AMDGPU backend decodes them.")
    print()
    for c in CLASSES:
        rows = tables.get(c[0], [])
        mod = c[0].lower()
        print("/// %s opcodes; LLVM source: llvm/lib/Target/AMDGPU/%s." % (c[0], c[1]))
        print("pub mod %s {" % mod)
        seen = set()
        for op, name in rows:
            const = name.upper()
            if const in seen:
                continue
            seen.add(const)
            print("    pub const %s: u16 = %d;" % (const, op))
        print("    /// (opcode, mnemonic) for every opcode LLVM decodes in this class.")
        print("    pub const NAMES: &[(u16, &str)] = &[")
        for op, name in rows:
            print('        (%d, "%s"),' % (op, name))
        print("    ];")
        print("}")
        print()
    print("// counts: " + ", ".join("%s %d" % (c[0], len(tables.get(c[0], []))) for c in CLASSES), file=sys.stderr)

main()
