// SPDX-License-Identifier: GPL-2.0 OR MIT
//! The binary64 soft-float against the host's IEEE f64: special values
//! crossed, then millions of random operands (any NaN matches any NaN).

use amdgpu_isa::softfloat::Denormals;
use amdgpu_isa::softfloat64 as sf;

const RANDOM_CASES: usize = 2_000_000;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Random bits half the time, else an interesting exponent/mantissa.
    fn f64_bits(&mut self) -> u64 {
        let r = self.next();
        if r & 1 == 0 {
            return self.next();
        }
        let exps = [0u64, 0, 1, 2, 52, 53, 500, 1022, 1023, 1024, 1075, 1500, 2045, 2046, 2047];
        let mants = [0u64, 1, 2, (1 << 52) - 1, 1 << 51, (1 << 51) - 1];
        let e = exps[(r >> 8) as usize % exps.len()];
        let m = if r >> 16 & 1 == 0 { mants[(r >> 20) as usize % mants.len()] } else { self.next() & ((1 << 52) - 1) };
        (r >> 2 & 1) << 63 | e << 52 | m
    }
}

fn specials() -> Vec<u64> {
    let mut v: Vec<u64> = [0.0f64, 1.0, 1.5, 2.0, f64::MAX, f64::MIN_POSITIVE, f64::INFINITY, f64::NAN, 1e-310, 5e-324, 3.0, 0.1, 2f64.powi(52), 2f64.powi(53) + 2.0]
        .iter()
        .map(|f| f.to_bits())
        .collect();
    v.push(0x7ff0_0000_0000_0001); // signalling NaN
    let n = v.len();
    for i in 0..n {
        v.push(v[i] ^ 1 << 63);
    }
    v
}

fn same(ours: u64, host: f64) -> bool {
    if host.is_nan() {
        sf::is_nan(ours)
    } else {
        ours == host.to_bits()
    }
}

#[test]
fn add_sub_mul_match_host() {
    let mut rng = Rng(0x51);
    let sp = specials();
    let pairs: Vec<(u64, u64)> = sp.iter().flat_map(|&a| sp.iter().map(move |&b| (a, b))).chain((0..RANDOM_CASES).map(|_| (rng.f64_bits(), rng.f64_bits()))).collect();
    let mut rng = Rng(7);
    for (a, b) in pairs {
        let (x, y) = (f64::from_bits(a), f64::from_bits(b));
        assert!(same(sf::add(a, b, Denormals::Keep), x + y), "add({a:#x}, {b:#x})");
        assert!(same(sf::add(a, b ^ 1 << 63, Denormals::Keep), x - y), "sub({a:#x}, {b:#x})");
        assert!(same(sf::mul(a, b, Denormals::Keep), x * y), "mul({a:#x}, {b:#x})");
        // cancellation: b close to -a
        let c = (a ^ 1 << 63) ^ (rng.next() & 0xff);
        assert!(same(sf::add(a, c, Denormals::Keep), x + f64::from_bits(c)), "add({a:#x}, {c:#x})");
    }
}

#[test]
fn fma_matches_host() {
    let mut rng = Rng(0x77);
    let sp = specials();
    for &a in &sp {
        for &b in &sp {
            for &c in &sp {
                let want = f64::from_bits(a).mul_add(f64::from_bits(b), f64::from_bits(c));
                assert!(same(sf::fma(a, b, c, Denormals::Keep), want), "fma({a:#x}, {b:#x}, {c:#x})");
            }
        }
    }
    for _ in 0..RANDOM_CASES {
        let (a, b, c) = (rng.f64_bits(), rng.f64_bits(), rng.f64_bits());
        let (x, y) = (f64::from_bits(a), f64::from_bits(b));
        assert!(same(sf::fma(a, b, c, Denormals::Keep), x.mul_add(y, f64::from_bits(c))), "fma({a:#x}, {b:#x}, {c:#x})");
        let c2 = (-(x * y)).to_bits() ^ (rng.next() & 0xf);
        assert!(same(sf::fma(a, b, c2, Denormals::Keep), x.mul_add(y, f64::from_bits(c2))), "fma({a:#x}, {b:#x}, {c2:#x}) cancelling");
    }
}

#[test]
fn conversions_compare_min_max_ldexp_match_host() {
    let mut rng = Rng(0x99);
    for _ in 0..RANDOM_CASES {
        let a = rng.f64_bits();
        let x = f64::from_bits(a);
        assert!(sf::to_f32(a, Denormals::Keep) == (x as f32).to_bits() || (x.is_nan() && f32::from_bits(sf::to_f32(a, Denormals::Keep)).is_nan()), "to_f32({a:#x})");
        assert_eq!(sf::to_i32(a), x as i32, "to_i32({a:#x})");
        assert_eq!(sf::to_u32(a), x as u32, "to_u32({a:#x})");
        let f = rng.next() as u32;
        assert!(same(sf::from_f32(f), f32::from_bits(f) as f64), "from_f32({f:#x})");
        let i = rng.next() as i32;
        assert_eq!(sf::from_i32(i), (i as f64).to_bits());
        assert_eq!(sf::from_u32(i as u32), (i as u32 as f64).to_bits());
        let b = rng.f64_bits();
        let y = f64::from_bits(b);
        let want = match x.partial_cmp(&y) {
            None => amdgpu_isa::softfloat::Ordering::Unordered,
            Some(std::cmp::Ordering::Less) => amdgpu_isa::softfloat::Ordering::Less,
            Some(std::cmp::Ordering::Equal) => amdgpu_isa::softfloat::Ordering::Equal,
            Some(std::cmp::Ordering::Greater) => amdgpu_isa::softfloat::Ordering::Greater,
        };
        assert_eq!(sf::compare(a, b, Denormals::Keep), want);
        if !(x == 0.0 && y == 0.0) {
            assert!(same(sf::min_max(a, b, true, Denormals::Keep), x.min(y)), "min({a:#x}, {b:#x})");
            assert!(same(sf::min_max(a, b, false, Denormals::Keep), x.max(y)), "max({a:#x}, {b:#x})");
        }
        let n = (rng.next() % 400) as i32 - 200;
        let want = if x.is_finite() && x != 0.0 { x * 2f64.powi(n) } else { x };
        // x * 2^n is exact unless it under/overflows, where powi's product rounds once too
        assert!(same(sf::ldexp(a, n, Denormals::Keep), want), "ldexp({a:#x}, {n})");
    }
}

#[test]
fn div_sqrt_floor_match_host() {
    let mut rng = Rng(0x3141);
    let sp = specials();
    let pairs: Vec<(u64, u64)> = sp.iter().flat_map(|&a| sp.iter().map(move |&b| (a, b))).chain((0..RANDOM_CASES).map(|_| (rng.f64_bits(), rng.f64_bits()))).collect();
    for (a, b) in pairs {
        let (x, y) = (f64::from_bits(a), f64::from_bits(b));
        assert!(same(sf::div(a, b, Denormals::Keep), x / y), "div({a:#x}, {b:#x})");
        assert!(same(sf::sqrt(a, Denormals::Keep), x.sqrt()), "sqrt({a:#x})");
        assert!(same(sf::floor(b, Denormals::Keep), y.floor()), "floor({b:#x})");
    }
}

#[test]
fn integral_rounding_fract_class_match_host() {
    use amdgpu_isa::softfloat::Integral;
    let mut rng = Rng(0x2718);
    for a in specials().into_iter().chain((0..RANDOM_CASES).map(|_| rng.f64_bits())) {
        let x = f64::from_bits(a);
        assert!(same(sf::round_integral(a, Integral::Floor, Denormals::Keep), x.floor()), "floor({a:#x})");
        assert!(same(sf::round_integral(a, Integral::Ceil, Denormals::Keep), x.ceil()), "ceil({a:#x})");
        assert!(same(sf::round_integral(a, Integral::Trunc, Denormals::Keep), x.trunc()), "trunc({a:#x})");
        assert!(same(sf::round_integral(a, Integral::NearestEven, Denormals::Keep), x.round_ties_even()), "rndne({a:#x})");
        if x.is_finite() {
            let fr = x - x.floor();
            let want = if fr == 1.0 { f64::from_bits(0x3fef_ffff_ffff_ffff) } else { fr };
            assert!(same(sf::fract(a, Denormals::Keep), want), "fract({a:#x})");
        }
        let class = match x.classify() {
            std::num::FpCategory::Nan => if a >> 51 & 1 == 1 { 1 } else { 0 },
            std::num::FpCategory::Infinite => if x < 0.0 { 2 } else { 9 },
            std::num::FpCategory::Normal => if x < 0.0 { 3 } else { 8 },
            std::num::FpCategory::Subnormal => if x < 0.0 { 4 } else { 7 },
            std::num::FpCategory::Zero => if x.is_sign_negative() { 5 } else { 6 },
        };
        assert_eq!(sf::class(a), class, "class({a:#x})");
    }
}
