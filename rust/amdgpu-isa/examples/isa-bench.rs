// SPDX-License-Identifier: GPL-2.0 OR MIT
//! `make bench-isa`, the host half: the interpreter built for the host runs
//! the same gfx90a code object the guest's HIP benchmark launches
//! (tests/hip/bench/isa-bench.hip, its device code built apart by
//! tests/hip/build.sh), the vector add and the LDS reduction over 1M
//! elements, and prints wall time, wave instructions/s and lane-ops/s.
//! Results are checked against a CPU loop (exit 1 if they differ); time is
//! printed, not asserted.
//!
//! A lane-op is one work-item's share of an instruction: a vector
//! instruction (VALU, LDS, FLAT/GLOBAL/SCRATCH, MUBUF) counts its active
//! lanes (EXEC), a scalar one (SALU, SMEM, branches) counts once.  The last
//! line, `lane-ops vadd=N reduce=N`, gives the counts to the guest program,
//! which prints lane-ops/s from them (the same code object over the same
//! grid executes the same instructions).
//!
//!   cargo run --release -p amdgpu-isa --example isa-bench -- CODE_OBJECT [ELEMENTS]

#[path = "../tests/common/mod.rs"]
mod common;

use amdgpu_isa::code_object::{Elf, KernelDescriptor};
use amdgpu_isa::decode::Encoding;
use amdgpu_isa::dispatch::Dispatch;
use amdgpu_isa::exec::{self, StepOutcome};
use amdgpu_isa::memory::{Environment, PRIVATE_SEGMENT_BUFFER};
use amdgpu_isa::wave::Wave;
use common::{load_code_object, SparseMemory, APERTURES, CODE_BASE};
use std::time::Instant;

/// Workgroup size, as the guest program launches.
const WG: u32 = 256;

/// Instructions executed.
#[derive(Default)]
struct Counts {
    wave_instructions: u64,
    lane_ops: u64,
}

/// Runs kernel `name` over `n` work-items in workgroups of [`WG`], its
/// waves taking turns and meeting at `s_barrier` as the virtual GPU runs them.
fn run(mem: &mut SparseMemory, code: &[u8], name: &str, kernarg: &[u8], n: u32) -> Counts {
    let elf = Elf::parse(code).expect("an AMDGPU ELF");
    let kd_vaddr = elf.symbol(&format!("{name}.kd")).unwrap_or_else(|| panic!("{name}.kd symbol"));
    let kd = KernelDescriptor::parse(elf.bytes_at(kd_vaddr, 64).expect("descriptor bytes")).expect("descriptor");
    let mut kernarg = kernarg.to_vec();
    kernarg.resize((kd.kernarg_size.max(kernarg.len() as u32) as usize).next_multiple_of(64), 0);
    let kernarg_address = mem.alloc(kernarg);
    let mut packet = vec![0u8; 64];
    packet[4..6].copy_from_slice(&(WG as u16).to_le_bytes());
    packet[6..8].copy_from_slice(&1u16.to_le_bytes());
    packet[8..10].copy_from_slice(&1u16.to_le_bytes());
    packet[12..16].copy_from_slice(&n.to_le_bytes());
    packet[16..20].copy_from_slice(&1u32.to_le_bytes());
    packet[20..24].copy_from_slice(&1u32.to_le_bytes());
    packet[28..32].copy_from_slice(&kd.group_segment_fixed_size.to_le_bytes());
    packet[32..40].copy_from_slice(&(CODE_BASE + kd_vaddr).to_le_bytes());
    packet[40..48].copy_from_slice(&kernarg_address.to_le_bytes());
    let packet_address = mem.alloc(packet);
    let dispatch = Dispatch {
        kernel_descriptor: kd,
        kernel_object: CODE_BASE + kd_vaddr,
        dispatch_packet: packet_address,
        queue: 0,
        kernarg: kernarg_address,
        dispatch_id: 0,
        workgroup_size: [WG, 1, 1],
        grid_size: [n, 1, 1],
        private_segment_buffer: PRIVATE_SEGMENT_BUFFER,
        flat_scratch_init: 0,
        private_segment_size: kd.private_segment_fixed_size,
        generation: amdgpu_isa::decode::Generation::Gfx9,
    };
    let mut counts = Counts::default();
    let mut waves: Vec<Box<Wave>> = Vec::new();
    let mut lds = vec![0u8; kd.group_segment_fixed_size as usize];
    let mut scratch: Vec<u8> = Vec::new();
    for x in 0..dispatch.workgroup_count()[0] {
        let id = [x, 0, 0];
        let count = dispatch.waves_in_workgroup(id);
        while waves.len() < count {
            waves.push(Box::new(Wave::new()));
        }
        for (w, wave) in waves.iter_mut().take(count).enumerate() {
            dispatch.init_wave(wave, id, w).expect("launch");
        }
        lds.fill(0);
        let mut at_barrier = vec![false; count];
        loop {
            let running = waves[..count].iter().filter(|w| !w.ended).count();
            if running == 0 {
                break;
            }
            if (0..count).filter(|&w| !waves[w].ended && at_barrier[w]).count() == running {
                at_barrier.fill(false);
            }
            for (w, wave) in waves.iter_mut().take(count).enumerate() {
                if wave.ended || at_barrier[w] {
                    continue;
                }
                let mut env = Environment {
                    global: &mut *mem,
                    lds: &mut lds,
                    scratch: &mut scratch,
                    scratch_lane_bytes: 0,
                    apertures: APERTURES,
                };
                loop {
                    let inst = exec::fetch(wave, &mut env).expect("fetch");
                    let lanes = match inst.encoding {
                        Encoding::Sop1 | Encoding::Sop2 | Encoding::Sopk | Encoding::Sopc | Encoding::Sopp | Encoding::Smem => 1,
                        _ => u64::from(wave.exec.count_ones()),
                    };
                    counts.wave_instructions += 1;
                    counts.lane_ops += lanes;
                    match exec::execute(wave, &mut env, &inst).expect("execute") {
                        StepOutcome::Continue => {}
                        StepOutcome::Barrier => {
                            at_barrier[w] = true;
                            break;
                        }
                        StepOutcome::Ended => break,
                    }
                }
            }
        }
    }
    counts
}

fn report(what: &str, secs: f64, c: &Counts, cpu_secs: f64, n: u32) {
    println!(
        "{what:<7} host interpreter {secs:8.3} s  {:10.0} elements/s  {:12.0} wave-instructions/s  {:12.0} lane-ops/s ({} lane-ops, {:.1} per element)",
        f64::from(n) / secs,
        c.wave_instructions as f64 / secs,
        c.lane_ops as f64 / secs,
        c.lane_ops,
        c.lane_ops as f64 / f64::from(n),
    );
    println!("{what:<7} host C-like loop  {cpu_secs:8.6} s  ratio interpreter / loop: {:.0}", secs / cpu_secs.max(1e-9));
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: isa-bench CODE_OBJECT [ELEMENTS]");
    let n: u32 = args.next().map(|s| s.parse().expect("ELEMENTS")).unwrap_or(1 << 20);
    let code = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert!(n % WG == 0, "ELEMENTS must be a multiple of {WG}");
    let blocks = n / WG;

    // vadd, inputs as the guest's.
    let a: Vec<f32> = (0..n).map(|i| 0.5 * (i & 4095) as f32 - 1000.25).collect();
    let b: Vec<f32> = (0..n).map(|i| 1.0 / (i + 1) as f32).collect();
    let mut mem = SparseMemory::new();
    load_code_object(&mut mem, &code);
    let pa = mem.alloc_u32(&a.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
    let pb = mem.alloc_u32(&b.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
    let pc = mem.alloc_u32(&vec![0; n as usize]);
    let k = [&pa.to_le_bytes()[..], &pb.to_le_bytes(), &pc.to_le_bytes(), &n.to_le_bytes()].concat();
    let t = Instant::now();
    let vadd = run(&mut mem, &code, "_Z4vaddPKfS0_Pfi", &k, n);
    let vadd_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let want: Vec<u32> = a.iter().zip(&b).map(|(x, y)| std::hint::black_box(x + y).to_bits()).collect();
    let vadd_cpu = t.elapsed().as_secs_f64();
    let bad_vadd = mem.read_u32s(pc, n as usize).iter().zip(&want).filter(|(g, w)| g != w).count();

    // reduce: per-workgroup sums of 256.
    let mut x = 12345u32;
    let input: Vec<u32> = (0..n)
        .map(|_| {
            x = x.wrapping_mul(1103515245).wrapping_add(12345);
            (x >> 7) & 0xffff
        })
        .collect();
    let mut mem = SparseMemory::new();
    load_code_object(&mut mem, &code);
    let pin = mem.alloc_u32(&input);
    let pout = mem.alloc_u32(&vec![0; blocks as usize]);
    let k = [&pin.to_le_bytes()[..], &pout.to_le_bytes(), &n.to_le_bytes()].concat();
    let t = Instant::now();
    let reduce = run(&mut mem, &code, "_Z6reducePKjPji", &k, n);
    let reduce_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let want: Vec<u32> = input.chunks(WG as usize).map(|c| std::hint::black_box(c.iter().sum::<u32>())).collect();
    let reduce_cpu = t.elapsed().as_secs_f64();
    let bad_reduce = mem.read_u32s(pout, blocks as usize).iter().zip(&want).filter(|(g, w)| g != w).count();

    if bad_vadd + bad_reduce > 0 {
        println!("FAIL isa-bench (host): {bad_vadd} vadd and {bad_reduce} reduce results differ from the CPU's");
        std::process::exit(1);
    }
    println!("isa-bench (host): {n} elements, workgroups of {WG}, results equal to the CPU's");
    report("vadd", vadd_s, &vadd, vadd_cpu, n);
    report("reduce", reduce_s, &reduce, reduce_cpu, n);
    println!("lane-ops vadd={} reduce={}", vadd.lane_ops, reduce.lane_ops);
}
