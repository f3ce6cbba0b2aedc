// SPDX-License-Identifier: GPL-2.0 OR MIT
//! Debian's own librocrand.so.1 gfx90a kernels (as built by Debian, taken
//! out of the library's .hip_fatbin) run whole on the host build of the
//! interpreter: the Philox4x32-10 uniform and normal float generators,
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
const N: usize = 8192;

fn library_code_object() -> Option<Vec<u8>> {
    if !std::path::Path::new(LIB).exists() {
        eprintln!("\n\n*** {LIB} not installed (scripts/setup installs librocrand-dev): SKIPPED ***\n");
        return None;
    }
    let objects = census::code_objects(LIB, &|t: &str| t.ends_with("gfx90a:xnack-")).expect(LIB);
    assert_eq!(objects.len(), 1, "one gfx90a:xnack- code object");
    objects.into_iter().next().map(|c| c.bytes)
}

/// Runs a Philox generate kernel over N floats: kernargs are the engine
/// state by value (48 bytes: counter, result, key = seed, substate), the
/// output pointer, the count, the distribution's parameters.
fn generate(code: &[u8], name: &str, seed: u64, distribution: &[u8]) -> Vec<f32> {
    let mut mem = SparseMemory::new();
    load_code_object(&mut mem, code);
    // Unwritten elements stay NaN.
    let out = mem.alloc(vec![0xff; N * 4]);
    let mut kernarg = vec![0u8; 48];
    kernarg[32..40].copy_from_slice(&seed.to_le_bytes());
    kernarg.extend(out.to_le_bytes());
    kernarg.extend((N as u64).to_le_bytes());
    kernarg.extend(distribution);
    // A grid-stride kernel: 4 workgroups of 256 cover N in a few rounds.
    run_kernel(&mut mem, code, name, &kernarg, [4 * 256, 1, 1], [256, 1, 1]);
    mem.read_u32s(out, N).into_iter().map(f32::from_bits).collect()
}

fn moments(v: &[f32]) -> (f64, f64) {
    let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64;
    let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (v.len() - 1) as f64;
    (mean, var)
}

#[test]
fn philox_uniform_floats_are_uniform() {
    let Some(code) = library_code_object() else { return };
    let v = generate(&code, UNIFORM, 1234, &[0]);
    assert!(v.iter().all(|&x| x > 0.0 && x <= 1.0), "outside (0, 1]: {:?}", v.iter().find(|&&x| !(x > 0.0 && x <= 1.0)));
    let (mean, var) = moments(&v);
    let n = N as f64;
    assert!((mean - 0.5).abs() < 8.0 * (1.0 / 12.0 / n).sqrt(), "mean {mean}");
    assert!((var - 1.0 / 12.0).abs() < 8.0 * (1.0 / 180.0 / n).sqrt(), "variance {var}");
    let other = generate(&code, UNIFORM, 4321, &[0]);
    assert_ne!(v, other, "another seed, other numbers");
    eprintln!("uniform: mean {mean:.5} variance {var:.5}");
}

#[test]
fn philox_normal_floats_are_normal() {
    let Some(code) = library_code_object() else { return };
    let mut dist = 2.0f32.to_le_bytes().to_vec();
    dist.extend(3.0f32.to_le_bytes());
    let v = generate(&code, NORMAL, 5678, &dist);
    assert!(v.iter().all(|x| x.is_finite()), "not finite: {:?}", v.iter().find(|x| !x.is_finite()));
    let (mean, var) = moments(&v);
    let n = N as f64;
    assert!((mean - 2.0).abs() < 8.0 * 3.0 / n.sqrt(), "mean {mean}");
    assert!((var - 9.0).abs() < 8.0 * 9.0 * (2.0 / (n - 1.0)).sqrt(), "variance {var}");
    let within = v.iter().filter(|&&x| (x - 2.0).abs() <= 3.0).count() as f64 / n;
    let p = 0.682689;
    assert!((within - p).abs() < 8.0 * (p * (1.0 - p) / n).sqrt(), "within one stddev {within}");
    eprintln!("normal: mean {mean:.4} variance {var:.4} within 1 stddev {within:.4}");
}
