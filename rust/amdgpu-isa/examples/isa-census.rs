// SPDX-License-Identifier: GPL-2.0 OR MIT
//! Which instructions of real code objects the interpreter cannot run: an
//! opcode census over the gfx90a or gfx1030 code objects of each file named (an
//! AMDGPU ELF, a clang offload bundle, or a host program or library with a
//! `.hip_fatbin` section, e.g. Debian's `librocrand.so.1` or
//! `librocsparse.so.0`), per target, listing per encoding class each
//! opcode (or opcode form) that does not decode or does not execute, with
//! its static count and a function that uses it.  Exit status 0 always:
//! the list is the result.
//!
//!   cargo run --release -p amdgpu-isa --example isa-census -- [--target SUBSTR] [--opcodes] FILE...
//!
//! `--target` picks offload targets containing SUBSTR (default `gfx90a`;
//! a gfx10 target is decoded and executed as GFX10.3, in the wave sizes its
//! kernel descriptors ask for); `--opcodes` also lists every opcode seen
//! with its count (LLVM's mnemonics for the target).

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/common/census.rs"]
mod census;

use census::{code_objects, generation_of, Census};
use std::collections::BTreeMap;

fn main() {
    let mut target = "gfx90a".to_string();
    let mut list_opcodes = false;
    let mut files = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--target" => target = args.next().expect("--target SUBSTR"),
            "--opcodes" => list_opcodes = true,
            _ => files.push(a),
        }
    }
    if files.is_empty() {
        eprintln!("usage: isa-census [--target SUBSTR] [--opcodes] FILE...");
        std::process::exit(2);
    }
    for file in &files {
        let wanted = |t: &str| t.contains(target.as_str());
        let objects = match code_objects(file, &wanted) {
            Ok(o) => o,
            Err(e) => {
                eprintln!("{file}: {e}");
                std::process::exit(1);
            }
        };
        // One census per target (xnack+ and xnack- builds differ).
        let mut per_target: BTreeMap<String, (usize, Census)> = BTreeMap::new();
        for co in &objects {
            let (n, census) = per_target.entry(co.target.clone()).or_insert_with(|| (0, Census::new(generation_of(co))));
            if census.add_code_object(&co.bytes) {
                *n += 1;
            }
        }
        if per_target.is_empty() {
            println!("{file}: no code object for {target}");
        }
        for (t, (n, census)) in &per_target {
            println!("== {file} [{}]: {n} code objects, {}", if t.is_empty() { "ELF" } else { t }, census.report());
            if list_opcodes {
                for ((class, name), count) in &census.opcodes() {
                    println!("  {count:>9}  {class:<7} {name}");
                }
            }
        }
    }
}
