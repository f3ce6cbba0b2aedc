s_mov_b32 s0, -16
s_mov_b32 s1, 0.5
s_mov_b32 s2, 0x12345678
s_mov_b64 s[4:5], -1
s_mov_b64 s[6:7], 0xfffffff0
s_mov_b32 s8, 64
s_mov_b32 s9, -4.0
s_movk_i32 s10, 0x8000
v_mov_b32_e32 v0, 1.0
v_mov_b32_e32 v1, 0x4048f5c3
v_mov_b32_e32 v2, s2
v_add_u32_e32 v3, 64, v2
s_endpgm
