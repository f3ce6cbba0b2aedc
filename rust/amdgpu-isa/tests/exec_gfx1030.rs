// SPDX-License-Identifier: GPL-2.0 OR MIT
//! GFX10.3 instruction semantics: small programs from tests/asm/exec10/*.s,
//! assembled by llvm-mc-15 -mcpu=gfx1030 into tests/fixtures/exec10/*.hex
//! (scripts/gen-fixtures.sh), run on one wave32; expected values follow the
//! RDNA 2 ISA manual (wave32 lane masks in one SGPR, VCC_LO, v_cmpx writing
//! EXEC only, SGPR_NULL, DPP8/row_share/row_xmask, s_denorm_mode).

mod common;
use amdgpu_isa::decode::Generation;
use amdgpu_isa::exec::{execute, fetch, ExecError, StepOutcome};
use amdgpu_isa::memory::Environment;
use amdgpu_isa::wave::Wave;
use common::*;

macro_rules! program {
    ($name:literal) => {
        include_str!(concat!("fixtures/exec10/", $name, ".hex"))
    };
}

struct Machine {
    wave: Box<Wave>,
    mem: SparseMemory,
    lds: Vec<u8>,
}

const CODE: u64 = 0x4000_0000;

impl Machine {
    /// A wave32 on GFX10 with EXEC_LO all ones and v0 = lane id.
    fn new(hex: &str) -> Self {
        let words: Vec<u32> = hex.lines().map(|l| u32::from_str_radix(l.trim(), 16).unwrap()).collect();
        let mut mem = SparseMemory::new();
        mem.map(CODE, words.iter().flat_map(|w| w.to_le_bytes()).collect());
        let mut wave = Box::new(Wave::new());
        wave.gen = Generation::Gfx10;
        wave.wave32 = true;
        wave.pc = CODE;
        wave.exec = 0xffff_ffff;
        wave.mode.0 = 0xf0;
        for lane in 0..32 {
            wave.vgpr[0][lane] = lane as u32;
        }
        Machine { wave, mem, lds: vec![0; 65536] }
    }

    fn run(&mut self) -> Result<u64, ExecError> {
        for n in 1..100_000 {
            let mut env = Environment { global: &mut self.mem, lds: &mut self.lds, scratch: &mut [], scratch_lane_bytes: 0, apertures: APERTURES };
            let inst = fetch(&self.wave, &mut env)?;
            if execute(&mut self.wave, &mut env, &inst)? == StepOutcome::Ended {
                return Ok(n);
            }
        }
        panic!("program did not end");
    }

    fn v(&self, reg: usize, lane: usize) -> u32 {
        self.wave.vgpr[reg][lane]
    }
}

fn mask(f: impl Fn(u32) -> bool) -> u32 {
    (0..32).filter(|&l| f(l)).fold(0, |m, l| m | 1 << l)
}

#[test]
fn wave32_lane_masks() {
    let mut m = Machine::new(program!("wave32_masks"));
    m.wave.sgpr[2] = 0xabcd; // beside s1: a wave32 mask write must not touch it
    m.wave.vcc = 0x1234 << 32; // VCC_HI is an SGPR of its own in wave32
    m.run().unwrap();
    let s = &m.wave.sgpr;
    assert_eq!(s[0], mask(|l| l > 5), "v_cmp_lt_u32 5, v0 into VCC_LO");
    assert_eq!(s[1], mask(|l| l < 10), "v_cmp_gt_u32_e64 into one SGPR");
    assert_eq!(s[2], 0xabcd, "the SGPR after a wave32 mask is untouched");
    assert_eq!(s[3], mask(|l| l >= 1), "v_add_co_u32 carry out into one SGPR");
    assert_eq!(s[4], 0xffff_ffff, "s_and_saveexec_b32 saved EXEC_LO");
    assert_eq!(s[5], mask(|l| l < 8), "v_cmpx_gt_u32_e32 wrote EXEC");
    assert_eq!(s[6], 1 << 3, "v_cmpx_eq_u32_e64 wrote EXEC");
    assert_eq!(s[7], 1, "s_cbranch_execz not taken with lane 3 on");
    assert_eq!(s[8], 1, "s_cbranch_execnz not taken with EXEC_LO 0");
    assert_eq!(s[9], 0, "no carry out of v_add_co_ci_u32 (VCC_LO)");
    assert_eq!(m.wave.vcc >> 32, 0x1234, "VCC_HI untouched by wave32 compares and carries");
    assert_eq!(m.wave.vcc as u32, 0, "v_cmpx left VCC alone (GFX10 writes EXEC only)");
    assert_eq!(m.wave.exec, 0xffff_ffff);
    for lane in 0..32 {
        assert_eq!(m.v(1, lane), (lane < 10) as u32, "v_cndmask_b32_e64 by s1, lane {lane}");
        assert_eq!(m.v(2, lane), (lane as u32).wrapping_sub(1), "lane {lane}");
        assert_eq!(m.v(3, lane), lane as u32 + (lane > 5) as u32, "v_add_co_ci_u32 carry in from VCC_LO, lane {lane}");
        assert_eq!(m.v(4, lane), if lane < 10 { 7 } else { 0 }, "lane {lane}");
        assert_eq!(m.v(5, lane), if lane < 8 { 9 } else { 0 }, "lane {lane}");
    }
    for lane in 32..64 {
        assert_eq!(m.v(4, lane), 0, "lanes past a wave32 never run");
    }
}

#[test]
fn gfx10_alu() {
    let mut m = Machine::new(program!("alu10"));
    m.wave.sgpr[0] = 0x0f0f_0000;
    m.wave.sgpr[11] = 0xffff_0000; // carry in of lanes 16..31
    m.run().unwrap();
    let s = &m.wave.sgpr;
    for lane in 0..32u32 {
        let l = lane as usize;
        let x = lane as f32;
        assert_eq!(m.v(1, l), lane + 0x12345, "VOP3 literal, lane {lane}");
        assert_eq!(m.v(2, l), lane.wrapping_mul(0x10001));
        assert_eq!(m.v(3, l), lane ^ 0x55 ^ 0x0f0f_0000, "v_xor3_b32");
        assert_eq!(m.v(4, l), x.mul_add(2.0, x).to_bits(), "v_fmamk_f32");
        assert_eq!(m.v(5, l), x.mul_add(x, 1.0).to_bits(), "v_fmaak_f32");
        assert_eq!(m.v(7, l), x.mul_add(x, 1.0).to_bits(), "v_fmac_f32");
        assert_eq!(m.v(8, l), lane.wrapping_sub(lane + 0x12345), "v_sub_nc_u32");
        let cin = (lane >= 16) as u64;
        let sum = lane as u64 + 0xffff_ffff + cin;
        assert_eq!(m.v(9, l), sum as u32, "v_add_co_ci_u32_e64, lane {lane}");
    }
    assert_eq!(s[10], mask(|l| l as u64 + 0xffff_ffff + (l >= 16) as u64 > 0xffff_ffff), "carry out into s10");
    // s_denorm_mode 3: FP_DENORM [7:4] = 3; s_round_mode 2: FP_ROUND [3:0] = 2.
    assert_eq!(s[5], 0x32, "MODE after s_denorm_mode/s_round_mode");
    assert_eq!(s[6], 1, "v_readlane_b32 lane 33 of a wave32 is lane 1");
    assert_eq!(s[7], 3, "SGPR_NULL reads 0");
    assert_eq!(s[8], 8, "s102 is an SGPR on GFX10");
    assert_eq!(m.wave.flat_scratch, 3 << 32 | 8, "FLAT_SCRATCH through s_setreg");
    assert_eq!(s[9], 3, "s_getreg_b32 FLAT_SCR_HI");
}

#[test]
fn gfx10_lane_moves() {
    let mut m = Machine::new(program!("dpp10"));
    for lane in 0..32 {
        m.wave.vgpr[14][lane] = ((lane as u32 + 1) * 4) as u32;
    }
    m.run().unwrap();
    for lane in 0..32usize {
        assert_eq!(m.v(10, lane), ((lane & !7) | (7 - (lane & 7))) as u32, "dpp8 reverse, lane {lane}");
        assert_eq!(m.v(11, lane), ((lane & !15) | 3) as u32, "row_share:3, lane {lane}");
        assert_eq!(m.v(12, lane), (lane ^ 1) as u32, "row_xmask:1, lane {lane}");
        assert_eq!(m.v(15, lane), (lane + (lane ^ 1)) as u32, "v_add_nc_u32_dpp quad_perm, lane {lane}");
        assert_eq!(m.v(13, lane), ((lane + 1) % 32) as u32, "ds_bpermute_b32 wraps at 32 lanes, lane {lane}");
        assert_eq!(m.v(16, lane), lane as u32, "v_mbcnt_lo_u32_b32 -1, 0");
    }
}

#[test]
fn gfx10_memory() {
    let mut m = Machine::new(program!("memory10"));
    let data: Vec<u32> = (0..64).map(|i| 0x1000 + i).collect();
    let base = m.mem.alloc_u32(&data);
    let out = m.mem.alloc_u32(&[0; 64]);
    m.wave.sgpr[0] = base as u32;
    m.wave.sgpr[1] = (base >> 32) as u32;
    m.wave.sgpr[5] = 4;
    for lane in 0..32 {
        m.wave.vgpr[2][lane] = 4 * lane as u32;
        let a = out + 4 * lane as u64 - 16;
        m.wave.vgpr[3][lane] = a as u32;
        m.wave.vgpr[4][lane] = (a >> 32) as u32;
    }
    m.run().unwrap();
    assert_eq!([m.wave.sgpr[2], m.wave.sgpr[3]], [0x1002, 0x1003], "s_load_dwordx2 at base + 8");
    assert_eq!(m.wave.sgpr[4], 0x1002, "s_load_dword at base + s5 + 4");
    let got = m.mem.read_u32s(out, 32);
    for lane in 0..32 {
        assert_eq!(got[lane], 0x1000 + lane as u32 + 1, "lane {lane}");
    }
}

/// GFX10 wave64 (what a kernel descriptor without ENABLE_WAVEFRONT_SIZE32
/// asks for): masks are SGPR pairs and the lanes run 0..64.
#[test]
fn wave64_on_gfx10() {
    let mut m = Machine::new(program!("wave64"));
    m.wave.wave32 = false;
    m.wave.exec = u64::MAX;
    for lane in 0..64 {
        m.wave.vgpr[0][lane] = lane as u32;
        m.wave.vgpr[14][lane] = ((lane as u32 + 1) * 4) as u32;
    }
    m.run().unwrap();
    let s64 = |r: usize| m.wave.sgpr[r] as u64 | (m.wave.sgpr[r + 1] as u64) << 32;
    let mask = |f: &dyn Fn(u64) -> bool| (0..64).filter(|&l| f(l)).fold(0u64, |a, l| a | 1 << l);
    assert_eq!(s64(0), mask(&|l| l > 40), "VCC is 64 bits");
    assert_eq!(s64(2), mask(&|l| l < 10));
    assert_eq!(s64(4), mask(&|l| l >= 1), "carry out into a pair");
    assert_eq!(s64(6), u64::MAX, "s_and_saveexec_b64");
    assert_eq!(s64(8), mask(&|l| l < 50), "v_cmpx wrote the whole EXEC");
    assert_eq!(m.wave.vcc, mask(&|l| l > 40), "v_cmpx left VCC alone");
    assert_eq!(m.wave.sgpr[10], 63, "v_readlane_b32 of lane 63");
    for lane in 0..64usize {
        assert_eq!(m.v(4, lane), if lane > 40 { 7 } else { 0 }, "lane {lane}");
        assert_eq!(m.v(5, lane), ((lane + 1) % 64) as u32, "ds_bpermute_b32 over 64 lanes, lane {lane}");
    }
}

/// Wave launch on GFX10 (AMDGPUUsage "Initial Kernel Execution State"):
/// wave32 when the descriptor sets ENABLE_WAVEFRONT_SIZE32, else wave64;
/// work-item ids in v0, v1, v2 (not packed as on gfx90a); GFX9 refuses wave32.
#[test]
fn gfx10_wave_launch() {
    use amdgpu_isa::code_object::KernelDescriptor;
    use amdgpu_isa::dispatch::{Dispatch, LaunchError};
    let kd = |wave32: bool| KernelDescriptor {
        group_segment_fixed_size: 0,
        private_segment_fixed_size: 0,
        kernarg_size: 0,
        kernel_code_entry_byte_offset: 0x100,
        compute_pgm_rsrc3: 0,
        compute_pgm_rsrc1: 0,
        // USER_SGPR_COUNT 2, workgroup id x, work-item ids x, y, z
        compute_pgm_rsrc2: 2 << 1 | 1 << 7 | 2 << 11,
        // kernarg segment ptr; ENABLE_WAVEFRONT_SIZE32
        kernel_code_properties: 1 << 3 | if wave32 { 1 << 10 } else { 0 },
    };
    let dispatch = |kd, generation| Dispatch {
        kernel_descriptor: kd,
        kernel_object: 0x1000,
        dispatch_packet: 0,
        queue: 0,
        kernarg: 0xabcd_0000_1234,
        dispatch_id: 0,
        workgroup_size: [4, 4, 4],
        grid_size: [8, 4, 4],
        private_segment_buffer: [0; 4],
        flat_scratch_init: 0,
        private_segment_size: 0,
        generation,
    };
    let mut w = Box::new(Wave::new());
    let d = dispatch(kd(true), Generation::Gfx10);
    assert_eq!((d.wave_lanes(), d.waves_per_workgroup()), (32, 2));
    d.init_wave(&mut w, [1, 0, 0], 1).unwrap();
    assert!(w.wave32 && w.gen == Generation::Gfx10);
    assert_eq!(w.pc, 0x1100);
    assert_eq!((w.sgpr[0], w.sgpr[1], w.sgpr[2]), (0x1234, 0xabcd, 1), "kernarg ptr, workgroup id x");
    assert_eq!(w.exec, 0xffff_ffff);
    // work-item 32 + l of the 4x4x4 workgroup
    for l in 0..32u32 {
        let t = 32 + l;
        assert_eq!([w.vgpr[0][l as usize], w.vgpr[1][l as usize], w.vgpr[2][l as usize]], [t % 4, t / 4 % 4, t / 16], "lane {l}");
    }
    let d = dispatch(kd(false), Generation::Gfx10);
    assert_eq!((d.wave_lanes(), d.waves_per_workgroup()), (64, 1));
    d.init_wave(&mut w, [0, 0, 0], 0).unwrap();
    assert!(!w.wave32);
    assert_eq!(w.exec, u64::MAX);
    assert_eq!([w.vgpr[0][63], w.vgpr[1][63], w.vgpr[2][63]], [3, 3, 3]);
    let d = dispatch(kd(true), Generation::Gfx9);
    assert_eq!(d.init_wave(&mut w, [0, 0, 0], 0), Err(LaunchError::Wave32));
}

/// binary16 to binary64 (exact), on the host.
fn host_f16_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let (field, mantissa) = ((h >> 10 & 31) as i32, (h & 0x3ff) as f64);
    sign * match field {
        0 => mantissa * 2f64.powi(-24),
        31 if mantissa == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        _ => (1024.0 + mantissa) * 2f64.powi(field - 25),
    }
}

/// A finite binary64 rounded once to binary16, to nearest even, on the
/// host: the value divided by the f16 ulp of its binade is exact in f64.
fn host_f64_to_f16(x: f64) -> u16 {
    let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
    let a = x.abs();
    if a == 0.0 {
        return sign;
    }
    let mut e = a.log2().floor() as i32;
    while 2f64.powi(e) > a {
        e -= 1;
    }
    while 2f64.powi(e + 1) <= a {
        e += 1;
    }
    let e = e.max(-14);
    let mut q = (a / 2f64.powi(e - 10)).round_ties_even();
    let mut e = e;
    if q >= 2048.0 {
        q /= 2.0;
        e += 1;
    }
    if e > 15 {
        return sign | 0x7c00;
    }
    let q = q as u16;
    sign | if q < 1024 { q } else { ((e + 15) as u16) << 10 | (q - 1024) }
}

/// v_add_nc_u16 / v_sub_nc_u16 (wrapping, clamp-saturating, op_sel halves,
/// a literal, an SGPR source) and v_fmac_f16 (e32, e64 with clamp and
/// neg/abs, DPP, an inline constant) on random lanes against host
/// arithmetic; the half of D an instruction does not write is kept.
#[test]
fn gfx10_int16_and_fmac_f16() {
    let mut m = Machine::new(program!("int16_f16"));
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 32) as u32
    };
    // f16 normals of exponent -6..=6: a * b + c is exact in f64.
    let f16 = |r: u32| -> u16 { (r & 0x8000) as u16 | (((r >> 16) % 13 + 9) as u16) << 10 | (r & 0x3ff) as u16 };
    m.wave.sgpr[0] = next();
    for lane in 0..32 {
        let (v1, v2) = (next(), next());
        let a = f16(next());
        // Lane 7: a * 1.0 + (-a), an exact cancellation.  Lane 9: a * b =
        // 2^-11 (1 - 2^-20), c = 1 + 2^-10: the sum is 2^-31 below the
        // midpoint 1 + 3 * 2^-11, so one rounding gives 1 + 2^-10 (0x3c01)
        // and rounding through f32 first gives the tie's even 0x3c02.
        let (a, b, c) = match lane {
            7 => (a, 0x3c00, a ^ 0x8000),
            9 => (0x3ffe, 0x0c01, 0x3c01),
            _ => (a, f16(next()), f16(next())),
        };
        let v3 = next() & 0xffff_0000 | c as u32;
        m.wave.vgpr[1][lane] = v1;
        m.wave.vgpr[2][lane] = v2;
        m.wave.vgpr[3][lane] = v3;
        m.wave.vgpr[4][lane] = next() & 0xffff_0000 | a as u32;
        m.wave.vgpr[5][lane] = next() & 0xffff_0000 | b as u32;
        for r in 10..=24 {
            m.wave.vgpr[r][lane] = v3;
        }
    }
    m.run().unwrap();
    let low = |d: u16, keep: u32| keep & 0xffff_0000 | d as u32;
    let high = |d: u16, keep: u32| keep & 0xffff | (d as u32) << 16;
    let fma = |a: u16, b: u16, c: u16| host_f64_to_f16(host_f16_to_f64(a) * host_f16_to_f64(b) + host_f16_to_f64(c));
    for lane in 0..32 {
        let (v1, v2, v3) = (m.v(1, lane), m.v(2, lane), m.v(3, lane));
        let (a_lo, a_hi, b_lo, b_hi) = (v1 as u16, (v1 >> 16) as u16, v2 as u16, (v2 >> 16) as u16);
        assert_eq!(m.v(10, lane), low(a_lo.wrapping_add(b_lo), v3), "v_add_nc_u16, lane {lane}");
        assert_eq!(m.v(11, lane), low(a_lo.wrapping_sub(b_lo), v3), "v_sub_nc_u16, lane {lane}");
        assert_eq!(m.v(12, lane), low(a_lo.saturating_add(b_lo), v3), "v_add_nc_u16 clamp, lane {lane}");
        assert_eq!(m.v(13, lane), low(a_lo.saturating_sub(b_lo), v3), "v_sub_nc_u16 clamp, lane {lane}");
        assert_eq!(m.v(14, lane), high(a_hi.wrapping_add(b_hi), v3), "v_add_nc_u16 op_sel:[1,1,1], lane {lane}");
        assert_eq!(m.v(15, lane), low(a_lo.wrapping_sub(b_hi), v3), "v_sub_nc_u16 op_sel:[0,1,0], lane {lane}");
        assert_eq!(m.v(16, lane), low(a_lo.wrapping_sub(0x1234), v3), "v_sub_nc_u16 literal, lane {lane}");
        assert_eq!(m.v(17, lane), high((m.wave.sgpr[0] as u16).saturating_add(b_lo), v3), "v_add_nc_u16 s0 op_sel:[0,0,1] clamp, lane {lane}");

        let (a, b, c) = (m.v(4, lane) as u16, m.v(5, lane) as u16, v3 as u16);
        assert_eq!(m.v(20, lane), low(fma(a, b, c), v3), "v_fmac_f16_e32, lane {lane}");
        let clamped = match fma(a, b, c) {
            d if d & 0x8000 != 0 => 0,
            d if d > 0x3c00 => 0x3c00,
            d => d,
        };
        assert_eq!(m.v(21, lane), low(clamped, v3), "v_fmac_f16_e64 clamp, lane {lane}");
        assert_eq!(m.v(22, lane), low(fma(a ^ 0x8000, b & 0x7fff, c), v3), "v_fmac_f16_e64 -v4, |v5|, lane {lane}");
        let a_swapped = m.v(4, lane ^ 1) as u16;
        assert_eq!(m.v(23, lane), low(fma(a_swapped, b, c), v3), "v_fmac_f16_dpp quad_perm:[1,0,3,2], lane {lane}");
        assert_eq!(m.v(24, lane), low(fma(0x3c00, b, c), v3), "v_fmac_f16_e32 1.0, lane {lane}");
    }
    assert_eq!(m.v(20, 7) & 0xffff, 0, "lane 7: a * 1.0 + (-a) is +0");
    assert_eq!(m.v(20, 9) & 0xffff, 0x3c01, "lane 9: one rounding");
}

/// GFX10's 16-bit VALU ops write the low half of D and keep its high half.
#[test]
fn gfx10_16bit_ops_keep_the_high_half() {
    let mut m = Machine::new(program!("high16"));
    let (a, b, c, s) = (0x4100u16, 0x3e00u16, 0x3400u16, 0x4080u16); // 2.5, 1.5, 0.25, 2.25
    let (x, y) = (0x8765u16, 0x0123u16);
    for lane in 0..32 {
        m.wave.vgpr[1][lane] = 0x1111_0000 | a as u32;
        m.wave.vgpr[2][lane] = 0x2222_0000 | b as u32;
        m.wave.vgpr[3][lane] = 0x3333_0000 | c as u32;
        m.wave.vgpr[7][lane] = 0x7777_0000 | s as u32;
        m.wave.vgpr[4][lane] = 0.5f32.to_bits();
        m.wave.vgpr[5][lane] = 0x5555_0000 | x as u32;
        m.wave.vgpr[6][lane] = 0x6666_0000 | y as u32;
        for r in 10..=20 {
            m.wave.vgpr[r][lane] = (0xa000 + r as u32) << 16 | 0xffff;
        }
    }
    m.run().unwrap();
    let f = host_f16_to_f64;
    let want: [(usize, u16, &str); 11] = [
        (10, host_f64_to_f16(f(a) + f(b)), "v_add_f16"),
        (11, host_f64_to_f16(f(a) * f(b)), "v_mul_f16_e64"),
        (12, host_f64_to_f16(f(a) * f(b) + f(c)), "v_fma_f16"),
        (13, host_f64_to_f16(f(s).sqrt()), "v_sqrt_f16"),
        (14, host_f64_to_f16(f(a).max(f(b))), "v_max_f16"),
        (15, host_f64_to_f16(0.5), "v_cvt_f16_f32"),
        (16, x.wrapping_mul(y), "v_mul_lo_u16"),
        (17, x << 3, "v_lshlrev_b16"),
        (18, (x as i16).max(y as i16) as u16, "v_max_i16"),
        (19, x.min(y), "v_min_u16"),
        (20, ((x as i16) >> 2) as u16, "v_ashrrev_i16"),
    ];
    for lane in 0..32 {
        for (r, low, what) in want {
            assert_eq!(m.v(r, lane), (0xa000 + r as u32) << 16 | low as u32, "{what}, lane {lane}");
        }
    }
}
