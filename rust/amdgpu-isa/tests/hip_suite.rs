// SPDX-License-Identifier: GPL-2.0 OR MIT
//! The kernels of the guest's HIP suite (tests/hip/suite.hip), compiled by
//! hipcc for gfx90a and for gfx1030 (device code only) and run by the
//! interpreter on the host against CPU references: what the guest's `suite`
//! checks through ROCr, without the guest.  Every check runs on both
//! targets (`gfx90a::` and `gfx1030::`, GFX9 wave64 and GFX10.3 wave32).

#[macro_use]
mod common;
use common::*;

const SOURCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/hip/suite.hip");

/// suite.hip's o0_module kernel: device code built alone with -O0.
const SOURCE_O0: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/hip/device/o0.hip");

fn code(t: Target) -> Option<Vec<u8>> {
    compile_hip_for(t, SOURCE, "suite", "-O2")
}

on_each_target!(
    saxpy_fma,
    reduce_four_waves_per_workgroup,
    histogram_global_atomics,
    histogram_lds_atomics,
    f64_add_mul_fma_div_sqrt,
    optnone_scratch_and_call,
    o0_build_scratch_spills_and_call,
);

fn args(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

fn lcg(x: &mut u32) -> u32 {
    *x = x.wrapping_mul(1103515245).wrapping_add(12345);
    *x >> 7
}

fn saxpy_fma(t: Target) {
    let Some(code) = code(t) else { return };
    let n = 1000usize;
    let a = 1.7f32;
    let x: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.37 - 17.5 + 1.0 / (i + 3) as f32).collect();
    let y: Vec<f32> = (0..n).map(|i| (i % 89) as f32 * -1.13 + 3.25).collect();
    let mut mem = SparseMemory::new();
    load_code_object(&mut mem, &code);
    let px = mem.alloc_u32(&x.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
    let py = mem.alloc_u32(&y.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
    let k = args(&[&a.to_bits().to_le_bytes(), &[0; 4], &px.to_le_bytes(), &py.to_le_bytes(), &(n as i32).to_le_bytes()]);
    run_kernel_on(t, &mut mem, &code, "_Z5saxpyfPKfPfi", &k, [1024, 1, 1], [256, 1, 1]);
    let out = mem.read_u32s(py, n);
    for i in 0..n {
        assert_eq!(out[i], a.mul_add(x[i], y[i]).to_bits(), "y[{i}]");
    }
}

fn reduce_four_waves_per_workgroup(t: Target) {
    let Some(code) = code(t) else { return };
    let n = 1000usize;
    let blocks = n.div_ceil(256);
    let mut s = 7;
    let input: Vec<u32> = (0..n).map(|_| lcg(&mut s) & 0xffff).collect();
    let mut mem = SparseMemory::new();
    load_code_object(&mut mem, &code);
    let pin = mem.alloc_u32(&input);
    let pout = mem.alloc_u32(&vec![0xdead_beef; blocks]);
    let k = args(&[&pin.to_le_bytes(), &pout.to_le_bytes(), &(n as i32).to_le_bytes()]);
    run_kernel_on(t, &mut mem, &code, "_Z6reducePKjPji", &k, [(blocks * 256) as u32, 1, 1], [256, 1, 1]);
    let out = mem.read_u32s(pout, blocks);
    for b in 0..blocks {
        let want: u32 = input[b * 256..((b + 1) * 256).min(n)].iter().sum();
        assert_eq!(out[b], want, "block {b}");
    }
}

fn histo(t: Target, lds: bool) {
    let Some(code) = code(t) else { return };
    let n = 5000usize;
    let mut s = if lds { 99 } else { 3 };
    let input: Vec<u32> = (0..n).map(|_| lcg(&mut s)).collect();
    let mut mem = SparseMemory::new();
    load_code_object(&mut mem, &code);
    let pin = mem.alloc_u32(&input);
    let pbins = mem.alloc_u32(&[0; 256]);
    let k = args(&[&pin.to_le_bytes(), &pbins.to_le_bytes(), &(n as i32).to_le_bytes()]);
    if lds {
        run_kernel_on(t, &mut mem, &code, "_Z9histo_ldsPKjPji", &k, [8 * 256, 1, 1], [256, 1, 1]);
    } else {
        run_kernel_on(t, &mut mem, &code, "_Z12histo_globalPKjPji", &k, [n.next_multiple_of(256) as u32, 1, 1], [256, 1, 1]);
    }
    let mut want = [0u32; 256];
    for v in &input {
        want[if lds { (v >> 8) & 255 } else { v & 255 } as usize] += 1;
    }
    assert_eq!(mem.read_u32s(pbins, 256), want.to_vec());
}

fn histogram_global_atomics(t: Target) {
    histo(t, false);
}

fn histogram_lds_atomics(t: Target) {
    histo(t, true);
}

/// Units in the last place between two doubles (0 for NaN and NaN).
fn ulps(got: f64, want: f64) -> u64 {
    if want.is_nan() || got.is_nan() {
        return if want.is_nan() && got.is_nan() { 0 } else { u64::MAX };
    }
    let line = |d: f64| {
        let b = d.to_bits() as i64;
        if b < 0 {
            i64::MIN.wrapping_sub(b)
        } else {
            b
        }
    };
    line(got).abs_diff(line(want))
}

fn f64_add_mul_fma_div_sqrt(t: Target) {
    let Some(code) = code(t) else { return };
    let specials = [0.0f64, -0.0, 1.0, 3.0, -2.5, 1e300, 1e-300, 5e-324, f64::MIN_POSITIVE, f64::INFINITY, f64::NEG_INFINITY, f64::NAN];
    let ns = specials.len();
    let n = 1024;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut a = Vec::new();
    let mut b = Vec::new();
    for i in 0..n {
        if i < ns * ns {
            a.push(specials[i / ns]);
            b.push(specials[i % ns]);
        } else {
            for v in [&mut a, &mut b] {
                let r = next();
                let e = 1023 - 200 + next() % 401;
                v.push(f64::from_bits(r & 0x800f_ffff_ffff_ffff | e << 52));
            }
        }
    }
    let words = |v: &[f64]| v.iter().flat_map(|d| [d.to_bits() as u32, (d.to_bits() >> 32) as u32]).collect::<Vec<u32>>();
    let mut mem = SparseMemory::new();
    load_code_object(&mut mem, &code);
    let pa = mem.alloc_u32(&words(&a));
    let pb = mem.alloc_u32(&words(&b));
    let pout = mem.alloc_u32(&vec![0; 10 * n]);
    let k = args(&[&pa.to_le_bytes(), &pb.to_le_bytes(), &pout.to_le_bytes(), &(n as i32).to_le_bytes()]);
    run_kernel_on(t, &mut mem, &code, "_Z6f64opsPKdS0_Pdi", &k, [n as u32, 1, 1], [256, 1, 1]);
    let out = mem.read_u32s(pout, 10 * n);
    let get = |j: usize| f64::from_bits(out[2 * j] as u64 | (out[2 * j + 1] as u64) << 32);
    for i in 0..n {
        let (x, y) = (a[i], b[i]);
        let want = [x + y, x * y, x.mul_add(y, -y), x / y, x.abs().sqrt()];
        for (o, w) in want.iter().enumerate() {
            // The host is exact here: 0 ULP everywhere (the guest allows 1 for div/sqrt).
            assert_eq!(ulps(get(5 * i + o), *w), 0, "op {o} of {x:e}, {y:e}: {:e}, want {w:e}", get(5 * i + o));
        }
    }
}

fn optnone_scratch_and_call(t: Target) {
    let Some(code) = code(t) else { return };
    o0_kernel(t, &code, "_Z9o0_kernelPKjPji");
}

fn o0_build_scratch_spills_and_call(t: Target) {
    let Some(code) = compile_hip_for(t, SOURCE_O0, "suite_o0", "-O0") else { return };
    o0_kernel(t, &code, "o0_kernel");
}

fn o0_kernel(t: Target, code: &[u8], name: &str) {
    let n = 300usize;
    let mut s = 5;
    let input: Vec<u32> = (0..n).map(|_| lcg(&mut s)).collect();
    let mut mem = SparseMemory::new();
    load_code_object(&mut mem, code);
    let pin = mem.alloc_u32(&input);
    let pout = mem.alloc_u32(&vec![0; n]);
    let k = args(&[&pin.to_le_bytes(), &pout.to_le_bytes(), &(n as i32).to_le_bytes()]);
    run_kernel_on(t, &mut mem, code, name, &k, [384, 1, 1], [128, 1, 1]);
    let out = mem.read_u32s(pout, n);
    for i in 0..n {
        let mut local: [u32; 16] = core::array::from_fn(|j| input[i].wrapping_add(j as u32 * 7));
        local[(input[i] & 15) as usize] ^= 0x5a5a_5a5a;
        let want = local.iter().fold(i as u32, |acc, &v| acc.wrapping_mul(31).wrapping_add(v));
        assert_eq!(out[i], want, "out[{i}]");
    }
}
