// SPDX-License-Identifier: GPL-2.0 OR MIT
//! The opcodes Debian's librocrand/librocsparse gfx90a code needed beyond
//! the HIP samples (tests/census.rs found them), against the host's native
//! arithmetic:
//! - `transcendental`: log2, 2^x, sin/cos of revolutions within 1 ULP of
//!   the host's f64 functions, special values as the ISA manual states;
//! - `half`: binary16 mul/add/sqrt exhaustively over one operand (against
//!   the host's f64, exact for these, rounded to f16 by a converter written
//!   here with f64 arithmetic), fma over random millions against an f64
//!   fma whose rounding error is recovered exactly (TwoSum);
//! - the instructions themselves (tests/asm/exec/reach_*.s assembled by
//!   llvm-mc-15), on 64 lanes of random inputs, each lane against the host.

mod common;
use amdgpu_isa::exec::{execute, fetch, ExecError, StepOutcome};
use amdgpu_isa::memory::Environment;
use amdgpu_isa::softfloat::Denormals;
use amdgpu_isa::wave::Wave;
use amdgpu_isa::{half, transcendental as tr};
use common::*;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// An f32 in [lo, hi).
    fn f32_in(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * ((self.next() >> 40) as f32 / (1u64 << 24) as f32)
    }
}

/// Distance in ULPs between two finite f32 of the same sign (or zeros).
fn ulps(a: f32, b: f32) -> u32 {
    if a == b {
        return 0;
    }
    let key = |x: f32| if x.is_sign_negative() { -(x.to_bits() as i64 & 0x7fff_ffff) } else { x.to_bits() as i64 };
    (key(a) - key(b)).unsigned_abs().min(u32::MAX as u64) as u32
}

fn close(name: &str, x: f32, got: u32, want: f64, abs_slack: f64) {
    let got = f32::from_bits(got);
    let want32 = want as f32;
    if want.is_nan() {
        assert!(got.is_nan(), "{name}({x:e}) = {got:e}, want NaN");
        return;
    }
    let ok = ulps(got, want32) <= 1 || (got as f64 - want).abs() <= abs_slack;
    assert!(ok, "{name}({x:e} = {:#010x}) = {got:e} ({:#010x}), host {want:e}", x.to_bits(), got.to_bits());
}

#[test]
fn log2_and_exp2_within_one_ulp() {
    let mut rng = Rng(0x5eed_1234_5678_9abc);
    for k in 0..200_000u32 {
        // every binade of normals, and near 1 (where log2 is small)
        let x = if k % 4 == 0 { rng.f32_in(0.5, 2.0) } else { f32::from_bits(((rng.next() >> 33) as u32 % (0x7f00_0000 - 0x0080_0000)) + 0x0080_0000) };
        close("log2", x, tr::log2(x.to_bits()), (x as f64).log2(), 0.0);
        let y = rng.f32_in(-150.0, 128.0);
        let want = (y as f64).exp2();
        // results below 2^-126 are flushed
        let want = if want < f32::MIN_POSITIVE as f64 { 0.0 } else { want };
        close("exp2", y, tr::exp2(y.to_bits()), want, 0.0);
    }
    let cases: [(u32, u32); 10] = [
        (0x0000_0000, 0xff80_0000), // log2(+0) = -inf
        (0x8000_0000, 0xff80_0000), // log2(-0) = -inf
        (0x0000_0001, 0xff80_0000), // denormal: flushed
        (0x3f80_0000, 0x0000_0000), // log2(1) = +0
        (0x4100_0000, 0x4040_0000), // log2(8) = 3
        (0x7f80_0000, 0x7f80_0000), // log2(+inf) = +inf
        (0xbf80_0000, 0x7fc0_0000), // log2(-1) = NaN
        (0x7fc0_0000, 0x7fc0_0000),
        (0x7f80_0001, 0x7fc0_0001), // sNaN quieted
        (0x3e80_0000, 0xc000_0000), // log2(1/4) = -2
    ];
    for (x, want) in cases {
        assert_eq!(tr::log2(x), want, "log2({x:#010x})");
    }
    let cases: [(u32, u32); 8] = [
        (0xff80_0000, 0),           // 2^-inf = 0
        (0x7f80_0000, 0x7f80_0000), // 2^inf
        (0x4300_0000, 0x7f80_0000), // 2^128 overflows
        (0xc300_0000, 0),           // 2^-128 is denormal: flushed
        (0x0000_0000, 0x3f80_0000),
        (0x4040_0000, 0x4100_0000), // 2^3 = 8
        (0xc0a0_0000, 0x3d00_0000), // 2^-5
        (0x42fe_0000, 0x7f00_0000), // 2^127
    ];
    for (x, want) in cases {
        assert_eq!(tr::exp2(x), want, "exp2({x:#010x})");
    }
}

#[test]
fn sin_and_cos_of_revolutions_within_one_ulp() {
    let mut rng = Rng(0x0dd5_eed5_0123_4567);
    let two_pi = 2.0 * std::f64::consts::PI;
    for k in 0..200_000u32 {
        let x = match k % 3 {
            0 => rng.f32_in(-1.0, 1.0),
            1 => rng.f32_in(-256.0, 256.0),
            _ => rng.f32_in(-1e-3, 1e-3),
        };
        // The host's 2 pi x is rounded (error up to 2^-52 relative of it):
        // results near a zero of sin/cos get that much absolute slack.
        let slack = (two_pi * x as f64).abs() * 2f64.powi(-51) + 2f64.powi(-60);
        close("sin", x, tr::sin_revolutions(x.to_bits()), (two_pi * x as f64).sin(), slack);
        close("cos", x, tr::cos_revolutions(x.to_bits()), (two_pi * x as f64).cos(), slack);
    }
    // Exact quarter turns, out-of-range arguments (0), NaN.
    let s = |x: f32| f32::from_bits(tr::sin_revolutions(x.to_bits()));
    let c = |x: f32| f32::from_bits(tr::cos_revolutions(x.to_bits()));
    assert_eq!((s(0.25), s(0.5), s(-0.25), s(100.75)), (1.0, 0.0, -1.0, -1.0));
    assert_eq!((c(0.0), c(0.5), c(0.25), c(-3.0)), (1.0, -1.0, 0.0, 1.0));
    assert_eq!(s(-0.0).to_bits(), 0x8000_0000, "sin(-0) = -0");
    assert_eq!((s(256.5), c(-300.0), s(f32::INFINITY), c(f32::NEG_INFINITY)), (0.0, 0.0, 0.0, 0.0));
    assert!(s(f32::NAN).is_nan() && c(f32::NAN).is_nan());
}

// ---- binary16 -------------------------------------------------------------

/// The host's binary16 -> f64 (exact).
fn h2f(h: u16) -> f64 {
    let sign = if h >> 15 == 1 { -1.0 } else { 1.0 };
    let e = ((h >> 10) & 0x1f) as i32;
    let m = (h & 0x3ff) as f64;
    sign * match e {
        0 => m * 2f64.powi(-24),
        31 if m == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        _ => (1024.0 + m) * 2f64.powi(e - 25),
    }
}

/// f64 -> binary16, to nearest even, in f64 arithmetic (x / quantum is
/// exact, then rounded to an integer).  `err`: the sign of what `x` lacks
/// of the exact value (a tie then goes that way).
fn f2h(x: f64, err: f64) -> u16 {
    let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
    let a = x.abs();
    if a.is_nan() {
        return 0x7e00;
    }
    if a == 0.0 {
        return sign;
    }
    if a >= 65536.0 {
        return sign | 0x7c00;
    }
    let e = a.log2().floor() as i32;
    // log2 may be off by one at binade edges: fix e so that 2^e <= a < 2^(e+1).
    let e = if 2f64.powi(e) > a { e - 1 } else if 2f64.powi(e + 1) <= a { e + 1 } else { e };
    let q = 2f64.powi((e - 10).max(-24));
    let t = a / q;
    let mut r = t.round_ties_even();
    if t - t.floor() == 0.5 && err != 0.0 {
        // a tie only in the rounded value: the exact value is past it
        let away = (err > 0.0) != x.is_sign_negative();
        r = if away { t.ceil() } else { t.floor() };
    }
    let v = r * q;
    if v >= 65520.0 || v > 65504.0 {
        return sign | 0x7c00;
    }
    if v < 2f64.powi(-14) {
        return sign | r as u16; // denormal (or the smallest normal, r = 1024)
    }
    let e = v.log2().floor() as i32;
    let e = if 2f64.powi(e) > v { e - 1 } else if 2f64.powi(e + 1) <= v { e + 1 } else { e };
    sign | (((e + 15) as u16) << 10) | ((v / 2f64.powi(e - 10)) as u16 - 1024)
}

fn same_h(a: u16, b: u16) -> bool {
    a == b || (half::is_nan(a) && half::is_nan(b))
}

#[test]
fn half_conversions_agree_with_themselves() {
    // The host converters above are the reference: every finite binary16
    // goes through f64 and back unchanged.
    for h in 0..=0xffffu16 {
        if !half::is_nan(h) {
            assert_eq!(f2h(h2f(h), 0.0), h, "{h:#06x}");
        }
    }
}

#[test]
fn half_mul_add_sqrt_match_host() {
    let mut rng = Rng(0xf16f_16f1_6f16_f16f);
    for a in 0..=0xffffu16 {
        let sq = half::sqrt(a, Denormals::Keep);
        assert!(same_h(sq, f2h(h2f(a).sqrt(), 0.0)), "sqrt({a:#06x}) = {sq:#06x}");
        for _ in 0..16 {
            let b = rng.next() as u16;
            // a*b and a+b are exact in f64
            let m = half::mul(a, b, Denormals::Keep);
            assert!(same_h(m, f2h(h2f(a) * h2f(b), 0.0)), "mul({a:#06x}, {b:#06x}) = {m:#06x}");
            let s = half::add(a, b, Denormals::Keep);
            assert!(same_h(s, f2h(h2f(a) + h2f(b), 0.0)), "add({a:#06x}, {b:#06x}) = {s:#06x}");
        }
    }
    // Flush: denormal operands read as zero, denormal results are zero.
    assert_eq!(half::mul(0x0001, 0x3c00, Denormals::Flush), 0);
    assert_eq!(half::mul(0x0400, 0x3800, Denormals::Flush), 0, "2^-14 * 1/2 is denormal");
    assert_eq!(half::mul(0x0400, 0x3800, Denormals::Keep), 0x0200);
}

#[test]
fn half_fma_matches_host_rounded_once() {
    let mut rng = Rng(0x00f0_0f0f_f0f0_1234);
    let mut cases = 0u32;
    for k in 0..2_000_000u32 {
        let (a, b) = (rng.next() as u16, rng.next() as u16);
        // c random, or close to -a*b (cancellation), or tiny against a*b
        let c = match k % 3 {
            0 => rng.next() as u16,
            1 => f2h(-(h2f(a) * h2f(b)), 0.0) ^ (rng.next() as u16 & 3),
            _ => (rng.next() as u16 & 0x83ff) | 0x0400,
        };
        let got = half::fma(a, b, c, Denormals::Keep);
        let (x, y, z) = (h2f(a), h2f(b), h2f(c));
        let p = x * y; // exact
        let s = p + z;
        // TwoSum: s + err == p + z exactly
        let bb = s - p;
        let err = (p - (s - bb)) + (z - bb);
        let want = if s.is_finite() { f2h(s, err) } else { f2h(s, 0.0) };
        let want = if (p == 0.0 && z == 0.0) || (s == 0.0 && err == 0.0) {
            // exact zeros: +0 unless both terms are -0
            if p.is_sign_negative() && z.is_sign_negative() && p == 0.0 { 0x8000 } else { 0 }
        } else {
            want
        };
        assert!(same_h(got, want), "fma({a:#06x}, {b:#06x}, {c:#06x}) = {got:#06x}, host {want:#06x}");
        cases += 1;
    }
    assert_eq!(half::fma(0x7c00, 0, 0x3c00, Denormals::Keep), half::QUIET_NAN, "inf * 0");
    assert_eq!(half::fma(0x7c00, 0x3c00, 0xfc00, Denormals::Keep), half::QUIET_NAN, "inf - inf");
    eprintln!("fma: {cases} cases match the host");
}

// ---- the instructions -------------------------------------------------------

const CODE: u64 = 0x4000_0000;

fn run(hex: &str, setup: &dyn Fn(&mut Wave)) -> (Box<Wave>, Vec<u8>) {
    let words: Vec<u32> = hex.lines().map(|l| u32::from_str_radix(l.trim(), 16).unwrap()).collect();
    let mut mem = SparseMemory::new();
    mem.map(CODE, words.iter().flat_map(|w| w.to_le_bytes()).collect());
    let mut wave = Box::new(Wave::new());
    wave.pc = CODE;
    wave.exec = u64::MAX;
    wave.mode.0 = 0xf0;
    for lane in 0..64 {
        wave.vgpr[0][lane] = lane as u32;
    }
    setup(&mut wave);
    let mut lds = vec![0u8; 65536];
    for _ in 0..1000 {
        let mut env = Environment { global: &mut mem, lds: &mut lds, scratch: &mut [], scratch_lane_bytes: 0, apertures: APERTURES };
        let inst = fetch(&wave, &mut env).unwrap();
        match execute(&mut wave, &mut env, &inst) {
            Ok(StepOutcome::Ended) => return (wave, lds),
            Ok(_) => {}
            Err(e @ ExecError::UnsupportedOpcode { .. }) | Err(e) => panic!("{e}"),
        }
    }
    panic!("did not end")
}

#[test]
fn reach_valu_instructions_match_host() {
    let hex = include_str!("fixtures/exec/reach_valu.hex");
    let mut rng = Rng(0xabcd_ef01_2345_6789);
    for _round in 0..64 {
        // f32 inputs for the transcendental ops; their halves are f16 inputs.
        let inputs: Vec<[u32; 7]> = (0..64)
            .map(|lane| {
                let a = if lane % 2 == 0 { rng.f32_in(-3.0, 3.0).to_bits() } else { rng.next() as u32 };
                let d = f64::from_bits(rng.next() >> 1 | (rng.next() & 1) << 63);
                let d = if d.is_nan() { 3.0 } else { d };
                [a, rng.next() as u32, rng.next() as u32, d.to_bits() as u32, (d.to_bits() >> 32) as u32, rng.next() as u32, rng.next() as u32]
            })
            .collect();
        let (w, _) = run(hex, &|w| {
            w.sgpr[0] = u32::MAX;
            w.sgpr[1] = u32::MAX;
            for (lane, v) in inputs.iter().enumerate() {
                for (r, reg) in [1, 2, 3, 4, 5, 23, 27].into_iter().enumerate() {
                    w.vgpr[reg][lane] = v[r];
                }
            }
        });
        let carry = w.sgpr[0] as u64 | (w.sgpr[1] as u64) << 32;
        for (lane, v) in inputs.iter().enumerate() {
            let (a, b, c) = (v[0], v[1], v[2]);
            assert_eq!(w.vgpr[29][lane], a.wrapping_add(b), "v_add_co_u32");
            assert_eq!(carry >> lane & 1 == 1, a.checked_add(b).is_none(), "v_add_co_u32 carry into s[0:1]");
            let d = f64::from_bits(v[3] as u64 | (v[4] as u64) << 32);
            let out = |r: usize| w.vgpr[r][lane];
            assert_eq!(out(10), tr::log2(a));
            assert_eq!(out(11), tr::exp2(a));
            assert_eq!(out(12), tr::sin_revolutions(a));
            assert_eq!(out(13), tr::cos_revolutions(a));
            // frexp against the C library's
            extern "C" {
                fn frexp(x: f64, e: *mut i32) -> f64;
            }
            let mut e = 0i32;
            // SAFETY: frexp writes one i32 through the pointer it is given.
            let m = unsafe { frexp(d, &mut e) };
            let (m, e) = if d.is_infinite() { (d, 0) } else { (m, e) };
            assert_eq!((out(14) as u64 | (out(15) as u64) << 32, out(16) as i32), (m.to_bits(), e), "frexp({d:e})");
            let (al, ah, bl, bh, cl, ch) = (a as u16, (a >> 16) as u16, b as u16, (b >> 16) as u16, c as u16, (c >> 16) as u16);
            assert!(same_h(out(17) as u16, f2h(h2f(al) * h2f(bl), 0.0)) && out(17) >> 16 == 0, "v_mul_f16 {a:#x} {b:#x}: {:#x}", out(17));
            assert_eq!(out(18), half::fma(al, bl, cl, Denormals::Keep) as u32, "v_fma_f16");
            assert!(same_h(out(19) as u16, f2h(h2f(al).sqrt(), 0.0)), "v_sqrt_f16");
            assert_eq!(out(20), ah as u32 | (bl as u32) << 16, "v_pack_b32_f16 op_sel:[1,0]");
            let class_mask = w.sgpr[20] as u64 | (w.sgpr[21] as u64) << 32;
            assert_eq!(class_mask >> lane & 1 == 1, b >> half::class(al) & 1 == 1, "v_cmp_class_f16");
            // v_fma_mix_f32: f16 lo, f16 lo, f32 c; the product of two
            // f16 is exact in f32 and f64: one f32 rounding of x*y+z.
            let want = (h2f(al) as f32).mul_add(h2f(bl) as f32, f32::from_bits(c));
            let got = f32::from_bits(out(22));
            assert!(got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()), "v_fma_mix_f32 {a:#x} {b:#x} {c:#x}: {got:e} want {want:e}");
            // mixlo: a's high half; the result's f16 in the low half, v23's high half kept
            let want = (h2f(ah) as f32).mul_add(h2f(bl) as f32, f32::from_bits(c));
            let got = out(23);
            assert_eq!(got >> 16, v[5] >> 16, "v_fma_mixlo_f16 keeps the high half");
            let want16 = amdgpu_isa::softfloat::f32_to_f16(want.to_bits());
            assert!(same_h(got as u16, want16), "v_fma_mixlo_f16: {got:#x} want {want16:#x}");
            // v_pk_fma_f16 op_sel:[0,1,0] op_sel_hi:[1,0,1]: lo = fma(al, bh, cl), hi = fma(ah, bl, ch)
            let k = Denormals::Keep;
            assert_eq!(out(24), half::fma(al, bh, cl, k) as u32 | (half::fma(ah, bl, ch, k) as u32) << 16, "v_pk_fma_f16");
            assert_eq!(out(25), a.saturating_sub(b), "v_sub_u32 clamp");
            assert!(same_h(out(26) as u16, f2h(-h2f(al) + h2f(bl).abs(), 0.0)), "v_add_f16 -a |b|");
            assert_eq!(out(27), (v[6] & 0xffff) | (half::fma(ah, bh, ch, k) as u32) << 16, "v_fma_f16 op_sel:[1,1,1,1]");
            let lt_mask = w.sgpr[22] as u64 | (w.sgpr[23] as u64) << 32;
            assert_eq!(lt_mask >> lane & 1 == 1, h2f(al) < h2f(bl), "v_cmp_lt_f16");
            assert_eq!(out(28), half::fma(al, 0x3c00, cl, k) as u32 | (half::fma(ah, 0x3c00, ch, k) as u32) << 16, "v_pk_fma_f16 with 1.0");
        }
    }
}

#[test]
fn lds_64bit_atomics_match_host() {
    let hex = include_str!("fixtures/exec/reach_lds64.hex");
    let mut rng = Rng(0x1d5_64b1_7a70_1c5);
    let lanes: Vec<[u64; 5]> = (0..64)
        .map(|lane| {
            let x = rng.next();
            // some lanes' min operand equal to the sum, so cmpst succeeds there
            let y = rng.next() >> (lane % 3);
            [x, y, if lane % 4 == 0 { 0 } else { rng.next() }, (rng.next() % 1000) as f64 as u64 + 0, 0]
        })
        .collect();
    let fa = |l: usize| (l as f64 + 0.25) * 1.5;
    let fb = |l: usize| -(l as f64) / 8.0;
    let (w, _) = run(hex, &|w| {
        for (lane, v) in lanes.iter().enumerate() {
            let put = |w: &mut Wave, r: usize, x: u64| {
                w.vgpr[r][lane] = x as u32;
                w.vgpr[r + 1][lane] = (x >> 32) as u32;
            };
            put(w, 4, v[0]);
            put(w, 6, v[1]);
            put(w, 8, v[2]);
            put(w, 22, fa(lane).to_bits());
            put(w, 24, fb(lane).to_bits());
        }
    });
    let pair = |r: usize, lane: usize| w.vgpr[r][lane] as u64 | (w.vgpr[r + 1][lane] as u64) << 32;
    let mut sum = 0u64;
    let mut max = 0i64;
    for (lane, v) in lanes.iter().enumerate() {
        let (x, y, z) = (v[0], v[1], v[2]);
        assert_eq!(pair(10, lane), x, "ds_add_rtn_u64 returns the old value");
        let m = x.wrapping_add(y).min(z);
        assert_eq!(pair(12, lane), m, "ds_add_rtn_u64 then ds_min_u64");
        assert_eq!(pair(14, lane), m, "ds_cmpst_rtn_b64 returns the old value");
        assert_eq!(pair(16, lane), y, "ds_cmpst_rtn_b64 stores data1 when memory equals data0");
        assert_eq!(pair(18, lane), y);
        assert_eq!(pair(20, lane), if y == z { x } else { y }, "ds_cmpst_rtn_b64 with another compare value");
        assert_eq!(f64::from_bits(pair(26, lane)), fa(lane) + fb(lane), "ds_add_f64 then ds_add_rtn_f64 returns");
        assert_eq!(f64::from_bits(pair(28, lane)), fa(lane) + fb(lane) + fb(lane), "ds_add_rtn_f64");
        sum = sum.wrapping_add(y);
        max = max.max(z as i64);
    }
    for lane in 0..64 {
        assert_eq!(pair(34, lane), sum, "ds_add_u64 from every lane on one address");
        assert_eq!(pair(36, lane), max as u64, "ds_max_rtn_i64 from every lane (memory starts at 0)");
    }
    // ds_max_rtn_i64 returned the running maximum, lanes in order.
    let mut running = 0i64;
    for (lane, v) in lanes.iter().enumerate() {
        assert_eq!(pair(32, lane) as i64, running, "lane {lane}");
        running = running.max(v[2] as i64);
    }
}
