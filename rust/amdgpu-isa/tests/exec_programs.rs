// SPDX-License-Identifier: GPL-2.0 OR MIT
//! Instruction semantics: small programs from tests/asm/exec/*.s, assembled
//! by llvm-mc-15 into tests/fixtures/exec/*.hex (scripts/gen-fixtures.sh),
//! run on one wave; expected values follow the MI200 ISA manual and are
//! computed here with host integer and IEEE f32 arithmetic.

mod common;
use amdgpu_isa::exec::{execute, fetch, ExecError, StepOutcome};
use amdgpu_isa::memory::Environment;
use amdgpu_isa::wave::Wave;
use common::*;

macro_rules! program {
    ($name:literal) => {
        include_str!(concat!("fixtures/exec/", $name, ".hex"))
    };
}

struct Machine {
    wave: Box<Wave>,
    mem: SparseMemory,
    lds: Vec<u8>,
    outcomes: Vec<StepOutcome>,
}

const CODE: u64 = 0x4000_0000;

impl Machine {
    fn new(hex: &str) -> Self {
        let words: Vec<u32> = hex.lines().map(|l| u32::from_str_radix(l.trim(), 16).unwrap()).collect();
        let mut mem = SparseMemory::new();
        mem.map(CODE, words.iter().flat_map(|w| w.to_le_bytes()).collect());
        let mut wave = Box::new(Wave::new());
        wave.pc = CODE;
        wave.exec = u64::MAX;
        wave.mode.0 = 0xf0; // f32 and f64/f16 denormals kept, round to nearest
        for lane in 0..64 {
            wave.vgpr[0][lane] = lane as u32;
        }
        Machine { wave, mem, lds: vec![0; 65536], outcomes: Vec::new() }
    }

    /// Runs to s_endpgm, continuing through barriers (one wave).
    fn run(&mut self) -> Result<(), ExecError> {
        for _ in 0..100_000 {
            let mut env = Environment { global: &mut self.mem, lds: &mut self.lds, scratch: &mut [], scratch_lane_bytes: 0, apertures: APERTURES };
            let inst = fetch(&self.wave, &mut env)?;
            let outcome = execute(&mut self.wave, &mut env, &inst)?;
            self.outcomes.push(outcome);
            if outcome == StepOutcome::Ended {
                return Ok(());
            }
        }
        panic!("program did not end");
    }

    fn v(&self, reg: usize, lane: usize) -> u32 {
        self.wave.vgpr[reg][lane]
    }
    fn s64(&self, reg: usize) -> u64 {
        self.wave.sgpr[reg] as u64 | (self.wave.sgpr[reg + 1] as u64) << 32
    }
}

fn f(bits: u32) -> f32 {
    f32::from_bits(bits)
}

#[test]
fn scalar_carry_chain() {
    let mut m = Machine::new(program!("scalar_carry"));
    let (a, b, c) = (0x0000_0001_ffff_fff0u64, 0x0000_0002_0000_0020u64, 0x0000_0001_0000_0000u64);
    m.wave.sgpr[0] = a as u32;
    m.wave.sgpr[1] = (a >> 32) as u32;
    m.wave.sgpr[2] = b as u32;
    m.wave.sgpr[3] = (b >> 32) as u32;
    m.wave.sgpr[4] = c as u32;
    m.wave.sgpr[5] = (c >> 32) as u32;
    m.run().unwrap();
    assert_eq!(m.s64(0), a + b);
    assert_eq!(m.wave.sgpr[10], 0, "no carry out of the high add");
    assert_eq!(m.s64(4), c.wrapping_sub(b));
    assert_eq!(m.wave.sgpr[11], 1, "borrow out of the high subtract");
    assert_eq!(m.wave.sgpr[12], ((0x20u64 * 2) >> 32) as u32);
    assert_eq!(m.wave.sgpr[13], 0x40);
}

#[test]
fn scalar_bit_operations() {
    let mut m = Machine::new(program!("scalar_bits"));
    let x = 0x8765_43a1u32;
    m.wave.sgpr[0] = x;
    m.wave.sgpr[6] = 0xdead_beef;
    m.wave.sgpr[7] = 0x0000_0003;
    m.run().unwrap();
    let s = &m.wave.sgpr;
    assert_eq!(s[1], (x >> 8) & 0xff, "s_bfe_u32 offset 8 width 8");
    assert_eq!(s[2] as i32, ((((x >> 4) & 0xf) << 28) as i32) >> 28, "s_bfe_i32 sign-extends");
    assert_eq!(m.s64(4), 0x0000_0003_dead_beefu64 << 36);
    assert_eq!(s[3], ((x as i32) >> 4) as u32);
    assert_eq!(s[8], 0xdead_beefu32.count_ones() + 2);
    assert_eq!(s[9], x.trailing_zeros());
    assert_eq!(s[10], x.leading_zeros());
    assert_eq!(s[11], x.reverse_bits());
    assert_eq!(s[12], (x << 2).wrapping_add(3));
    assert_eq!(s[13], (x & 0xffff) | 0xdead_0000);
    assert_eq!(s[14], x as u8 as i8 as i32 as u32);
}

#[test]
fn inline_constants_and_literals() {
    let mut m = Machine::new(program!("constants"));
    m.run().unwrap();
    let s = &m.wave.sgpr;
    assert_eq!(s[0], -16i32 as u32);
    assert_eq!(s[1], 0.5f32.to_bits());
    assert_eq!(s[2], 0x1234_5678);
    assert_eq!(m.s64(4), u64::MAX, "-1 sign-extends to 64 bits");
    assert_eq!(m.s64(6), 0xffff_fff0, "a 32-bit literal is zero-extended for a 64-bit integer operand");
    assert_eq!(s[8], 64);
    assert_eq!(s[9], (-4.0f32).to_bits());
    assert_eq!(s[10], 0xffff_8000, "s_movk_i32 sign-extends");
    for lane in [0, 31, 63] {
        assert_eq!(m.v(0, lane), 1.0f32.to_bits());
        assert_eq!(m.v(1, lane), 0x4048_f5c3);
        assert_eq!(m.v(2, lane), 0x1234_5678);
        assert_eq!(m.v(3, lane), 0x1234_5678 + 64);
    }
}

#[test]
fn loop_with_scalar_compare_and_branch() {
    let mut m = Machine::new(program!("loop_branch"));
    m.wave.sgpr[0] = 100;
    m.run().unwrap();
    assert_eq!(m.wave.sgpr[1], 5050);
    assert_eq!(m.outcomes.len(), 1 + 4 * 100 + 1);
}

#[test]
fn exec_mask_limits_writes() {
    let mut m = Machine::new(program!("exec_mask"));
    m.run().unwrap();
    for lane in 0..64 {
        let v0 = if lane < 10 { lane as u32 + 100 } else { lane as u32 };
        assert_eq!(m.v(0, lane), v0, "lane {lane}");
        // v_cmpx: only lanes with v0 < 5 (none after the +100) ran v_mov
        assert_eq!(m.v(1, lane), 0, "lane {lane}");
    }
    assert_eq!(m.wave.exec, u64::MAX);
    assert_eq!(m.s64(2), 0, "v_cmpx_lt_u32 mask");
    // With no lane active, s_cbranch_execz skipped the add.
    let mut m = Machine::new(program!("exec_mask"));
    for lane in 0..64 {
        m.wave.vgpr[0][lane] = 1000;
    }
    m.run().unwrap();
    assert!((0..64).all(|l| m.v(0, l) == 1000));
}

#[test]
fn f32_valu_with_modifiers() {
    let mut m = Machine::new(program!("valu_float"));
    let xs = [1.5f32, -2.25, 3.0e-39, 1.0e38, f32::NAN, -0.0, 0.1, 7.0];
    let ys = [2.5f32, 0.75, 1.0e-39, 1.0e38, 1.0, 0.0, 0.2, -7.0];
    for lane in 0..64 {
        m.wave.vgpr[0][lane] = xs[lane % 8].to_bits();
        m.wave.vgpr[1][lane] = ys[lane % 8].to_bits();
        m.wave.vgpr[9][lane] = 1.0f32.to_bits();
        m.wave.vgpr[13][lane] = ((lane as i32 - 32) * 1000) as u32;
    }
    m.run().unwrap();
    let same = |got: u32, want: f32, what: &str, lane: usize| {
        if want.is_nan() {
            assert!(f(got).is_nan(), "{what} lane {lane}: {} not NaN", f(got));
        } else {
            assert_eq!(got, want.to_bits(), "{what} lane {lane}: {} vs {}", f(got), want);
        }
    };
    for lane in 0..8 {
        let (x, y) = (xs[lane], ys[lane]);
        same(m.v(2, lane), x + y, "v_add_f32", lane);
        same(m.v(3, lane), 0.5 * x, "v_mul_f32 0.5", lane);
        same(m.v(4, lane), x.mul_add(y, -x), "v_fma_f32 neg", lane);
        same(m.v(5, lane), -x + y.abs(), "v_add_f32 -x |y|", lane);
        // clamp to [0, 1]; NaN and negative values (-0 included) give +0
        let clamped = if (x * y).is_nan() || (x * y).is_sign_negative() { 0.0 } else { (x * y).min(1.0) };
        same(m.v(6, lane), clamped, "v_mul_f32 clamp", lane);
        same(m.v(7, lane), (x + y) * 2.0, "omod mul:2", lane);
        same(m.v(8, lane), (x + y) * 0.5, "omod div:2", lane);
        same(m.v(9, lane), x.mul_add(y, 1.0), "v_fmac_f32", lane);
        // NaN yields the other operand; -0 < +0
        let max = if x.is_nan() { y } else if x == 0.0 && y == 0.0 { if x.is_sign_positive() { x } else { y } } else { x.max(y) };
        same(m.v(10, lane), max, "v_max_f32", lane);
        // v_madak: separate rounding, denormals flushed
        let flush = |v: f32| if v.is_subnormal() { 0.0f32.copysign(v) } else { v };
        same(m.v(11, lane), flush(flush(flush(x) * flush(y)) + 10.0), "v_madak_f32", lane);
        assert_eq!(m.v(14, lane), x as u32, "v_cvt_u32_f32 lane {lane} (saturating, NaN 0)");
        same(m.v(15, lane), x - y, "v_sub_f32", lane);
        same(m.v(16, lane), y - x, "v_subrev_f32", lane);
    }
    for lane in 0..64 {
        assert_eq!(m.v(12, lane), (((lane as i32 - 32) * 1000) as f32).to_bits());
    }
}

#[test]
fn integer_valu() {
    let mut m = Machine::new(program!("valu_int"));
    let pairs = [(0xffff_fff0u32, 0x20u32), (7, 9), (0x8000_0000, 0x8000_0000), (0x1234_5678, 0xfedc_ba98)];
    for lane in 0..64 {
        let (a, b) = pairs[lane % 4];
        m.wave.vgpr[0][lane] = a;
        m.wave.vgpr[1][lane] = b;
        m.wave.vgpr[20][lane] = 0xffff_ffff;
        m.wave.vgpr[21][lane] = 0xffff_ffff;
    }
    m.run().unwrap();
    let mut carry_sub = 0u64;
    for lane in 0..64 {
        let (a, b) = pairs[lane % 4];
        assert_eq!(m.v(2, lane), a.wrapping_add(b));
        let c = (a as u64 + b as u64) >> 32;
        assert_eq!(m.v(3, lane), b.wrapping_add(c as u32), "v_addc with carry in");
        assert_eq!(m.v(4, lane), a.wrapping_sub(b));
        carry_sub |= ((b > a) as u64) << lane;
        let mad = a as u128 * b as u128 + u64::MAX as u128;
        assert_eq!(m.v(6, lane) as u64 | (m.v(7, lane) as u64) << 32, mad as u64, "v_mad_u64_u32");
        assert_eq!(m.v(8, lane), ((a as u64 * b as u64) >> 32) as u32);
        assert_eq!(m.v(9, lane), a.wrapping_mul(b));
        assert_eq!(m.v(10, lane) as u64 | (m.v(11, lane) as u64) << 32, (a as u64 | (b as u64) << 32) << 33);
        assert_eq!(m.v(12, lane), ((b as i32) >> 31) as u32);
        assert_eq!(m.v(13, lane) as i32, (((a >> 4) & 0xff) << 24) as i32 >> 24);
        assert_eq!(m.v(14, lane), (((a as u64) << 32 | b as u64) >> 8) as u32);
        assert_eq!(m.v(15, lane), (a << 2).wrapping_add(b));
        let mut med = [a as i32, b as i32, -1];
        med.sort();
        assert_eq!(m.v(16, lane), med[1] as u32);
        assert_eq!(m.v(17, lane), (a & 0xff_ffff).wrapping_mul(b & 0xff_ffff));
        assert_eq!(m.v(18, lane), lane as u32, "v_mbcnt lo+hi of all ones is the lane id");
    }
    assert_eq!(m.s64(4), carry_sub, "v_sub_co_u32 borrow mask");
    assert_eq!(m.s64(8), (0..64).fold(0, |acc, l| acc | ((((pairs[l % 4].0 as u128 * pairs[l % 4].1 as u128 + u64::MAX as u128) >> 64) as u64 & 1) << l)));
    for lane in 0..64 {
        let (a, b) = pairs[lane % 4];
        assert_eq!(m.v(19, lane), if carry_sub >> lane & 1 == 1 { b } else { a }, "v_cndmask_b32_e64");
    }
}

#[test]
fn compares_write_lane_masks() {
    let mut m = Machine::new(program!("compare"));
    let xs = [1.0f32, f32::NAN, -0.0, 2.0];
    let ys = [2.0f32, 1.0, 0.0, f32::NAN];
    for lane in 0..64 {
        m.wave.vgpr[0][lane] = xs[lane % 4].to_bits();
        m.wave.vgpr[1][lane] = ys[lane % 4].to_bits();
        m.wave.vgpr[2][lane] = lane as u32;
        m.wave.vgpr[3][lane] = 0;
    }
    m.run().unwrap();
    let mask = |p: &dyn Fn(usize) -> bool| (0..64).fold(0u64, |acc, l| acc | (p(l) as u64) << l);
    assert_eq!(m.s64(0), mask(&|l| xs[l % 4] < ys[l % 4]), "v_cmp_lt_f32");
    assert_eq!(m.s64(2), mask(&|l| xs[l % 4].partial_cmp(&ys[l % 4]).is_none_or(|o| o.is_lt())), "v_cmp_nge_f32 is true when unordered");
    // class mask 3 = signalling or quiet NaN
    assert_eq!(m.s64(4), mask(&|l| xs[l % 4].is_nan()), "v_cmp_class_f32");
    assert_eq!(m.s64(6), mask(&|l| (xs[l % 4].to_bits() as i32) > (ys[l % 4].to_bits() as i32)), "v_cmp_gt_i32");
    let u64s = |l: usize| (xs[l % 4].to_bits() as u64 | (ys[l % 4].to_bits() as u64) << 32, l as u64);
    assert_eq!(m.s64(8), mask(&|l| u64s(l).0 < u64s(l).1), "v_cmp_lt_u64");
    for lane in 0..64 {
        let want = if xs[lane % 4] < ys[lane % 4] { ys[lane % 4] } else { xs[lane % 4] };
        assert_eq!(m.v(4, lane), want.to_bits());
    }
}

#[test]
fn sdwa_selects_and_destination_forms() {
    let mut m = Machine::new(program!("sdwa"));
    for lane in 0..64 {
        m.wave.vgpr[0][lane] = 0x8123_4567 + lane as u32;
        m.wave.vgpr[1][lane] = 0x0000_0304;
        m.wave.vgpr[3][lane] = 0xaaaa_bbbb;
    }
    m.run().unwrap();
    for lane in 0..64 {
        let x = 0x8123_4567 + lane as u32;
        let y = 0x0000_0304u32;
        // v2 = src1 << src0, src1 is v0 byte 1... (operands: v2, v1, v0: src0 = v1 (shift), src1 = v0 BYTE_1)
        assert_eq!(m.v(2, lane), ((x >> 8) & 0xff) << (y & 31), "lshlrev sdwa");
        let sum = (x & 0xffff).wrapping_add((y >> 16) & 0xff);
        assert_eq!(m.v(3, lane), (sum & 0xffff) << 16 | 0xbbbb, "WORD_1 preserve");
        let byte = (x >> 24) & 0xff;
        let sext = ((byte << 8) as u16 as i16 as i32 as u32) & !0xff;
        assert_eq!(m.v(4, lane), sext, "BYTE_1 with UNUSED_SEXT");
        assert_eq!(m.v(5, lane), byte as u8 as i8 as i32 as u32, "sext(v0) BYTE_3");
    }
}

#[test]
fn lds_reads_writes_and_atomics() {
    let mut m = Machine::new(program!("lds"));
    for lane in 0..64 {
        m.wave.vgpr[1][lane] = 1000 + lane as u32;
        m.wave.vgpr[2][lane] = 2000 + lane as u32;
    }
    m.run().unwrap();
    assert!(m.outcomes.contains(&StepOutcome::Barrier));
    for lane in 0..64 {
        assert_eq!(m.v(4, lane), 1000 + lane as u32);
        assert_eq!(m.v(12, lane), 1000 + lane as u32, "read2 first");
        assert_eq!(m.v(13, lane), 2000 + lane as u32, "read2 second");
        // ds_add_rtn: lanes apply in order, each sees the earlier lanes' sum
        assert_eq!(m.v(9, lane), lane as u32);
        assert_eq!(m.v(10, lane), 64);
        // ds_add_u32 (no return) counts too, and leaves v0 alone
        assert_eq!(m.v(11, lane), 64);
        assert_eq!(m.v(0, lane), 4 * lane as u32);
    }
    assert_eq!(u32::from_le_bytes(m.lds[256 + 8 * 3..256 + 8 * 3 + 4].try_into().unwrap()), 1003);
}

#[test]
fn global_memory_loads_stores_atomics() {
    let mut m = Machine::new(program!("global_mem"));
    let data: Vec<u32> = (0..256).map(|i| if i < 64 { 0x8070_6050 + i } else if i == 129 { 5 } else { 0 }).collect();
    let base = m.mem.alloc_u32(&data);
    m.wave.sgpr[0] = base as u32;
    m.wave.sgpr[1] = (base >> 32) as u32;
    m.run().unwrap();
    let out = m.mem.read_u32s(base, 256);
    for lane in 0..64 {
        assert_eq!(out[64 + lane], 0x8070_6050 + lane as u32 + 1);
        // atomic add returns the running sum of the lower lanes' ids
        assert_eq!(m.v(4, lane), (0..lane as u32).sum::<u32>());
    }
    assert_eq!(out[128], (0..64).sum::<u32>());
    // cmpswap: lane 0 finds 5 and stores 9; later lanes find 9
    assert_eq!(out[129], 9);
    assert_eq!(m.v(11, 0), 5);
    assert_eq!(m.v(11, 1), 9);
    assert_eq!(m.v(12, 0), 0x60, "global_load_ubyte");
    assert_eq!(m.v(13, 0), 0xffff_ff80, "global_load_sbyte");
    assert_eq!((m.v(14, 0), m.v(15, 0)), (0x8070_6050, 0x8070_6051));
}

#[test]
fn flat_address_in_shared_aperture_is_lds() {
    let mut m = Machine::new(program!("flat_lds"));
    m.wave.sgpr[0] = APERTURES.shared_base_hi;
    for lane in 0..64 {
        m.wave.vgpr[2][lane] = 0x5000 + lane as u32;
    }
    m.run().unwrap();
    for lane in 0..64 {
        assert_eq!(m.v(3, lane), 0x5000 + lane as u32);
    }
}

#[test]
fn mode_register_controls_denormals() {
    let mut m = Machine::new(program!("mode"));
    for lane in 0..64 {
        m.wave.vgpr[0][lane] = 0x0080_0000; // smallest normal
    }
    m.run().unwrap();
    assert_eq!(m.v(1, 0), 0x0040_0000, "denormal result kept");
    assert_eq!(m.v(2, 0), 0, "denormal result flushed after s_setreg");
    assert_eq!(m.wave.sgpr[0], 0xc0, "MODE[7:0] read back: f32 denorm bits cleared");
}

#[test]
fn lane_access_and_pc() {
    let mut m = Machine::new(program!("lanes"));
    m.wave.exec = 0xffff_0000_0000_fff0;
    m.wave.sgpr[2] = 77;
    m.run().unwrap();
    assert_eq!(m.wave.sgpr[0], 4, "first active lane's v0");
    assert_eq!(m.wave.sgpr[1], 5, "v_readlane ignores EXEC");
    assert_eq!(m.v(1, 9), 77);
    assert_eq!(m.v(1, 8), 0);
    assert_eq!(m.s64(4), CODE + 4 + 8 + 8 + 4, "s_getpc_b64 gives the next instruction's address");
}

#[test]
fn unimplemented_opcode_is_a_clear_error() {
    let mut m = Machine::new(program!("unsupported"));
    let err = m.run().unwrap_err();
    assert_eq!(err.to_string(), format!("unsupported opcode v_cubeid_f32 (VALU 0x1c4) at pc {:#x}", CODE + 4));
    assert_eq!(m.wave.sgpr[0], 1, "instructions before it ran");
}

#[test]
fn barrier_and_trap() {
    let mut m = Machine::new(program!("barrier_trap"));
    let err = m.run().unwrap_err();
    assert_eq!(m.outcomes, vec![StepOutcome::Barrier]);
    assert_eq!(err, ExecError::Trap { pc: CODE + 4, code: 2 });
}

#[test]
fn unmapped_global_address_is_a_fault() {
    let mut m = Machine::new(program!("global_mem"));
    m.wave.sgpr[0] = 0xdead_0000;
    m.wave.sgpr[1] = 0x42;
    let err = m.run().unwrap_err();
    assert!(matches!(err, ExecError::Memory { fault, .. } if fault.address == 0x42_dead_0000 && !fault.write), "{err}");
}

#[test]
fn dpp_lane_movements() {
    let mut m = Machine::new(program!("dpp"));
    m.wave.exec = !(1u64 << 20); // lane 20 inactive: a source nobody may read
    for r in 10..17 {
        for lane in 0..64 {
            m.wave.vgpr[r][lane] = 1000;
        }
    }
    m.run().unwrap();
    for lane in 0..64usize {
        if lane == 20 {
            assert!((10..17).all(|r| m.v(r, lane) == 1000), "inactive lane written");
            continue;
        }
        let row = lane / 16;
        let src_ok = |l: usize| l != 20;
        let quad = (lane & !3) | [1, 0, 3, 2][lane & 3];
        assert_eq!(m.v(10, lane), if src_ok(quad) { quad as u32 } else { 1000 }, "quad_perm lane {lane}");
        // row_shr:1 with bound_ctrl: lane 0 of each row (and readers of lane 20) read 0
        let shr = if lane % 16 == 0 || lane - 1 == 20 { 0 } else { lane as u32 - 1 };
        assert_eq!(m.v(11, lane), shr, "row_shr lane {lane}");
        // row_shl:1 without bound_ctrl: no source -> not written
        let shl = if lane % 16 == 15 || lane + 1 == 20 { 1000 } else { lane as u32 + 1 };
        assert_eq!(m.v(12, lane), shl, "row_shl lane {lane}");
        // row_bcast:15 with row_mask 0xa: rows 1 and 3 take lane 15 / 47
        let bcast = match row {
            1 => 15,
            3 => 47,
            _ => 1000,
        };
        assert_eq!(m.v(13, lane), bcast, "row_bcast15 lane {lane}");
        let wshr = if lane == 0 || lane - 1 == 20 { 1000 } else { lane as u32 - 1 };
        assert_eq!(m.v(14, lane), wshr, "wave_shr lane {lane}");
        // row_mirror with bank_mask 0x5: banks 0 and 2 (lanes 0-3, 8-11 of a row)
        let mirror = row * 16 + 15 - lane % 16;
        let bank_ok = (lane / 4) % 4 == 0 || (lane / 4) % 4 == 2;
        assert_eq!(m.v(15, lane), if bank_ok && src_ok(mirror) { mirror as u32 } else { 1000 }, "row_mirror lane {lane}");
        let ror = row * 16 + (lane % 16 + 12) % 16;
        assert_eq!(m.v(16, lane), if src_ok(ror) { (ror + lane) as u32 } else { 1000 }, "row_ror:4 + lane {lane}");
    }
}

#[test]
fn cross_lane_ds_permutes_and_swizzles() {
    let mut m = Machine::new(program!("cross_lane"));
    m.run().unwrap();
    for lane in 0..64usize {
        let partner = lane ^ 5;
        assert_eq!(m.v(3, lane), 100 + partner as u32, "bpermute lane {lane}");
        // permute: lane L sends to L ^ 5, so lane L receives from L ^ 5 too
        assert_eq!(m.v(4, lane), 100 + partner as u32, "permute lane {lane}");
        assert_eq!(m.v(5, lane), 100 + (lane ^ 16) as u32, "swizzle SWAP 16 lane {lane}");
        assert_eq!(m.v(6, lane), 100 + ((lane & !3) | (3 - (lane & 3))) as u32, "swizzle quad perm lane {lane}");
        let shifted = ((partner * 4 + 4) >> 2) & 63;
        assert_eq!(m.v(7, lane), 100 + shifted as u32, "bpermute offset:4 lane {lane}");
    }
}

#[test]
fn sixteen_bit_integer_ops_and_compares() {
    let mut m = Machine::new(program!("int16"));
    let pairs = [(0xabcd_8001u32, 0x1234_7fffu32), (0x0000_0005, 0xffff_0005), (0xffff_ffff, 0x0000_0002), (0x7777_0010, 0x0000_fff0)];
    for lane in 0..64 {
        let (a, b) = pairs[lane % 4];
        m.wave.vgpr[0][lane] = a;
        m.wave.vgpr[1][lane] = b;
    }
    m.run().unwrap();
    let mask = |p: &dyn Fn(u16, u16) -> bool| (0..64).fold(0u64, |acc, l| acc | (p(pairs[l % 4].0 as u16, pairs[l % 4].1 as u16) as u64) << l);
    for lane in 0..64 {
        let (a, b) = (pairs[lane % 4].0 as u16, pairs[lane % 4].1 as u16);
        assert_eq!(m.v(2, lane), a.wrapping_add(b) as u32, "high half zeroed");
        assert_eq!(m.v(3, lane), a.wrapping_sub(b) as u32);
        assert_eq!(m.v(4, lane), a.wrapping_mul(b) as u32);
        assert_eq!(m.v(5, lane), (b << 3) as u32);
        assert_eq!(m.v(6, lane), ((b as i16) >> 2) as u16 as u32);
        assert_eq!(m.v(7, lane), (a as i16).max(b as i16) as u16 as u32);
        assert_eq!(m.v(8, lane), a.min(b) as u32);
    }
    assert_eq!(m.s64(0), mask(&|a, b| (a as i16) < (b as i16)));
    assert_eq!(m.s64(2), mask(&|a, b| a > b));
    assert_eq!(m.s64(4), mask(&|a, b| a == b), "v_cmpx writes EXEC");
}

#[test]
fn more_integer_and_bit_operations() {
    let mut m = Machine::new(program!("more_alu"));
    let pairs = [(0x1234_8678u32, 0x3f80_0000u32), (0xffff_fffe, 0x8000_0001), (0x0000_00ff, 0x4020_0000), (7, 0xc0a0_0000)];
    m.wave.sgpr[0] = 0x0c_08_07_00; // bytes: s1.byte0, s0.byte3 (byte 7), sign of byte 1, zero
    m.wave.sgpr[2] = 0x0000_0f0f;
    m.wave.sgpr[3] = 0x8000_0000;
    for lane in 0..64 {
        m.wave.vgpr[0][lane] = pairs[lane % 4].0;
        m.wave.vgpr[1][lane] = pairs[lane % 4].1;
    }
    m.run().unwrap();
    for lane in 0..64 {
        let (a, b) = pairs[lane % 4];
        assert_eq!(m.v(2, lane), a.count_ones() + 5);
        assert_eq!(m.v(3, lane), 0b11111 << 3);
        let input = (a as u64) << 32 | b as u64;
        let sign1 = if (input >> 8) as u8 & 0x80 != 0 { 0xff } else { 0 };
        assert_eq!(m.v(4, lane), (b & 0xff) | ((input >> 56) as u32 & 0xff) << 8 | sign1 << 16, "v_perm_b32 lane {lane}");
        let (x, y) = (f32::from_bits(a), f32::from_bits(b));
        let mut v = [x, y, -y];
        if v.iter().all(|f| !f.is_nan()) {
            v.sort_by(|p, q| p.partial_cmp(q).unwrap());
            assert_eq!(m.v(5, lane), v[1].to_bits(), "v_med3_f32 lane {lane}");
        }
        assert_eq!(m.v(6, lane), (a & 0xffff) * (b & 0xffff) + 7);
        assert_eq!(m.v(7, lane) as i32, (a as i16 as i32) * (b as i16 as i32) + 7);
        let sb = b as i32;
        assert_eq!(m.v(8, lane), if sb == 0 || sb == -1 { u32::MAX } else if sb < 0 { (!sb).leading_zeros() } else { sb.leading_zeros() });
        assert_eq!((m.v(9, lane), m.v(10, lane)), (b, a), "v_swap_b32");
    }
    assert_eq!(m.s64(4), 0x8000_0000_0000_0f0fu64.reverse_bits());
    assert_eq!(m.wave.sgpr[6], 0x8000_0000_0000_0f0fu64.count_zeros());
    assert_eq!(m.wave.sgpr[7], 4, "first zero bit of 0xf0f");
    assert_eq!(m.s64(8), 1 << 40);
}

#[test]
fn wide_lds_accesses_more_atomics_and_f64_global_atomic() {
    let mut m = Machine::new(program!("lds_wide"));
    for lane in 0..64 {
        for (r, base) in [(2, 0x100), (3, 0x200), (4, 0x300), (5, 0x400), (10, 0x500), (11, 0x600), (12, 0x700)] {
            m.wave.vgpr[r][lane] = base + lane as u32;
        }
        // v2 doubles as an f32 for ds_max: lane-dependent, the largest at lane 40
        m.wave.vgpr[2][lane] = (-((lane as f32) - 40.0).abs()).to_bits();
    }
    // LDS word 1025 (offset 4100) counts with ds_inc's wrap limit 1.0 as an integer
    let base = m.mem.alloc_u32(&[0, 0]);
    m.wave.sgpr[0] = base as u32;
    m.wave.sgpr[1] = (base >> 32) as u32;
    m.lds[4104..4108].copy_from_slice(&1000u32.to_le_bytes());
    m.run().unwrap();
    let mut max = f32::NEG_INFINITY.to_bits();
    let mut rsub = 1000u32;
    for lane in 0..64 {
        let v2 = m.v(2, lane);
        assert_eq!([m.v(6, lane), m.v(7, lane), m.v(8, lane), m.v(9, lane)], [v2, 0x200 + lane as u32, 0x300 + lane as u32, 0x400 + lane as u32], "read2_b64 lane {lane}");
        assert_eq!([m.v(14, lane), m.v(15, lane), m.v(16, lane)], [0x500 + lane as u32, 0x600 + lane as u32, 0x700 + lane as u32], "b96 lane {lane}");
        // ds_max_rtn_f32 returns the running maximum before this lane (LDS starts at +0.0)
        let before = if lane == 0 { 0 } else { max };
        assert_eq!(m.v(19, lane), before, "ds_max_rtn_f32 lane {lane}");
        max = if lane == 0 { if f32::from_bits(v2) > 0.0 { v2 } else { 0 } } else if f32::from_bits(v2) > f32::from_bits(max) { v2 } else { max };
        // ds_inc with limit 0x3f800000: counts 0, 1, 2, ...
        assert_eq!(m.v(20, lane), lane as u32, "ds_inc_rtn lane {lane}");
        assert_eq!(m.v(21, lane), rsub, "ds_rsub_rtn lane {lane}");
        rsub = (lane as u32).wrapping_sub(rsub);
    }
    let sum = m.mem.read_u32s(base, 2);
    assert_eq!(f64::from_bits(sum[0] as u64 | (sum[1] as u64) << 32), 32.0, "64 lanes added 0.5");
}

#[test]
fn clocks_come_from_the_memory_interface() {
    let mut m = Machine::new(program!("clock"));
    m.run().unwrap();
    // SparseMemory's shader clock advances 4 per read, real time 1 per read / 4
    assert_eq!(m.s64(0), 4);
    assert_eq!(m.s64(2), 5 / 4);
    assert_eq!(m.s64(4), 9);
}
