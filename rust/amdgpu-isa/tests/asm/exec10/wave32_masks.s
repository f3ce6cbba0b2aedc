// wave32: lane masks are one SGPR, VCC is VCC_LO, v_cmpx writes EXEC only
v_cmp_lt_u32_e32 vcc_lo, 5, v0
s_mov_b32 s0, vcc_lo
v_cmp_gt_u32_e64 s1, 10, v0
v_cndmask_b32_e64 v1, 0, 1, s1
v_add_co_u32 v2, s3, v0, -1
v_add_co_ci_u32_e32 v3, vcc_lo, 0, v0, vcc_lo
s_mov_b32 s9, vcc_lo
s_and_saveexec_b32 s4, s1
v_mov_b32_e32 v4, 7
s_or_b32 exec_lo, exec_lo, s4
v_cmpx_gt_u32_e32 8, v0
v_mov_b32_e32 v5, 9
s_mov_b32 s5, exec_lo
s_mov_b32 exec_lo, s4
v_cmpx_eq_u32_e64 v0, 3
s_mov_b32 s6, exec_lo
s_cbranch_execz skip
s_mov_b32 s7, 1
skip:
s_mov_b32 exec_lo, 0
s_cbranch_execnz end
s_mov_b32 s8, 1
end:
s_mov_b32 exec_lo, s4
s_endpgm
