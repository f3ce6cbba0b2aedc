// a flat store into the shared aperture lands in LDS
v_lshlrev_b32_e32 v0, 2, v0
v_mov_b32_e32 v1, s0
flat_store_dword v[0:1], v2
s_waitcnt vmcnt(0) lgkmcnt(0)
ds_read_b32 v3, v0
s_endpgm
