// denormals kept, then flushed through s_setreg of MODE.FP_DENORM
v_mul_f32_e32 v1, 0.5, v0
s_setreg_imm32_b32 hwreg(HW_REG_MODE, 4, 2), 0
v_mul_f32_e32 v2, 0.5, v0
s_getreg_b32 s0, hwreg(HW_REG_MODE, 0, 8)
s_endpgm
