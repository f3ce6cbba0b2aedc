// GFX10 lane moves in wave32: DPP8, row_share, row_xmask, ds_bpermute
v_mov_b32_dpp v10, v0 dpp8:[7,6,5,4,3,2,1,0]
v_mov_b32_dpp v11, v0 row_share:3 row_mask:0xf bank_mask:0xf
v_mov_b32_dpp v12, v0 row_xmask:1 row_mask:0xf bank_mask:0xf
v_add_nc_u32_dpp v15, v0, v0 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf
ds_bpermute_b32 v13, v14, v0
s_waitcnt lgkmcnt(0)
v_mbcnt_lo_u32_b32 v16, -1, 0
s_endpgm
