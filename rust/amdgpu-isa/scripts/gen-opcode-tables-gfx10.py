#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR MIT
"""Generates src/opcodes10.rs: the gfx1030 (GFX10.3) opcode tables, read out
of LLVM's AMDGPU disassembler (llvm-mc-15 -mcpu=gfx1030) as
gen-opcode-tables.py does for gfx90a, and mapped into the interpreter's one
opcode space, GFX9's (src/opcodes.rs, which this script reads):

- an instruction GFX9 also has (by LLVM mnemonic, with the renames below)
  gets its GFX9 opcode, so the interpreter runs it with the same code;
- an instruction only GFX10 has gets an opcode past every GFX9 opcode of its
  class (EXT_BASE + its GFX10 opcode) and a constant in this file.

VALU opcodes are in VOP3 space: a VOPC opcode as is, VOP2 0x100 + op,
VOP1 0x180 + op (GFX10's VOP3 numbering; GFX9 puts VOP1 at 0x140).

Run: python3 scripts/gen-opcode-tables-gfx10.py > src/opcodes10.rs
"""
import concurrent.futures
import os
import re
import subprocess
import sys

MC = "llvm-mc-15"
CPU = "gfx1030"
NULL = 0x7d  # SGPR_NULL: "off" in GFX10's saddr/soffset fields

def words_sop2(op): return [0x80000000 | op << 23]
def words_sopk(op): return [0xB0000000 | op << 23]
def words_sop1(op): return [0xBE800000 | op << 8]
def words_sopc(op): return [0xBF000000 | op << 16]
def words_sopp(op): return [0xBF800000 | op << 16]
def words_smem(op): return [[0xF4000000 | op << 18, soff << 25] for soff in (NULL, 0)]
def words_vop2(op): return [op << 25 | 0x100]
def words_vop1(op): return [0x7E000000 | op << 9 | 0x100]
def words_vopc(op): return [0x7C000000 | op << 17 | 0x100]
def words_vop3(op): return [[0xD4000000 | op << 16 | dst, src] for dst in (0, 0x6a) for src in
                            (0x100 | 0x100 << 9 | 0x100 << 18, 0x100 | 0x100 << 9, 0x100, 0)]
def words_vop3p(op): return [[0xCC000000 | op << 16 | hi14, src | hi] for src in
                             (0x100 | 0x100 << 9 | 0x100 << 18, 0x100 | 0x100 << 9, 0x100)
                             for hi in (3 << 27, 0) for hi14 in (1 << 14, 0)]
def words_ds(op): return [0xD8000000 | op << 18, 0]
def flat(seg): return lambda op: [[0xDC000000 | seg << 14 | op << 18, saddr << 16]
                                  for saddr in (NULL, 0)]
def words_mubuf(op): return [[0xE0000000 | (op & 0x7f) << 18 | (op >> 7) << 25, soff << 24] for soff in (0x80, NULL)]

# (table, GFX9 table(s) to map into, LLVM .td, opcodes, words, base of GFX10-only opcodes)
CLASSES = [
    ("SOP2", "sop2", "SOPInstructions.td (SOP2_Real_gfx10)", range(0, 96), words_sop2, 0x80),
    ("SOPK", "sopk", "SOPInstructions.td (SOPK_Real_gfx10)", range(0, 29), words_sopk, 0x20),
    ("SOP1", "sop1", "SOPInstructions.td (SOP1_Real_gfx10)", range(0, 256), words_sop1, 0x100),
    ("SOPC", "sopc", "SOPInstructions.td (SOPC_Real_gfx10)", range(0, 128), words_sopc, 0x80),
    ("SOPP", "sopp", "SOPInstructions.td (SOPP_Real_gfx10)", range(0, 128), words_sopp, 0x80),
    ("SMEM", "smem", "SMInstructions.td (SMEM_Real_gfx10)", range(0, 256), words_smem, 0x100),
    ("VOP2", None, "VOP2Instructions.td (VOP2_Real_gfx10)", range(0, 62), words_vop2, None),
    ("VOP1", None, "VOP1Instructions.td (VOP1_Real_gfx10)", range(0, 128), words_vop1, None),
    ("VOPC", None, "VOPCInstructions.td (VOPC_Real_gfx10)", range(0, 256), words_vopc, None),
    ("VOP3", "vop3", "VOP3Instructions.td + e64 forms (VOP3_Real_gfx10)", range(0, 0x400), words_vop3, 0x400),
    ("VOP3P", "vop3p", "VOP3PInstructions.td (VOP3P_Real_gfx10)", range(0, 128), words_vop3p, 0x80),
    ("DS", "ds", "DSInstructions.td (DS_Real_gfx10)", range(0, 256), words_ds, 0x100),
    ("FLAT", "flat", "FLATInstructions.td (FLAT_Real_gfx10, seg=0)", range(0, 128), flat(0), 0x80),
    ("SCRATCH", "scratch", "FLATInstructions.td (FLAT_Real_gfx10, seg=1)", range(0, 128), flat(1), 0x80),
    ("GLOBAL", "global", "FLATInstructions.td (FLAT_Real_gfx10, seg=2)", range(0, 128), flat(2), 0x80),
    ("MUBUF", "mubuf", "BUFInstructions.td (MUBUF_Real_gfx10)", range(0, 256), words_mubuf, 0x80),
]

# GFX10 mnemonics of instructions GFX9 has under another name.
RENAMES = {
    "v_add_nc_u32": "v_add_u32",
    "v_sub_nc_u32": "v_sub_u32",
    "v_subrev_nc_u32": "v_subrev_u32",
    "v_add_co_ci_u32": "v_addc_co_u32",
    "v_sub_co_ci_u32": "v_subb_co_u32",
    "v_subrev_co_ci_u32": "v_subbrev_co_u32",
    "v_add_nc_i32": "v_add_i32",
    "v_sub_nc_i32": "v_sub_i32",
}

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
    run = subprocess.run([MC, "-arch=amdgcn", "-mcpu=" + CPU, "-disassemble"],
                         input=text, capture_output=True, text=True)
    if "<stdin>:1:1: warning: invalid instruction encoding" in run.stderr:
        return None
    for line in run.stdout.splitlines():
        line = line.strip()
        if line and not line.startswith("."):
            return line.split()[0]
    return None

def mnemonic(name):
    return re.sub(r"_e(32|64)$", "", name)

def gfx9_tables():
    """(class module, mnemonic) -> GFX9 opcode, from src/opcodes.rs."""
    path = os.path.join(os.path.dirname(__file__), "..", "src", "opcodes.rs")
    tables, mod = {}, None
    for line in open(path):
        m = re.match(r"pub mod (\w+) \{", line)
        if m:
            mod = m.group(1)
        m = re.match(r'\s+\((\d+), "([\w.]+)"\),', line)
        if m and mod:
            tables.setdefault(mod, {}).setdefault(m.group(2), int(m.group(1)))
    return tables

def main():
    jobs = [(c, op) for c in CLASSES for op in c[3]]
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        names = list(pool.map(lambda j: disasm(j[0][4](j[1])), jobs))
    found = {}
    for (c, op), name in zip(jobs, names):
        if name is not None:
            found.setdefault(c[0], []).append((op, mnemonic(name)))
    g9 = gfx9_tables()
    # The VALU in GFX10 VOP3 numbering: every VOP3 opcode, and the
    # e32-only opcodes of VOP1/VOP2/VOPC at their VOP3 place.
    valu = dict(found.get("VOP3", []))
    for cls, base in (("VOPC", 0), ("VOP2", 0x100), ("VOP1", 0x180)):
        for op, name in found.get(cls, []):
            key = base + op
            if key in valu and valu[key] != name:
                sys.exit("VALU opcode %#x is %s in VOP3 and %s in %s" % (key, valu[key], name, cls))
            valu.setdefault(key, name)
    found["VOP3"] = sorted(valu.items())

    def g9_valu(name):
        if name in g9["vop3"]:
            return g9["vop3"][name]
        if name in g9["vop1"]:
            return 0x140 + g9["vop1"][name]
        if name in g9["vop2"]:
            return 0x100 + g9["vop2"][name]
        return None

    print("// SPDX-License-Identifier: GPL-2.0 OR MIT")
    print("// @generated by scripts/gen-opcode-tables-gfx10.py from llvm-mc-15 (LLVM AMDGPU")
    print("// disassembler, -mcpu=gfx1030) and src/opcodes.rs. Do not edit by hand.")
    print("//! gfx1030 (GFX10.3) opcodes, mapped into the interpreter's GFX9 opcode")
    print("//! space: `MAP` gives each GFX10 opcode LLVM decodes its GFX9 opcode (same")
    print("//! instruction, by mnemonic) or, for instructions GFX9 lacks, an opcode past")
    print("//! GFX9's (`EXT_BASE` + the GFX10 opcode), named in `EXT_NAMES` and by a")
    print("//! constant. VALU opcodes (`vop3`) are in GFX10 VOP3 numbering: VOPC as is,")
    print("//! VOP2 0x100 + op, VOP1 0x180 + op.")
    print()
    counts = []
    for c in CLASSES:
        if c[1] is None:
            continue
        rows = found.get(c[0], [])
        mod = c[1]
        base = c[5]
        mapping, ext = [], []
        for op, name in rows:
            g = RENAMES.get(name, name)
            n9 = g9_valu(g) if mod == "vop3" else g9.get(mod, {}).get(g)
            if n9 is None:
                n9 = base + op
                ext.append((n9, name))
            mapping.append((op, n9))
        counts.append("%s %d (%d GFX10-only)" % (c[0], len(rows), len(ext)))
        print("/// %s; LLVM source: llvm/lib/Target/AMDGPU/%s." % (c[0], c[2]))
        print("pub mod %s {" % mod)
        print("    /// First opcode of the GFX10-only instructions of this class.")
        print("    pub const EXT_BASE: u16 = %#x;" % base)
        for n9, name in ext:
            print("    pub const %s: u16 = %#x;" % (name.upper(), n9))
        print("    /// (GFX10 opcode, interpreter opcode) for every opcode LLVM decodes.")
        print("    pub const MAP: &[(u16, u16)] = &[")
        for op, n9 in mapping:
            print("        (%#x, %#x)," % (op, n9))
        print("    ];")
        print("    /// (GFX10 opcode, mnemonic) for every opcode LLVM decodes.")
        print("    pub const NAMES: &[(u16, &str)] = &[")
        for op, name in rows:
            print('        (%#x, "%s"),' % (op, name))
        print("    ];")
        print("    /// (interpreter opcode, mnemonic) of the GFX10-only instructions.")
        print("    pub const EXT_NAMES: &[(u16, &str)] = &[")
        for n9, name in ext:
            print('        (%#x, "%s"),' % (n9, name))
        print("    ];")
        print("}")
        print()
    print("// counts: " + ", ".join(counts), file=sys.stderr)

main()
