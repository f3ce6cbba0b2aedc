// GFX10's 16-bit ops keep the high half of their destination (GFX9 zeroes
// it; LLVM GCNSubtarget::zeroesHigh16BitsOfDest): f16 arithmetic in e32 and
// e64 forms, v_cvt_f16_f32, the 16-bit integer ops.  Every destination is
// preset to a marker; v1, v2, v3, v7 hold f16 values, v4 an f32, v5 and v6
// u16 values, each with other bits in its high half.
v_add_f16 v10, v1, v2
v_mul_f16_e64 v11, v1, v2
v_fma_f16 v12, v1, v2, v3
v_sqrt_f16 v13, v7
v_max_f16 v14, v1, v2
v_cvt_f16_f32 v15, v4
v_mul_lo_u16 v16, v5, v6
v_lshlrev_b16 v17, 3, v5
v_max_i16 v18, v5, v6
v_min_u16 v19, v5, v6
v_ashrrev_i16 v20, 2, v5
s_endpgm
