// 64-bit add/sub through SCC carry and borrow; s1:s0 += s3:s2, s5:s4 -= s3:s2
s_add_u32 s0, s0, s2
s_addc_u32 s1, s1, s3
s_cselect_b32 s10, 1, 0
s_sub_u32 s4, s4, s2
s_subb_u32 s5, s5, s3
s_cselect_b32 s11, 1, 0
s_mul_hi_u32 s12, s2, s3
s_mul_i32 s13, s2, s3
s_endpgm
