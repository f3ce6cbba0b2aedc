// lanes with v0 < 10 add 100; the others keep their value; then all restore
v_cmp_gt_u32_e32 vcc, 10, v0
s_and_saveexec_b64 s[0:1], vcc
s_cbranch_execz skip
v_add_u32_e32 v0, 0x64, v0
skip:
s_or_b64 exec, exec, s[0:1]
v_cmpx_lt_u32_e64 s[2:3], v0, 5
v_mov_b32_e32 v1, 7
s_mov_b64 exec, -1
s_endpgm
