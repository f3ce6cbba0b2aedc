// SPDX-License-Identifier: GPL-2.0 OR MIT
//! The integer soft-float against the host's IEEE f32 (x86-64 SSE, round to
//! nearest even, denormals kept): special values crossed with each other,
//! then millions of random operands. Any NaN matches any NaN (the payload
//! the GPU returns is not the host's).

use amdgpu_isa::softfloat::{self as sf, Denormals};

const RANDOM_CASES: usize = 2_000_000;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Random bits half the time; otherwise an interesting exponent and
    /// mantissa (zero, denormal, near-overflow, inf/NaN, all-ones mantissa).
    fn f32_bits(&mut self) -> u32 {
        let r = self.next();
        if r & 1 == 0 {
            return (r >> 32) as u32;
        }
        let exps = [0u32, 0, 1, 2, 23, 24, 100, 126, 127, 128, 150, 200, 253, 254, 255];
        let mants = [0u32, 1, 2, 0x7f_ffff, 0x40_0000, 0x3f_ffff, 0x7f_fffe];
        let e = exps[(r >> 8) as usize % exps.len()];
        let m = if r >> 16 & 1 == 0 { mants[(r >> 20) as usize % mants.len()] } else { (r >> 24) as u32 & 0x7f_ffff };
        ((r >> 2) as u32 & 1) << 31 | e << 23 | m
    }
}

fn specials() -> Vec<u32> {
    let mut v = vec![
        0, 0x8000_0000, 1, 0x8000_0001, 0x007f_ffff, 0x0080_0000, 0x0080_0001, 0x3f80_0000, 0xbf80_0000, 0x3f80_0001, 0x3f7f_ffff, 0x4000_0000, 0x7f7f_ffff, 0xff7f_ffff, 0x7f80_0000,
        0xff80_0000, 0x7fc0_0000, 0x7f80_0001, 0xffc0_0001, 0x3400_0000, 0x3300_0000, 0x4b00_0000, 0x4b80_0000, 0x4f00_0000, 0xcf00_0000, 0x4f80_0000, 0x3effffff,
    ];
    let n = v.len();
    for i in 0..n {
        v.push(v[i] ^ 0x8000_0000);
    }
    v.sort();
    v.dedup();
    v
}

fn same(ours: u32, host: f32) -> bool {
    if host.is_nan() {
        sf::is_nan(ours)
    } else {
        ours == host.to_bits()
    }
}

fn check2(name: &str, ours: impl Fn(u32, u32) -> u32, host: impl Fn(f32, f32) -> f32) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let sp = specials();
    let mut cases = 0u64;
    let mut check = |a: u32, b: u32| {
        let o = ours(a, b);
        let h = host(f32::from_bits(a), f32::from_bits(b));
        assert!(same(o, h), "{name}({a:#010x}, {b:#010x}) = {o:#010x}, host {:#010x}", h.to_bits());
        cases += 1;
    };
    for &a in &sp {
        for &b in &sp {
            check(a, b);
        }
    }
    for _ in 0..RANDOM_CASES {
        let (a, b) = (rng.f32_bits(), rng.f32_bits());
        check(a, b);
        // operands close in magnitude: cancellation
        let c = a ^ (rng.next() as u32 & 0x8000_00ff);
        check(a, c);
    }
    eprintln!("{name}: {cases} cases match the host");
}

#[test]
fn add_matches_host() {
    check2("add", |a, b| sf::add(a, b, Denormals::Keep), |a, b| a + b);
}

#[test]
fn sub_matches_host() {
    check2("sub", |a, b| sf::sub(a, b, Denormals::Keep), |a, b| a - b);
}

#[test]
fn mul_matches_host() {
    check2("mul", |a, b| sf::mul(a, b, Denormals::Keep), |a, b| a * b);
}

#[test]
fn fma_matches_host() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let sp = specials();
    let mut cases = 0u64;
    let mut check = |a: u32, b: u32, c: u32| {
        let o = sf::fma(a, b, c, Denormals::Keep);
        let h = f32::from_bits(a).mul_add(f32::from_bits(b), f32::from_bits(c));
        assert!(same(o, h), "fma({a:#010x}, {b:#010x}, {c:#010x}) = {o:#010x}, host {:#010x}", h.to_bits());
        cases += 1;
    };
    for &a in &sp {
        for &b in &sp {
            for &c in &sp {
                check(a, b, c);
            }
        }
    }
    for _ in 0..RANDOM_CASES {
        let (a, b, c) = (rng.f32_bits(), rng.f32_bits(), rng.f32_bits());
        check(a, b, c);
        // c near -a*b: massive cancellation
        let p = f32::from_bits(a) * f32::from_bits(b);
        let c2 = (-p).to_bits() ^ (rng.next() as u32 & 0xf);
        check(a, b, c2);
    }
    eprintln!("fma: {cases} cases match the host");
}

fn flush(a: u32) -> f32 {
    if a & 0x7f80_0000 == 0 {
        f32::from_bits(a & 0x8000_0000)
    } else {
        f32::from_bits(a)
    }
}

#[test]
fn flush_mode_flushes_inputs_and_results() {
    let mut rng = Rng(77);
    for _ in 0..RANDOM_CASES / 4 {
        let (a, b) = (rng.f32_bits(), rng.f32_bits());
        for (name, o, h) in [
            ("add", sf::add(a, b, Denormals::Flush), flush(a) + flush(b)),
            ("mul", sf::mul(a, b, Denormals::Flush), flush(a) * flush(b)),
        ] {
            let h = flush(h.to_bits());
            assert!(same(o, h), "{name} flush({a:#010x}, {b:#010x}) = {o:#010x}, host {:#010x}", h.to_bits());
        }
    }
    // The smallest normal times one half is a denormal: flushed to +0.
    assert_eq!(sf::mul(0x0080_0000, 0x3f00_0000, Denormals::Flush), 0);
    assert_eq!(sf::mul(0x0080_0000, 0x3f00_0000, Denormals::Keep), 0x0040_0000);
}

#[test]
fn conversions_match_host() {
    let mut rng = Rng(5);
    let ints = [0i32, 1, -1, i32::MAX, i32::MIN, 16_777_217, -16_777_217, 0x7fff_ff80, 0x7fff_ffc0];
    for v in ints.into_iter().chain((0..RANDOM_CASES).map(|_| rng.next() as i32 >> (rng.next() % 32))) {
        assert_eq!(sf::from_i32(v), (v as f32).to_bits(), "from_i32({v})");
        assert_eq!(sf::from_u32(v as u32), (v as u32 as f32).to_bits(), "from_u32({})", v as u32);
    }
    for a in specials().into_iter().chain((0..RANDOM_CASES).map(|_| rng.f32_bits())) {
        let f = f32::from_bits(a);
        assert_eq!(sf::to_i32(a, Denormals::Keep), f as i32, "to_i32({a:#010x})");
        assert_eq!(sf::to_u32(a, Denormals::Keep), f as u32, "to_u32({a:#010x})");
    }
}

#[test]
fn compare_and_min_max_match_host() {
    let mut rng = Rng(99);
    let sp = specials();
    let pairs = sp.iter().flat_map(|&a| sp.iter().map(move |&b| (a, b))).chain((0..RANDOM_CASES).map(|_| (rng.f32_bits(), rng.f32_bits()))).collect::<Vec<_>>();
    for (a, b) in pairs {
        let (x, y) = (f32::from_bits(a), f32::from_bits(b));
        let want = match x.partial_cmp(&y) {
            None => sf::Ordering::Unordered,
            Some(std::cmp::Ordering::Less) => sf::Ordering::Less,
            Some(std::cmp::Ordering::Equal) => sf::Ordering::Equal,
            Some(std::cmp::Ordering::Greater) => sf::Ordering::Greater,
        };
        assert_eq!(sf::compare(a, b, Denormals::Keep), want, "compare({a:#010x}, {b:#010x})");
        // min/max: NaN operands yield the other operand; -0 < +0.
        let lo = sf::min(a, b, Denormals::Keep);
        let hi = sf::max(a, b, Denormals::Keep);
        if x.is_nan() && y.is_nan() {
            assert!(sf::is_nan(lo) && sf::is_nan(hi));
        } else if x == 0.0 && y == 0.0 {
            assert_eq!(lo, a.max(b) & 0x8000_0000, "min of zeros {a:#x} {b:#x}");
            assert_eq!(hi, if a & b & 0x8000_0000 != 0 { 0x8000_0000 } else { 0 });
        } else {
            assert!(same(lo, x.min(y)), "min({a:#010x}, {b:#010x}) = {lo:#010x}");
            assert!(same(hi, x.max(y)), "max({a:#010x}, {b:#010x}) = {hi:#010x}");
        }
    }
}

#[test]
fn div_matches_host() {
    check2("div", |a, b| sf::div(a, b, Denormals::Keep), |a, b| a / b);
}

#[test]
fn sqrt_and_integral_rounding_match_host() {
    let mut rng = Rng(4242);
    let values: Vec<u32> = specials().into_iter().chain((0..RANDOM_CASES).map(|_| rng.f32_bits())).collect();
    for &a in &values {
        let x = f32::from_bits(a);
        assert!(same(sf::sqrt(a, Denormals::Keep), x.sqrt()), "sqrt({a:#010x})");
        assert!(same(sf::round_integral(a, sf::Integral::Floor, Denormals::Keep), x.floor()), "floor({a:#010x})");
        assert!(same(sf::round_integral(a, sf::Integral::Ceil, Denormals::Keep), x.ceil()), "ceil({a:#010x})");
        assert!(same(sf::round_integral(a, sf::Integral::Trunc, Denormals::Keep), x.trunc()), "trunc({a:#010x})");
        assert!(same(sf::round_integral(a, sf::Integral::NearestEven, Denormals::Keep), x.round_ties_even()), "rndne({a:#010x})");
        let n = (rng.next() % 600) as i32 - 300;
        let want = (x as f64 * 2f64.powi(n)) as f32; // exact in f64, one rounding to f32
        assert!(same(sf::ldexp(a, n, Denormals::Keep), want), "ldexp({a:#010x}, {n})");
        if x.is_finite() {
            let fr = x - x.floor();
            let want = if fr == 1.0 { f32::from_bits(0x3f7f_ffff) } else { fr };
            assert!(same(sf::fract(a, Denormals::Keep), want), "fract({a:#010x})");
        }
    }
}

/// f16 <-> f32 against the host's F16C instructions: every f16, and f32s
/// around every f16 rounding boundary plus random ones.
#[test]
fn f16_conversions_exhaustive_against_f16c() {
    if !std::is_x86_feature_detected!("f16c") {
        eprintln!("\n*** SKIPPED: the host CPU has no F16C ***\n");
        return;
    }
    #[target_feature(enable = "f16c")]
    fn host_f16_to_f32(h: u16) -> f32 {
        use std::arch::x86_64::*;
        _mm_cvtss_f32(_mm_cvtph_ps(_mm_set1_epi16(h as i16)))
    }
    #[target_feature(enable = "f16c")]
    fn host_f32_to_f16(x: f32) -> u16 {
        use std::arch::x86_64::*;
        _mm_extract_epi16::<0>(_mm_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm_set1_ps(x))) as u16
    }
    for h in 0..=u16::MAX {
        // SAFETY: F16C was detected above.
        let want = unsafe { host_f16_to_f32(h) };
        assert!(same(sf::f16_to_f32(h), want), "f16_to_f32({h:#06x})");
        let back = sf::f32_to_f16(want.to_bits());
        if want.is_nan() {
            assert_eq!(back & 0x7c00, 0x7c00);
            assert_ne!(back & 0x3ff, 0);
        } else {
            assert_eq!(back, h, "f32_to_f16 round trip {h:#06x}");
        }
        // midpoints to the next f16 and one ulp either side
        let mid = want.to_bits().wrapping_add(1 << 12);
        for a in [mid.wrapping_sub(1), mid, mid.wrapping_add(1)] {
            // SAFETY: as above.
            let w = unsafe { host_f32_to_f16(f32::from_bits(a)) };
            let o = sf::f32_to_f16(a);
            assert!(o == w || (o & 0x7fff > 0x7c00 && w & 0x7fff > 0x7c00), "f32_to_f16({a:#010x}) = {o:#06x}, host {w:#06x}");
        }
    }
    let mut rng = Rng(16);
    for _ in 0..RANDOM_CASES {
        let a = rng.f32_bits();
        // SAFETY: as above.
        let w = unsafe { host_f32_to_f16(f32::from_bits(a)) };
        let o = sf::f32_to_f16(a);
        assert!(o == w || (o & 0x7fff > 0x7c00 && w & 0x7fff > 0x7c00), "f32_to_f16({a:#010x}) = {o:#06x}, host {w:#06x}");
    }
}

#[test]
fn div_wide_matches_u128_division() {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..200_000u32 {
        let (hi, lo) = (next() >> (i % 64), next());
        let d = (next() >> (i % 61)) | 1;
        let n = (hi as u128) << 64 | lo as u128;
        let (q, r) = amdgpu_isa::softfloat::div_wide(hi, lo, d);
        assert_eq!((q, r as u128), (n / d as u128, n % d as u128), "{hi:#x}:{lo:#x} / {d:#x}");
    }
    assert_eq!(amdgpu_isa::softfloat::div_wide(u64::MAX, u64::MAX, u64::MAX), ((1u128 << 64) | 1, 0));
}
