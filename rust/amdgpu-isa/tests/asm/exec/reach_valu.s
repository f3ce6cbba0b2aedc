// The VALU opcodes Debian's librocrand/librocsparse gfx90a code needed
// beyond the HIP samples (tests/census.rs): inputs v1, v2, v3 (f32, or f16
// in each half), v[4:5] (f64), v23/v27 (preset destinations), s[0:1]
// (preset: a carry-out there must overwrite it).
v_log_f32 v10, v1
v_exp_f32 v11, v1
v_sin_f32 v12, v1
v_cos_f32 v13, v1
v_frexp_mant_f64 v[14:15], v[4:5]
v_frexp_exp_i32_f64 v16, v[4:5]
v_mul_f16 v17, v1, v2
v_fma_f16 v18, v1, v2, v3
v_sqrt_f16 v19, v1
v_pack_b32_f16 v20, v1, v2 op_sel:[1,0,0]
v_cmp_class_f16_e64 s[20:21], v1, v2
v_fma_mix_f32 v22, v1, v2, v3 op_sel_hi:[1,1,0]
v_fma_mixlo_f16 v23, v1, v2, v3 op_sel:[1,0,0] op_sel_hi:[1,1,0]
v_pk_fma_f16 v24, v1, v2, v3 op_sel:[0,1,0] op_sel_hi:[1,0,1]
v_sub_u32_e64 v25, v1, v2 clamp
v_add_f16_e64 v26, -v1, |v2|
v_fma_f16 v27, v1, v2, v3 op_sel:[1,1,1,1]
v_cmp_lt_f16_e64 s[22:23], v1, v2
v_pk_fma_f16 v28, v1, 1.0, v3
v_add_co_u32_e64 v29, s[0:1], v1, v2
s_endpgm
