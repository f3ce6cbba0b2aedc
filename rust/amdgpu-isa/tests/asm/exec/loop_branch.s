// s1 = sum of 1..s0, counting down with s_cmp + s_cbranch
s_mov_b32 s1, 0
loop:
s_add_u32 s1, s1, s0
s_sub_u32 s0, s0, 1
s_cmp_lg_u32 s0, 0
s_cbranch_scc1 loop
s_endpgm
