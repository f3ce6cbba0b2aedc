// SPDX-License-Identifier: GPL-2.0 OR MIT
//! IEEE 754 binary32 arithmetic in integers (the kernel has no FPU).
//!
//! Every operation rounds once, to nearest even, as the VALU does with
//! MODE.FP_ROUND = 0 (the only mode HIP code objects set). Denormals are
//! kept or flushed (inputs and results, sign kept) as MODE.FP_DENORM says.
//! A NaN result is the first NaN operand made quiet, or the default NaN
//! 0x7fc00000 for invalid operations.

/// How f32 denormals are treated (MODE.FP_DENORM[1:0] for f32).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Denormals {
    /// Inputs and results that are denormal become zero of the same sign.
    Flush,
    /// IEEE gradual underflow.
    Keep,
}

pub const QUIET_NAN: u32 = 0x7fc0_0000;
const SIGN: u32 = 0x8000_0000;
const INF: u32 = 0x7f80_0000;

pub const fn is_nan(a: u32) -> bool {
    a & !SIGN > INF
}
const fn is_inf(a: u32) -> bool {
    a & !SIGN == INF
}
const fn is_zero(a: u32) -> bool {
    a & !SIGN == 0
}
const fn quiet(a: u32) -> u32 {
    a | 0x0040_0000
}

fn flush_input(a: u32, denormals: Denormals) -> u32 {
    if denormals == Denormals::Flush && a & INF == 0 {
        a & SIGN
    } else {
        a
    }
}

fn flush_output(a: u32, denormals: Denormals) -> u32 {
    flush_input(a, denormals)
}

/// Splits a finite non-zero value into (exponent, significand) with the
/// value = significand * 2^exponent and significand in [2^23, 2^24).
fn unpack(a: u32) -> (i32, u32) {
    let exp = ((a >> 23) & 0xff) as i32;
    let frac = a & 0x007f_ffff;
    if exp == 0 {
        let shift = frac.leading_zeros() as i32 - 8;
        (1 - 127 - 23 - shift, frac << shift)
    } else {
        (exp - 127 - 23, frac | 0x0080_0000)
    }
}

/// Rounds sign * sig * 2^exp (sig != 0) to the nearest even binary32.
pub fn round_pack(sign: bool, exp: i32, sig: u128) -> u32 {
    let sign_bit = if sign { SIGN } else { 0 };
    let msb = 127 - sig.leading_zeros() as i32;
    // Biased exponent of the leading bit.
    let biased = msb + exp + 127;
    // Number of low bits of sig below the result's last kept bit.
    let shift = if biased >= 1 { msb - 23 } else { msb - 23 + (1 - biased) };
    let mant: u128 = if shift <= 0 {
        sig << (-shift) as u32
    } else if shift >= 128 {
        // Entirely below half the smallest denormal.
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
    let bits: u128 = if biased >= 1 { (((biased - 1) as u128) << 23) + mant } else { mant };
    if bits >= INF as u128 {
        sign_bit | INF
    } else {
        sign_bit | bits as u32
    }
}

fn propagate_nan(a: u32, b: u32) -> u32 {
    if is_nan(a) {
        quiet(a)
    } else {
        quiet(b)
    }
}

/// a + b.
pub fn add(a: u32, b: u32, denormals: Denormals) -> u32 {
    let (a, b) = (flush_input(a, denormals), flush_input(b, denormals));
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
        return flush_output(b, denormals);
    }
    if is_zero(b) {
        return flush_output(a, denormals);
    }
    let (ea, ma) = unpack(a);
    let (eb, mb) = unpack(b);
    let r = add_exact(a & SIGN != 0, ea, ma as u128, b & SIGN != 0, eb, mb as u128);
    flush_output(r, denormals)
}

/// a - b.
pub fn sub(a: u32, b: u32, denormals: Denormals) -> u32 {
    if is_nan(b) {
        return add(a, b, denormals);
    }
    add(a, b ^ SIGN, denormals)
}

/// Rounds the exact sum of two signed terms sign * m * 2^e, m non-zero and
/// below 2^60.
fn add_exact(sa: bool, ea: i32, ma: u128, sb: bool, eb: i32, mb: u128) -> u32 {
    // Both terms shifted up 64 bits; the one with the smaller exponent then
    // shifted down by the difference with its lost bits jammed into bit 0.
    // Cancellation only happens when nothing was lost, so one rounding of
    // the jammed sum is the correctly rounded exact sum.
    let (hi_s, hi_e, hi_m, lo_s, lo_e, lo_m) = if ea >= eb { (sa, ea, ma, sb, eb, mb) } else { (sb, eb, mb, sa, ea, ma) };
    let hi = hi_m << 64;
    let d = (hi_e - lo_e) as u32;
    let lo_full = lo_m << 64;
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
    let exp = hi_e - 64;
    if hi_s == lo_s {
        round_pack(hi_s, exp, hi + lo)
    } else if hi > lo {
        round_pack(hi_s, exp, hi - lo)
    } else if lo > hi {
        round_pack(lo_s, exp, lo - hi)
    } else {
        0 // x - x = +0 when rounding to nearest
    }
}

/// a * b.
pub fn mul(a: u32, b: u32, denormals: Denormals) -> u32 {
    let (a, b) = (flush_input(a, denormals), flush_input(b, denormals));
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
    flush_output(round_pack(sign != 0, ea + eb, ma as u128 * mb as u128), denormals)
}

/// a * b + c with a single rounding.
pub fn fma(a: u32, b: u32, c: u32, denormals: Denormals) -> u32 {
    let (a, b, c) = (flush_input(a, denormals), flush_input(b, denormals), flush_input(c, denormals));
    if is_nan(a) || is_nan(b) || is_nan(c) {
        if is_nan(a) || is_nan(b) {
            return propagate_nan(a, b);
        }
        return quiet(c);
    }
    let psign = (a ^ b) & SIGN;
    if is_inf(a) || is_inf(b) {
        if is_zero(a) || is_zero(b) {
            return QUIET_NAN;
        }
        if is_inf(c) && (c & SIGN) != psign {
            return QUIET_NAN;
        }
        return psign | INF;
    }
    if is_inf(c) {
        return c;
    }
    if is_zero(a) || is_zero(b) {
        if is_zero(c) {
            return psign & c;
        }
        return flush_output(c, denormals);
    }
    let (ea, ma) = unpack(a);
    let (eb, mb) = unpack(b);
    let product = ma as u128 * mb as u128;
    if is_zero(c) {
        return flush_output(round_pack(psign != 0, ea + eb, product), denormals);
    }
    let (ec, mc) = unpack(c);
    flush_output(add_exact(psign != 0, ea + eb, product, c & SIGN != 0, ec, mc as u128), denormals)
}

/// IEEE minNum/maxNum as the VALU does with IEEE mode off (a NaN operand
/// yields the other operand); -0 < +0.
pub fn min(a: u32, b: u32, denormals: Denormals) -> u32 {
    select_min_max(a, b, denormals, true)
}

pub fn max(a: u32, b: u32, denormals: Denormals) -> u32 {
    select_min_max(a, b, denormals, false)
}

fn select_min_max(a: u32, b: u32, denormals: Denormals, want_min: bool) -> u32 {
    let (a, b) = (flush_input(a, denormals), flush_input(b, denormals));
    if is_nan(a) {
        return if is_nan(b) { quiet(a) } else { b };
    }
    if is_nan(b) {
        return a;
    }
    let a_less = less_total(a, b);
    if a_less == want_min {
        a
    } else {
        b
    }
}

/// a < b for non-NaN values, with -0 < +0.
fn less_total(a: u32, b: u32) -> bool {
    let key = |x: u32| if x & SIGN != 0 { !x } else { x | SIGN };
    key(a) < key(b)
}

/// IEEE comparison result of two values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ordering {
    Less,
    Equal,
    Greater,
    Unordered,
}

pub fn compare(a: u32, b: u32, denormals: Denormals) -> Ordering {
    let (a, b) = (flush_input(a, denormals), flush_input(b, denormals));
    if is_nan(a) || is_nan(b) {
        return Ordering::Unordered;
    }
    if is_zero(a) && is_zero(b) || a == b {
        return Ordering::Equal;
    }
    if less_total(a, b) {
        Ordering::Less
    } else {
        Ordering::Greater
    }
}

/// Signed 32-bit integer to f32.
pub fn from_i32(v: i32) -> u32 {
    if v == 0 {
        return 0;
    }
    round_pack(v < 0, 0, v.unsigned_abs() as u128)
}

/// Unsigned 32-bit integer to f32.
pub fn from_u32(v: u32) -> u32 {
    if v == 0 {
        return 0;
    }
    round_pack(false, 0, v as u128)
}

/// f32 to signed 32-bit integer, truncating, saturating; NaN gives 0.
pub fn to_i32(a: u32, denormals: Denormals) -> i32 {
    let a = flush_input(a, denormals);
    if is_nan(a) {
        return 0;
    }
    let negative = a & SIGN != 0;
    let magnitude = truncated_magnitude(a);
    if negative {
        if magnitude >= 1 << 31 {
            i32::MIN
        } else {
            -(magnitude as i32)
        }
    } else if magnitude > i32::MAX as u64 {
        i32::MAX
    } else {
        magnitude as i32
    }
}

/// f32 to unsigned 32-bit integer, truncating, saturating; NaN and
/// negatives give 0.
pub fn to_u32(a: u32, denormals: Denormals) -> u32 {
    let a = flush_input(a, denormals);
    if is_nan(a) || a & SIGN != 0 {
        return 0;
    }
    let magnitude = truncated_magnitude(a);
    if magnitude > u32::MAX as u64 {
        u32::MAX
    } else {
        magnitude as u32
    }
}

/// |a| truncated toward zero, saturated at 2^33.
fn truncated_magnitude(a: u32) -> u64 {
    if is_zero(a) || is_inf(a) {
        return if is_inf(a) { 1 << 33 } else { 0 };
    }
    let (e, m) = unpack(a);
    if e >= 10 {
        1 << 33
    } else if e >= 0 {
        (m as u64) << e
    } else if e > -32 {
        (m >> (-e) as u32) as u64
    } else {
        0
    }
}

/// a / b, correctly rounded.
pub fn div(a: u32, b: u32, denormals: Denormals) -> u32 {
    let (a, b) = (flush_input(a, denormals), flush_input(b, denormals));
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
    // (ma << 64) / mb has at least 41 significant bits; the remainder is
    // jammed into bit 0 so one rounding is exact.
    let (q, rem) = div_wide(ma as u64, 0, mb as u64);
    let sticky = (rem != 0) as u128;
    flush_output(round_pack(sign != 0, ea - eb - 65, q << 1 | sticky), denormals)
}

/// sqrt(a), correctly rounded; negative non-zero inputs give the default NaN.
pub fn sqrt(a: u32, denormals: Denormals) -> u32 {
    let a = flush_input(a, denormals);
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
    // value = (m << 38) * 2^(e - 38) with e - 38 even; a 32-bit root of the
    // up-to-63-bit radicand plus a sticky remainder rounds exactly.
    let mut rem = (m as u64) << 38;
    let mut root: u64 = 0;
    let mut bit: u64 = 1 << 62;
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
    flush_output(round_pack(false, (e - 38) / 2 - 1, (root as u128) << 1 | sticky), denormals)
}

/// (a * b + c) * 2^scale with one rounding (v_div_fmas).
pub fn fma_scaled(a: u32, b: u32, c: u32, scale: i32, denormals: Denormals) -> u32 {
    let (a, b, c) = (flush_input(a, denormals), flush_input(b, denormals), flush_input(c, denormals));
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
            add_exact(psign != 0, ea + eb + scale, product, c & SIGN != 0, ec + scale, mc as u128)
        }
    };
    flush_output(r, denormals)
}

/// a * 2^n (v_ldexp_f32), one rounding.
pub fn ldexp(a: u32, n: i32, denormals: Denormals) -> u32 {
    let a = flush_input(a, denormals);
    if is_nan(a) {
        return quiet(a);
    }
    if is_zero(a) || is_inf(a) {
        return a;
    }
    let (e, m) = unpack(a);
    let n = n.clamp(-400, 400);
    flush_output(round_pack(a & SIGN != 0, e + n, m as u128), denormals)
}

/// The biased exponent field.
pub const fn exponent_field(a: u32) -> i32 {
    ((a >> 23) & 0xff) as i32
}

/// Rounding of a finite value to an integral value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Integral {
    Floor,
    Ceil,
    Trunc,
    NearestEven,
}

/// a rounded to an integral value (v_floor/v_ceil/v_trunc/v_rndne).
pub fn round_integral(a: u32, mode: Integral, denormals: Denormals) -> u32 {
    let a = flush_input(a, denormals);
    if is_nan(a) {
        return quiet(a);
    }
    let exp = exponent_field(a);
    if exp >= 150 || is_zero(a) {
        return a; // already integral (or inf)
    }
    let negative = a & SIGN != 0;
    if exp < 127 {
        // |a| < 1
        let up = match mode {
            Integral::Floor => negative,
            Integral::Ceil => !negative,
            Integral::Trunc => false,
            Integral::NearestEven => exp == 126 && a & 0x7f_ffff != 0,
        };
        return if up { (a & SIGN) | 0x3f80_0000 } else { a & SIGN };
    }
    let frac_bits = (150 - exp) as u32;
    let mask = (1u32 << frac_bits) - 1;
    let frac = a & mask;
    if frac == 0 {
        return a;
    }
    let truncated = a & !mask;
    let half = 1u32 << (frac_bits - 1);
    let up = match mode {
        Integral::Floor => negative,
        Integral::Ceil => !negative,
        Integral::Trunc => false,
        Integral::NearestEven => frac > half || (frac == half && truncated & (1 << frac_bits) != 0),
    };
    // Adding one unit of the integer part to the magnitude carries into
    // the exponent correctly.
    if up {
        truncated + (1 << frac_bits)
    } else {
        truncated
    }
}

/// a - floor(a), below 1.0 (v_fract_f32); inf gives NaN.
pub fn fract(a: u32, denormals: Denormals) -> u32 {
    let a = flush_input(a, denormals);
    if is_nan(a) {
        return quiet(a);
    }
    if is_inf(a) {
        return QUIET_NAN;
    }
    let r = sub(a, round_integral(a, Integral::Floor, denormals), denormals);
    // min(r, 0x1.fffffep-1): a tiny negative a would round to 1.0
    if r == 0x3f80_0000 {
        0x3f7f_ffff
    } else {
        r
    }
}

/// IEEE binary16 to binary32 (exact).
pub fn f16_to_f32(h: u16) -> u32 {
    let sign = ((h as u32) & 0x8000) << 16;
    let exp = ((h >> 10) & 0x1f) as i32;
    let frac = (h & 0x3ff) as u32;
    match exp {
        0 if frac == 0 => sign,
        0 => sign | round_pack(false, -24, frac as u128),
        0x1f if frac == 0 => sign | INF,
        0x1f => sign | INF | 0x0040_0000 | frac << 13,
        _ => sign | ((exp - 15 + 127) as u32) << 23 | frac << 13,
    }
}

/// IEEE binary32 to binary16, round to nearest even.
pub fn f32_to_f16(a: u32) -> u16 {
    let sign = ((a >> 16) & 0x8000) as u16;
    if is_nan(a) {
        return sign | 0x7e00 | ((a >> 13) & 0x1ff) as u16;
    }
    if is_inf(a) {
        return sign | 0x7c00;
    }
    if is_zero(a) {
        return sign;
    }
    let (e, m) = unpack(a);
    // value = m * 2^e; binary16: 11-bit significand, min exponent -14, denormal step 2^-24
    let msb = 31 - m.leading_zeros() as i32;
    let biased = msb + e + 15;
    let shift = if biased >= 1 { msb - 10 } else { msb - 10 + (1 - biased) };
    let mant: u64 = if shift <= 0 {
        (m as u64) << (-shift) as u32
    } else if shift >= 40 {
        0
    } else {
        let kept = (m as u64) >> shift as u32;
        let rest = (m as u64) & ((1u64 << shift as u32) - 1);
        let half = 1u64 << (shift as u32 - 1);
        if rest > half || (rest == half && kept & 1 == 1) {
            kept + 1
        } else {
            kept
        }
    };
    let bits = if biased >= 1 { (((biased - 1) as u64) << 10) + mant } else { mant };
    if bits >= 0x7c00 {
        sign | 0x7c00
    } else {
        sign | bits as u16
    }
}

/// `(hi << 64 | lo) / d` and the remainder, with 64-bit operations only: a
/// `u128` division is a call to `__udivti3`, which the kernel does not have.
/// `d` must not be 0 (the result is then meaningless, with no panic: the
/// kernel build's objtool rejects the panic path a plain `/` would add).
pub fn div_wide(hi: u64, lo: u64, d: u64) -> (u128, u64) {
    let q_hi = hi.checked_div(d).unwrap_or(0);
    let mut r = hi.checked_rem(d).unwrap_or(0);
    let mut q_lo = 0u64;
    for i in (0..64).rev() {
        // r < d: shifting in the next bit may carry out of 64 bits, and
        // then the true value (2^64 + r) is at least d and below 2d.
        let carry = r >> 63;
        r = r << 1 | (lo >> i) & 1;
        q_lo <<= 1;
        if carry != 0 || r >= d {
            r = r.wrapping_sub(d);
            q_lo |= 1;
        }
    }
    ((q_hi as u128) << 64 | q_lo as u128, r)
}
