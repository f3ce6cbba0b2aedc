// SPDX-License-Identifier: GPL-2.0
// make bench-isa (scripts/bench-isa), the guest half: a vector add and the
// shared-memory reduction of suite.hip on 1M elements, on the virtual GPU's
// shader interpreter (through HIP, ROCr and /dev/kfd unchanged), against the
// same computation as a plain C loop on the guest CPU in the same run.
// Prints wall times, elements/s, lane-ops/s and the ratio; asserts nothing
// about time (exit 1 only if a result is wrong or HIP fails).
//   isa-bench [vadd=LANE_OPS] [reduce=LANE_OPS]
// LANE_OPS: the lane-operations of that dispatch as the host-side run of the
// same code object counted them (amdgpu-isa's isa-bench example: vector
// instructions x active lanes, plus scalar instructions once), so the guest
// can print lane-ops/s; without it only elements/s are printed.
// device-code-object: bench/isa-bench.hip -O2
#include <hip/hip_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

// The same kernels as suite.hip's vadd and reduce.
__global__ void vadd(const float *a, const float *b, float *c, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + b[i];
}

__global__ void reduce(const unsigned *in, unsigned *out, int n) {
	__shared__ unsigned s[256];
	int t = threadIdx.x;
	int i = blockIdx.x * blockDim.x + t;
	s[t] = i < n ? in[i] : 0;
	__syncthreads();
	for (int st = blockDim.x / 2; st > 0; st >>= 1) {
		if (t < st)
			s[t] += s[t + st];
		__syncthreads();
	}
	if (t == 0)
		out[blockIdx.x] = s[0];
}

#define CHECK(x)                                                                   \
	do {                                                                       \
		hipError_t e_ = (x);                                               \
		if (e_ != hipSuccess) {                                            \
			printf("FAIL isa-bench: %s: %s\n", #x, hipGetErrorString(e_)); \
			exit(1);                                                   \
		}                                                                  \
	} while (0)

static const int N = 1 << 20;
static const int WG = 256;

static double now() {
	return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Keeps the compiler from dropping or vectorising across the CPU loops'
// results in a way the GPU's per-element work does not have.
static volatile unsigned sink;

static void report(const char *what, double gpu_s, double cpu_s, double lane_ops) {
	printf("%-7s GPU (interpreter) %8.3f s  %10.0f elements/s", what, gpu_s, N / gpu_s);
	if (lane_ops > 0)
		printf("  %12.0f lane-ops/s (%.0f lane-ops)", lane_ops / gpu_s, lane_ops);
	printf("\n%-7s CPU (C loop)      %8.6f s  %10.0f elements/s\n", what, cpu_s, N / cpu_s);
	printf("%-7s ratio GPU time / CPU time: %.0f\n", what, gpu_s / cpu_s);
}

int main(int argc, char **argv) {
	double ops_vadd = 0, ops_reduce = 0;
	for (int k = 1; k < argc; k++) {
		if (!strncmp(argv[k], "vadd=", 5))
			ops_vadd = atof(argv[k] + 5);
		else if (!strncmp(argv[k], "reduce=", 7))
			ops_reduce = atof(argv[k] + 7);
	}
	int count = 0, dev = -1;
	CHECK(hipGetDeviceCount(&count));
	for (int d = 0; d < count && dev < 0; d++) {
		hipDeviceProp_t p;
		if (hipGetDeviceProperties(&p, d) == hipSuccess && strncmp(p.gcnArchName, "gfx90a", 6) == 0)
			dev = d;
	}
	if (dev < 0) {
		printf("FAIL isa-bench: no gfx90a device\n");
		return 1;
	}
	CHECK(hipSetDevice(dev));
	const int blocks = N / WG;
	std::vector<float> a(N), b(N), c(N), cc(N);
	std::vector<unsigned> in(N), out(blocks), cout_(blocks);
	unsigned x = 12345;
	for (int i = 0; i < N; i++) {
		a[i] = 0.5f * (i & 4095) - 1000.25f;
		b[i] = 1.0f / (i + 1);
		x = x * 1103515245u + 12345u;
		in[i] = (x >> 7) & 0xffff;
	}
	float *da, *db, *dc;
	unsigned *din, *dout;
	CHECK(hipMalloc(&da, N * sizeof(float)));
	CHECK(hipMalloc(&db, N * sizeof(float)));
	CHECK(hipMalloc(&dc, N * sizeof(float)));
	CHECK(hipMalloc(&din, N * sizeof(unsigned)));
	CHECK(hipMalloc(&dout, blocks * sizeof(unsigned)));
	CHECK(hipMemcpy(da, a.data(), N * sizeof(float), hipMemcpyHostToDevice));
	CHECK(hipMemcpy(db, b.data(), N * sizeof(float), hipMemcpyHostToDevice));
	CHECK(hipMemcpy(din, in.data(), N * sizeof(unsigned), hipMemcpyHostToDevice));
	// Warm-up: code object loaded, both kernels' first launch done.
	hipLaunchKernelGGL(vadd, dim3(1), dim3(WG), 0, 0, da, db, dc, WG);
	hipLaunchKernelGGL(reduce, dim3(1), dim3(WG), 0, 0, din, dout, WG);
	CHECK(hipDeviceSynchronize());

	double t = now();
	hipLaunchKernelGGL(vadd, dim3(blocks), dim3(WG), 0, 0, da, db, dc, N);
	CHECK(hipGetLastError());
	CHECK(hipDeviceSynchronize());
	double gpu_vadd = now() - t;
	t = now();
	for (int i = 0; i < N; i++)
		cc[i] = a[i] + b[i];
	double cpu_vadd = now() - t;
	sink = (unsigned)cc[N - 1];

	t = now();
	hipLaunchKernelGGL(reduce, dim3(blocks), dim3(WG), 0, 0, din, dout, N);
	CHECK(hipGetLastError());
	CHECK(hipDeviceSynchronize());
	double gpu_reduce = now() - t;
	t = now();
	for (int k = 0; k < blocks; k++) {
		unsigned s = 0;
		for (int i = 0; i < WG; i++)
			s += in[k * WG + i];
		cout_[k] = s;
	}
	double cpu_reduce = now() - t;
	sink = cout_[blocks - 1];

	CHECK(hipMemcpy(c.data(), dc, N * sizeof(float), hipMemcpyDeviceToHost));
	CHECK(hipMemcpy(out.data(), dout, blocks * sizeof(unsigned), hipMemcpyDeviceToHost));
	int bad = 0;
	for (int i = 0; i < N; i++)
		bad += memcmp(&c[i], &cc[i], sizeof(float)) != 0;
	for (int k = 0; k < blocks; k++)
		bad += out[k] != cout_[k];
	if (bad) {
		printf("FAIL isa-bench: %d results differ from the CPU's\n", bad);
		return 1;
	}
	printf("isa-bench: %d elements, workgroups of %d (%d workgroups), results equal to the CPU's\n", N, WG,
	       blocks);
	report("vadd", gpu_vadd, cpu_vadd, ops_vadd);
	report("reduce", gpu_reduce, cpu_reduce, ops_reduce);
	CHECK(hipFree(da));
	CHECK(hipFree(db));
	CHECK(hipFree(dc));
	CHECK(hipFree(din));
	CHECK(hipFree(dout));
	return 0;
}
