// SPDX-License-Identifier: GPL-2.0
// Device code for suite.hip's o0_module check, built alone with -O0
// (`hipcc --genco`, tests/hip/build.sh) and loaded with hipModuleLoad:
// unoptimised code as a -O0 build makes it: locals and spills in the
// private segment (scratch, MUBUF and flat), a real call with a stack.
#include <hip/hip_runtime.h>

__device__ __attribute__((noinline)) unsigned o0_mix(unsigned *v, int k, unsigned seed) {
	unsigned acc = seed;
	for (int j = 0; j < k; j++)
		acc = acc * 31u + v[j];
	return acc;
}

extern "C" __global__ void o0_kernel(const unsigned *in, unsigned *out, int n) {
	unsigned local[16]; // private: indexed at run time
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	for (int j = 0; j < 16; j++)
		local[j] = in[i] + j * 7u;
	local[in[i] & 15] ^= 0x5a5a5a5au;
	out[i] = o0_mix(local, 16, (unsigned)i);
}
