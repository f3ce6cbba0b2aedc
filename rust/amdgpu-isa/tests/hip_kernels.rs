// SPDX-License-Identifier: GPL-2.0 OR MIT
//! Whole HIP kernels, compiled by Debian's hipcc for gfx90a and for gfx1030
//! (wave32) at test time, run by the interpreter over small grids and
//! checked against the CPU; every check runs on both targets (`gfx90a::`,
//! `gfx1030::`).

#[macro_use]
mod common;
use common::*;

const SOURCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/hip/kernels.hip");

fn code(t: Target) -> Option<Vec<u8>> {
    compile_hip_for(t, SOURCE, "kernels", "-O2")
}

fn code_o0(t: Target) -> Option<Vec<u8>> {
    compile_hip_for(t, SOURCE, "kernels_o0", "-O0")
}

on_each_target!(
    vector_add_matches_cpu,
    saxpy_matches_cpu_fma,
    shared_memory_reduction_with_barriers,
    histogram_with_global_atomics,
    division_sqrt_floor_convert_match_cpu,
    o0_builds_with_scratch_and_calls_match_cpu,
    warp_shuffles_and_ballot_match_cpu,
    f64_arithmetic_matches_cpu,
    f64_division_sqrt_floor_match_cpu,
);

fn f32s(seed: u32, n: usize) -> Vec<f32> {
    // xorshift, values in about [-100, 100) with varied exponents
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x as i32 as f32) / 2.147e7 * if x & 0x100 != 0 { 0.001 } else { 1.0 }
        })
        .collect()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|f| f.to_bits()).collect()
}

fn kernarg(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

/// Runs vadd over n elements with the given grid size (work-items) and
/// workgroup size. HIP's blockDim.x is the workgroup's actual size
/// (`min(wg, grid - blockIdx.x * wg)`, from the dispatch packet), so in a
/// partial last workgroup `blockIdx.x * blockDim.x + threadIdx.x` is not
/// the global index: elements from `written_end` on stay untouched.
fn vadd(t: Target, code: &[u8], n: usize, grid: u32, wg: u32) {
    let groups = grid.div_ceil(wg) as usize;
    let last = groups - 1;
    let last_size = grid as usize - last * wg as usize;
    let written_end = (last * last_size + last_size).max(last * wg as usize).min(n);
    vadd_checked(t, code, n, grid, wg, written_end);
}

fn vadd_checked(t: Target, code: &[u8], n: usize, grid: u32, wg: u32, written_end: usize) {
    let mut mem = SparseMemory::new();
    load_code_object(&mut mem, code);
    let a = f32s(1, n);
    let b = f32s(2, n);
    let pa = mem.alloc_u32(&bits(&a));
    let pb = mem.alloc_u32(&bits(&b));
    let pc = mem.alloc_u32(&vec![0xdead_beef; n + 64]);
    let args = kernarg(&[&pa.to_le_bytes(), &pb.to_le_bytes(), &pc.to_le_bytes(), &(n as i32).to_le_bytes()]);
    let steps = run_kernel_on(t, &mut mem, code, "vadd", &args, [grid, 1, 1], [wg, 1, 1]);
    let c = mem.read_u32s(pc, n + 64);
    for i in 0..written_end {
        assert_eq!(c[i], (a[i] + b[i]).to_bits(), "c[{i}] = {} + {}", a[i], b[i]);
    }
    // Nothing written past what the kernel indexes.
    assert!(c[written_end..].iter().all(|&v| v == 0xdead_beef), "written past {written_end}");
    eprintln!("vadd n={n} grid={grid} wg={wg}: {steps} wave instructions");
}

fn vector_add_matches_cpu(t: Target) {
    let Some(code) = code(t) else { return };
    vadd(t, &code, 1000, 1024, 256); // HIP-style grid, guard in the kernel
    vadd(t, &code, 1000, 1000, 256); // partial last workgroup
    vadd(t, &code, 130, 130, 64); // several workgroups of one wave
    vadd(t, &code, 37, 64, 1024 / 16); // one wave, most lanes idle
}

fn saxpy_matches_cpu_fma(t: Target) {
    let Some(code) = code(t) else { return };
    let n = 777;
    let mut mem = SparseMemory::new();
    load_code_object(&mut mem, &code);
    let alpha = 1.7f32;
    let x = f32s(3, n);
    let y = f32s(4, n);
    let px = mem.alloc_u32(&bits(&x));
    let py = mem.alloc_u32(&bits(&y));
    let args = kernarg(&[&alpha.to_bits().to_le_bytes(), &[0; 4], &px.to_le_bytes(), &py.to_le_bytes(), &(n as i32).to_le_bytes()]);
    run_kernel_on(t, &mut mem, &code, "saxpy", &args, [1024, 1, 1], [128, 1, 1]);
    let out = mem.read_u32s(py, n);
    for i in 0..n {
        // hipcc contracts alpha * x + y into v_fmac_f32: one rounding.
        assert_eq!(out[i], alpha.mul_add(x[i], y[i]).to_bits(), "y[{i}]");
    }
}

fn shared_memory_reduction_with_barriers(t: Target) {
    let Some(code) = code(t) else { return };
    let n = 1000;
    let wg = 256usize;
    let mut mem = SparseMemory::new();
    load_code_object(&mut mem, &code);
    let input = f32s(5, n);
    let pin = mem.alloc_u32(&bits(&input));
    let blocks = n.div_ceil(wg);
    let pout = mem.alloc_u32(&vec![0; blocks]);
    let args = kernarg(&[&pin.to_le_bytes(), &pout.to_le_bytes(), &(n as i32).to_le_bytes()]);
    run_kernel_on(t, &mut mem, &code, "reduce", &args, [(blocks * wg) as u32, 1, 1], [wg as u32, 1, 1]);
    let out = mem.read_u32s(pout, blocks);
    for (b, &got) in out.iter().enumerate() {
        // The kernel's tree order, in f32.
        let mut s: Vec<f32> = (0..wg).map(|t| input.get(b * wg + t).copied().unwrap_or(0.0)).collect();
        let mut stride = wg / 2;
        while stride > 0 {
            for t in 0..stride {
                s[t] += s[t + stride];
            }
            stride /= 2;
        }
        assert_eq!(got, s[0].to_bits(), "block {b}: {} vs {}", f32::from_bits(got), s[0]);
    }
}

fn histogram_with_global_atomics(t: Target) {
    let Some(code) = code(t) else { return };
    let n: i32 = 3000;
    let mut mem = SparseMemory::new();
    load_code_object(&mut mem, &code);
    let mut x = 12345u32;
    let input: Vec<u32> = (0..n)
        .map(|_| {
            x = x.wrapping_mul(1103515245).wrapping_add(12345);
            x >> 7
        })
        .collect();
    let pin = mem.alloc_u32(&input);
    let pbins = mem.alloc_u32(&[0; 256]);
    let args = kernarg(&[&pin.to_le_bytes(), &pbins.to_le_bytes(), &n.to_le_bytes()]);
    run_kernel_on(t, &mut mem, &code, "histo", &args, [3072, 1, 1], [256, 1, 1]);
    let mut want = [0u32; 256];
    for v in &input {
        want[(v & 255) as usize] += 1;
    }
    assert_eq!(mem.read_u32s(pbins, 256), want.to_vec());
}

/// Division (v_div_scale/v_rcp/v_fma/v_div_fmas/v_div_fixup), sqrtf (scaled
/// v_sqrt plus an fma correction), floorf and float->int->float, over
/// operands spanning every exponent, denormals, zeros, infinities and NaN:
/// each result must be the correctly rounded IEEE one the host computes.
fn division_sqrt_floor_convert_match_cpu(t: Target) {
    let Some(code) = code(t) else { return };
    let mut x = 0x1234_5678_9abc_def0u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let specials = [0u32, 0x8000_0000, 1, 0x007f_ffff, 0x0080_0000, 0x7f7f_ffff, 0x7f80_0000, 0xff80_0000, 0x7fc0_0000, 0x3f80_0000, 0x4040_0000, 0x0000_0300];
    let n = 4096;
    let mut a = Vec::with_capacity(n);
    let mut b = Vec::with_capacity(n);
    for i in 0..n {
        let r = next();
        let pick = |r: u64| if r & 7 == 0 { specials[(r >> 3) as usize % specials.len()] } else { (r >> 16) as u32 };
        a.push(pick(r));
        b.push(if i < specials.len() * specials.len() { specials[i % specials.len()] } else { pick(r.rotate_right(24)) });
        if i < specials.len() * specials.len() {
            a[i] = specials[i / specials.len()];
        }
    }
    let mut mem = SparseMemory::new();
    load_code_object(&mut mem, &code);
    let pa = mem.alloc_u32(&a);
    let pb = mem.alloc_u32(&b);
    let pout = mem.alloc_u32(&vec![0; 4 * n]);
    let args = kernarg(&[&pa.to_le_bytes(), &pb.to_le_bytes(), &pout.to_le_bytes(), &(n as i32).to_le_bytes()]);
    run_kernel_on(t, &mut mem, &code, "divsqrt", &args, [n as u32, 1, 1], [256, 1, 1]);
    let out = mem.read_u32s(pout, 4 * n);
    let same = |got: u32, want: f32| if want.is_nan() { f32::from_bits(got).is_nan() } else { got == want.to_bits() };
    for i in 0..n {
        let (x, y) = (f32::from_bits(a[i]), f32::from_bits(b[i]));
        assert!(same(out[4 * i], x / y), "{x:e} / {y:e} ({:#x} / {:#x}) = {:e} ({:#x}), want {:e}", a[i], b[i], f32::from_bits(out[4 * i]), out[4 * i], x / y);
        assert!(same(out[4 * i + 1], x.sqrt()), "sqrtf({x:e}) = {:e}", f32::from_bits(out[4 * i + 1]));
        assert!(same(out[4 * i + 2], y.floor()), "floorf({y:e})");
        assert!(same(out[4 * i + 3], (x as i32) as f32), "(float)(int){x:e}");
    }
}

/// The same kernels built with -O0: scratch through the private segment
/// buffer (MUBUF) and flat private addresses, calls (s_swappc/s_setpc),
/// v_readlane/v_writelane spills, AGPR moves, s_getreg(SH_MEM_BASES).
fn o0_builds_with_scratch_and_calls_match_cpu(t: Target) {
    let Some(code) = code_o0(t) else { return };
    vadd(t, &code, 300, 320, 64);
    let n = 200;
    let mut mem = SparseMemory::new();
    load_code_object(&mut mem, &code);
    let alpha = -0.75f32;
    let x = f32s(7, n);
    let y = f32s(8, n);
    let px = mem.alloc_u32(&bits(&x));
    let py = mem.alloc_u32(&bits(&y));
    let args = kernarg(&[&alpha.to_bits().to_le_bytes(), &[0; 4], &px.to_le_bytes(), &py.to_le_bytes(), &(n as i32).to_le_bytes()]);
    run_kernel_on(t, &mut mem, &code, "saxpy", &args, [256, 1, 1], [128, 1, 1]);
    let out = mem.read_u32s(py, n);
    for i in 0..n {
        // hipcc contracts to v_fmac_f32 at -O0 too
        assert_eq!(out[i], alpha.mul_add(x[i], y[i]).to_bits(), "y[{i}]");
    }
}

/// Warp shuffles (__shfl_xor butterfly sum, __shfl_down, __shfl: ds_bpermute)
/// and __ballot/__popcll over full waves.
fn warp_shuffles_and_ballot_match_cpu(t: Target) {
    let Some(code) = code(t) else { return };
    let n = 512;
    let input = f32s(9, n);
    let mut mem = SparseMemory::new();
    load_code_object(&mut mem, &code);
    let pin = mem.alloc_u32(&bits(&input));
    let pout = mem.alloc_u32(&vec![0; 3 * n]);
    let pcount = mem.alloc_u32(&[0]);
    let args = kernarg(&[&pin.to_le_bytes(), &pout.to_le_bytes(), &pcount.to_le_bytes()]);
    run_kernel_on(t, &mut mem, &code, "warpsum", &args, [n as u32, 1, 1], [128, 1, 1]);
    let out = mem.read_u32s(pout, 3 * n);
    // warpSize: 64 on gfx90a, 32 on gfx1030 (hipcc's default wave32).
    let w = if t == Target::Gfx1030 { 32 } else { 64 };
    for i in 0..n {
        let wave = i / w * w;
        let lane = i % w;
        // the butterfly's order: v += v[lane ^ off] for off = 32, 16, ..., 1;
        // a partner outside the wave is the lane itself (HIP's __shfl_xor)
        let mut v: Vec<f32> = input[wave..wave + w].to_vec();
        let mut off = 32;
        while off > 0 {
            v = (0..w).map(|l| v[l] + v[if l ^ off < w { l ^ off } else { l }]).collect();
            off >>= 1;
        }
        assert_eq!(out[3 * i], v[lane].to_bits(), "butterfly sum lane {i}");
        // __shfl_down past the end of the wave returns the lane's own value
        let down = if lane + 1 < w { input[i + 1] } else { input[i] };
        assert_eq!(out[3 * i + 1], down.to_bits(), "__shfl_down lane {i}");
        assert_eq!(out[3 * i + 2], input[wave + 5].to_bits(), "__shfl lane {i}");
    }
    // Each wave whose first work-item has threadIdx.x % 64 == 0 adds the
    // popcount of its ballot (every wave64; every other wave32).
    let positives = input.iter().enumerate().filter(|&(i, &x)| (i / w * w) % 64 == 0 && x > 0.0).count() as u32;
    assert_eq!(mem.read_u32s(pcount, 1)[0], positives);
}

/// f64 add/mul/fma/fmin, f64<->f32 and f64->int conversions and f64
/// compares (hipcc's v_add_f64, v_mul_f64, v_fma_f64, v_min_f64,
/// v_cvt_*_f64, v_cmp_*_f64) against the host's doubles.
fn f64_arithmetic_matches_cpu(t: Target) {
    let Some(code) = code(t) else { return };
    let n = 1024;
    let mut x = 0xfeed_f00d_u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let specials = [0.0f64, -0.0, 1.0, f64::MAX, f64::MIN_POSITIVE, 5e-324, f64::INFINITY, f64::NAN, 1e300, -2.5];
    let a: Vec<f64> = (0..n).map(|i| if i % 5 == 0 { specials[(i / 5) % specials.len()] } else { f64::from_bits(next()) }).collect();
    let b: Vec<f64> = (0..n).map(|i| if i % 7 == 0 { specials[(i / 7) % specials.len()] } else if i % 3 == 0 { ((next() % 2000) as f64 - 1000.0) / 8.0 } else { f64::from_bits(next()) }).collect();
    let words = |v: &[f64]| v.iter().flat_map(|d| [d.to_bits() as u32, (d.to_bits() >> 32) as u32]).collect::<Vec<u32>>();
    let mut mem = SparseMemory::new();
    load_code_object(&mut mem, &code);
    let pa = mem.alloc_u32(&words(&a));
    let pb = mem.alloc_u32(&words(&b));
    let pout = mem.alloc_u32(&vec![0; 8 * n]);
    let pnarrow = mem.alloc_u32(&vec![0; n]);
    let pflags = mem.alloc_u32(&vec![0; n]);
    let args = kernarg(&[&pa.to_le_bytes(), &pb.to_le_bytes(), &pout.to_le_bytes(), &pnarrow.to_le_bytes(), &pflags.to_le_bytes(), &(n as i32).to_le_bytes()]);
    run_kernel_on(t, &mut mem, &code, "f64ops", &args, [n as u32, 1, 1], [256, 1, 1]);
    let out = mem.read_u32s(pout, 8 * n);
    let narrowed = mem.read_u32s(pnarrow, n);
    let flags = mem.read_u32s(pflags, n);
    let get = |k: usize| f64::from_bits(out[2 * k] as u64 | (out[2 * k + 1] as u64) << 32);
    let same = |got: f64, want: f64| if want.is_nan() { got.is_nan() } else { got.to_bits() == want.to_bits() };
    for i in 0..n {
        let (x, y) = (a[i], b[i]);
        assert!(same(get(4 * i), x + y), "{x:e} + {y:e} = {:e}", get(4 * i));
        assert!(same(get(4 * i + 1), x * y), "{x:e} * {y:e}");
        assert!(same(get(4 * i + 2), x.mul_add(y, -x)), "fma({x:e}, {y:e}, -x)");
        // fmin: a NaN operand yields the other; the zeros' sign is not checked
        let m = if x.is_nan() { y } else if y.is_nan() { x } else { x.min(y) };
        let want = m - (x as f32) as f64;
        let got = get(4 * i + 3);
        assert!(same(got, want) || (m == 0.0 && got == want), "fmin({x:e}, {y:e}) - (float)x = {got:e}, want {want:e}");
        let nar = f32::from_bits(narrowed[i]);
        assert!(if ((x - y) as f32).is_nan() { nar.is_nan() } else { nar.to_bits() == ((x - y) as f32).to_bits() }, "(float)({x:e} - {y:e})");
        let want_flags = (x < y) as i32 | ((x == y) as i32) << 1 | (x as i32).wrapping_mul(4);
        assert_eq!(flags[i] as i32, want_flags, "flags of {x:e}, {y:e}");
    }
}

/// f64 division (v_div_scale/v_rcp/v_fma/v_div_fmas/v_div_fixup_f64),
/// sqrt (OCML: v_rsq_f64 and fma Newton steps) and floor against the host.
fn f64_division_sqrt_floor_match_cpu(t: Target) {
    let Some(code) = code(t) else { return };
    let n = 2048;
    let mut x = 0x0bad_cafe_u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let specials = [0.0f64, -0.0, 1.0, 3.0, f64::MAX, f64::MIN_POSITIVE, 5e-324, f64::INFINITY, f64::NAN, 1e300, 1e-300, -2.5];
    let a: Vec<f64> = (0..n).map(|i| if i < 144 { specials[i / 12] } else { f64::from_bits(next() & !(1 << 63)) }).collect();
    let b: Vec<f64> = (0..n).map(|i| if i < 144 { specials[i % 12] } else { f64::from_bits(next()) }).collect();
    let words = |v: &[f64]| v.iter().flat_map(|d| [d.to_bits() as u32, (d.to_bits() >> 32) as u32]).collect::<Vec<u32>>();
    let mut mem = SparseMemory::new();
    load_code_object(&mut mem, &code);
    let pa = mem.alloc_u32(&words(&a));
    let pb = mem.alloc_u32(&words(&b));
    let pout = mem.alloc_u32(&vec![0; 6 * n]);
    let args = kernarg(&[&pa.to_le_bytes(), &pb.to_le_bytes(), &pout.to_le_bytes(), &(n as i32).to_le_bytes()]);
    run_kernel_on(t, &mut mem, &code, "f64div", &args, [n as u32, 1, 1], [256, 1, 1]);
    let out = mem.read_u32s(pout, 6 * n);
    let get = |k: usize| f64::from_bits(out[2 * k] as u64 | (out[2 * k + 1] as u64) << 32);
    let same = |got: f64, want: f64| if want.is_nan() { got.is_nan() } else { got.to_bits() == want.to_bits() };
    for i in 0..n {
        let (x, y) = (a[i], b[i]);
        assert!(same(get(3 * i), x / y), "{x:e} / {y:e} = {:e}, want {:e}", get(3 * i), x / y);
        assert!(same(get(3 * i + 1), x.sqrt()), "sqrt({x:e}) = {:e}, want {:e}", get(3 * i + 1), x.sqrt());
        assert!(same(get(3 * i + 2), y.floor()), "floor({y:e})");
    }
}
