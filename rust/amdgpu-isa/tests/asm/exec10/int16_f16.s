// GFX10's 16-bit ops Debian's gfx1030 librocsparse/librocrand use and the
// interpreter lacked (isa-census): v_add_nc_u16 / v_sub_nc_u16 (VOP3 only:
// clamp saturates, op_sel picks halves, the other half of D is kept) and
// v_fmac_f16 (D.f16 = S0 * S1 + D.f16, high half kept) in e32, e64 and DPP.
// Inputs per lane: v1, v2 (two u16 halves each), v4, v5 f16 factors, and
// every destination preset to v3 (an accumulator f16 low, a marker high).
v_add_nc_u16 v10, v1, v2
v_sub_nc_u16 v11, v1, v2
v_add_nc_u16 v12, v1, v2 clamp
v_sub_nc_u16 v13, v1, v2 clamp
v_add_nc_u16 v14, v1, v2 op_sel:[1,1,1]
v_sub_nc_u16 v15, v1, v2 op_sel:[0,1,0]
v_sub_nc_u16 v16, v1, 0x1234
v_add_nc_u16 v17, s0, v2 op_sel:[0,0,1] clamp
v_fmac_f16 v20, v4, v5
v_fmac_f16_e64 v21, v4, v5 clamp
v_fmac_f16_e64 v22, -v4, |v5|
v_fmac_f16_dpp v23, v4, v5 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf
v_fmac_f16 v24, 1.0, v5
s_endpgm
