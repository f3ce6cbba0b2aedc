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

fn csrmv_general(target: Target) {
    if !std::path::Path::new(LIB).exists() {
        eprintln!("\n\n*** {LIB} not installed (scripts/setup installs librocsparse-dev): SKIPPED ***\n");
        return;
    }
    let suffix = match target {
        Target::Gfx90a => "--gfx90a:xnack-",
        Target::Gfx1030 => "--gfx1030",
    };
    let objects = census::code_objects(LIB, &|t: &str| t.ends_with(suffix)).expect(LIB);
    let code = objects.iter().find(|c| Elf::parse(&c.bytes).and_then(|e| e.symbol(&format!("{GENERAL}.kd"))).is_some()).expect("the kernel's code object");
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
    load_code_object(&mut mem, &code.bytes);
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
    run_kernel_on(target, &mut mem, &code.bytes, GENERAL, &k, [blocks * 512, 1, 1], [512, 1, 1]);
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
