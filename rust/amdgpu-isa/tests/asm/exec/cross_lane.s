// v1 = 4 * (lane ^ 5): bpermute reads lane ^ 5; permute writes to it;
// swizzle SWAP 16 exchanges the two halves of each 32-lane group
v_xor_b32_e32 v1, 5, v0
v_lshlrev_b32_e32 v1, 2, v1
v_add_u32_e32 v2, 100, v0
ds_bpermute_b32 v3, v1, v2
ds_permute_b32 v4, v1, v2
ds_swizzle_b32 v5, v2 offset:swizzle(SWAP,16)
ds_swizzle_b32 v6, v2 offset:swizzle(QUAD_PERM,3,2,1,0)
ds_bpermute_b32 v7, v1, v2 offset:4
s_waitcnt lgkmcnt(0)
s_endpgm
