v_cmp_lt_f32_e32 vcc, v0, v1
s_mov_b64 s[0:1], vcc
v_cmp_nge_f32_e64 s[2:3], v0, v1
v_cmp_class_f32_e64 s[4:5], v0, 0x3
v_cmp_gt_i32_e64 s[6:7], v0, v1
v_cmp_lt_u64_e64 s[8:9], v[0:1], v[2:3]
v_cndmask_b32_e32 v4, v0, v1, vcc
s_endpgm
