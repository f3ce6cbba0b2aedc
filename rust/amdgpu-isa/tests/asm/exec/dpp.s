// v0 = lane id; each DPP form moves it around; v10.. start as 1000
v_mov_b32_dpp v10, v0 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf
v_mov_b32_dpp v11, v0 row_shr:1 row_mask:0xf bank_mask:0xf bound_ctrl:0
v_mov_b32_dpp v12, v0 row_shl:1 row_mask:0xf bank_mask:0xf
v_mov_b32_dpp v13, v0 row_bcast:15 row_mask:0xa bank_mask:0xf
v_mov_b32_dpp v14, v0 wave_shr:1 row_mask:0xf bank_mask:0xf
v_mov_b32_dpp v15, v0 row_mirror row_mask:0xf bank_mask:0x5
v_add_u32_dpp v16, v0, v0 row_ror:4 row_mask:0xf bank_mask:0xf
s_endpgm
