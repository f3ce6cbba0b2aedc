// SPDX-License-Identifier: GPL-2.0
// Guest test (tests/hip/run.sh): XNACK on (HSA_XNACK=1: the program runs
// itself again with it set, before HIP starts), kernels touching memory no
// GPU mapping covers yet, each access a retry fault the virtual GPU's
// shader engine raises (the faulting instruction taken again once rkfd's
// SVM resolved it), results checked on the CPU.
//   managed   hipMallocManaged memory written on the CPU, scaled by a
//             kernel, read back on the CPU (no copies)
//   malloc    plain malloc'ed memory (an unregistered address: rkfd makes
//             an SVM range for it) read and written by a kernel
//   atomics   atomicAdd from many workgroups into malloc'ed bins whose
//             pages fault mid-instruction (counted once each)
// subtests: xnack_on managed malloc atomics
// gfx90a: skip in the list: XNACK on needs every GPU the process sees to
// support it (upstream kfd_process_xnack_mode; ROCR_VISIBLE_DEVICES does not
// hide GPUs from the KFD process), so scripts/guest/svm-hmm-tests.sh runs it
// in its one-gfx90a reload (run.sh --layer hip-xnack xnack)
// gfx1030: skip XNACK retry faults are a gfx90a mode (upstream: no XNACK on GFX10+)
// timeout: 600
#include <hip/hip_runtime.h>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

__global__ void scale(unsigned *p, unsigned mul, unsigned add, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = p[i] * mul + add;
}

__global__ void copy_plus(const unsigned *src, unsigned *dst, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		dst[i] = src[i] + 1;
}

__global__ void histo(const unsigned *in, unsigned *bins, int n, int nbins) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		atomicAdd(&bins[in[i] % nbins], 1u);
}

#define CHECK(name, x)                                                                    \
	do {                                                                              \
		hipError_t e_ = (x);                                                      \
		if (e_ != hipSuccess) {                                                   \
			printf("FAIL %s: %s: %s\n", name, #x, hipGetErrorString(e_));     \
			return false;                                                     \
		}                                                                         \
	} while (0)

static unsigned lcg(unsigned &x) {
	x = x * 1103515245u + 12345u;
	return x >> 7;
}

// 64 pages of managed memory.
static bool t_managed() {
	const int n = 64 * 1024;
	unsigned *p;
	CHECK("managed", hipMallocManaged(&p, n * sizeof(unsigned)));
	for (int i = 0; i < n; i++)
		p[i] = i ^ 0x5555;
	hipLaunchKernelGGL(scale, dim3(n / 256), dim3(256), 0, 0, p, 3u, 7u, n);
	CHECK("managed", hipGetLastError());
	CHECK("managed", hipDeviceSynchronize());
	int bad = 0;
	for (int i = 0; i < n; i++) {
		unsigned want = (i ^ 0x5555) * 3u + 7u;
		if (p[i] != want && bad++ < 5)
			printf("  managed: p[%d] = %u, want %u\n", i, p[i], want);
	}
	CHECK("managed", hipFree(p));
	return bad == 0;
}

// malloc'ed source and destination (not page aligned), 33 pages each.
static bool t_malloc() {
	const int n = 33 * 1024 + 17;
	unsigned *src = (unsigned *)malloc(n * sizeof(unsigned));
	unsigned *dst = (unsigned *)malloc(n * sizeof(unsigned));
	if (!src || !dst)
		return false;
	for (int i = 0; i < n; i++) {
		src[i] = 3u * i + 1;
		dst[i] = 0xdeadbeef;
	}
	hipLaunchKernelGGL(copy_plus, dim3((n + 255) / 256), dim3(256), 0, 0, src, dst, n);
	CHECK("malloc", hipGetLastError());
	CHECK("malloc", hipDeviceSynchronize());
	int bad = 0;
	for (int i = 0; i < n; i++) {
		if (dst[i] != 3u * i + 2 && bad++ < 5)
			printf("  malloc: dst[%d] = %u, want %u\n", i, dst[i], 3u * i + 2);
	}
	free(src);
	free(dst);
	return bad == 0;
}

// 4096 bins over 4 pages, none touched by the GPU before: one wave's
// atomics spread over several of them.
static bool t_atomics() {
	const int n = 32 * 1024, nbins = 4096;
	unsigned *in = (unsigned *)malloc(n * sizeof(unsigned));
	unsigned *bins = (unsigned *)aligned_alloc(4096, nbins * sizeof(unsigned));
	unsigned want[nbins];
	if (!in || !bins)
		return false;
	memset(want, 0, sizeof want);
	memset(bins, 0, nbins * sizeof(unsigned));
	unsigned x = 77;
	for (int i = 0; i < n; i++) {
		in[i] = lcg(x);
		want[in[i] % nbins]++;
	}
	hipLaunchKernelGGL(histo, dim3(n / 256), dim3(256), 0, 0, in, bins, n, nbins);
	CHECK("atomics", hipGetLastError());
	CHECK("atomics", hipDeviceSynchronize());
	int bad = 0;
	for (int b = 0; b < nbins; b++) {
		if (bins[b] != want[b] && bad++ < 5)
			printf("  atomics: bins[%d] = %u, want %u\n", b, bins[b], want[b]);
	}
	free(in);
	free(bins);
	return bad == 0;
}

int main(int argc, char **argv) {
	// ROCr reads HSA_XNACK when it starts: run again with it set.
	const char *x = getenv("HSA_XNACK");
	if (!x || strcmp(x, "1") != 0) {
		setenv("HSA_XNACK", "1", 1);
		execv("/proc/self/exe", argv);
		printf("FAIL xnack_on: execv: %s\n", strerror(errno));
		return 1;
	}
	int count = 0, dev = -1;
	if (hipGetDeviceCount(&count) != hipSuccess)
		return 1;
	hipDeviceProp_t prop;
	for (int d = 0; d < count && dev < 0; d++) {
		if (hipGetDeviceProperties(&prop, d) == hipSuccess && strncmp(prop.gcnArchName, "gfx90a", 6) == 0)
			dev = d;
	}
	if (dev < 0 || hipSetDevice(dev) != hipSuccess) {
		printf("FAIL xnack_on: no gfx90a device\n");
		return 1;
	}
	// ROCr names the agent's ISA with the mode the KFD process runs in.
	printf("%s %s\n", strstr(prop.gcnArchName, "xnack+") ? "PASS" : "FAIL", "xnack_on");
	printf("  (agent ISA %s)\n", prop.gcnArchName);
	static const struct {
		const char *name;
		bool (*fn)();
	} tests[] = {{"managed", t_managed}, {"malloc", t_malloc}, {"atomics", t_atomics}};
	int failed = 0;
	for (const auto &t : tests) {
		bool ok = t.fn();
		printf("%s %s\n", ok ? "PASS" : "FAIL", t.name);
		fflush(stdout);
		failed += !ok;
	}
	return failed ? 1 : 0;
}
