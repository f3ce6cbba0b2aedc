// SPDX-License-Identifier: GPL-2.0
// Guest test (tests/hip/run.sh): a kernel that executes `s_trap 2` (what
// __builtin_trap() / abort() in device code becomes).  The virtual GPU
// stops the queue as the CP does on a debug trap: error code 0x80000000 in
// amd_queue_t.queue_inactive_signal, its event raised.  ROCr's queue error
// handler reports HSA_STATUS_ERROR_EXCEPTION and HIP aborts the program,
// fast, instead of waiting for ever; run.sh checks the lines below
// (the message, and that it comes within the timeout).
// expect-fail: callbackQueue aborting with error : HSA_STATUS_ERROR_EXCEPTION
// timeout: 120
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

__global__ void trap(int *p) {
	p[threadIdx.x] = 1;
	asm volatile("s_trap 2");
	p[threadIdx.x] = 2;
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
	int *d = nullptr;
	if (hipMalloc(&d, 64 * sizeof(int)) != hipSuccess)
		return 1;
	hipLaunchKernelGGL(trap, dim3(1), dim3(64), 0, 0, d);
	hipError_t e = hipDeviceSynchronize();
	// Not reached: HIP aborts on the queue error, as on hardware.
	printf("hipDeviceSynchronize returned %s\n", hipGetErrorString(e));
	return e == hipSuccess ? 0 : 2;
}
