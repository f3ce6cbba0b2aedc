v_add_co_u32_e32 v2, vcc, v0, v1
v_addc_co_u32_e32 v3, vcc, 0, v1, vcc
v_sub_co_u32_e64 v4, s[4:5], v0, v1
v_mad_u64_u32 v[6:7], s[8:9], v0, v1, v[20:21]
v_mul_hi_u32 v8, v0, v1
v_mul_lo_u32 v9, v0, v1
v_lshlrev_b64 v[10:11], 33, v[0:1]
v_ashrrev_i32_e32 v12, 31, v1
v_bfe_i32 v13, v0, 4, 8
v_alignbit_b32 v14, v0, v1, 8
v_lshl_add_u32 v15, v0, 2, v1
v_med3_i32 v16, v0, v1, -1
v_mul_u32_u24_e32 v17, v0, v1
v_mbcnt_lo_u32_b32 v18, -1, 0
v_mbcnt_hi_u32_b32 v18, -1, v18
v_cndmask_b32_e64 v19, v0, v1, s[4:5]
s_endpgm
