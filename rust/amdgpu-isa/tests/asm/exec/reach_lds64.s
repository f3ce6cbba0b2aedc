// 64-bit LDS atomics (librocsparse's csrmv and csrgemm kernels): per lane
// at lane*8, and all lanes on one address (offset 1024).  Inputs v[4:5],
// v[6:7], v[8:9] (u64), v[22:23], v[24:25] (f64).
v_lshlrev_b32 v30, 3, v0
v_mov_b32 v31, 0
ds_write_b64 v30, v[4:5]
ds_add_rtn_u64 v[10:11], v30, v[6:7]
ds_min_u64 v30, v[8:9]
ds_read_b64 v[12:13], v30
ds_cmpst_rtn_b64 v[14:15], v30, v[12:13], v[6:7]
ds_read_b64 v[16:17], v30
ds_cmpst_rtn_b64 v[18:19], v30, v[8:9], v[4:5]
ds_read_b64 v[20:21], v30
ds_add_u64 v31, v[6:7] offset:1024
ds_max_rtn_i64 v[32:33], v31, v[8:9] offset:1032
ds_write_b64 v30, v[22:23]
ds_add_f64 v30, v[24:25]
ds_add_rtn_f64 v[26:27], v30, v[24:25]
ds_read_b64 v[28:29], v30
s_waitcnt lgkmcnt(0)
ds_read_b64 v[34:35], v31 offset:1024
ds_read_b64 v[36:37], v31 offset:1032
s_waitcnt lgkmcnt(0)
s_endpgm
