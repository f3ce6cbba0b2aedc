// GFX10 SMEM (imm + soffset), GLOBAL with saddr and with off, cache invalidates
s_load_dwordx2 s[2:3], s[0:1], 0x8
s_load_dword s4, s[0:1], s5 offset:0x4
s_waitcnt lgkmcnt(0)
global_load_dword v1, v2, s[0:1]
s_waitcnt vmcnt(0)
v_add_nc_u32_e32 v1, 1, v1
global_store_dword v[3:4], v1, off offset:16
s_waitcnt_vscnt null, 0x0
buffer_gl0_inv
buffer_gl1_inv
s_endpgm
