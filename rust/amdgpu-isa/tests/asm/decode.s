// One instruction per line, every encoding class clang emits for gfx90a;
// scripts/gen-fixtures.sh assembles them with llvm-mc-15 into
// tests/fixtures/decode.txt.
s_add_u32 s0, s1, s2
s_addc_u32 s5, s6, 7
s_sub_i32 s1, s1, s3
s_min_u32 s0, s1, s0
s_and_b32 s0, s0, 0xffff
s_and_b64 s[0:1], s[2:3], exec
s_or_b64 exec, exec, s[4:5]
s_lshl_b64 s[0:1], s[8:9], 2
s_bfe_u32 s2, s3, 0x80008
s_mul_i32 s3, s8, s0
s_mul_hi_u32 s3, s8, s0
s_cselect_b32 s0, -1, 0
s_lshl2_add_u32 s0, s1, s2
s_pack_ll_b32_b16 s0, s1, s2
s_movk_i32 s4, 0x1234
s_addk_i32 s4, 0xfff0
s_cmpk_eq_u32 s2, 0x10
s_getreg_b32 s0, hwreg(HW_REG_MODE, 4, 4)
s_setreg_b32 hwreg(HW_REG_MODE, 0, 8), s1
s_setreg_imm32_b32 hwreg(HW_REG_MODE, 4, 2), 3
s_mov_b32 s0, src_shared_base
s_mov_b32 s1, 0.5
s_mov_b32 s2, -16
s_mov_b64 s[4:5], 0xfffffff0
s_mov_b64 vcc, -1
s_not_b32 s0, s1
s_brev_b32 s0, s1
s_bcnt1_i32_b64 s0, s[2:3]
s_ff1_i32_b64 s0, exec
s_flbit_i32_b32 s0, s1
s_and_saveexec_b64 s[0:1], vcc
s_xor_saveexec_b64 s[2:3], s[4:5]
s_getpc_b64 s[0:1]
s_setpc_b64 s[30:31]
s_swappc_b64 s[30:31], s[4:5]
s_sext_i32_i16 s0, s1
s_cmp_lt_u32 s6, 2
s_cmp_eq_u64 s[0:1], 0
s_bitcmp1_b32 s0, 3
s_nop 0
s_endpgm
s_branch 65514
s_cbranch_scc0 21
s_cbranch_scc1 3
s_cbranch_execz 25
s_cbranch_vccnz 2
s_waitcnt vmcnt(0) lgkmcnt(0)
s_barrier
s_trap 2
s_sleep 1
s_load_dword s0, s[4:5], 0x4
s_load_dwordx2 s[4:5], s[6:7], 0x10
s_load_dwordx4 s[0:3], s[6:7], 0x0
s_load_dwordx8 s[8:15], s[2:3], 0x20
s_load_dword s1, s[4:5], s9
s_load_dword s1, s[4:5], 0xfffff
s_buffer_load_dword s0, s[4:7], 0x8
s_store_dword s0, s[2:3], 0x10
s_memtime s[0:1]
s_dcache_wb
v_mov_b32_e32 v3, s3
v_mov_b32_e32 v0, 0
v_mov_b32_e32 v1, 0x3f800000
v_mov_b32_e32 v2, -4.0
v_readfirstlane_b32 s0, v1
v_cvt_f32_u32_e32 v1, v2
v_cvt_i32_f32_e32 v1, v2
v_rcp_f32_e32 v1, v2
v_sqrt_f32_e32 v1, v2
v_not_b32_e32 v1, v2
v_add_f32_e32 v2, v6, v7
v_sub_f32_e32 v2, s6, v7
v_mul_f32_e32 v2, 0.5, v7
v_fmac_f32_e32 v3, s0, v2
v_mac_f32_e32 v3, v1, v2
v_madmk_f32 v1, v2, 0x41200000, v3
v_madak_f32 v1, v2, v3, 0x41200000
v_add_u32_e32 v0, s0, v0
v_sub_u32_e32 v0, 1, v0
v_add_co_u32_e32 v2, vcc, s2, v0
v_addc_co_u32_e32 v3, vcc, v3, v1, vcc
v_subb_co_u32_e32 v3, vcc, v3, v1, vcc
v_cndmask_b32_e32 v0, v1, v2, vcc
v_ashrrev_i32_e32 v1, 31, v0
v_lshlrev_b32_e32 v1, 2, v0
v_and_b32_e32 v1, 0xff, v0
v_mul_u32_u24_e32 v1, v2, v3
v_max_f32_e32 v1, v2, v3
v_min_i32_e32 v1, v2, v3
v_xnor_b32_e32 v1, v2, v3
v_cmp_gt_i32_e32 vcc, s2, v0
v_cmp_eq_u32_e32 vcc, 0, v0
v_cmp_lt_f32_e32 vcc, v1, v2
v_cmp_neq_f32_e32 vcc, 1.0, v2
v_cmpx_gt_u32_e32 vcc, s4, v0
v_cmp_class_f32_e32 vcc, v1, v2
v_cmp_lt_u64_e32 vcc, v[0:1], v[2:3]
v_cmp_gt_i32_e64 s[0:1], v0, v1
v_cmp_le_f32_e64 s[2:3], -v0, |v1|
v_add_f32_e64 v0, -v1, |v2|
v_mul_f32_e64 v0, v1, v2 clamp
v_mul_f32_e64 v0, v1, v2 mul:2
v_add_f32_e64 v0, v1, v2 div:2
v_fma_f32 v0, v1, v2, v3
v_fma_f32 v0, -v1, v2, |v3|
v_mad_f32 v0, v1, v2, v3
v_mad_u64_u32 v[0:1], s[2:3], v4, v5, v[6:7]
v_mul_lo_u32 v0, v1, v2
v_mul_hi_u32 v0, v1, s2
v_lshlrev_b64 v[0:1], 2, v[0:1]
v_ashrrev_i64 v[0:1], 3, v[2:3]
v_bfe_u32 v0, v1, 8, 8
v_bfe_i32 v0, v1, 4, 12
v_bfi_b32 v0, v1, v2, v3
v_alignbit_b32 v0, v1, v2, 7
v_lshl_add_u32 v2, s4, 2, v1
v_add3_u32 v0, v1, v2, v3
v_and_or_b32 v0, v1, v2, v3
v_or3_b32 v0, v1, v2, v3
v_med3_i32 v0, v1, v2, v3
v_max3_f32 v0, v1, v2, v3
v_add_co_u32_e64 v0, s[4:5], v1, v2
v_addc_co_u32_e64 v0, s[4:5], v1, v2, s[6:7]
v_cndmask_b32_e64 v0, v1, v2, s[0:1]
v_div_scale_f32 v0, vcc, v1, v1, v2
v_div_fmas_f32 v0, v1, v2, v3
v_div_fixup_f32 v0, v1, v2, v3
v_readlane_b32 s0, v1, 5
v_writelane_b32 v1, s0, 7
v_mbcnt_lo_u32_b32 v0, -1, 0
v_mbcnt_hi_u32_b32 v0, -1, v0
v_lshlrev_b32_sdwa v0, v1, v0 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:DWORD src1_sel:BYTE_0
v_add_u32_sdwa v0, v1, v2 dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE src0_sel:WORD_0 src1_sel:BYTE_2
v_mov_b32_sdwa v0, v1 dst_sel:BYTE_1 dst_unused:UNUSED_SEXT src0_sel:BYTE_3
v_cmp_eq_u32_sdwa s[0:1], v1, v2 src0_sel:WORD_1 src1_sel:DWORD
v_mov_b32_dpp v0, v1 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf
v_add_f32_dpp v0, v1, v2 row_shr:1 row_mask:0xf bank_mask:0xf bound_ctrl:0
v_pk_fma_f32 v[0:1], v[2:3], v[4:5], v[6:7]
v_pk_add_f16 v0, v1, v2
v_pk_mul_f32 v[0:1], v[2:3], v[4:5] op_sel_hi:[0,1]
v_accvgpr_write_b32 a0, v1
v_accvgpr_read_b32 v1, a0
v_mfma_f32_4x4x1f32 a[0:3], v0, v1, a[0:3]
ds_write_b32 v1, v3
ds_write_b64 v1, v[2:3] offset:16
ds_write2_b32 v1, v2, v3 offset0:1 offset1:2
ds_read_b32 v1, v0
ds_read_b32 v2, v2 offset:1024
ds_read2_b32 v[0:1], v2 offset0:4 offset1:8
ds_read_b128 v[0:3], v4
ds_add_u32 v0, v1
ds_add_rtn_u32 v2, v0, v1
ds_add_f32 v0, v1
ds_cmpst_rtn_b32 v0, v1, v2, v3
ds_swizzle_b32 v0, v1 offset:swizzle(SWAP,1)
ds_bpermute_b32 v0, v1, v2
global_load_dword v6, v[4:5], off
global_load_dword v0, v1, s[2:3] offset:-16
global_load_dwordx4 v[0:3], v[4:5], off offset:64
global_load_ubyte v0, v[4:5], off
global_load_sshort v0, v[4:5], off
global_store_dword v[0:1], v2, off
global_store_dword v0, v1, s[0:1]
global_store_dwordx2 v[0:1], v[2:3], off offset:8
global_store_byte v[0:1], v2, off
global_atomic_add v0, v1, s[2:3]
global_atomic_add v2, v0, v1, s[2:3] glc
global_atomic_cmpswap v2, v[0:1], v[4:5], off glc
global_atomic_add_f32 v[0:1], v2, off
global_atomic_add_x2 v[0:1], v[2:3], off
flat_load_dword v1, v[2:3]
flat_load_dword v1, v[2:3] offset:4095
flat_store_dword v[2:3], v1
flat_atomic_swap v0, v[2:3], v1 glc
scratch_load_dword v0, v1, off offset:4
scratch_load_dword v0, off, s2 offset:-8
scratch_store_dword off, v0, s4
scratch_store_dwordx2 v1, v[2:3], off
buffer_store_dword v0, off, s[0:3], 0 offset:4
buffer_load_dword v0, v1, s[0:3], s4 offen
buffer_load_dword v0, off, s[0:3], s33 offset:16 glc
buffer_store_dword a0, off, s[0:3], 0
global_load_dword a1, v[0:1], off
