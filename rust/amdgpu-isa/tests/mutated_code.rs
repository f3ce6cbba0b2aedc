// SPDX-License-Identifier: GPL-2.0 OR MIT
//! Robustness: the interpreter runs machine code it was never meant to run.
//!
//! The virtual GPU runs whatever a process points a dispatch at, inside the
//! kernel, where a Rust panic (an index out of range, an arithmetic
//! overflow: the kernel build checks overflows too) is a BUG().  So every
//! instruction word, register value, EXEC mask, LDS and scratch size must
//! end in an `ExecError` or run on, never panic.  Each case takes a window
//! of real code (the gfx90a or gfx1030 code objects of tests/fixtures, so
//! most words decode), mutates a few words (random words, bit flips, words
//! from elsewhere), fills the registers with random values and addresses
//! of a mapped data region, and runs one wave for at most `STEPS`
//! instructions.  A case that panics is reported with its seed
//! (`MUTATED_CODE_SEED=<seed> cargo test --test mutated_code` reruns one;
//! `MUTATED_CODE_CASES=N` sweeps more, from case `MUTATED_CODE_FIRST`).

mod common;
use amdgpu_isa::code_object::{Elf, KernelDescriptor};
use amdgpu_isa::dispatch::{run_workgroup, Dispatch, MAX_WAVES};
use amdgpu_isa::decode::{decode_for, Generation};
use amdgpu_isa::exec::{execute, fetch, ExecError, StepOutcome};
use amdgpu_isa::memory::Environment;
use amdgpu_isa::wave::Wave;
use common::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

const CODE: u64 = 0x4000_0000;
const DATA: u64 = 0x5000_0000;
const DATA_BYTES: usize = 1 << 16;
const STEPS: usize = 3000;
const CASES: u64 = 20_000;

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn u32(&mut self) -> u32 {
        self.next() as u32
    }
    /// A register value: random, small, all ones, or an address in (or
    /// just outside) the data region, low or high half.
    fn value(&mut self, lane: usize) -> u32 {
        match self.below(8) {
            0 | 1 => self.u32(),
            2 => self.below(64) as u32,
            3 => u32::MAX,
            4 => (DATA + 4 * lane as u64 + self.below(DATA_BYTES as u64 + 256)) as u32,
            5 => (DATA >> 32) as u32,
            6 => lane as u32,
            _ => 0,
        }
    }
}

/// Every word of the loadable segments of `target`'s code objects.
fn word_pool(target: Target) -> Vec<u32> {
    let files: &[&[u8]] = match target {
        Target::Gfx90a => &[include_bytes!("fixtures/kernels.co"), include_bytes!("fixtures/suite.co")],
        Target::Gfx1030 => &[include_bytes!("fixtures/kernels_gfx1030.co"), include_bytes!("fixtures/suite_gfx1030.co")],
    };
    let mut words = Vec::new();
    for bytes in files {
        let elf = Elf::parse(bytes).expect("an AMDGPU ELF");
        let mut i = 0;
        while let Some(seg) = elf.load_segment(i) {
            let b = elf.segment_bytes(&seg).expect("segment in file");
            words.extend(b.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())));
            i += 1;
        }
    }
    assert!(words.len() > 1000, "{target:?}: {} code words", words.len());
    words
}

/// Where 16 instructions in a row decode: the windows the cases start at
/// (instruction boundaries of real code, rather than data or the middle of
/// an instruction).
fn instruction_starts(target: Target, pool: &[u32]) -> Vec<usize> {
    let gen = match target {
        Target::Gfx90a => Generation::Gfx9,
        Target::Gfx1030 => Generation::Gfx10,
    };
    let decodes_16 = |mut p: usize| {
        for _ in 0..16 {
            match pool.get(p..(p + 3).min(pool.len())).map(|w| decode_for(gen, w)) {
                Some(Ok(inst)) => p += inst.size as usize / 4,
                _ => return false,
            }
        }
        true
    };
    let starts: Vec<usize> = (0..pool.len()).filter(|&p| decodes_16(p)).collect();
    assert!(starts.len() > 1000, "{target:?}: {} instruction starts", starts.len());
    starts
}

/// How a case ended.
#[derive(Default, Debug)]
struct Tally {
    ended: u64,
    decode: u64,
    unsupported: u64,
    memory: u64,
    out_of_bounds: u64,
    trap: u64,
    budget: u64,
    /// Cases that ran at least 16 instructions.
    deep: u64,
    steps: u64,
}

fn run_case(target: Target, pool: &[u32], starts: &[usize], seed: u64, wave: &mut Wave, tally: &mut Tally) {
    let mut rng = Rng(seed);
    let len = 16 + rng.below(113) as usize;
    let start = starts[rng.below(starts.len() as u64) as usize].min(pool.len() - len);
    let mut code = pool[start..start + len].to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(len as u64) as usize;
        code[at] = match rng.below(3) {
            0 => rng.u32(),
            1 => code[at] ^ 1 << rng.below(32),
            _ => pool[rng.below(pool.len() as u64) as usize],
        };
    }
    let mut mem = SparseMemory::new();
    mem.map(CODE, code.iter().flat_map(|w| w.to_le_bytes()).collect());
    mem.map(DATA, (0..DATA_BYTES).map(|_| rng.below(256) as u8).collect());

    wave.reset();
    wave.pc = CODE;
    if target == Target::Gfx1030 {
        wave.gen = Generation::Gfx10;
        wave.wave32 = rng.below(4) != 0;
    }
    let lanes = wave.lanes();
    for s in wave.sgpr.iter_mut() {
        *s = rng.value(0);
    }
    for r in 0..32 {
        for lane in 0..lanes {
            wave.vgpr[r][lane] = rng.value(lane);
        }
    }
    wave.exec = match rng.below(4) {
        0 => rng.next(),
        1 => 0,
        _ => u64::MAX,
    } & wave.lane_mask();
    wave.vcc = rng.next() & wave.lane_mask();
    wave.m0 = rng.value(0);
    wave.mode.0 = rng.u32();
    wave.flat_scratch = if rng.below(2) == 0 { rng.next() } else { DATA };
    let mut lds = vec![0u8; [0, 256, 65536][rng.below(3) as usize]];
    let lane_bytes = [0u32, 16, 1024][rng.below(3) as usize];
    let mut scratch = vec![0u8; lanes * lane_bytes as usize];

    let mut steps = 0;
    let result = loop {
        if steps == STEPS {
            break None;
        }
        let mut env = Environment { global: &mut mem, lds: &mut lds, scratch: &mut scratch, scratch_lane_bytes: lane_bytes, apertures: APERTURES };
        let step = fetch(wave, &mut env).and_then(|inst| execute(wave, &mut env, &inst));
        steps += 1;
        match step {
            Ok(StepOutcome::Ended) => break Some(Ok(())),
            Ok(_) => {}
            Err(e) => break Some(Err(e)),
        }
    };
    tally.steps += steps as u64;
    tally.deep += u64::from(steps >= 16);
    match result {
        None => tally.budget += 1,
        Some(Ok(())) => tally.ended += 1,
        Some(Err(ExecError::Decode { .. })) => tally.decode += 1,
        Some(Err(ExecError::UnsupportedOpcode { .. } | ExecError::UnsupportedForm { .. })) => tally.unsupported += 1,
        Some(Err(ExecError::Memory { .. })) => tally.memory += 1,
        Some(Err(ExecError::OutOfBounds { .. })) => tally.out_of_bounds += 1,
        Some(Err(ExecError::Trap { .. })) => tally.trap += 1,
    }
}

/// `MUTATED_CODE_CASES=N` sweeps N cases per target instead of `CASES`.
fn cases() -> u64 {
    std::env::var("MUTATED_CODE_CASES").map_or(CASES, |n| n.parse().expect("a case count"))
}

/// `MUTATED_CODE_FIRST=N` starts the sweep at case N (another part of the
/// seed space).
fn first_case() -> u64 {
    std::env::var("MUTATED_CODE_FIRST").map_or(0, |n| n.parse().expect("a case number"))
}

fn mutated_code_never_panics(target: Target) {
    let pool = word_pool(target);
    let starts = instruction_starts(target, &pool);
    let seeds: Vec<u64> = match std::env::var("MUTATED_CODE_SEED") {
        Ok(s) => vec![u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("a hex seed")],
        Err(_) => (first_case()..first_case() + cases()).map(|i| 0x5eed_0000_0000 ^ (i << 8) ^ target as u64).collect(),
    };
    let mut wave = Box::new(Wave::new());
    let mut tally = Tally::default();
    let mut panics = Vec::new();
    for &seed in &seeds {
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| run_case(target, &pool, &starts, seed, &mut wave, &mut tally))) {
            let what = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panics.push(format!("seed {seed:#x}: {what}"));
        }
    }
    println!("{target:?}: {} cases, {} instructions: {tally:?}", seeds.len(), tally.steps);
    assert!(panics.is_empty(), "{} of {} cases panicked:\n{}", panics.len(), seeds.len(), panics.join("\n"));
    if seeds.len() > 1 {
        // The mutations must leave programs that run: a sweep where every
        // case stops at its first words tests nothing.
        assert!(tally.deep * 8 >= seeds.len() as u64, "only {} of {} cases ran 16 instructions: {tally:?}", tally.deep, seeds.len());
    }
}

#[test]
fn gfx90a_mutated_code_never_panics() {
    mutated_code_never_panics(Target::Gfx90a)
}

#[test]
fn gfx1030_mutated_code_never_panics() {
    mutated_code_never_panics(Target::Gfx1030)
}

/// A dispatch with random descriptor bits (entry point at a window of real
/// code, user SGPRs, workgroup ids, wave32 or not, segment sizes) and
/// random AQL workgroup and grid sizes (u16 ones: 0, 65535 included), its
/// first workgroup's waves launched and run: a `LaunchError` or a
/// `WorkgroupError`, never a panic.
fn random_dispatch(target: Target, pool: &[u32], starts: &[usize], seed: u64) {
    let mut rng = Rng(seed);
    let start = starts[rng.below(starts.len() as u64) as usize].min(pool.len() - 64);
    let mut mem = SparseMemory::new();
    mem.map(CODE, pool[start..start + 64].iter().flat_map(|w| w.to_le_bytes()).collect());
    mem.map(DATA, (0..DATA_BYTES).map(|_| rng.below(256) as u8).collect());
    let mut kd_bytes: Vec<u8> = (0..64).map(|_| rng.below(256) as u8).collect();
    let entry = CODE as i64 - DATA as i64;
    kd_bytes[16..24].copy_from_slice(&entry.to_le_bytes());
    let kernel_descriptor = KernelDescriptor::parse(&kd_bytes).expect("64 bytes parse");
    let size = |rng: &mut Rng| [0u32, 1, 7, 64, 256, 1024, 65535][rng.below(7) as usize];
    let dispatch = Dispatch {
        kernel_descriptor,
        kernel_object: DATA,
        dispatch_packet: DATA + 64,
        queue: DATA + 128,
        kernarg: DATA + 256,
        dispatch_id: rng.next(),
        workgroup_size: [size(&mut rng), size(&mut rng), size(&mut rng)],
        grid_size: [rng.u32(), size(&mut rng), size(&mut rng)],
        private_segment_buffer: [rng.u32(), rng.u32(), rng.u32(), rng.u32()],
        flat_scratch_init: rng.next(),
        private_segment_size: [0u32, 16, 1024][rng.below(3) as usize],
        generation: match target {
            Target::Gfx90a => Generation::Gfx9,
            Target::Gfx1030 => Generation::Gfx10,
        },
    };
    let id = [0, rng.u32() % 4, 0];
    let n = dispatch.waves_in_workgroup(id);
    if n > MAX_WAVES {
        return;
    }
    let mut waves: Vec<Box<Wave>> = (0..n).map(|_| Box::new(Wave::new())).collect();
    for (i, w) in waves.iter_mut().enumerate() {
        if dispatch.init_wave(w, id, i).is_err() {
            return;
        }
    }
    let lane_bytes = dispatch.private_segment_size;
    let mut scratch = vec![0u8; n * dispatch.wave_lanes() * lane_bytes as usize];
    let mut lds = vec![0u8; 65536];
    let _ = run_workgroup(&mut waves, &mut mem, &mut lds, &mut scratch, lane_bytes, APERTURES, 7, 2000);
}

fn random_dispatches_never_panic(target: Target) {
    let pool = word_pool(target);
    let starts = instruction_starts(target, &pool);
    let cases = cases() / 20;
    let mut panics = Vec::new();
    for i in first_case()..first_case() + cases {
        let seed = 0xd15a_0000_0000 ^ (i << 8) ^ target as u64;
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| random_dispatch(target, &pool, &starts, seed))) {
            let what = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
            panics.push(format!("seed {seed:#x}: {what}"));
        }
    }
    assert!(panics.is_empty(), "{} of {cases} dispatches panicked:\n{}", panics.len(), panics.join("\n"));
}

#[test]
fn gfx90a_random_dispatches_never_panic() {
    random_dispatches_never_panic(Target::Gfx90a)
}

#[test]
fn gfx1030_random_dispatches_never_panic() {
    random_dispatches_never_panic(Target::Gfx1030)
}
