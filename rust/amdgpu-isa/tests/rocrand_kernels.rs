// SPDX-License-Identifier: GPL-2.0 OR MIT
//! Debian's own librocrand.so.1 gfx90a and gfx1030 (wave32) kernels (as
//! built by Debian, taken out of the library's .hip_fatbin) run whole on
//! the host build of the interpreter: the Philox4x32-10 uniform and normal float generators,
//! whose output is checked statistically (range, mean, variance within 8
//! standard errors, every element written).  The normal one runs
//! v_log_f32, v_sin_f32 and v_cos_f32 (Box-Muller), so wrong transcendental
//! ops show as a wrong distribution.  Skipped loudly without the library
//! (scripts/setup installs it).

mod common;
#[path = "common/census.rs"]
mod census;

use common::*;

const LIB: &str = "/usr/lib/x86_64-linux-gnu/librocrand.so.1";
const UNIFORM: &str = "_ZN12rocrand_host6detailL15generate_kernelIf20uniform_distributionIfEEEvNS0_27philox4x32_10_device_engineEPT_mT0_";
const NORMAL: &str = "_ZN12rocrand_host6detailL15generate_kernelIf19normal_distributionIfEEEvNS0_27philox4x32_10_device_engineEPT_mT0_";
const NORMAL_HALF: &str = "_ZN12rocrand_host6detailL15generate_kernelI6__half19normal_distributionIS2_EEEvNS0_27philox4x32_10_device_engineEPT_mT0_";
const N: usize = 8192;

/// The library's code object for `target` (gfx90a: its xnack- build).
fn library_code_object(target: Target) -> Option<Vec<u8>> {
    if !std::path::Path::new(LIB).exists() {
        eprintln!("\n\n*** {LIB} not installed (scripts/setup installs librocrand-dev): SKIPPED ***\n");
        return None;
    }
    let suffix = match target {
        Target::Gfx90a => "--gfx90a:xnack-",
        Target::Gfx1030 => "--gfx1030",
    };
    let objects = census::code_objects(LIB, &|t: &str| t.ends_with(suffix)).expect(LIB);
    assert_eq!(objects.len(), 1, "one {suffix} code object");
    objects.into_iter().next().map(|c| c.bytes)
}

/// Runs a Philox generate kernel over N floats: kernargs are the engine
/// state by value (48 bytes: counter, result, key = seed, substate), the
/// output pointer, the count, the distribution's parameters.
fn generate(target: Target, code: &[u8], name: &str, seed: u64, distribution: &[u8]) -> Vec<f32> {
    generate_words(target, code, name, seed, distribution, N).into_iter().map(f32::from_bits).collect()
}

/// [`generate`] of `words` 32-bit words' worth of elements: the output.
fn generate_words(target: Target, code: &[u8], name: &str, seed: u64, distribution: &[u8], words: usize) -> Vec<u32> {
    let mut mem = SparseMemory::new();
    load_code_object(&mut mem, code);
    // Unwritten elements stay NaN.
    let out = mem.alloc(vec![0xff; words * 4]);
    let mut kernarg = vec![0u8; 48];
    kernarg[32..40].copy_from_slice(&seed.to_le_bytes());
    kernarg.extend(out.to_le_bytes());
    kernarg.extend((N as u64).to_le_bytes());
    kernarg.extend(distribution);
    // A grid-stride kernel: 4 workgroups of 256 cover N in a few rounds.
    run_kernel_on(target, &mut mem, code, name, &kernarg, [4 * 256, 1, 1], [256, 1, 1]);
    mem.read_u32s(out, words)
}

/// binary16 to f32, exactly.
fn half_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let (field, mantissa) = ((h >> 10 & 31) as i32, (h & 0x3ff) as f32);
    sign * match field {
        0 => mantissa * 2f32.powi(-24),
        31 if mantissa == 0.0 => f32::INFINITY,
        31 => f32::NAN,
        _ => (1024.0 + mantissa) * 2f32.powi(field - 25),
    }
}

fn moments(v: &[f32]) -> (f64, f64) {
    let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64;
    let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (v.len() - 1) as f64;
    (mean, var)
}

#[test]
fn philox_uniform_floats_are_uniform() {
    uniform_floats(Target::Gfx90a);
}

#[test]
fn philox_uniform_floats_are_uniform_gfx1030() {
    uniform_floats(Target::Gfx1030);
}

#[test]
fn philox_normal_floats_are_normal() {
    normal_floats(Target::Gfx90a);
}

/// The __half normal generator: on gfx1030 its Box-Muller half arithmetic
/// includes v_fmac_f16 (12 of them), v_fma_mix*, v_sqrt_f16, v_pk_fma_f16.
/// Each output word is a half2 (x, y); Debian's build selects NaN for x
/// whenever the angle is finite: `v_cmp_class_f16_e64 vcc_lo, v9, 0x1f8`
/// (finite) then `v_cndmask_b32_e64 v9, v11, 0x7e00, vcc_lo` (gfx1030, at
/// 0x79650 in the code object; gfx90a's, at 0x7c950, `v_cmp_class_f16_e64
/// s[0:1], v8, s0` with s0 = 0x1f8, then `v_cndmask_b32_e64 v8, v19, v20,
/// s[0:1]` with v20 = 0x7e00), so every x is
/// the NaN 0x7e00, as the machine code says, and the y are N(2, 3^2).
#[test]
fn philox_normal_halves_are_normal() {
    normal_halves(Target::Gfx90a);
}

#[test]
fn philox_normal_halves_are_normal_gfx1030() {
    normal_halves(Target::Gfx1030);
}

fn normal_halves(target: Target) {
    let Some(code) = library_code_object(target) else { return };
    // normal_distribution<__half>: half2 mean, half2 stddev (8 bytes at
    // kernarg offset 64, as the code object's metadata says): 2.0, 3.0.
    let dist = [0x00, 0x40, 0x00, 0x40, 0x00, 0x42, 0x00, 0x42];
    // N halves: N / 2 words.
    let words = generate_words(target, &code, NORMAL_HALF, 91011, &dist, N / 2);
    // Unwritten words stay 0xffffffff; x is the kernel's NaN.
    assert!(words.iter().all(|&w| w as u16 == 0x7e00), "x: {:x?}", words.iter().find(|&&w| w as u16 != 0x7e00));
    let v: Vec<f32> = words.iter().map(|w| half_to_f32((w >> 16) as u16)).collect();
    assert!(v.iter().all(|x| x.is_finite()), "y not finite: {:?}", v.iter().position(|x| !x.is_finite()));
    let (mean, var) = moments(&v);
    let n = v.len() as f64;
    assert!((mean - 2.0).abs() < 8.0 * 3.0 / n.sqrt(), "mean {mean}");
    assert!((var - 9.0).abs() < 8.0 * 9.0 * (2.0 / (n - 1.0)).sqrt(), "variance {var}");
    let within = v.iter().filter(|&&x| (x - 2.0).abs() <= 3.0).count() as f64 / n;
    let p = 0.682689;
    assert!((within - p).abs() < 8.0 * (p * (1.0 - p) / n).sqrt(), "within one stddev {within}");
    eprintln!("{} normal halves (y): mean {mean:.4} variance {var:.4} within 1 stddev {within:.4}", target.arch());
}

#[test]
fn philox_normal_floats_are_normal_gfx1030() {
    normal_floats(Target::Gfx1030);
}

fn uniform_floats(target: Target) {
    let Some(code) = library_code_object(target) else { return };
    let v = generate(target, &code, UNIFORM, 1234, &[0]);
    assert!(v.iter().all(|&x| x > 0.0 && x <= 1.0), "outside (0, 1]: {:?}", v.iter().find(|&&x| !(x > 0.0 && x <= 1.0)));
    let (mean, var) = moments(&v);
    let n = N as f64;
    assert!((mean - 0.5).abs() < 8.0 * (1.0 / 12.0 / n).sqrt(), "mean {mean}");
    assert!((var - 1.0 / 12.0).abs() < 8.0 * (1.0 / 180.0 / n).sqrt(), "variance {var}");
    let other = generate(target, &code, UNIFORM, 4321, &[0]);
    assert_ne!(v, other, "another seed, other numbers");
    eprintln!("{} uniform: mean {mean:.5} variance {var:.5}", target.arch());
}

fn normal_floats(target: Target) {
    let Some(code) = library_code_object(target) else { return };
    let mut dist = 2.0f32.to_le_bytes().to_vec();
    dist.extend(3.0f32.to_le_bytes());
    let v = generate(target, &code, NORMAL, 5678, &dist);
    assert!(v.iter().all(|x| x.is_finite()), "not finite: {:?}", v.iter().find(|x| !x.is_finite()));
    let (mean, var) = moments(&v);
    let n = N as f64;
    assert!((mean - 2.0).abs() < 8.0 * 3.0 / n.sqrt(), "mean {mean}");
    assert!((var - 9.0).abs() < 8.0 * 9.0 * (2.0 / (n - 1.0)).sqrt(), "variance {var}");
    let within = v.iter().filter(|&&x| (x - 2.0).abs() <= 3.0).count() as f64 / n;
    let p = 0.682689;
    assert!((within - p).abs() < 8.0 * (p * (1.0 - p) / n).sqrt(), "within one stddev {within}");
    eprintln!("{} normal: mean {mean:.4} variance {var:.4} within 1 stddev {within:.4}", target.arch());
}
