s_mov_b32 s0, 1
v_sin_f32_e32 v0, v1
s_endpgm
