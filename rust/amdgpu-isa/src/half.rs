// SPDX-License-Identifier: GPL-2.0 OR MIT
//! IEEE binary16 arithmetic in integers, for the f16 VALU ops (`v_mul_f16`,
//! `v_fma_f16`, `v_sqrt_f16`, `v_pk_fma_f16`, ...), round to nearest even.
//!
//! Multiplication goes through binary32, where the product of two binary16
//! values is exact (11 x 11 significand bits, exponents within range), so
//! it is rounded once.  Addition and square root go through binary32 too:
//! rounding twice, first to 24 bits then to 11, gives the correctly rounded
//! result when 24 >= 2 x 11 + 2 (Figueroa, "When is double rounding
//! innocuous?", 1995).  The fused multiply-add is computed exactly in
//! integers (every binary16 value is an integer times 2^-24, a product an
//! integer times 2^-48 below 2^32) and rounded once.
//!
//! Denormals: with [`Denormals::Flush`] denormal operands read as zero and
//! denormal results are written as zero of the same sign (MODE's
//! FP_DENORM for f16/f64).

use super::softfloat::{self as sf, Denormals};

pub const QUIET_NAN: u16 = 0x7e00;
const INF: u16 = 0x7c00;

pub const fn is_nan(a: u16) -> bool {
    a & 0x7fff > INF
}

fn is_denormal(a: u16) -> bool {
    a & INF == 0 && a & 0x3ff != 0
}

fn flush_in(a: u16, den: Denormals) -> u16 {
    if den == Denormals::Flush && is_denormal(a) {
        a & 0x8000
    } else {
        a
    }
}

fn flush_out(a: u16, den: Denormals) -> u16 {
    flush_in(a, den)
}

fn quiet(a: u16) -> u16 {
    a | 0x0200
}

/// a * b.
pub fn mul(a: u16, b: u16, den: Denormals) -> u16 {
    let (a, b) = (flush_in(a, den), flush_in(b, den));
    let p = sf::mul(sf::f16_to_f32(a), sf::f16_to_f32(b), Denormals::Keep);
    flush_out(sf::f32_to_f16(p), den)
}

/// a + b.
pub fn add(a: u16, b: u16, den: Denormals) -> u16 {
    let (a, b) = (flush_in(a, den), flush_in(b, den));
    let s = sf::add(sf::f16_to_f32(a), sf::f16_to_f32(b), Denormals::Keep);
    flush_out(sf::f32_to_f16(s), den)
}

/// sqrt(a).
pub fn sqrt(a: u16, den: Denormals) -> u16 {
    let a = flush_in(a, den);
    flush_out(sf::f32_to_f16(sf::sqrt(sf::f16_to_f32(a), Denormals::Keep)), den)
}

/// A finite binary16 value as (negative, integer significand, exponent):
/// a = (-1)^negative * m * 2^e, with e >= -24.
fn unpack(a: u16) -> (bool, u32, i32) {
    let field = ((a >> 10) & 0x1f) as i32;
    let frac = (a & 0x3ff) as u32;
    if field == 0 {
        (a >> 15 == 1, frac, -24)
    } else {
        (a >> 15 == 1, frac | 0x400, field - 25)
    }
}

/// Rounds (-1)^negative * mag * 2^exp to binary16, to nearest even.
fn round_pack(negative: bool, mag: u128, exp: i32) -> u16 {
    let sign = if negative { 0x8000 } else { 0 };
    if mag == 0 {
        return sign;
    }
    let msb = 127 - mag.leading_zeros() as i32 + exp;
    // The quantum: 2^(msb - 10) for normals, 2^-24 for denormals.
    let q = (msb - 10).max(-24);
    let shift = q - exp;
    let mut r: u128 = if shift <= 0 {
        mag << (-shift).min(127) as u32
    } else if shift >= 127 {
        0
    } else {
        let kept = mag >> shift as u32;
        let rest = mag & ((1u128 << shift as u32) - 1);
        let half = 1u128 << (shift as u32 - 1);
        if rest > half || (rest == half && kept & 1 == 1) {
            kept + 1
        } else {
            kept
        }
    };
    let mut q = q;
    if r == 2048 {
        r = 1024;
        q += 1;
    }
    // Biased exponent q + 25 for r in [1024, 2047]; bits = (q + 24) << 10 + r
    // covers normals and denormals (q = -24, r < 1024) alike.
    if q + 25 >= 31 {
        return sign | INF;
    }
    sign | (((q + 24) as u32) << 10) as u16 + r as u16
}

/// fma(a, b, c) = a * b + c, rounded once.
pub fn fma(a: u16, b: u16, c: u16, den: Denormals) -> u16 {
    let (a, b, c) = (flush_in(a, den), flush_in(b, den), flush_in(c, den));
    if is_nan(a) || is_nan(b) || is_nan(c) {
        return quiet(if is_nan(a) {
            a
        } else if is_nan(b) {
            b
        } else {
            c
        });
    }
    let product_negative = (a ^ b) >> 15 == 1;
    let (a_inf, b_inf, c_inf) = (a & 0x7fff == INF, b & 0x7fff == INF, c & 0x7fff == INF);
    let (a_zero, b_zero) = (a & 0x7fff == 0, b & 0x7fff == 0);
    if a_inf || b_inf {
        if a_zero || b_zero || (c_inf && (c >> 15 == 1) != product_negative) {
            return QUIET_NAN;
        }
        return if product_negative { 0x8000 | INF } else { INF };
    }
    if c_inf {
        return c;
    }
    let (_, ma, ea) = unpack(a);
    let (_, mb, eb) = unpack(b);
    let (c_negative, mc, ec) = unpack(c);
    // Both terms as integers times 2^-48.
    let p = ((ma * mb) as i128) << (ea + eb + 48) as u32;
    let p = if product_negative { -p } else { p };
    let cv = (mc as i128) << (ec + 48) as u32;
    let cv = if c_negative { -cv } else { cv };
    let sum = p + cv;
    if sum == 0 {
        // An exact zero is +0 unless both terms are -0.
        let negative = p == 0 && cv == 0 && product_negative && c_negative;
        return if negative { 0x8000 } else { 0 };
    }
    flush_out(round_pack(sum < 0, sum.unsigned_abs(), -48), den)
}

/// The bit of v_cmp_class_f16's mask `v` belongs to (as for f32: 0 sNaN,
/// 1 qNaN, 2 -inf, 3 -normal, 4 -denormal, 5 -0, 6 +0, 7 +denormal,
/// 8 +normal, 9 +inf).
pub fn class(v: u16) -> u32 {
    let negative = v >> 15 == 1;
    let field = (v >> 10) & 0x1f;
    let frac = v & 0x3ff;
    let by_sign = |neg: u32, pos: u32| if negative { neg } else { pos };
    match (field, frac) {
        (0x1f, 0) => by_sign(2, 9),
        (0x1f, f) => {
            if f & 0x200 != 0 {
                1
            } else {
                0
            }
        }
        (0, 0) => by_sign(5, 6),
        (0, _) => by_sign(4, 7),
        _ => by_sign(3, 8),
    }
}

/// Clamp to [0, 1] (VOP3 clamp on an f16 result); NaN becomes 0.
pub fn clamp(v: u16) -> u16 {
    if is_nan(v) || v >> 15 == 1 {
        0
    } else if v > 0x3c00 {
        0x3c00
    } else {
        v
    }
}

/// The f16 inline constants 240..248 (0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 4.0,
/// -4.0, 1/(2 pi)).
pub const INLINE: [u16; 9] = [0x3800, 0xb800, 0x3c00, 0xbc00, 0x4000, 0xc000, 0x4400, 0xc400, 0x3118];
