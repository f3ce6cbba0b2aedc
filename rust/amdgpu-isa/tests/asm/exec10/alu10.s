// GFX10 VALU and SALU: VOP3 literals, v_add_nc, v_xor3, v_fmamk/fmaak,
// s_denorm_mode/s_round_mode, SGPR_NULL, s102, readlane in wave32
v_add_nc_u32_e64 v1, v0, 0x12345
v_mul_lo_u32 v2, v0, 0x10001
v_xor3_b32 v3, v0, 0x55, s0
v_cvt_f32_u32_e32 v6, v0
v_fmamk_f32 v4, v6, 0x40000000, v6
v_fmaak_f32 v5, v6, v6, 0x3f800000
v_mov_b32_e32 v7, 1.0
v_fmac_f32_e32 v7, v6, v6
v_sub_nc_u32_e32 v8, v0, v1
v_add_co_ci_u32_e64 v9, s10, v0, -1, s11
s_denorm_mode 3
s_round_mode 2
s_getreg_b32 s5, hwreg(HW_REG_MODE, 0, 8)
v_readlane_b32 s6, v0, 33
s_add_u32 s7, null, 3
s_mov_b32 null, 5
s_mov_b32 s102, 7
s_add_u32 s8, s102, 1
s_setreg_b32 hwreg(HW_REG_FLAT_SCR_LO), s8
s_setreg_b32 hwreg(HW_REG_FLAT_SCR_HI), s7
s_getreg_b32 s9, hwreg(HW_REG_FLAT_SCR_HI)
s_clause 0x1
s_waitcnt_vscnt null, 0x0
s_waitcnt_depctr 0xffe3
s_endpgm
