// GFX10 wave64 (assembled with +wavefrontsize64): lane masks are SGPR pairs
v_cmp_lt_u32_e32 vcc, 40, v0
s_mov_b64 s[0:1], vcc
v_cmp_gt_u32_e64 s[2:3], 10, v0
v_add_co_u32 v2, s[4:5], v0, -1
s_and_saveexec_b64 s[6:7], vcc
v_mov_b32_e32 v4, 7
s_or_b64 exec, exec, s[6:7]
v_cmpx_gt_u32_e32 50, v0
s_mov_b64 s[8:9], exec
s_mov_b64 exec, s[6:7]
ds_bpermute_b32 v5, v14, v0
s_waitcnt lgkmcnt(0)
v_readlane_b32 s10, v0, 63
s_endpgm
