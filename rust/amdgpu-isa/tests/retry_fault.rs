// SPDX-License-Identifier: GPL-2.0 OR MIT
//! XNACK retry faults from shaders: a FLAT/GLOBAL or SMEM instruction that
//! faults on some lane leaves the wave and memory as they were (every
//! lane's address is probed first), so that the virtual GPU can resolve
//! the fault (SVM) and execute the instruction again.  An atomic half
//! applied before a fault would count twice on the retry: histo_global's
//! bins are split so that one `global_atomic_add` touches a mapped and an
//! unmapped page.

mod common;
use common::*;

const SOURCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/hip/suite.hip");

fn lcg(x: &mut u32) -> u32 {
    *x = x.wrapping_mul(1103515245).wrapping_add(12345);
    *x >> 7
}

/// Places `values` at a fresh address, only the first `mapped` of them
/// mapped: the rest (a separate region) is returned, to be mapped at the
/// first fault.
fn split_alloc(mem: &mut SparseMemory, values: &[u32], mapped: usize) -> (u64, (u64, Vec<u8>)) {
    let bytes = |v: &[u32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let base = mem.reserve(4 * values.len());
    mem.map(base, bytes(&values[..mapped]));
    (base, (base + 4 * mapped as u64, bytes(&values[mapped..])))
}

#[test]
fn global_atomics_retried_after_a_fault_count_once() {
    let Some(code) = compile_hip(SOURCE, "suite") else { return };
    let n = 4096usize;
    let mut s = 5;
    let input: Vec<u32> = (0..n).map(|_| lcg(&mut s)).collect();
    let mut mem = SparseMemory::new();
    let (pbins, (late_at, late)) = split_alloc(&mut mem, &[0; 256], 128);
    load_code_object(&mut mem, &code);
    let pin = mem.alloc_u32(&input);
    let k = [&pin.to_le_bytes()[..], &pbins.to_le_bytes(), &(n as i32).to_le_bytes()].concat();
    let mut late = Some(late);
    let mut faults = 0;
    run_kernel_retrying(&mut mem, &code, "_Z12histo_globalPKjPji", &k, [n as u32, 1, 1], [256, 1, 1], &mut |mem, fault| {
        faults += 1;
        assert!(fault.address >= late_at && fault.address < late_at + 512, "fault at {:#x}", fault.address);
        match late.take() {
            Some(bytes) => {
                mem.map(late_at, bytes);
                true
            }
            None => false,
        }
    });
    assert_eq!(faults, 1);
    let mut want = [0u32; 256];
    for v in &input {
        want[(v & 255) as usize] += 1;
    }
    let got = [mem.read_u32s(pbins, 128), mem.read_u32s(late_at, 128)].concat();
    assert_eq!(&got[..], &want[..]);
}
