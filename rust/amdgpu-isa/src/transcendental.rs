// SPDX-License-Identifier: GPL-2.0 OR MIT
//! The f32 transcendental VALU ops, in integer soft-float: `v_log_f32`
//! (log2), `v_exp_f32` (2^x), `v_sin_f32` and `v_cos_f32` (of the argument
//! in revolutions, sin(2 pi x)).
//!
//! Each is evaluated in binary64 ([`super::softfloat64`]) after an exact
//! argument reduction, with a series whose truncation error is below 2^-45
//! relative, then rounded once to binary32: within 1 ULP of the exact
//! value, what the ISA manual allows (the hardware is less accurate: about
//! 1 ULP for log/exp, 2^-20 absolute for sin/cos).
//!
//! Special values follow the MI200 ISA manual as gem5's Vega model reads
//! it: log2 of a negative number is NaN, of +-0 -inf; 2^x of -inf is 0;
//! sin/cos of an argument outside [-256, 256] revolutions (infinities
//! included) is 0.  The hardware flushes denormals in these ops (LLVM 15
//! relies on it: it scales denormal arguments itself where it must): a
//! denormal argument of log2 is read as 0, a denormal result of 2^x is +0.

use super::softfloat::{self as sf, Denormals, Integral};
use super::softfloat64 as sf64;

const KEEP: Denormals = Denormals::Keep;
const ONE: u64 = 0x3ff0_0000_0000_0000;

fn add(a: u64, b: u64) -> u64 {
    sf64::add(a, b, KEEP)
}
fn mul(a: u64, b: u64) -> u64 {
    sf64::mul(a, b, KEEP)
}
/// Horner evaluation of sum(c[k] x^k).
fn poly(coefficients: &[u64], x: u64) -> u64 {
    let mut r = 0u64;
    for &c in coefficients.iter().rev() {
        r = add(mul(r, x), c);
    }
    r
}

/// 1/(2k+1), k = 0..10: atanh(s)/s = sum z^k/(2k+1), z = s^2.
const ATANH: [u64; 11] = [
    0x3ff0000000000000,
    0x3fd5555555555555,
    0x3fc999999999999a,
    0x3fc2492492492492,
    0x3fbc71c71c71c71c,
    0x3fb745d1745d1746,
    0x3fb3b13b13b13b14,
    0x3fb1111111111111,
    0x3fae1e1e1e1e1e1e,
    0x3faaf286bca1af28,
    0x3fa8618618618618,
];
/// 2/ln(2).
const TWO_OVER_LN2: u64 = 0x40071547652b82fe;
/// ln(2).
const LN2: u64 = 0x3fe62e42fefa39ef;
/// 1/k!, k = 0..14.
const EXP: [u64; 15] = [
    0x3ff0000000000000,
    0x3ff0000000000000,
    0x3fe0000000000000,
    0x3fc5555555555555,
    0x3fa5555555555555,
    0x3f81111111111111,
    0x3f56c16c16c16c17,
    0x3f2a01a01a01a01a,
    0x3efa01a01a01a01a,
    0x3ec71de3a556c734,
    0x3e927e4fb7789f5c,
    0x3e5ae64567f544e4,
    0x3e21eed8eff8d898,
    0x3de6124613a86d09,
    0x3da93974a8c07c9d,
];
/// 2 pi.
const TWO_PI: u64 = 0x401921fb54442d18;
/// (-1)^k/(2k+1)!: sin(t)/t = sum of these times (t^2)^k.
const SIN: [u64; 10] = [
    0x3ff0000000000000,
    0xbfc5555555555555,
    0x3f81111111111111,
    0xbf2a01a01a01a01a,
    0x3ec71de3a556c734,
    0xbe5ae64567f544e4,
    0x3de6124613a86d09,
    0xbd6ae7f3e733b81f,
    0x3ce952c77030ad4a,
    0xbc62f49b46814157,
];
/// (-1)^k/(2k)!: cos(t) = sum of these times (t^2)^k.
const COS: [u64; 10] = [
    0x3ff0000000000000,
    0xbfe0000000000000,
    0x3fa5555555555555,
    0xbf56c16c16c16c17,
    0x3efa01a01a01a01a,
    0xbe927e4fb7789f5c,
    0x3e21eed8eff8d898,
    0xbda93974a8c07c9d,
    0x3d2ae7f3e733b81f,
    0xbca6827863b97d97,
];

fn quiet(a: u32) -> u32 {
    a | 0x0040_0000
}

/// `v_log_f32`: log2(a).
pub fn log2(a: u32) -> u32 {
    if sf::is_nan(a) {
        return quiet(a);
    }
    let field = sf::exponent_field(a);
    if field == 0 {
        // +-0 and (flushed) denormals
        return 0xff80_0000;
    }
    if a >> 31 == 1 {
        return sf::QUIET_NAN;
    }
    if a == 0x7f80_0000 {
        return a;
    }
    // a = m 2^e, m in [sqrt(1/2), sqrt(2)).
    let mut e = field - 127;
    let mut m = a & 0x007f_ffff | 0x3f80_0000;
    if m > 0x3fb5_04f3 {
        m -= 0x0080_0000;
        e += 1;
    }
    let m = sf64::from_f32(m);
    // log2(m) = 2/ln2 atanh(s), s = (m - 1)/(m + 1), |s| < 0.172.
    let s = sf64::div(add(m, ONE | 1 << 63), add(m, ONE), KEEP);
    let l = mul(mul(s, poly(&ATANH, mul(s, s))), TWO_OVER_LN2);
    sf64::to_f32(add(sf64::from_i32(e), l), KEEP)
}

/// `v_exp_f32`: 2^a.
pub fn exp2(a: u32) -> u32 {
    if sf::is_nan(a) {
        return quiet(a);
    }
    if a == 0xff80_0000 {
        return 0;
    }
    // 2^128 and above overflow; below 2^-150 is 0 (and below 2^-126 is
    // flushed anyway).
    if a >> 31 == 0 && a >= 0x4300_0000 {
        return 0x7f80_0000;
    }
    if a >> 31 == 1 && a & 0x7fff_ffff >= 0x4300_0000 {
        return 0;
    }
    let x = sf64::from_f32(a);
    // x = n + f, |f| <= 1/2; 2^f = e^(f ln2) by its series.
    let n = sf64::round_integral(x, Integral::NearestEven, KEEP);
    let f = add(x, n ^ 1 << 63);
    let r = sf64::ldexp(poly(&EXP, mul(f, LN2)), sf64::to_i32(n), KEEP);
    let r = sf64::to_f32(r, KEEP);
    if sf::exponent_field(r) == 0 {
        0
    } else {
        r
    }
}

/// sin (false) or cos (true) of 2 pi a.
fn sin_cos_revolutions(a: u32, cos: bool) -> u32 {
    if sf::is_nan(a) {
        return quiet(a);
    }
    if a & 0x7fff_ffff > 0x4380_0000 {
        return 0;
    }
    // a = q/4 + t exactly, |t| <= 1/8; sin(2 pi a) = sin(2 pi t + q pi/2).
    let x = sf64::from_f32(a);
    let q4 = sf64::round_integral(sf64::ldexp(x, 2, KEEP), Integral::NearestEven, KEEP);
    // (q4 = 0: t is a itself, so that sin keeps the sign of a zero.)
    let t = if q4 << 1 == 0 { x } else { add(x, sf64::ldexp(q4, -2, KEEP) ^ 1 << 63) };
    let q = (sf64::to_i32(q4) as u32).wrapping_add(cos as u32) & 3;
    let theta = mul(t, TWO_PI);
    let z = mul(theta, theta);
    let r = match q {
        0 => mul(theta, poly(&SIN, z)),
        1 => poly(&COS, z),
        2 => mul(theta, poly(&SIN, z)) ^ 1 << 63,
        _ => poly(&COS, z) ^ 1 << 63,
    };
    sf64::to_f32(r, KEEP)
}

/// `v_sin_f32`: sin(2 pi a).
pub fn sin_revolutions(a: u32) -> u32 {
    sin_cos_revolutions(a, false)
}

/// `v_cos_f32`: cos(2 pi a).
pub fn cos_revolutions(a: u32) -> u32 {
    sin_cos_revolutions(a, true)
}
