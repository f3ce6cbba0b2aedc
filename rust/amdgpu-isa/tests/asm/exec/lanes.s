v_readfirstlane_b32 s0, v0
v_readlane_b32 s1, v0, 5
v_writelane_b32 v1, s2, 9
s_getpc_b64 s[4:5]
s_endpgm
