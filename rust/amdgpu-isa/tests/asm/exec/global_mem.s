// s[0:1] base; each lane loads base[lane], stores base[64 + lane] = x + 1,
// atomically adds its lane id to base[128], cmpswaps base[129] from 5
// (data v7) to 9 (data v6: FLAT cmpswap data is {src, cmp})
v_lshlrev_b32_e32 v1, 2, v0
global_load_dword v2, v1, s[0:1]
s_waitcnt vmcnt(0)
v_add_u32_e32 v2, 1, v2
global_store_dword v1, v2, s[0:1] offset:256
v_mov_b32_e32 v3, 0
global_atomic_add v4, v3, v0, s[0:1] offset:512 glc
v_mov_b32_e32 v6, 9
v_mov_b32_e32 v7, 5
v_mov_b32_e32 v8, s0
v_mov_b32_e32 v9, s1
global_atomic_cmpswap v11, v[8:9], v[6:7], off offset:516 glc
global_load_ubyte v12, v3, s[0:1] offset:1
global_load_sbyte v13, v3, s[0:1] offset:3
global_load_dwordx2 v[14:15], v3, s[0:1]
s_waitcnt vmcnt(0)
s_endpgm
