s_barrier
s_trap 2
s_endpgm
