// SPDX-License-Identifier: GPL-2.0 OR MIT
//! Debian's own librocsparse.so.0 gfx90a and gfx1030 (wave32) kernels (as
//! built by Debian, out of the library's .hip_fatbin, 111 bundles) run
//! whole on the host build of the interpreter: csrmvn_general_kernel<512, 16, int, int, float>,
//! the CSR SpMV rocsparse_scsrmv runs without analysis, y = alpha A x +
//! beta y on a 300 x 280 matrix with empty and long rows, against a CPU
//! reference in f64.  Skipped loudly without the library (scripts/setup
//! installs it).

mod common;
#[path = "common/census.rs"]
mod census;

use amdgpu_isa::code_object::Elf;
use common::*;

const LIB: &str = "/usr/lib/x86_64-linux-gnu/librocsparse.so.0";
const GENERAL: &str = "_ZL21csrmvn_general_kernelILj512ELj16EiiffEvbT2_T4_PKT1_PKS0_PKT3_S9_S1_PS7_21rocsparse_index_base_";
/// bsrxmvn_5x5_kernel<50, float, int, int, float>: BSR SpMV with 5x5
/// blocks, a workgroup of 50 work-items per block row.  Its LDS reduction
/// reads other work-items' sums after `__threadfence_block()` only, no
/// `s_barrier` (the kernel has none): right in one wave64 (gfx90a), a race
/// across the two wave32s of a gfx1030 workgroup.  Run from the gfx1030
/// code object, block rows come out wrong however the waves take turns
/// (64 instructions each: the first wave reads the second's sums before
/// they are written; one each, in lockstep: still, e.g. in a row of 5
/// blocks, where the second wave skips the last loop iteration, runs ahead
/// and adds a neighbour's sum into its own before the first wave has read
/// it), so it is tested on gfx90a only.
const BSRX_5X5: &str = "_ZL18bsrxmvn_5x5_kernelILj50EfiifEvT2_20rocsparse_direction_T3_S0_PKS0_PKT1_S7_S4_PKT0_SA_S2_PS8_21rocsparse_index_base_";

struct Lcg(u32);
impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self.0.wrapping_mul(1664525).wrapping_add(1013904223);
        self.0 >> 8
    }
}

#[test]
fn csrmv_general_matches_cpu() {
    csrmv_general(Target::Gfx90a);
}

#[test]
fn csrmv_general_matches_cpu_gfx1030() {
    csrmv_general(Target::Gfx1030);
}

/// The code object of `target` in the library that has `kernel`, or None
/// (said loudly) without the library.
fn kernel_code_object(target: Target, kernel: &str) -> Option<Vec<u8>> {
    if !std::path::Path::new(LIB).exists() {
        eprintln!("\n\n*** {LIB} not installed (scripts/setup installs librocsparse-dev): SKIPPED ***\n");
        return None;
    }
    let suffix = match target {
        Target::Gfx90a => "--gfx90a:xnack-",
        Target::Gfx1030 => "--gfx1030",
    };
    let objects = census::code_objects(LIB, &|t: &str| t.ends_with(suffix)).expect(LIB);
    let code = objects.into_iter().find(|c| Elf::parse(&c.bytes).and_then(|e| e.symbol(&format!("{kernel}.kd"))).is_some()).expect("the kernel's code object");
    Some(code.bytes)
}

fn csrmv_general(target: Target) {
    let Some(code) = kernel_code_object(target, GENERAL) else { return };
    let (m, n) = (300usize, 280usize);
    let mut rng = Lcg(12345);
    let (mut row_ptr, mut col, mut val) = (vec![0i32], Vec::new(), Vec::new());
    for r in 0..m {
        let len = if r % 50 == 7 { 40 } else { rng.next() % 9 };
        let mut c = rng.next() % 7;
        for _ in 0..len {
            if c as usize >= n {
                break;
            }
            col.push(c as i32);
            val.push(((rng.next() % 2001) as i32 - 1000) as f32 / 256.0);
            c += 1 + rng.next() % 6;
        }
        row_ptr.push(col.len() as i32);
    }
    let x: Vec<f32> = (0..n).map(|_| ((rng.next() % 201) as i32 - 100) as f32 / 64.0).collect();
    let y: Vec<f32> = (0..m).map(|_| ((rng.next() % 201) as i32 - 100) as f32 / 32.0).collect();
    let (alpha, beta) = (1.5f32, -0.5f32);
    let bytes = |v: &[u32]| v.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
    let mut mem = SparseMemory::new();
    load_code_object(&mut mem, &code);
    let d_row = mem.alloc(bytes(&row_ptr.iter().map(|&v| v as u32).collect::<Vec<_>>()));
    let d_col = mem.alloc(bytes(&col.iter().map(|&v| v as u32).collect::<Vec<_>>()));
    let d_val = mem.alloc(bytes(&val.iter().map(|v| v.to_bits()).collect::<Vec<_>>()));
    let d_x = mem.alloc(bytes(&x.iter().map(|v| v.to_bits()).collect::<Vec<_>>()));
    let d_y = mem.alloc(bytes(&y.iter().map(|v| v.to_bits()).collect::<Vec<_>>()));
    // (bool conj, int m, float alpha, row_ptr, col_ind, val, x, float beta, y, base)
    let mut k = vec![0u8; 68];
    k[4..8].copy_from_slice(&(m as u32).to_le_bytes());
    k[8..12].copy_from_slice(&alpha.to_le_bytes());
    for (o, p) in [(16, d_row), (24, d_col), (32, d_val), (40, d_x), (56, d_y)] {
        k[o..o + 8].copy_from_slice(&p.to_le_bytes());
    }
    k[48..52].copy_from_slice(&beta.to_le_bytes());
    // 16 lanes a row, 32 rows a workgroup of 512.
    let blocks = m.div_ceil(32) as u32;
    run_kernel_on(target, &mut mem, &code, GENERAL, &k, [blocks * 512, 1, 1], [512, 1, 1]);
    let out: Vec<f32> = mem.read_u32s(d_y, m).into_iter().map(f32::from_bits).collect();
    for r in 0..m {
        let (mut want, mut mag) = (0f64, (beta * y[r]).abs() as f64);
        for k in row_ptr[r] as usize..row_ptr[r + 1] as usize {
            want += val[k] as f64 * x[col[k] as usize] as f64;
            mag += (alpha * val[k] * x[col[k] as usize]).abs() as f64;
        }
        let want = alpha as f64 * want + beta as f64 * y[r] as f64;
        assert!((out[r] as f64 - want).abs() <= 1e-5 * (mag + 1.0), "y[{r}] = {}, want {want}", out[r]);
    }
    eprintln!("{} csrmv general: {m} x {n}, nnz {}, every row matches", target.arch(), col.len());
}

#[test]
fn bsrxmv_5x5_matches_cpu() {
    for (dir, masked) in [(0, false), (1, false), (0, true)] {
        bsrxmv_5x5(Target::Gfx90a, dir, masked);
    }
}


/// y = alpha A x + beta y for a BSR matrix of 5x5 blocks (37 x 29 block
/// rows and columns, 0 to 6 blocks a row, blocks stored row-major for
/// `dir` 0 (rocsparse_direction_row), column-major for 1), against a CPU
/// reference; `masked`: only the block rows a mask lists are computed
/// (one workgroup each), the others keep y.
fn bsrxmv_5x5(target: Target, dir: u32, masked: bool) {
    let Some(code) = kernel_code_object(target, BSRX_5X5) else { return };
    let (mb, nb) = (37usize, 29usize);
    let mut rng = Lcg(777 + dir);
    let (mut row_ptr, mut col) = (vec![0i32], Vec::new());
    for _ in 0..mb {
        let mut c = rng.next() % 5;
        for _ in 0..rng.next() % 7 {
            if c as usize >= nb {
                break;
            }
            col.push(c as i32);
            c += 1 + rng.next() % 5;
        }
        row_ptr.push(col.len() as i32);
    }
    let val: Vec<f32> = (0..col.len() * 25).map(|_| ((rng.next() % 2001) as i32 - 1000) as f32 / 256.0).collect();
    let x: Vec<f32> = (0..nb * 5).map(|_| ((rng.next() % 201) as i32 - 100) as f32 / 64.0).collect();
    let y: Vec<f32> = (0..mb * 5).map(|_| ((rng.next() % 201) as i32 - 100) as f32 / 32.0).collect();
    let mask: Vec<i32> = (0..mb as i32).filter(|r| r % 3 != 1).collect();
    let (alpha, beta) = (1.25f32, -0.75f32);
    let words = |v: &[u32]| v.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
    let ints = |v: &[i32]| words(&v.iter().map(|&w| w as u32).collect::<Vec<_>>());
    let floats = |v: &[f32]| words(&v.iter().map(|w| w.to_bits()).collect::<Vec<_>>());
    let mut mem = SparseMemory::new();
    load_code_object(&mut mem, &code);
    let d_mask = if masked { mem.alloc(ints(&mask)) } else { 0 };
    let (d_row, d_col, d_val) = (mem.alloc(ints(&row_ptr)), mem.alloc(ints(&col)), mem.alloc(floats(&val)));
    let (d_x, d_y) = (mem.alloc(floats(&x)), mem.alloc(floats(&y)));
    // (int mb, dir, float alpha, int size_of_mask, mask, row_ptr,
    // end_ptr (null: row_ptr[row + 1]), col_ind, val, x, float beta, y, base)
    let mut k = vec![0u8; 84];
    k[0..4].copy_from_slice(&(mb as u32).to_le_bytes());
    k[4..8].copy_from_slice(&dir.to_le_bytes());
    k[8..12].copy_from_slice(&alpha.to_le_bytes());
    k[12..16].copy_from_slice(&(if masked { mask.len() as u32 } else { 0 }).to_le_bytes());
    for (o, p) in [(16, d_mask), (24, d_row), (40, d_col), (48, d_val), (56, d_x), (72, d_y)] {
        k[o..o + 8].copy_from_slice(&p.to_le_bytes());
    }
    k[64..68].copy_from_slice(&beta.to_le_bytes());
    let rows = if masked { mask.len() } else { mb } as u32;
    run_kernel_on(target, &mut mem, &code, BSRX_5X5, &k, [rows * 50, 1, 1], [50, 1, 1]);
    let out: Vec<f32> = mem.read_u32s(d_y, mb * 5).into_iter().map(f32::from_bits).collect();
    for r in 0..mb {
        let computed = !masked || mask.contains(&(r as i32));
        for i in 0..5 {
            let at = r * 5 + i;
            if !computed {
                assert_eq!(out[at].to_bits(), y[at].to_bits(), "{}: y[{at}] of an unmasked row changed", target.arch());
                continue;
            }
            let (mut sum, mut mag) = (0f64, (beta * y[at]).abs() as f64);
            for b in row_ptr[r] as usize..row_ptr[r + 1] as usize {
                for j in 0..5 {
                    let a = if dir == 0 { val[b * 25 + i * 5 + j] } else { val[b * 25 + j * 5 + i] };
                    sum += a as f64 * x[col[b] as usize * 5 + j] as f64;
                    mag += (alpha * a * x[col[b] as usize * 5 + j]).abs() as f64;
                }
            }
            let want = alpha as f64 * sum + beta as f64 * y[at] as f64;
            assert!((out[at] as f64 - want).abs() <= 1e-5 * (mag + 1.0), "{} dir {dir} masked {masked}: y[{at}] = {}, want {want}", target.arch(), out[at]);
        }
    }
    eprintln!("{} bsrxmv 5x5 dir {dir}{}: {mb} x {nb} blocks, nnzb {}, every row matches", target.arch(), if masked { " masked" } else { "" }, col.len());
}
