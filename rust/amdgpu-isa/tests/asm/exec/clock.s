s_memtime s[0:1]
s_memrealtime s[2:3]
s_memtime s[4:5]
s_waitcnt lgkmcnt(0)
s_endpgm
