v_add_u16_e32 v2, v0, v1
v_sub_u16_e32 v3, v0, v1
v_mul_lo_u16_e32 v4, v0, v1
v_lshlrev_b16_e32 v5, 3, v1
v_ashrrev_i16_e32 v6, 2, v1
v_max_i16_e32 v7, v0, v1
v_min_u16_e32 v8, v0, v1
v_cmp_lt_i16_e64 s[0:1], v0, v1
v_cmp_gt_u16_e64 s[2:3], v0, v1
v_cmpx_eq_u16_e32 vcc, v0, v1
s_mov_b64 s[4:5], exec
s_endpgm
