// each lane: lds[4*lane] = v1; lds[256 + 8*lane .. +8] = {v1, v2} via write2
v_lshlrev_b32_e32 v0, 2, v0
ds_write_b32 v0, v1
v_lshlrev_b32_e32 v3, 1, v0
ds_write2_b32 v3, v1, v2 offset0:64 offset1:65
s_waitcnt lgkmcnt(0)
s_barrier
ds_read_b32 v4, v0
ds_read2_b32 v[12:13], v3 offset0:64 offset1:65
v_mov_b32_e32 v7, 0
v_mov_b32_e32 v8, 1
ds_add_rtn_u32 v9, v7, v8 offset:1020
ds_read_b32 v10, v7 offset:1020
// no _rtn: vdst is not written (its field's 0 is not v0)
ds_add_u32 v7, v8 offset:1016
ds_read_b32 v11, v7 offset:1016
s_endpgm
