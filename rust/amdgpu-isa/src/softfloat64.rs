// SPDX-License-Identifier: GPL-2.0 OR MIT
//! IEEE 754 binary64 arithmetic in integers: the f64 counterpart of
//! [`super::softfloat`] (round to nearest even, one rounding per operation,
//! denormals kept or flushed, NaN results quiet).

use super::softfloat::Denormals;

pub const QUIET_NAN: u64 = 0x7ff8_0000_0000_0000;
const SIGN: u64 = 1 << 63;
const INF: u64 = 0x7ff0_0000_0000_0000;
const FRAC: u64 = (1 << 52) - 1;

pub const fn is_nan(a: u64) -> bool {
    a & !SIGN > INF
}
const fn is_inf(a: u64) -> bool {
    a & !SIGN == INF
}
const fn is_zero(a: u64) -> bool {
    a & !SIGN == 0
}
const fn quiet(a: u64) -> u64 {
    a | 1 << 51
}

fn flush(a: u64, denormals: Denormals) -> u64 {
    if denormals == Denormals::Flush && a & INF == 0 {
        a & SIGN
    } else {
        a
    }
}

fn propagate_nan(a: u64, b: u64) -> u64 {
    if is_nan(a) {
        quiet(a)
    } else {
        quiet(b)
    }
}

/// (exponent, significand) with value = significand * 2^exponent and the
/// significand in [2^52, 2^53), for finite non-zero `a`.
fn unpack(a: u64) -> (i32, u64) {
    let exp = ((a >> 52) & 0x7ff) as i32;
    let frac = a & FRAC;
    if exp == 0 {
        let shift = frac.leading_zeros() as i32 - 11;
        (1 - 1023 - 52 - shift, frac << shift)
    } else {
        (exp - 1023 - 52, frac | 1 << 52)
    }
}

/// Rounds sign * sig * 2^exp (sig != 0) to the nearest even binary64.
pub fn round_pack(sign: bool, exp: i32, sig: u128) -> u64 {
    let sign_bit = if sign { SIGN } else { 0 };
    let msb = 127 - sig.leading_zeros() as i32;
    let biased = msb + exp + 1023;
    let shift = if biased >= 1 { msb - 52 } else { msb - 52 + (1 - biased) };
    let mant: u128 = if shift <= 0 {
        sig << (-shift) as u32
    } else if shift >= 128 {
        0
    } else {
        let kept = sig >> shift as u32;
        let rest = sig & ((1u128 << shift as u32) - 1);
        let half = 1u128 << (shift as u32 - 1);
        if rest > half || (rest == half && kept & 1 == 1) {
            kept + 1
        } else {
            kept
        }
    };
    let bits: u128 = if biased >= 1 { (((biased - 1) as u128) << 52) + mant } else { mant };
    if bits >= INF as u128 {
        sign_bit | INF
    } else {
        sign_bit | bits as u64
    }
}

/// The exact sum of two signed terms m * 2^e (m below 2^107, both of the
/// same width so the larger exponent is the larger magnitude within a bit),
/// rounded once. Both are shifted up 20 bits and the one with the smaller
/// exponent down by the difference, lost bits jammed into bit 0: bits are
/// lost only when the exponents differ by more than 20, where no
/// cancellation can reach the rounding position.
fn add_exact(sa: bool, ea: i32, ma: u128, sb: bool, eb: i32, mb: u128) -> u64 {
    const GUARD: u32 = 20;
    let (hi_s, hi_e, hi_m, lo_s, lo_e, lo_m) = if ea >= eb { (sa, ea, ma, sb, eb, mb) } else { (sb, eb, mb, sa, ea, ma) };
    let hi = hi_m << GUARD;
    let d = (hi_e - lo_e) as u32;
    let lo_full = lo_m << GUARD;
    let lo = if d >= 128 {
        1
    } else {
        let kept = lo_full >> d;
        if kept << d != lo_full {
            kept | 1
        } else {
            kept
        }
    };
    let exp = hi_e - GUARD as i32;
    if hi_s == lo_s {
        round_pack(hi_s, exp, hi + lo)
    } else if hi > lo {
        round_pack(hi_s, exp, hi - lo)
    } else if lo > hi {
        round_pack(lo_s, exp, lo - hi)
    } else {
        0
    }
}

pub fn add(a: u64, b: u64, denormals: Denormals) -> u64 {
    let (a, b) = (flush(a, denormals), flush(b, denormals));
    if is_nan(a) || is_nan(b) {
        return propagate_nan(a, b);
    }
    if is_inf(a) || is_inf(b) {
        if is_inf(a) && is_inf(b) && (a ^ b) & SIGN != 0 {
            return QUIET_NAN;
        }
        return if is_inf(a) { a } else { b };
    }
    if is_zero(a) && is_zero(b) {
        return a & b;
    }
    if is_zero(a) {
        return b;
    }
    if is_zero(b) {
        return a;
    }
    let (ea, ma) = unpack(a);
    let (eb, mb) = unpack(b);
    flush(add_exact(a & SIGN != 0, ea, ma as u128, b & SIGN != 0, eb, mb as u128), denormals)
}

pub fn mul(a: u64, b: u64, denormals: Denormals) -> u64 {
    let (a, b) = (flush(a, denormals), flush(b, denormals));
    if is_nan(a) || is_nan(b) {
        return propagate_nan(a, b);
    }
    let sign = (a ^ b) & SIGN;
    if is_inf(a) || is_inf(b) {
        if is_zero(a) || is_zero(b) {
            return QUIET_NAN;
        }
        return sign | INF;
    }
    if is_zero(a) || is_zero(b) {
        return sign;
    }
    let (ea, ma) = unpack(a);
    let (eb, mb) = unpack(b);
    flush(round_pack(sign != 0, ea + eb, ma as u128 * mb as u128), denormals)
}

pub fn fma(a: u64, b: u64, c: u64, denormals: Denormals) -> u64 {
    let (a, b, c) = (flush(a, denormals), flush(b, denormals), flush(c, denormals));
    if is_nan(a) || is_nan(b) {
        return propagate_nan(a, b);
    }
    if is_nan(c) {
        return quiet(c);
    }
    let psign = (a ^ b) & SIGN;
    if is_inf(a) || is_inf(b) {
        if is_zero(a) || is_zero(b) || (is_inf(c) && c & SIGN != psign) {
            return QUIET_NAN;
        }
        return psign | INF;
    }
    if is_inf(c) {
        return c;
    }
    if is_zero(a) || is_zero(b) {
        return if is_zero(c) { psign & c } else { c };
    }
    let (ea, ma) = unpack(a);
    let (eb, mb) = unpack(b);
    let product = ma as u128 * mb as u128;
    if is_zero(c) {
        return flush(round_pack(psign != 0, ea + eb, product), denormals);
    }
    // c widened to the product's 106 bits, so that the exponents compare
    // magnitudes and a cancelling sum is never jammed.
    let (ec, mc) = unpack(c);
    flush(add_exact(psign != 0, ea + eb, product, c & SIGN != 0, ec - 53, (mc as u128) << 53), denormals)
}

/// IEEE comparison, -0 == +0.
pub fn compare(a: u64, b: u64, denormals: Denormals) -> super::softfloat::Ordering {
    use super::softfloat::Ordering;
    let (a, b) = (flush(a, denormals), flush(b, denormals));
    if is_nan(a) || is_nan(b) {
        return Ordering::Unordered;
    }
    if is_zero(a) && is_zero(b) || a == b {
        return Ordering::Equal;
    }
    let key = |x: u64| if x & SIGN != 0 { !x } else { x | SIGN };
    if key(a) < key(b) {
        Ordering::Less
    } else {
        Ordering::Greater
    }
}

/// minNum/maxNum: a NaN operand yields the other; -0 < +0.
pub fn min_max(a: u64, b: u64, want_min: bool, denormals: Denormals) -> u64 {
    let (a, b) = (flush(a, denormals), flush(b, denormals));
    if is_nan(a) {
        return if is_nan(b) { quiet(a) } else { b };
    }
    if is_nan(b) {
        return a;
    }
    let key = |x: u64| if x & SIGN != 0 { !x } else { x | SIGN };
    if (key(a) < key(b)) == want_min {
        a
    } else {
        b
    }
}

/// a * 2^n, one rounding.
pub fn ldexp(a: u64, n: i32, denormals: Denormals) -> u64 {
    let a = flush(a, denormals);
    if is_nan(a) {
        return quiet(a);
    }
    if is_zero(a) || is_inf(a) {
        return a;
    }
    let (e, m) = unpack(a);
    flush(round_pack(a & SIGN != 0, e + n.clamp(-3000, 3000), m as u128), denormals)
}

/// f32 to f64 (exact).
pub fn from_f32(a: u32) -> u64 {
    let sign = ((a as u64) & 0x8000_0000) << 32;
    let exp = (a >> 23) & 0xff;
    let frac = (a & 0x7f_ffff) as u64;
    match exp {
        0 if frac == 0 => sign,
        0 => sign | round_pack(false, -149, frac as u128),
        0xff if frac == 0 => sign | INF,
        0xff => sign | INF | 1 << 51 | frac << 29,
        _ => sign | ((exp as u64 + 1023 - 127) << 52) | frac << 29,
    }
}

/// f64 to f32, round to nearest even.
pub fn to_f32(a: u64, denormals: Denormals) -> u32 {
    let sign = ((a >> 32) & 0x8000_0000) as u32;
    if is_nan(a) {
        return sign | 0x7fc0_0000 | ((a >> 29) as u32 & 0x3f_ffff);
    }
    if is_inf(a) {
        return sign | 0x7f80_0000;
    }
    if is_zero(a) {
        return sign;
    }
    let (e, m) = unpack(a);
    let r = super::softfloat::round_pack(sign != 0, e, m as u128);
    if denormals == Denormals::Flush && r & 0x7f80_0000 == 0 {
        r & 0x8000_0000
    } else {
        r
    }
}

pub fn from_i32(v: i32) -> u64 {
    if v == 0 {
        0
    } else {
        round_pack(v < 0, 0, v.unsigned_abs() as u128)
    }
}

pub fn from_u32(v: u32) -> u64 {
    if v == 0 {
        0
    } else {
        round_pack(false, 0, v as u128)
    }
}

/// Truncating, saturating conversion to i32 (NaN gives 0).
pub fn to_i32(a: u64) -> i32 {
    if is_nan(a) {
        return 0;
    }
    let m = truncated_magnitude(a);
    if a & SIGN != 0 {
        if m >= 1 << 31 {
            i32::MIN
        } else {
            -(m as i32)
        }
    } else if m > i32::MAX as u64 {
        i32::MAX
    } else {
        m as i32
    }
}

/// Truncating, saturating conversion to u32 (NaN and negatives give 0).
pub fn to_u32(a: u64) -> u32 {
    if is_nan(a) || a & SIGN != 0 {
        return 0;
    }
    truncated_magnitude(a).min(u32::MAX as u64) as u32
}

fn truncated_magnitude(a: u64) -> u64 {
    if is_zero(a) {
        return 0;
    }
    if is_inf(a) {
        return 1 << 33;
    }
    let (e, m) = unpack(a);
    if e >= -19 {
        // |a| >= 2^33
        1 << 33
    } else if e > -64 {
        m >> (-e) as u32
    } else {
        0
    }
}

/// a / b, correctly rounded.
pub fn div(a: u64, b: u64, denormals: Denormals) -> u64 {
    let (a, b) = (flush(a, denormals), flush(b, denormals));
    if is_nan(a) || is_nan(b) {
        return propagate_nan(a, b);
    }
    let sign = (a ^ b) & SIGN;
    if is_inf(a) {
        return if is_inf(b) { QUIET_NAN } else { sign | INF };
    }
    if is_inf(b) {
        return sign;
    }
    if is_zero(b) {
        return if is_zero(a) { QUIET_NAN } else { sign | INF };
    }
    if is_zero(a) {
        return sign;
    }
    let (ea, ma) = unpack(a);
    let (eb, mb) = unpack(b);
    let (q, rem) = super::softfloat::div_wide(ma, 0, mb);
    let sticky = (rem != 0) as u128;
    flush(round_pack(sign != 0, ea - eb - 65, q << 1 | sticky), denormals)
}

/// sqrt(a), correctly rounded; negative non-zero inputs give the default NaN.
pub fn sqrt(a: u64, denormals: Denormals) -> u64 {
    let a = flush(a, denormals);
    if is_nan(a) {
        return quiet(a);
    }
    if is_zero(a) {
        return a;
    }
    if a & SIGN != 0 {
        return QUIET_NAN;
    }
    if is_inf(a) {
        return a;
    }
    let (mut e, mut m) = unpack(a);
    if e & 1 != 0 {
        m <<= 1;
        e -= 1;
    }
    // radicand (m << 64) < 2^118, root about 59 bits plus a sticky remainder
    let mut rem = (m as u128) << 64;
    let mut root: u128 = 0;
    let mut bit: u128 = 1 << 126;
    while bit > rem {
        bit >>= 2;
    }
    while bit != 0 {
        if rem >= root + bit {
            rem -= root + bit;
            root = (root >> 1) + bit;
        } else {
            root >>= 1;
        }
        bit >>= 2;
    }
    let sticky = (rem != 0) as u128;
    flush(round_pack(false, (e - 64) / 2 - 1, root << 1 | sticky), denormals)
}

/// (a * b + c) * 2^scale with one rounding (v_div_fmas_f64).
pub fn fma_scaled(a: u64, b: u64, c: u64, scale: i32, denormals: Denormals) -> u64 {
    let (a, b, c) = (flush(a, denormals), flush(b, denormals), flush(c, denormals));
    let unscaled = fma(a, b, c, denormals);
    if is_nan(unscaled) || is_inf(unscaled) || is_inf(a) || is_inf(b) || is_inf(c) {
        return unscaled;
    }
    let psign = (a ^ b) & SIGN;
    let product_zero = is_zero(a) || is_zero(b);
    if product_zero && is_zero(c) {
        return unscaled;
    }
    let r = if product_zero {
        let (ec, mc) = unpack(c);
        round_pack(c & SIGN != 0, ec + scale, mc as u128)
    } else {
        let (ea, ma) = unpack(a);
        let (eb, mb) = unpack(b);
        let product = ma as u128 * mb as u128;
        if is_zero(c) {
            round_pack(psign != 0, ea + eb + scale, product)
        } else {
            let (ec, mc) = unpack(c);
            add_exact(psign != 0, ea + eb + scale, product, c & SIGN != 0, ec - 53 + scale, (mc as u128) << 53)
        }
    };
    flush(r, denormals)
}

/// The biased exponent field.
pub const fn exponent_field(a: u64) -> i32 {
    ((a >> 52) & 0x7ff) as i32
}

/// a rounded toward -infinity to an integral value (v_floor_f64).
pub fn floor(a: u64, denormals: Denormals) -> u64 {
    round_integral(a, super::softfloat::Integral::Floor, denormals)
}

/// a rounded to an integral value (v_floor/v_ceil/v_trunc/v_rndne_f64).
pub fn round_integral(a: u64, mode: super::softfloat::Integral, denormals: Denormals) -> u64 {
    use super::softfloat::Integral;
    let a = flush(a, denormals);
    if is_nan(a) {
        return quiet(a);
    }
    let exp = exponent_field(a);
    if exp >= 1075 || is_zero(a) {
        return a;
    }
    let negative = a & SIGN != 0;
    if exp < 1023 {
        let up = match mode {
            Integral::Floor => negative,
            Integral::Ceil => !negative,
            Integral::Trunc => false,
            Integral::NearestEven => exp == 1022 && a & FRAC != 0,
        };
        return if up { (a & SIGN) | 0x3ff0_0000_0000_0000 } else { a & SIGN };
    }
    let frac_bits = (1075 - exp) as u32;
    let mask = (1u64 << frac_bits) - 1;
    let frac = a & mask;
    if frac == 0 {
        return a;
    }
    let truncated = a & !mask;
    let half = 1u64 << (frac_bits - 1);
    let up = match mode {
        Integral::Floor => negative,
        Integral::Ceil => !negative,
        Integral::Trunc => false,
        Integral::NearestEven => frac > half || (frac == half && truncated & (1 << frac_bits) != 0),
    };
    if up {
        truncated + (1 << frac_bits)
    } else {
        truncated
    }
}

/// a - floor(a), below 1.0 (v_fract_f64); inf gives NaN.
pub fn fract(a: u64, denormals: Denormals) -> u64 {
    let a = flush(a, denormals);
    if is_nan(a) {
        return quiet(a);
    }
    if is_inf(a) {
        return QUIET_NAN;
    }
    let r = add(a, floor(a, denormals) ^ SIGN, denormals);
    if r == 0x3ff0_0000_0000_0000 {
        0x3fef_ffff_ffff_ffff
    } else {
        r
    }
}

/// The v_cmp_class bit of `a`: 0 sNaN, 1 qNaN, 2 -inf, 3 -normal,
/// 4 -denormal, 5 -0, 6 +0, 7 +denormal, 8 +normal, 9 +inf.
pub fn class(a: u64) -> u32 {
    let negative = a & SIGN != 0;
    let pick = |neg: u32, pos: u32| if negative { neg } else { pos };
    match (exponent_field(a), a & FRAC) {
        (0x7ff, 0) => pick(2, 9),
        (0x7ff, f) => (f >> 51 & 1) as u32,
        (0, 0) => pick(5, 6),
        (0, _) => pick(4, 7),
        _ => pick(3, 8),
    }
}
