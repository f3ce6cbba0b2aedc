v_add_f32_e32 v2, v0, v1
v_mul_f32_e32 v3, 0.5, v0
v_fma_f32 v4, v0, v1, -v0
v_add_f32_e64 v5, -v0, |v1|
v_mul_f32_e64 v6, v0, v1 clamp
v_add_f32_e64 v7, v0, v1 mul:2
v_add_f32_e64 v8, v0, v1 div:2
v_fmac_f32_e32 v9, v0, v1
v_max_f32_e32 v10, v0, v1
v_madak_f32 v11, v0, v1, 0x41200000
v_cvt_f32_i32_e32 v12, v13
v_cvt_u32_f32_e32 v14, v0
v_sub_f32_e32 v15, v0, v1
v_subrev_f32_e32 v16, v0, v1
s_endpgm
