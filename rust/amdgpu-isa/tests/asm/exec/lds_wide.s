// lane L: write2_b64 {v[2:3]} at 16*L and {v[4:5]} at 16*L + 8 (offsets in 8 bytes)
v_lshlrev_b32_e32 v1, 4, v0
ds_write2_b64 v1, v[2:3], v[4:5] offset1:1
ds_read2_b64 v[6:9], v1 offset1:1
ds_write_b96 v1, v[10:12] offset:2048
ds_read_b96 v[14:16], v1 offset:2048
// atomics on one word from every lane, in lane order
v_mov_b32_e32 v17, 0
v_mov_b32_e32 v18, 1.0
ds_max_rtn_f32 v19, v17, v2 offset:4096
ds_inc_rtn_u32 v20, v17, v18 offset:4100
ds_rsub_rtn_u32 v21, v17, v0 offset:4104
// f64 atomic add in global memory: every lane adds 0.5
v_mov_b32_e32 v22, 0
v_mov_b32_e32 v23, 0x3fe00000
global_atomic_add_f64 v17, v[22:23], s[0:1]
s_waitcnt vmcnt(0) lgkmcnt(0)
s_endpgm
