s_mov_b32 s0, 1
v_cubeid_f32 v0, v1, v2, v3
s_endpgm
