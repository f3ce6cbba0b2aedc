v_bcnt_u32_b32 v2, v0, 5
v_bfm_b32 v3, 5, 3
v_perm_b32 v4, v0, v1, s0
v_med3_f32 v5, v0, v1, -v1
v_mad_u32_u16 v6, v0, v1, 7
v_mad_i32_i16 v7, v0, v1, 7
v_ffbh_i32_e32 v8, v1
v_mov_b32_e32 v9, v0
v_mov_b32_e32 v10, v1
v_swap_b32 v9, v10
s_brev_b64 s[4:5], s[2:3]
s_bcnt0_i32_b64 s6, s[2:3]
s_ff0_i32_b32 s7, s2
s_mov_b64 s[8:9], 0
s_bitset1_b64 s[8:9], 40
s_endpgm
