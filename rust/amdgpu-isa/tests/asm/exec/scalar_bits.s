s_bfe_u32 s1, s0, 0x80008
s_bfe_i32 s2, s0, 0x40004
s_lshl_b64 s[4:5], s[6:7], 36
s_ashr_i32 s3, s0, 4
s_bcnt1_i32_b64 s8, s[6:7]
s_ff1_i32_b32 s9, s0
s_flbit_i32_b32 s10, s0
s_brev_b32 s11, s0
s_lshl2_add_u32 s12, s0, 3
s_pack_lh_b32_b16 s13, s0, s6
s_sext_i32_i8 s14, s0
s_endpgm
