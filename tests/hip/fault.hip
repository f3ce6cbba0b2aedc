// SPDX-License-Identifier: GPL-2.0
// Guest test (tests/hip/run.sh): a kernel that writes through a pointer
// nothing maps.  The virtual GPU ends the dispatch with a VM fault (no
// retry), rkfd raises the memory exception event, and ROCr must end the
// program with its message, fast, not hang; run.sh checks the line below.
// expect-fail: Memory access fault by GPU
#include <hip/hip_runtime.h>
#include <cstdio>
#include <cstring>
// The target build.sh compiled this binary for (--arch gfx1030 defines
// RKFD_HIP_ARCH_gfx1030); HIP runs it on a device of that target only.
#ifdef RKFD_HIP_ARCH_gfx1030
#define RKFD_HIP_ARCH "gfx1030"
#else
#define RKFD_HIP_ARCH "gfx90a"
#endif

__global__ void poke(int *p) {
	p[threadIdx.x] = 42;
}

int main() {
	int count = 0, dev = -1;
	if (hipGetDeviceCount(&count) != hipSuccess)
		return 1;
	for (int d = 0; d < count && dev < 0; d++) {
		hipDeviceProp_t p;
		if (hipGetDeviceProperties(&p, d) == hipSuccess && strncmp(p.gcnArchName, RKFD_HIP_ARCH, strlen(RKFD_HIP_ARCH)) == 0)
			dev = d;
	}
	if (dev < 0 || hipSetDevice(dev) != hipSuccess) {
		printf("no %s device\n", RKFD_HIP_ARCH);
		return 1;
	}
	hipLaunchKernelGGL(poke, dim3(1), dim3(64), 0, 0, (int *)0x1000);
	hipError_t e = hipDeviceSynchronize();
	// Not reached when ROCr aborts on the fault, as it does on hardware.
	printf("hipDeviceSynchronize returned %s\n", hipGetErrorString(e));
	return e == hipSuccess ? 0 : 2;
}
