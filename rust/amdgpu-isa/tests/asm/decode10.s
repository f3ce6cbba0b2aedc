// One instruction per line, the encoding classes clang emits for gfx1030;
// scripts/gen-fixtures.sh assembles them with llvm-mc-15 -mcpu=gfx1030 into
// tests/fixtures/decode10.txt.
s_add_u32 s0, s1, s2
s_addc_u32 s5, s6, 7
s_and_b32 s0, s0, 0xffff
s_or_b32 exec_lo, exec_lo, s4
s_andn2_b32 s0, s1, vcc_lo
s_xor_b32 s2, s3, s4
s_lshl_b64 s[0:1], s[8:9], 2
s_cselect_b32 s0, -1, 0
s_mul_i32 s3, s8, s0
s_min_u32 s0, s1, s0
s_lshl2_add_u32 s0, s1, s2
s_movk_i32 s4, 0x1234
s_getreg_b32 s4, hwreg(HW_REG_SH_MEM_BASES, 0, 16)
s_setreg_b32 hwreg(HW_REG_FLAT_SCR_LO), s12
s_waitcnt_vscnt null, 0x0
s_mov_b32 s0, src_shared_base
s_mov_b64 s[4:5], 0xfffffff0
s_and_saveexec_b32 s4, vcc_lo
s_or_saveexec_b32 s0, -1
s_xor_saveexec_b32 s1, s2
s_andn2_saveexec_b32 s3, s4
s_getpc_b64 s[0:1]
s_swappc_b64 s[30:31], s[16:17]
s_setpc_b64 s[30:31]
s_bcnt1_i32_b32 s0, exec_lo
s_brev_b32 s0, s1
s_cmp_lt_u32 s0, s1
s_cmp_eq_u64 s[0:1], 0
s_bitcmp1_b32 s0, 3
s_nop 0
s_waitcnt vmcnt(0) lgkmcnt(0)
s_branch 4
s_cbranch_scc0 3
s_cbranch_vccnz 2
s_cbranch_execz 1
s_barrier
s_clause 0x2
s_denorm_mode 15
s_round_mode 0
s_sleep 1
s_trap 2
s_endpgm
s_code_end
s_load_dword s0, s[2:3], 0x10
s_load_dwordx2 s[0:1], s[4:5], 0x0
s_load_dwordx4 s[4:7], s[4:5], s6 offset:0x8
s_load_dwordx8 s[8:15], s[0:1], 0x20
v_mov_b32_e32 v0, v1
v_mov_b32_e32 v1, 0x12345678
v_readfirstlane_b32 s0, v1
v_cvt_f32_i32_e32 v2, v3
v_cvt_f64_f32_e32 v[0:1], v2
v_rcp_f32_e32 v1, v2
v_rsq_f64_e32 v[0:1], v[2:3]
v_sqrt_f32_e32 v1, v2
v_floor_f64_e32 v[0:1], v[2:3]
v_add_nc_u32_e32 v0, s0, v1
v_sub_nc_u32_e32 v0, v1, v2
v_add_co_ci_u32_e32 v1, vcc_lo, s3, v2, vcc_lo
v_sub_co_ci_u32_e32 v1, vcc_lo, v4, v2, vcc_lo
v_cndmask_b32_e32 v0, v1, v2, vcc_lo
v_and_b32_e32 v0, 0xff, v1
v_lshlrev_b32_e32 v0, 2, v1
v_ashrrev_i32_e32 v1, 31, v0
v_add_f32_e32 v0, v1, v2
v_mul_f32_e32 v0, 0.5, v1
v_fmac_f32_e32 v0, v1, v2
v_fmamk_f32 v0, v1, 0x40000000, v2
v_fmaak_f32 v0, v1, v2, 0x3f800000
v_xor_b32_e32 v0, v1, v2
v_cmp_lt_i32_e32 vcc_lo, v0, v1
v_cmp_eq_f64_e32 vcc_lo, v[0:1], v[2:3]
v_cmpx_eq_u32_e32 0, v0
v_cmpx_ne_u32_e32 v1, v0
v_cmp_eq_u32_e64 s0, v1, v2
v_cmp_ne_u64_e64 s4, v[0:1], v[2:3]
v_cmp_class_f32_e64 s2, v0, 0x3
v_cmp_lt_f32_e64 s5, |v0|, -v1
v_cmp_gt_i32_e64 vcc_lo, 64, v0
v_cmpx_gt_i32_e64 v1, v2
v_add_nc_u32_e64 v0, v1, 0x1234
v_and_b32_e64 v0, v1, s2
v_or3_b32 v0, v1, v2, v3
v_xor3_b32 v0, v1, 0x55, s0
v_lshl_or_b32 v0, v1, 2, v3
v_lshl_add_u32 v0, v1, 3, v2
v_lshrrev_b64 v[0:1], 2, v[2:3]
v_lshlrev_b64 v[0:1], 3, v[2:3]
v_mad_u64_u32 v[0:1], s0, v2, v3, v[4:5]
v_add_co_u32 v0, s0, v1, v2
v_add_co_u32 v0, vcc_lo, s2, v2
v_add_co_ci_u32_e64 v1, s1, 0, v3, s0
v_sub_co_u32 v0, s0, v1, v2
v_cndmask_b32_e64 v0, 0, 1, s0
v_fma_f32 v0, v1, v2, -v3
v_fma_f64 v[0:1], v[2:3], v[4:5], v[6:7]
v_mul_f64 v[0:1], v[2:3], v[4:5]
v_add_f64 v[0:1], v[2:3], -v[4:5]
v_div_scale_f32 v0, vcc_lo, v1, v1, v2
v_div_scale_f64 v[0:1], s0, v[2:3], v[2:3], v[4:5]
v_div_fmas_f32 v0, v1, v2, v3
v_div_fixup_f64 v[0:1], v[2:3], v[4:5], v[6:7]
v_mul_lo_u32 v0, v1, v2
v_mbcnt_lo_u32_b32 v0, -1, 0
v_readlane_b32 s0, v1, 5
v_writelane_b32 v1, s0, 5
v_bfe_u32 v0, v1, 8, 8
v_min_u32_e64 v0, v1, 64
v_fmac_f32_e64 v0, v1, v2 clamp
v_mul_f32_e64 v0, v1, v2 mul:2
v_cvt_f32_f64_e64 v0, |v[2:3]|
v_bcnt_u32_b32 v0, v1, 0
v_lshlrev_b32_sdwa v0, v1, v2 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:DWORD src1_sel:BYTE_0
v_mov_b32_dpp v0, v1 row_share:3 row_mask:0xf bank_mask:0xf
v_mov_b32_dpp v0, v1 row_xmask:1 row_mask:0xf bank_mask:0xf
v_mov_b32_dpp v0, v1 dpp8:[1,0,3,2,5,4,7,6]
v_add_nc_u32_dpp v0, v1, v2 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf
v_pk_add_f16 v0, v1, v2
ds_write_b32 v1, v2 offset:16
ds_read_b32 v0, v1 offset:8
ds_add_u32 v0, v1
ds_bpermute_b32 v0, v1, v2
ds_write2_b32 v1, v2, v3 offset1:1
global_load_dword v0, v[2:3], off
global_load_dword v0, v2, s[0:1] offset:-16
global_load_dwordx2 v[0:1], v2, s[4:5]
global_load_ushort v0, v[2:3], off
global_store_dword v[2:3], v0, off offset:16
global_store_dwordx4 v0, v[2:5], s[0:1]
global_atomic_add v0, v1, s[0:1]
global_atomic_add_x2 v[0:1], v2, v[4:5], s[0:1] glc
global_atomic_cmpswap_x2 v[0:1], v2, v[4:7], s[2:3] glc
flat_load_dword v0, v[2:3] offset:16
flat_load_ubyte v0, v[2:3]
flat_store_dword v[2:3], v0
flat_store_byte_d16_hi v[2:3], v0
flat_atomic_add v0, v[2:3], v1 glc
scratch_load_dword v0, off, s2 offset:4
scratch_store_dword v1, v0, off
buffer_load_dword v0, off, s[0:3], 0 offset:4
buffer_store_dword v0, off, s[0:3], s32 offset:4
buffer_load_dword v1, v0, s[0:3], 0 offen
buffer_gl0_inv
buffer_gl1_inv
v_add_nc_u16 v14, v1, v2 op_sel:[1,1,1]
v_sub_nc_u16 v13, v1, s2 clamp
v_sub_nc_u16 v16, v1, 0x1234
v_fmac_f16 v20, v4, v5
v_fmac_f16_e64 v22, -v4, |v5| clamp
v_fmac_f16 v24, 1.0, v5
