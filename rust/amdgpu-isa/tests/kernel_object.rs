// SPDX-License-Identifier: GPL-2.0 OR MIT
//! The kernel objects AQL dispatch packets point at: v3+ kernel descriptors
//! and the legacy `amd_kernel_code_t` of ROCr's blit kernels.

use amdgpu_isa::code_object::{is_amd_kernel_code, KernelDescriptor, AMD_KERNEL_CODE_SIZE};

fn put(b: &mut [u8], o: usize, v: &[u8]) {
    b[o..o + v.len()].copy_from_slice(v);
}

/// An `amd_kernel_code_t` as ROCr's AssembleShader writes one: version 1.1,
/// machine AMDGPU 9.0.10, code right after the 256-byte header, kernarg
/// pointer enabled, wave64.
fn legacy() -> Vec<u8> {
    let mut b = vec![0u8; AMD_KERNEL_CODE_SIZE];
    put(&mut b, 0, &1u32.to_le_bytes());
    put(&mut b, 4, &1u32.to_le_bytes());
    put(&mut b, 8, &1u16.to_le_bytes());
    put(&mut b, 10, &9u16.to_le_bytes());
    put(&mut b, 14, &10u16.to_le_bytes());
    put(&mut b, 16, &256i64.to_le_bytes());
    put(&mut b, 48, &0x00af_0041u32.to_le_bytes()); // rsrc1
    put(&mut b, 52, &0x0000_0090u32.to_le_bytes()); // rsrc2: 8 user SGPRs, workgroup id x
    put(&mut b, 56, &8u32.to_le_bytes()); // kernarg segment pointer
    put(&mut b, 60, &16u32.to_le_bytes()); // private bytes per work-item
    put(&mut b, 64, &512u32.to_le_bytes()); // group segment bytes
    put(&mut b, 72, &80u64.to_le_bytes()); // kernarg bytes
    b[103] = 6; // wavefront_size: 2^6
    b
}

#[test]
fn legacy_amd_kernel_code_is_read_at_its_own_offsets() {
    let b = legacy();
    assert!(is_amd_kernel_code(&b));
    let kd = KernelDescriptor::parse_kernel_object(&b).expect("parsed");
    assert_eq!(kd.kernel_code_entry_byte_offset, 256);
    assert_eq!((kd.private_segment_fixed_size, kd.group_segment_fixed_size, kd.kernarg_size), (16, 512, 80));
    assert_eq!((kd.compute_pgm_rsrc1, kd.compute_pgm_rsrc2, kd.compute_pgm_rsrc3), (0x00af_0041, 0x90, 0));
    assert!(kd.enable_kernarg_segment_ptr() && !kd.enable_dispatch_ptr() && !kd.wavefront_size32());
    assert_eq!(kd.user_sgpr_count(), 8);
    assert!(kd.enable_workgroup_id(0));
}

#[test]
fn legacy_grid_workgroup_count_and_wave32_are_refused_or_kept() {
    let mut b = legacy();
    put(&mut b, 56, &(8u32 | 1 << 7).to_le_bytes());
    assert_eq!(KernelDescriptor::parse_kernel_object(&b), None);
    let mut b = legacy();
    b[103] = 5;
    assert!(KernelDescriptor::parse_kernel_object(&b).unwrap().wavefront_size32());
    // Too short to be one.
    assert_eq!(KernelDescriptor::parse_amd_kernel_code(&legacy()[..200]), None);
}

#[test]
fn v3_descriptors_are_not_mistaken_for_legacy_headers() {
    let mut b = vec![0u8; 64];
    put(&mut b, 0, &1024u32.to_le_bytes()); // group segment
    put(&mut b, 8, &24u32.to_le_bytes()); // kernarg size
    put(&mut b, 16, &0x1000i64.to_le_bytes());
    put(&mut b, 56, &8u16.to_le_bytes());
    assert!(!is_amd_kernel_code(&b));
    let kd = KernelDescriptor::parse_kernel_object(&b).expect("parsed");
    assert_eq!((kd.group_segment_fixed_size, kd.kernarg_size, kd.kernel_code_entry_byte_offset), (1024, 24, 0x1000));
    // A 64-byte descriptor is enough; a legacy header needs 256.
    assert_eq!(KernelDescriptor::parse_kernel_object(&b[..63]), None);
}
