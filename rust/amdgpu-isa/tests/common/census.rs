// SPDX-License-Identifier: GPL-2.0 OR MIT
//! An opcode census of whole code objects: which instructions of a code
//! object the interpreter cannot decode or cannot execute, with counts.
//!
//! Inputs are what Debian ships: an AMDGPU ELF code object, a clang offload
//! bundle (`__CLANG_OFFLOAD_BUNDLE__`), or a host ELF (a HIP program or a
//! library such as `librocsparse.so.0`) whose `.hip_fatbin` section holds
//! one or more bundles, 4 KiB-aligned one after the other.  The code
//! objects of the wanted targets are taken out of bundles; every function's
//! code (`.text`, in symbol order) is swept linearly, each instruction
//! decoded with [`decode_for`] for the census's [`Generation`] (gfx90a:
//! GFX9, gfx1030: GFX10.3) and each distinct instruction (its words)
//! executed once on a scratch wave of each wave size the code object's
//! kernel descriptors ask for (GFX9: wave64; GFX10: wave32 and/or wave64,
//! `ENABLE_WAVEFRONT_SIZE32`; both when it has no descriptor): it counts as
//! executed unless the interpreter answers "unsupported opcode" or
//! "unsupported form".  A fault or an out-of-bounds
//! access on the scratch wave's memory still counts as executed: the
//! interpreter implements the instruction, the scratch operands are just
//! not a valid address.
#![allow(dead_code, reason = "the example and the test use different parts")]

use amdgpu_isa::code_object::{Elf, KernelDescriptor};
use amdgpu_isa::decode::{decode_for, DecodeError, Generation, Instruction};
use amdgpu_isa::exec::{execute, ExecError};
use amdgpu_isa::memory::Environment;
use amdgpu_isa::wave::Wave;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use crate::common::{SparseMemory, APERTURES};

const BUNDLE_MAGIC: &[u8; 24] = b"__CLANG_OFFLOAD_BUNDLE__";
const EM_AMDGPU: u16 = 224;

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes(b[o..o + 2].try_into().unwrap())
}
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

fn read_at(file: &mut File, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    file.seek(SeekFrom::Start(offset))?;
    file.read_exact(&mut buf)?;
    Ok(buf)
}

/// One device code object found in an input: its offload target (e.g.
/// `hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-`, or "" for a bare ELF) and bytes.
pub struct CodeObject {
    pub target: String,
    pub bytes: Vec<u8>,
}

/// The entries of the bundle at `base` of `file` whose target `wanted`
/// accepts, and the end of the bundle (its furthest entry byte).
fn read_bundle(file: &mut File, base: u64, limit: u64, wanted: &dyn Fn(&str) -> bool, out: &mut Vec<CodeObject>) -> std::io::Result<Option<u64>> {
    if base + 32 > limit {
        return Ok(None);
    }
    let head = read_at(file, base, 32)?;
    if &head[..24] != BUNDLE_MAGIC {
        return Ok(None);
    }
    let count = u64_at(&head, 24);
    // Entry headers: offset, size, triple length, triple.
    let header_len = ((limit - base).min(1 << 20)) as usize;
    let header = read_at(file, base, header_len)?;
    let mut at = 32;
    let mut end = base + 32;
    for _ in 0..count {
        if at + 24 > header.len() {
            return Err(std::io::Error::other("bundle entry table past 1 MiB"));
        }
        let (offset, size, triple_len) = (u64_at(&header, at), u64_at(&header, at + 8), u64_at(&header, at + 16) as usize);
        let triple = String::from_utf8_lossy(&header[at + 24..at + 24 + triple_len]).into_owned();
        at += 24 + triple_len;
        end = end.max(base + offset + size);
        if size > 0 && wanted(&triple) {
            out.push(CodeObject { target: triple, bytes: read_at(file, base + offset, size as usize)? });
        }
    }
    Ok(Some(end))
}

/// Every device code object in the file at `path` whose offload target
/// `wanted` accepts (a bare AMDGPU ELF is always taken).
pub fn code_objects(path: &str, wanted: &dyn Fn(&str) -> bool) -> std::io::Result<Vec<CodeObject>> {
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    let head = read_at(&mut file, 0, 64.min(len as usize))?;
    let mut out = Vec::new();
    if head.len() >= 64 && &head[..4] == b"\x7fELF" && u16_at(&head, 18) == EM_AMDGPU {
        out.push(CodeObject { target: String::new(), bytes: read_at(&mut file, 0, len as usize)? });
        return Ok(out);
    }
    let (start, limit) = if head.len() >= 24 && &head[..24] == BUNDLE_MAGIC {
        (0, len)
    } else if head.len() >= 64 && &head[..4] == b"\x7fELF" {
        // A host ELF64: its .hip_fatbin section.
        let shoff = u64_at(&head, 40);
        let (shentsize, shnum, shstrndx) = (u16_at(&head, 58) as u64, u16_at(&head, 60) as u64, u16_at(&head, 62) as u64);
        let sections = read_at(&mut file, shoff, (shentsize * shnum) as usize)?;
        let sh = |i: u64| &sections[(i * shentsize) as usize..((i + 1) * shentsize) as usize];
        let strtab = sh(shstrndx);
        let names = read_at(&mut file, u64_at(strtab, 24), u64_at(strtab, 32) as usize)?;
        let mut found = None;
        for i in 0..shnum {
            let s = sh(i);
            let name = &names[u32_at(s, 0) as usize..];
            if name.starts_with(b".hip_fatbin\0") {
                found = Some((u64_at(s, 24), u64_at(s, 24) + u64_at(s, 32)));
            }
        }
        match found {
            Some(range) => range,
            None => return Ok(out),
        }
    } else {
        return Err(std::io::Error::other("neither an ELF file nor a clang offload bundle"));
    };
    // Bundles one after the other, each starting 4 KiB-aligned from the
    // section's start.
    let mut at = start;
    while at < limit {
        match read_bundle(&mut file, at, limit, wanted, &mut out)? {
            Some(end) => at = start + (end - start).next_multiple_of(4096),
            None => at += 4096,
        }
    }
    Ok(out)
}

/// A function symbol of a code object.
#[derive(Clone, Debug)]
pub struct Function {
    pub name: String,
    pub vaddr: u64,
    pub size: u64,
}

/// The wave sizes the kernels of an AMDGPU ELF code object run as: each
/// kernel descriptor's (`NAME.kd`, STT_OBJECT) `ENABLE_WAVEFRONT_SIZE32`
/// bit, as (wave32 kernels, wave64 kernels).
pub fn wave_sizes(elf: &[u8]) -> (u64, u64) {
    let (mut wave32, mut wave64) = (0, 0);
    let Some(parsed) = Elf::parse(elf) else { return (0, 0) };
    for (name, vaddr, kind) in symbols(elf).unwrap_or_default() {
        if kind != 1 || !name.ends_with(".kd") {
            continue;
        }
        if let Some(kd) = parsed.bytes_at(vaddr, 64).and_then(KernelDescriptor::parse) {
            if kd.wavefront_size32() {
                wave32 += 1;
            } else {
                wave64 += 1;
            }
        }
    }
    (wave32, wave64)
}

/// Every symbol (name, value, STT type) of an AMDGPU ELF.
fn symbols(elf: &[u8]) -> Option<Vec<(String, u64, u8)>> {
    let shoff = u64_at(elf, 40) as usize;
    let (shentsize, shnum) = (u16_at(elf, 58) as usize, u16_at(elf, 60) as usize);
    let sh = |i: usize| elf.get(shoff + i * shentsize..shoff + (i + 1) * shentsize);
    let mut out = Vec::new();
    for i in 0..shnum {
        let s = sh(i)?;
        if u32_at(s, 4) != 2 {
            continue;
        }
        let (offset, size) = (u64_at(s, 24) as usize, u64_at(s, 32) as usize);
        let link = sh(u32_at(s, 40) as usize)?;
        let symnames = elf.get(u64_at(link, 24) as usize..)?;
        for e in elf.get(offset..offset + size)?.chunks_exact(24) {
            let t = symnames.get(u32_at(e, 0) as usize..)?;
            let name = String::from_utf8_lossy(&t[..t.iter().position(|&c| c == 0).unwrap_or(t.len())]).into_owned();
            out.push((name, u64_at(e, 8), e[4] & 0xf));
        }
    }
    Some(out)
}

/// The `.text` section (vaddr, bytes) and the function symbols (STT_FUNC,
/// non-zero size) of an AMDGPU ELF code object, sorted by address.
pub fn text_and_functions(elf: &[u8]) -> Option<(u64, &[u8], Vec<Function>)> {
    if elf.len() < 64 || &elf[..4] != b"\x7fELF" || u16_at(elf, 18) != EM_AMDGPU {
        return None;
    }
    let shoff = u64_at(elf, 40) as usize;
    let (shentsize, shnum, shstrndx) = (u16_at(elf, 58) as usize, u16_at(elf, 60) as usize, u16_at(elf, 62) as usize);
    let sh = |i: usize| elf.get(shoff + i * shentsize..shoff + (i + 1) * shentsize);
    let strtab = sh(shstrndx)?;
    let names = elf.get(u64_at(strtab, 24) as usize..)?;
    let cstr = |b: &[u8], o: usize| -> String {
        let t = &b[o..];
        String::from_utf8_lossy(&t[..t.iter().position(|&c| c == 0).unwrap_or(t.len())]).into_owned()
    };
    let mut text = None;
    let mut functions = Vec::new();
    for i in 0..shnum {
        let s = sh(i)?;
        let (offset, size) = (u64_at(s, 24) as usize, u64_at(s, 32) as usize);
        if cstr(names, u32_at(s, 0) as usize) == ".text" {
            text = Some((u64_at(s, 16), elf.get(offset..offset + size)?));
        }
        if u32_at(s, 4) == 2 {
            // SHT_SYMTAB: entries of 24 bytes, names in the linked section.
            let link = sh(u32_at(s, 40) as usize)?;
            let symnames = elf.get(u64_at(link, 24) as usize..)?;
            for e in elf.get(offset..offset + size)?.chunks_exact(24) {
                if e[4] & 0xf == 2 && u64_at(e, 16) > 0 {
                    functions.push(Function { name: cstr(symnames, u32_at(e, 0) as usize), vaddr: u64_at(e, 8), size: u64_at(e, 16) });
                }
            }
        }
    }
    functions.sort_by_key(|f| f.vaddr);
    let (vaddr, bytes) = text?;
    Some((vaddr, bytes, functions))
}

/// Why an instruction does not run.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Gap {
    /// The decoder rejects the words (encoding class, opcode, or
    /// "encoding" for a class it does not decode).
    Undecoded(String),
    /// Decoded, but the interpreter has no semantics for the opcode.
    NotExecuted,
    /// Executed only in other forms: what the interpreter said.
    Form(&'static str),
}

/// A census entry: static occurrences, one function that has it.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    pub count: u64,
    pub example: String,
    pub word: u32,
}

/// The result of sweeping code objects.
#[derive(Default)]
pub struct Census {
    /// Instructions swept (static count) and distinct instruction words.
    pub instructions: u64,
    pub distinct: u64,
    pub functions: u64,
    /// (class, mnemonic, gap) -> occurrences; the mnemonic is LLVM's.
    pub gaps: BTreeMap<(String, String, Gap), Seen>,
    /// Per (class, interpreter opcode): occurrences of every instruction
    /// swept, with one of them ([`Census::opcodes`] names them).
    counts: HashMap<(&'static str, u16), (u64, Instruction), Fast>,
    /// Distinct instructions (words, decoded size or 0 if undecodable,
    /// wave32) already classified: None runs, Some(gap) not.
    verdicts: HashMap<(u128, u8, bool), Option<(String, String, Gap)>, Fast>,
    scratch: Option<Scratch>,
    /// The ISA the code objects are decoded and executed as.
    gen: Generation,
    /// The wave sizes of the code object being swept (wave32, wave64).
    waves: (bool, bool),
    /// Kernel descriptors seen asking for (wave32, wave64).
    pub kernels: (u64, u64),
}

/// The ISA of a code object: by its offload target name (`...--gfx1030`,
/// `...--gfx90a:xnack-`), or for a bare ELF by its `e_flags` machine
/// (EF_AMDGPU_MACH_AMDGCN_GFX1030 is 0x36); GFX9 otherwise.
pub fn generation_of(co: &CodeObject) -> Generation {
    let gfx1030_elf = co.target.is_empty() && co.bytes.len() >= 64 && u32_at(&co.bytes, 48) & 0xff == 0x36;
    if co.target.contains("gfx10") || gfx1030_elf {
        Generation::Gfx10
    } else {
        Generation::Gfx9
    }
}

/// The scratch wave and memory distinct instructions are executed on.
struct Scratch {
    wave: Box<Wave>,
    mem: SparseMemory,
    lds: Vec<u8>,
    scratch: Vec<u8>,
}

impl Scratch {
    fn new() -> Self {
        let mut mem = SparseMemory::new();
        mem.map(0, vec![0; 0x10000]);
        Scratch { wave: Box::new(Wave::new()), mem, lds: vec![0; 0x10000], scratch: vec![0; 64 * 256] }
    }

    /// Executes `words` once: None if it ran (or failed only on its scratch
    /// operands), else why not.
    fn classify(&mut self, gen: Generation, wave32: bool, words: &[u32]) -> Option<(String, String, Gap)> {
        let inst = match decode_for(gen, words) {
            Ok(inst) => inst,
            Err(DecodeError::UnknownOpcode { encoding, opcode, .. }) => {
                return Some((encoding.name().to_string(), format!("opcode {opcode:#x}"), Gap::Undecoded("unknown opcode".into())))
            }
            Err(DecodeError::UnsupportedEncoding { word }) => {
                return Some(("?".into(), format!("word {:#010x}", word & 0xfc00_0000), Gap::Undecoded("unsupported encoding".into())))
            }
            Err(DecodeError::Truncated) => return Some(("?".into(), "truncated".into(), Gap::Undecoded("truncated".into()))),
        };
        let class = inst.encoding.name().to_string();
        let mut name = inst.llvm_mnemonic().unwrap_or("?").to_string();
        if gen == Generation::Gfx10 && !wave32 {
            name += " (wave64)";
        }
        // Registers the instruction may read as addresses or counts start
        // at zero (sources, destinations, their neighbours), so memory
        // operands land in the scratch memory mapped at 0.
        let wave = &mut self.wave;
        wave.sgpr = [0; amdgpu_isa::wave::SGPR_COUNT];
        for r in inst.src.iter().chain([inst.dst, inst.sdst].iter()) {
            let reg = *r as usize & 0xff;
            for r in reg..(reg + 16).min(amdgpu_isa::wave::VGPR_COUNT) {
                wave.vgpr[r] = [0; 64];
                wave.agpr[r] = [0; 64];
            }
        }
        wave.exec = u64::MAX;
        wave.vcc = 0;
        wave.m0 = 0;
        wave.scc = false;
        wave.mode = amdgpu_isa::wave::Mode(0);
        wave.ended = false;
        wave.pc = 0x1000;
        wave.gen = gen;
        wave.wave32 = wave32;
        if wave32 {
            wave.exec = u32::MAX as u64;
        }
        let mut env = Environment { global: &mut self.mem, lds: &mut self.lds, scratch: &mut self.scratch, scratch_lane_bytes: 256, apertures: APERTURES };
        match execute(wave, &mut env, &inst) {
            Err(ExecError::UnsupportedOpcode { .. }) => Some((class, name, Gap::NotExecuted)),
            Err(ExecError::UnsupportedForm { what, .. }) => Some((class, name, Gap::Form(what))),
            _ => None,
        }
    }
}

/// A multiplicative hash (the census hashes millions of small keys; std's
/// SipHash dominated its time in debug builds).
#[derive(Clone, Copy, Default)]
pub struct Fast;

pub struct FastHasher(u64);

impl std::hash::BuildHasher for Fast {
    type Hasher = FastHasher;
    fn build_hasher(&self) -> FastHasher {
        FastHasher(0)
    }
}

impl std::hash::Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(*b as u64);
        }
    }
    fn write_u8(&mut self, v: u8) {
        self.write_u64(v as u64);
    }
    fn write_u16(&mut self, v: u16) {
        self.write_u64(v as u64);
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7cc1_b727_220a_95);
    }
    fn write_u128(&mut self, v: u128) {
        self.write_u64(v as u64);
        self.write_u64((v >> 64) as u64);
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

impl Census {
    /// A census of code objects of generation `gen` (the default is GFX9).
    pub fn new(gen: Generation) -> Self {
        Census { gen, ..Census::default() }
    }

    /// Occurrences of every instruction swept per (class, mnemonic), LLVM's
    /// mnemonics for the census's generation.
    pub fn opcodes(&self) -> BTreeMap<(String, String), u64> {
        let mut out = BTreeMap::new();
        for (&(class, _), (count, inst)) in &self.counts {
            *out.entry((class.to_string(), inst.llvm_mnemonic().unwrap_or("?").to_string())).or_default() += count;
        }
        out
    }

    /// Sweeps every function of an AMDGPU ELF code object; false if it is
    /// not one or has no `.text`.
    pub fn add_code_object(&mut self, elf: &[u8]) -> bool {
        let Some((text_vaddr, text, functions)) = text_and_functions(elf) else { return false };
        let (wave32, wave64) = wave_sizes(elf);
        self.kernels.0 += wave32;
        self.kernels.1 += wave64;
        self.waves = match self.gen {
            Generation::Gfx9 => (false, true),
            Generation::Gfx10 if wave32 + wave64 == 0 => (true, true),
            Generation::Gfx10 => (wave32 > 0, wave64 > 0),
        };
        for f in &functions {
            let Some(start) = f.vaddr.checked_sub(text_vaddr) else { continue };
            let Some(code) = text.get(start as usize..(start + f.size) as usize) else { continue };
            let words: Vec<u32> = code.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
            self.add_function(&f.name, &words);
        }
        true
    }

    /// Sweeps one function's instruction words (as the wave sizes of the
    /// last code object added; outside one, GFX9 wave64 or GFX10 both).
    pub fn add_function(&mut self, name: &str, words: &[u32]) {
        let scratch = self.scratch.get_or_insert_with(Scratch::new);
        let gen = self.gen;
        let waves = match (gen, self.waves) {
            (Generation::Gfx9, _) => (false, true),
            (Generation::Gfx10, (false, false)) => (true, true),
            (_, sizes) => sizes,
        };
        self.functions += 1;
        let mut i = 0;
        while i < words.len() {
            // GFX10 VOP3 takes a literal: up to 3 words.
            let w = &words[i..(i + 3).min(words.len())];
            let (size, key) = match decode_for(gen, w) {
                Ok(inst) => {
                    let size = inst.size as usize / 4;
                    self.counts.entry((inst.encoding.name(), inst.opcode)).or_insert((0, inst)).0 += 1;
                    (size, (w[..size].iter().rev().fold(0u128, |key, &word| key << 32 | word as u128), size as u8))
                }
                // Undecodable: one word at a time, keyed by it alone.
                Err(_) => (1, (w[0] as u128, 0)),
            };
            self.instructions += 1;
            // The first wave size that does not run it decides.
            let mut verdict = None;
            let mut first = true;
            for wave32 in [true, false].into_iter().filter(|&w32| if w32 { waves.0 } else { waves.1 }) {
                let key = (key.0, key.1, wave32);
                let v = match self.verdicts.get(&key) {
                    Some(v) => v.clone(),
                    None => {
                        if first {
                            self.distinct += 1;
                        }
                        let v = scratch.classify(gen, wave32, &w[..size.min(w.len())]);
                        self.verdicts.insert(key, v.clone());
                        v
                    }
                };
                first = false;
                if v.is_some() {
                    verdict = v;
                    break;
                }
            }
            if let Some(gap) = verdict {
                let seen = self.gaps.entry(gap).or_default();
                if seen.count == 0 {
                    seen.example = name.to_string();
                    seen.word = w[0];
                }
                seen.count += 1;
            }
            i += size;
        }
    }

    /// The report: totals, then each gap with its static count, grouped by
    /// class, most frequent first.
    pub fn report(&self) -> String {
        let mut s = format!("{} functions, {} instructions ({} distinct)", self.functions, self.instructions, self.distinct);
        s += &match self.gen {
            Generation::Gfx9 => "\n".to_string(),
            Generation::Gfx10 => format!(", kernels: {} wave32, {} wave64\n", self.kernels.0, self.kernels.1),
        };
        let mut by_class: BTreeMap<&str, Vec<(&(String, String, Gap), &Seen)>> = BTreeMap::new();
        for (k, v) in &self.gaps {
            by_class.entry(&k.0).or_default().push((k, v));
        }
        if by_class.is_empty() {
            s += "every instruction decodes and executes\n";
        }
        for (class, mut gaps) in by_class {
            gaps.sort_by(|a, b| b.1.count.cmp(&a.1.count).then(a.0.cmp(b.0)));
            let total: u64 = gaps.iter().map(|g| g.1.count).sum();
            s += &format!("{class}: {} opcodes/forms, {total} instructions\n", gaps.len());
            for ((_, name, gap), seen) in gaps {
                let why = match gap {
                    Gap::Undecoded(w) => format!("not decoded ({w}, word {:#010x})", seen.word),
                    Gap::NotExecuted => "not executed".to_string(),
                    Gap::Form(what) => format!("form not executed: {what}"),
                };
                s += &format!("  {:>9}  {name:<32} {why}  e.g. in {}\n", seen.count, seen.example);
            }
        }
        s
    }
}
