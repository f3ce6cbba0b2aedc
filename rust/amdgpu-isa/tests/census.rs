// SPDX-License-Identifier: GPL-2.0 OR MIT
//! The opcode census (tests/common/census.rs, `examples/isa-census.rs`):
//! its bundle and ELF reading, its classification, and the census of the
//! gfx90a and gfx1030 code objects of Debian's ROCm libraries the guest's
//! HIP programs use (`librocrand.so.1`, `librocsparse.so.0`): every
//! instruction of every function must decode and execute, as GFX9 wave64
//! and as GFX10.3 in the wave size its kernels ask for (Debian's gfx1030
//! kernels are all wave32).

mod common;
#[path = "common/census.rs"]
mod census;

use amdgpu_isa::code_object::Elf;
use amdgpu_isa::decode::Generation;
use census::{code_objects, generation_of, text_and_functions, wave_sizes, Census, Gap};

const SUITE_CO: &[u8] = include_bytes!("fixtures/suite.co");
const SUITE10_CO: &[u8] = include_bytes!("fixtures/suite_gfx1030.co");
const SUITE10_DIS: &str = include_str!("fixtures/suite_gfx1030.dis");

/// A clang offload bundle of `entries` (target, bytes), laid out as
/// clang-offload-bundler does: header, then each entry 4 KiB-aligned.
fn bundle(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut header = b"__CLANG_OFFLOAD_BUNDLE__".to_vec();
    header.extend((entries.len() as u64).to_le_bytes());
    let mut offset = 4096u64;
    let mut body = Vec::new();
    for (target, bytes) in entries {
        header.extend(offset.to_le_bytes());
        header.extend((bytes.len() as u64).to_le_bytes());
        header.extend((target.len() as u64).to_le_bytes());
        header.extend(target.as_bytes());
        body.push((offset, *bytes));
        offset = (offset + bytes.len() as u64).next_multiple_of(4096);
    }
    let mut out = header;
    for (at, bytes) in body {
        out.resize(at as usize, 0);
        out.extend(bytes);
    }
    out
}

fn temp_file(name: &str, bytes: &[u8]) -> String {
    let path = std::env::temp_dir().join(format!("amdgpu-isa-census-{}-{name}", std::process::id()));
    std::fs::write(&path, bytes).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn bundles_yield_the_wanted_targets_only() {
    // Two bundles back to back (as in a .hip_fatbin of several objects).
    let one = bundle(&[("host-x86_64-unknown-linux", b""), ("hipv4-amdgcn-amd-amdhsa--gfx1030", b"not this"), ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", SUITE_CO)]);
    let mut file = one.clone();
    file.resize(file.len().next_multiple_of(4096), 0);
    file.extend(bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+", b"second")]));
    let path = temp_file("bundle", &file);
    let found = code_objects(&path, &|t: &str| t.contains("gfx90a")).unwrap();
    let _ = std::fs::remove_file(&path);
    let targets: Vec<&str> = found.iter().map(|c| c.target.as_str()).collect();
    assert_eq!(targets, ["hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"]);
    assert_eq!(found[0].bytes, SUITE_CO);
    assert_eq!(found[1].bytes, b"second");
}

#[test]
fn a_bare_code_object_is_swept_function_by_function() {
    let path = temp_file("suite.co", SUITE_CO);
    let found = code_objects(&path, &|_: &str| false).unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(found.len(), 1);
    let (_, text, functions) = text_and_functions(&found[0].bytes).expect("an AMDGPU ELF with .text");
    assert!(functions.iter().any(|f| f.name == "_Z4vaddPKfS0_Pfi"), "{functions:?}");
    let mut census = Census::default();
    assert!(census.add_code_object(&found[0].bytes));
    assert_eq!(census.functions, functions.len() as u64);
    // Every word of the functions is swept: 4 or 8 bytes an instruction.
    let bytes: u64 = functions.iter().map(|f| f.size).sum();
    assert!(census.instructions * 4 <= bytes && census.instructions * 8 >= bytes && bytes <= text.len() as u64);
    assert!(census.gaps.is_empty(), "{}", census.report());
}

/// A bare gfx1030 ELF is swept as GFX10.3 (its e_flags machine), its
/// kernels as the wave32 their descriptors ask for, instruction by
/// instruction exactly where llvm-objdump-15 finds them: VOP3 with a
/// literal is 3 words on GFX10 (suite_gfx1030.dis has some), so a sweep
/// reading 2 would lose step.
#[test]
fn a_gfx1030_code_object_is_swept_as_gfx10() {
    let path = temp_file("suite_gfx1030.co", SUITE10_CO);
    let found = code_objects(&path, &|_: &str| false).unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(generation_of(&found[0]), Generation::Gfx10);
    let (_, _, functions) = text_and_functions(&found[0].bytes).expect("an AMDGPU ELF with .text");
    let elf = Elf::parse(&found[0].bytes).unwrap();
    let kernels = functions.iter().filter(|f| elf.symbol(&format!("{}.kd", f.name)).is_some()).count() as u64;
    assert!(kernels >= 10 && (kernels as usize) < functions.len(), "kernels and a device function");
    assert_eq!(wave_sizes(&found[0].bytes), (kernels, 0), "{functions:?}");
    // llvm-objdump's instructions inside the function symbols.
    let in_functions = SUITE10_DIS
        .lines()
        .filter(|l| l.starts_with('\t'))
        .filter_map(|l| u64::from_str_radix(l.split("// ").nth(1)?.split(':').next()?, 16).ok())
        .filter(|&at| functions.iter().any(|f| (f.vaddr..f.vaddr + f.size).contains(&at)))
        .count() as u64;
    assert!(SUITE10_DIS.lines().any(|l| l.contains("v_mad_u64_u32") && l.split_whitespace().rev().take(3).all(|w| w.len() == 8)), "a 3-word VOP3");
    let mut census = Census::new(generation_of(&found[0]));
    assert!(census.add_code_object(&found[0].bytes));
    assert_eq!(census.instructions, in_functions, "{}", census.report());
    assert_eq!(census.kernels, (kernels, 0));
    assert!(census.gaps.is_empty(), "{}", census.report());
    assert!(census.opcodes().contains_key(&("VALU".to_string(), "v_add_nc_u32".to_string())), "GFX10's own mnemonics");
    // The same words as GFX9 do not decode the same: the generation matters.
    let mut as_gfx9 = Census::default();
    as_gfx9.add_code_object(&found[0].bytes);
    assert!(!as_gfx9.gaps.is_empty());
}

#[test]
fn gaps_are_classified_and_counted() {
    let mut census = Census::default();
    // s_nop 0; a MIMG word (an encoding compute code never uses); s_nop 0;
    // the same MIMG word again.
    census.add_function("f", &[0xbf80_0000, 0xf000_0000, 0xbf80_0000, 0xf000_0000]);
    assert_eq!((census.instructions, census.distinct), (4, 2));
    let gaps: Vec<_> = census.gaps.iter().map(|(k, v)| (k.clone(), v.count)).collect();
    assert_eq!(gaps.len(), 1, "{}", census.report());
    assert!(matches!(gaps[0].0 .2, Gap::Undecoded(_)) && gaps[0].1 == 2, "{}", census.report());
    assert_eq!(census.opcodes().get(&("SOPP".to_string(), "s_nop".to_string())), Some(&2));
}

/// Debian's libraries the guest's tests/hip/rand.hip and sparse.hip use
/// (scripts/setup installs them): each gfx90a and each gfx1030 code object
/// runs entirely.
#[test]
fn debian_rocm_libraries_run_entirely() {
    let libs = ["/usr/lib/x86_64-linux-gnu/librocrand.so.1", "/usr/lib/x86_64-linux-gnu/librocsparse.so.0"];
    let mut missing = Vec::new();
    for lib in libs {
        if !std::path::Path::new(lib).exists() {
            missing.push(lib);
            continue;
        }
        for (arch, gen) in [("gfx90a", Generation::Gfx9), ("gfx1030", Generation::Gfx10)] {
            let objects = code_objects(lib, &|t: &str| t.ends_with(&format!("--{arch}")) || t.contains(&format!("--{arch}:"))).expect(lib);
            assert!(!objects.is_empty(), "{lib}: no {arch} code object");
            let mut census = Census::new(gen);
            for co in &objects {
                assert_eq!(generation_of(co), gen, "{}", co.target);
                assert!(census.add_code_object(&co.bytes), "{lib} [{}]: not an AMDGPU ELF with .text", co.target);
            }
            eprintln!("{lib} [{arch}]: {} code objects, {}", objects.len(), census.report());
            assert!(census.instructions > 10_000, "{lib} [{arch}]: only {} instructions", census.instructions);
            if gen == Generation::Gfx10 {
                assert!(census.kernels.0 > 0, "{lib} [{arch}]: no wave32 kernel");
            }
            assert!(census.gaps.is_empty(), "{lib} [{arch}]: {}", census.report());
        }
    }
    if !missing.is_empty() {
        eprintln!("\n\n*** {missing:?} not installed (scripts/setup installs librocrand1 and librocsparse0): SKIPPED ***\n");
    }
}
