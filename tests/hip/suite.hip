// SPDX-License-Identifier: GPL-2.0
// Guest test (tests/hip/run.sh): HIP breadth on the virtual GPU's gfx90a
// interpreter, in one process (ROCr's start-up is most of a HIP program's
// time under TCG).  Each check is a named sub-test checked on the CPU and
// prints "PASS name" or "FAIL name: why"; run.sh counts each.
//   vadd        f32 vector add, a partial last workgroup; ROCr's code-object
//               copy and HIP's fill kernels ran before it on the interpreter
//   saxpy       f32 FMA (fmaf), bit for bit
//   reduce      shared-memory tree reduction, 4 waves per workgroup,
//               __syncthreads (s_barrier) between the waves' LDS writes/reads
//   histo_global  atomicAdd on global memory (256 bins)
//   histo_lds   atomicAdd on LDS (ds_add), then merged with global atomics
//   memset      hipMemset, unaligned offsets and sizes (HIP's fill kernels)
//   memcpy_d2d  device-to-device hipMemcpy, unaligned (HIP's copy kernels)
//   streams     4 streams, a kernel and async copies each, synchronized apart
//   events      hipEvents: record/synchronize/query/elapsed time, and
//               hipStreamWaitEvent ordering a second stream after the first
//   f64         f64 add/mul/fma (exact) and div/sqrt (ULP bound) vs the CPU
//   o0_scratch  a kernel and a callee compiled without optimisation
//               (optnone): locals in the private segment (flat scratch), a
//               real call (s_swappc), a runtime-indexed private array
//   o0_module   the same kernel from a -O0 build of device/o0.hip (built
//               apart by build.sh beside this binary), hipModuleLoad'ed:
//               MUBUF scratch, v_writelane/v_readlane and AGPR spills, calls
// subtests: vadd saxpy reduce histo_global histo_lds memset memcpy_d2d streams events f64 o0_scratch o0_module
// device-code-object: device/o0.hip -O0
#include <hip/hip_runtime.h>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <vector>
// The target build.sh compiled this binary for (--arch gfx1030 defines
// RKFD_HIP_ARCH_gfx1030); HIP runs it on a device of that target only.
#ifdef RKFD_HIP_ARCH_gfx1030
#define RKFD_HIP_ARCH "gfx1030"
#else
#define RKFD_HIP_ARCH "gfx90a"
#endif

// ---- kernels ----

__global__ void vadd(const float *a, const float *b, float *c, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + b[i];
}

__global__ void saxpy(float a, const float *x, float *y, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = fmaf(a, x[i], y[i]);
}

// Sums of 256 unsigned values per workgroup (blockDim.x == 256: 4 waves).
// Every level reads what other waves wrote before the barrier.
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

__global__ void histo_global(const unsigned *in, unsigned *bins, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		atomicAdd(&bins[in[i] & 255], 1u);
}

// blockDim.x == 256.
__global__ void histo_lds(const unsigned *in, unsigned *bins, int n) {
	__shared__ unsigned local[256];
	int t = threadIdx.x;
	local[t] = 0;
	__syncthreads();
	for (int i = blockIdx.x * blockDim.x + t; i < n; i += gridDim.x * blockDim.x)
		atomicAdd(&local[(in[i] >> 8) & 255], 1u);
	__syncthreads();
	if (local[t])
		atomicAdd(&bins[t], local[t]);
}

__global__ void scale_add(unsigned *p, unsigned mul, unsigned add, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = p[i] * mul + add;
}

// Spins (bounded) so a stream that does not wait would likely overtake it.
// mask is 0: the loop's result is used, so it is not optimised away.
__global__ void slow_fill(unsigned *p, unsigned v, int n, int spin, unsigned mask) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	unsigned x = v + i;
	for (int k = 0; k < spin; k++)
		x = x * 1664525u + 1013904223u;
	if (i < n)
		p[i] = v + (x & mask);
}

__global__ void copy_plus(const unsigned *src, unsigned *dst, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		dst[i] = src[i] + 1;
}

__global__ void f64ops(const double *a, const double *b, double *out, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		double x = a[i], y = b[i];
		out[5 * i + 0] = x + y;
		out[5 * i + 1] = x * y;
		out[5 * i + 2] = fma(x, y, -y);
		out[5 * i + 3] = x / y;
		out[5 * i + 4] = sqrt(fabs(x));
	}
}

__device__ __attribute__((noinline, optnone)) unsigned o0_mix(unsigned *v, int k, unsigned seed) {
	unsigned acc = seed;
	for (int j = 0; j < k; j++)
		acc = acc * 31u + v[j];
	return acc;
}

__global__ __attribute__((optnone)) void o0_kernel(const unsigned *in, unsigned *out, int n) {
	unsigned local[16]; // private: indexed at run time
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	for (int j = 0; j < 16; j++)
		local[j] = in[i] + j * 7u;
	local[in[i] & 15] ^= 0x5a5a5a5au;
	out[i] = o0_mix(local, 16, (unsigned)i);
}

// ---- host ----

static const char *cur; // the running sub-test, for CHECK
static int passed, failed;

#define CHECK(x)                                                                      \
	do {                                                                          \
		hipError_t e_ = (x);                                                  \
		if (e_ != hipSuccess) {                                               \
			printf("  %s: %s: %s\n", cur, #x, hipGetErrorString(e_));   \
			return false;                                                 \
		}                                                                     \
	} while (0)

// Prints a failure of the running sub-test (at most 5 lines of detail).
#define MISMATCH(bad, ...)                          \
	do {                                        \
		if ((bad)++ < 5) {                  \
			printf("  %s: ", cur);      \
			printf(__VA_ARGS__);        \
			printf("\n");               \
		}                                   \
	} while (0)

static unsigned lcg(unsigned &x) {
	x = x * 1103515245u + 12345u;
	return x >> 7;
}

static bool t_vadd() {
	const int n = 4099; // not a multiple of the workgroup size
	std::vector<float> a(n), b(n), c(n, -1.0f);
	for (int i = 0; i < n; i++) {
		a[i] = 0.5f * i - 1000.25f;
		b[i] = 1.0f / (i + 1);
	}
	float *da, *db, *dc;
	CHECK(hipMalloc(&da, n * sizeof(float)));
	CHECK(hipMalloc(&db, n * sizeof(float)));
	CHECK(hipMalloc(&dc, n * sizeof(float)));
	CHECK(hipMemcpy(da, a.data(), n * sizeof(float), hipMemcpyHostToDevice));
	CHECK(hipMemcpy(db, b.data(), n * sizeof(float), hipMemcpyHostToDevice));
	CHECK(hipMemset(dc, 0, n * sizeof(float)));
	hipLaunchKernelGGL(vadd, dim3((n + 255) / 256), dim3(256), 0, 0, da, db, dc, n);
	CHECK(hipGetLastError());
	CHECK(hipDeviceSynchronize());
	CHECK(hipMemcpy(c.data(), dc, n * sizeof(float), hipMemcpyDeviceToHost));
	CHECK(hipFree(da));
	CHECK(hipFree(db));
	CHECK(hipFree(dc));
	int bad = 0;
	for (int i = 0; i < n; i++) {
		float want = a[i] + b[i];
		if (memcmp(&c[i], &want, sizeof want) != 0)
			MISMATCH(bad, "c[%d] = %a, want %a", i, c[i], want);
	}
	return bad == 0;
}

static bool t_saxpy() {
	const int n = 3001;
	const float a = 1.7f;
	std::vector<float> x(n), y(n), out(n);
	for (int i = 0; i < n; i++) {
		x[i] = (i % 97) * 0.37f - 17.5f + 1.0f / (i + 3);
		y[i] = (i % 89) * -1.13f + 3.25f;
	}
	float *dx, *dy;
	CHECK(hipMalloc(&dx, n * sizeof(float)));
	CHECK(hipMalloc(&dy, n * sizeof(float)));
	CHECK(hipMemcpy(dx, x.data(), n * sizeof(float), hipMemcpyHostToDevice));
	CHECK(hipMemcpy(dy, y.data(), n * sizeof(float), hipMemcpyHostToDevice));
	hipLaunchKernelGGL(saxpy, dim3((n + 255) / 256), dim3(256), 0, 0, a, dx, dy, n);
	CHECK(hipGetLastError());
	CHECK(hipMemcpy(out.data(), dy, n * sizeof(float), hipMemcpyDeviceToHost));
	CHECK(hipFree(dx));
	CHECK(hipFree(dy));
	int bad = 0;
	for (int i = 0; i < n; i++) {
		float want = fmaf(a, x[i], y[i]);
		if (memcmp(&want, &out[i], 4))
			MISMATCH(bad, "y[%d] = %a, want %a", i, out[i], want);
	}
	return bad == 0;
}

static bool t_reduce() {
	const int n = 2000, wg = 256, blocks = (n + wg - 1) / wg;
	std::vector<unsigned> in(n), out(blocks, 0xdeadbeef);
	unsigned seed = 7;
	for (int i = 0; i < n; i++)
		in[i] = lcg(seed) & 0xffff;
	unsigned *din, *dout;
	CHECK(hipMalloc(&din, n * sizeof(unsigned)));
	CHECK(hipMalloc(&dout, blocks * sizeof(unsigned)));
	CHECK(hipMemcpy(din, in.data(), n * sizeof(unsigned), hipMemcpyHostToDevice));
	hipLaunchKernelGGL(reduce, dim3(blocks), dim3(wg), 0, 0, din, dout, n);
	CHECK(hipGetLastError());
	CHECK(hipMemcpy(out.data(), dout, blocks * sizeof(unsigned), hipMemcpyDeviceToHost));
	CHECK(hipFree(din));
	CHECK(hipFree(dout));
	int bad = 0;
	for (int b = 0; b < blocks; b++) {
		unsigned want = 0;
		for (int t = 0; t < wg && b * wg + t < n; t++)
			want += in[b * wg + t];
		if (out[b] != want)
			MISMATCH(bad, "block %d: %u, want %u", b, out[b], want);
	}
	return bad == 0;
}

static bool histo(bool lds) {
	const int n = 20000;
	std::vector<unsigned> in(n), bins(256);
	unsigned seed = lds ? 99 : 3;
	for (int i = 0; i < n; i++)
		in[i] = lcg(seed);
	unsigned *din, *dbins;
	CHECK(hipMalloc(&din, n * sizeof(unsigned)));
	CHECK(hipMalloc(&dbins, 256 * sizeof(unsigned)));
	CHECK(hipMemcpy(din, in.data(), n * sizeof(unsigned), hipMemcpyHostToDevice));
	CHECK(hipMemset(dbins, 0, 256 * sizeof(unsigned)));
	if (lds)
		hipLaunchKernelGGL(histo_lds, dim3(8), dim3(256), 0, 0, din, dbins, n);
	else
		hipLaunchKernelGGL(histo_global, dim3((n + 255) / 256), dim3(256), 0, 0, din, dbins, n);
	CHECK(hipGetLastError());
	CHECK(hipMemcpy(bins.data(), dbins, 256 * sizeof(unsigned), hipMemcpyDeviceToHost));
	CHECK(hipFree(din));
	CHECK(hipFree(dbins));
	unsigned want[256] = {};
	for (int i = 0; i < n; i++)
		want[lds ? (in[i] >> 8) & 255 : in[i] & 255]++;
	int bad = 0;
	for (int b = 0; b < 256; b++)
		if (bins[b] != want[b])
			MISMATCH(bad, "bin %d: %u, want %u", b, bins[b], want[b]);
	return bad == 0;
}

static bool t_histo_global() { return histo(false); }
static bool t_histo_lds() { return histo(true); }

static bool t_memset() {
	const size_t n = 10007;
	std::vector<unsigned char> h(n);
	unsigned char *d;
	CHECK(hipMalloc(&d, n));
	CHECK(hipMemset(d, 0x11, n));
	CHECK(hipMemset(d + 3, 0xa5, 5001));   // unaligned start and length
	CHECK(hipMemset(d + 6000, 0x00, 4096)); // aligned middle
	CHECK(hipMemsetD32((hipDeviceptr_t)(d + 8192), 0xcafef00d, 100));
	CHECK(hipDeviceSynchronize());
	CHECK(hipMemcpy(h.data(), d, n, hipMemcpyDeviceToHost));
	CHECK(hipFree(d));
	int bad = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char want = 0x11;
		if (i >= 3 && i < 5004)
			want = 0xa5;
		if (i >= 6000 && i < 10096)
			want = 0;
		if (i >= 8192 && i < 8192 + 400)
			want = (0xcafef00du >> (8 * (i % 4))) & 0xff;
		if (h[i] != want)
			MISMATCH(bad, "byte %zu: %#x, want %#x", i, h[i], want);
	}
	return bad == 0;
}

static bool t_memcpy_d2d() {
	const size_t n = 65536 + 333;
	std::vector<unsigned char> src(n), out(n);
	unsigned seed = 11;
	for (size_t i = 0; i < n; i++)
		src[i] = lcg(seed);
	unsigned char *a, *b;
	CHECK(hipMalloc(&a, n));
	CHECK(hipMalloc(&b, n));
	CHECK(hipMemcpy(a, src.data(), n, hipMemcpyHostToDevice));
	CHECK(hipMemset(b, 0x77, n));
	CHECK(hipMemcpy(b, a, n - 1000, hipMemcpyDeviceToDevice));        // aligned
	CHECK(hipMemcpy(b + 40001, a + 7, 12345, hipMemcpyDeviceToDevice)); // unaligned
	CHECK(hipMemcpy(out.data(), b, n, hipMemcpyDeviceToHost));
	CHECK(hipFree(a));
	CHECK(hipFree(b));
	int bad = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char want = i < n - 1000 ? src[i] : 0x77;
		if (i >= 40001 && i < 40001 + 12345)
			want = src[i - 40001 + 7];
		if (out[i] != want)
			MISMATCH(bad, "byte %zu: %#x, want %#x", i, out[i], want);
	}
	return bad == 0;
}

static bool t_streams() {
	const int ns = 4, n = 1000;
	hipStream_t s[ns];
	unsigned *d[ns];
	std::vector<unsigned> h[ns];
	for (int k = 0; k < ns; k++) {
		CHECK(hipStreamCreate(&s[k]));
		CHECK(hipMalloc(&d[k], n * sizeof(unsigned)));
		h[k].resize(n);
		for (int i = 0; i < n; i++)
			h[k][i] = i * (k + 1);
	}
	for (int k = 0; k < ns; k++) {
		CHECK(hipMemcpyAsync(d[k], h[k].data(), n * sizeof(unsigned), hipMemcpyHostToDevice, s[k]));
		hipLaunchKernelGGL(scale_add, dim3((n + 127) / 128), dim3(128), 0, s[k], d[k], k + 2u, 1000u * k, n);
		CHECK(hipGetLastError());
		hipLaunchKernelGGL(scale_add, dim3((n + 127) / 128), dim3(128), 0, s[k], d[k], 3u, 1u, n);
		CHECK(hipGetLastError());
		CHECK(hipMemcpyAsync(h[k].data(), d[k], n * sizeof(unsigned), hipMemcpyDeviceToHost, s[k]));
	}
	int bad = 0;
	for (int k = ns - 1; k >= 0; k--) {
		CHECK(hipStreamSynchronize(s[k]));
		CHECK(hipStreamQuery(s[k]));
		for (int i = 0; i < n; i++) {
			unsigned want = (i * (k + 1u) * (k + 2u) + 1000u * k) * 3u + 1u;
			if (h[k][i] != want)
				MISMATCH(bad, "stream %d [%d]: %u, want %u", k, i, h[k][i], want);
		}
		CHECK(hipFree(d[k]));
		CHECK(hipStreamDestroy(s[k]));
	}
	return bad == 0;
}

static bool t_events() {
	const int n = 4096;
	hipStream_t s1, s2;
	hipEvent_t start, done, stop;
	unsigned *a, *b;
	CHECK(hipStreamCreate(&s1));
	CHECK(hipStreamCreate(&s2));
	CHECK(hipEventCreate(&start));
	CHECK(hipEventCreate(&done));
	CHECK(hipEventCreate(&stop));
	CHECK(hipMalloc(&a, n * sizeof(unsigned)));
	CHECK(hipMalloc(&b, n * sizeof(unsigned)));
	CHECK(hipMemset(a, 0, n * sizeof(unsigned)));
	CHECK(hipMemset(b, 0, n * sizeof(unsigned)));
	CHECK(hipDeviceSynchronize());
	CHECK(hipEventRecord(start, s1));
	hipLaunchKernelGGL(slow_fill, dim3(n / 256), dim3(256), 0, s1, a, 41u, n, 200, 0u);
	CHECK(hipGetLastError());
	CHECK(hipEventRecord(done, s1));
	// s2 reads a only after s1's fill.
	CHECK(hipStreamWaitEvent(s2, done, 0));
	hipLaunchKernelGGL(copy_plus, dim3(n / 256), dim3(256), 0, s2, a, b, n);
	CHECK(hipGetLastError());
	CHECK(hipEventRecord(stop, s2));
	CHECK(hipEventSynchronize(stop));
	CHECK(hipEventQuery(stop));
	CHECK(hipEventQuery(done));
	float ms_all = -1, ms_fill = -1;
	CHECK(hipEventElapsedTime(&ms_all, start, stop));
	CHECK(hipEventElapsedTime(&ms_fill, start, done));
	std::vector<unsigned> h(n);
	CHECK(hipMemcpy(h.data(), b, n * sizeof(unsigned), hipMemcpyDeviceToHost));
	int bad = 0;
	for (int i = 0; i < n; i++)
		if (h[i] != 42)
			MISMATCH(bad, "b[%d] = %u, want 42 (s2 ran before s1's event?)", i, h[i]);
	// The queues' profiling timestamps: the spinning fill takes time, and
	// the copy on s2 ends after it.
	if (!(ms_fill > 0 && ms_all > ms_fill && ms_all < 600000))
		MISMATCH(bad, "elapsed times start->done %g ms, start->stop %g ms", ms_fill, ms_all);
	printf("  events: fill %.3f ms, fill+copy %.3f ms\n", ms_fill, ms_all);
	CHECK(hipFree(a));
	CHECK(hipFree(b));
	CHECK(hipEventDestroy(start));
	CHECK(hipEventDestroy(done));
	CHECK(hipEventDestroy(stop));
	CHECK(hipStreamDestroy(s1));
	CHECK(hipStreamDestroy(s2));
	return bad == 0;
}

// Distance in units in the last place between two finite doubles (or 0 if
// both are the same NaN-ness/infinity).
static uint64_t ulps(double got, double want) {
	if (std::isnan(want))
		return std::isnan(got) ? 0 : UINT64_MAX;
	if (std::isnan(got))
		return UINT64_MAX;
	int64_t g, w;
	memcpy(&g, &got, 8);
	memcpy(&w, &want, 8);
	// Map to a monotonic integer line.
	if (g < 0)
		g = INT64_MIN - g;
	if (w < 0)
		w = INT64_MIN - w;
	return g > w ? (uint64_t)g - (uint64_t)w : (uint64_t)w - (uint64_t)g;
}

static bool t_f64() {
	const int n = 1024;
	std::vector<double> a(n), b(n), out(5 * n);
	uint64_t x = 0x9e3779b97f4a7c15ull;
	auto next = [&x]() {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		return x;
	};
	const double specials[] = {0.0, -0.0, 1.0, 3.0, -2.5, 1e300, 1e-300, 4.9e-324, 2.2250738585072014e-308, INFINITY, -INFINITY, NAN};
	const int ns = sizeof specials / sizeof specials[0];
	for (int i = 0; i < n; i++) {
		if (i < ns * ns) {
			a[i] = specials[i / ns];
			b[i] = specials[i % ns];
		} else {
			// random sign and mantissa, exponents within +-2^200
			uint64_t r = next(), e = 1023 - 200 + (next() % 401);
			uint64_t ba = (r & 0x800fffffffffffffull) | e << 52;
			r = next();
			e = 1023 - 200 + (next() % 401);
			uint64_t bb = (r & 0x800fffffffffffffull) | e << 52;
			memcpy(&a[i], &ba, 8);
			memcpy(&b[i], &bb, 8);
		}
	}
	double *da, *db, *dout;
	CHECK(hipMalloc(&da, n * sizeof(double)));
	CHECK(hipMalloc(&db, n * sizeof(double)));
	CHECK(hipMalloc(&dout, 5 * n * sizeof(double)));
	CHECK(hipMemcpy(da, a.data(), n * sizeof(double), hipMemcpyHostToDevice));
	CHECK(hipMemcpy(db, b.data(), n * sizeof(double), hipMemcpyHostToDevice));
	hipLaunchKernelGGL(f64ops, dim3(n / 256), dim3(256), 0, 0, da, db, dout, n);
	CHECK(hipGetLastError());
	CHECK(hipMemcpy(out.data(), dout, 5 * n * sizeof(double), hipMemcpyDeviceToHost));
	CHECK(hipFree(da));
	CHECK(hipFree(db));
	CHECK(hipFree(dout));
	// add/mul/fma: correctly rounded (0 ULP); div and sqrt: HIP documents
	// both as correctly rounded too, allow 1 ULP.
	const char *op[5] = {"+", "*", "fma", "/", "sqrt"};
	const uint64_t bound[5] = {0, 0, 0, 1, 1};
	int bad = 0;
	for (int i = 0; i < n; i++) {
		double want[5] = {a[i] + b[i], a[i] * b[i], fma(a[i], b[i], -b[i]), a[i] / b[i], sqrt(fabs(a[i]))};
		for (int k = 0; k < 5; k++) {
			uint64_t u = ulps(out[5 * i + k], want[k]);
			if (u > bound[k])
				MISMATCH(bad, "%s(%a, %a) = %a, want %a (%llu ulp)", op[k], a[i], b[i], out[5 * i + k], want[k],
				         (unsigned long long)u);
		}
	}
	return bad == 0;
}

static unsigned o0_cpu(unsigned in, unsigned i) {
	unsigned local[16];
	for (int j = 0; j < 16; j++)
		local[j] = in + j * 7u;
	local[in & 15] ^= 0x5a5a5a5au;
	unsigned acc = i;
	for (int j = 0; j < 16; j++)
		acc = acc * 31u + local[j];
	return acc;
}

static bool t_o0_scratch() {
	const int n = 300;
	std::vector<unsigned> in(n), out(n);
	unsigned seed = 5;
	for (int i = 0; i < n; i++)
		in[i] = lcg(seed);
	unsigned *din, *dout;
	CHECK(hipMalloc(&din, n * sizeof(unsigned)));
	CHECK(hipMalloc(&dout, n * sizeof(unsigned)));
	CHECK(hipMemcpy(din, in.data(), n * sizeof(unsigned), hipMemcpyHostToDevice));
	hipLaunchKernelGGL(o0_kernel, dim3((n + 127) / 128), dim3(128), 0, 0, din, dout, n);
	CHECK(hipGetLastError());
	CHECK(hipMemcpy(out.data(), dout, n * sizeof(unsigned), hipMemcpyDeviceToHost));
	CHECK(hipFree(din));
	CHECK(hipFree(dout));
	int bad = 0;
	for (int i = 0; i < n; i++)
		if (out[i] != o0_cpu(in[i], i))
			MISMATCH(bad, "out[%d] = %#x, want %#x", i, out[i], o0_cpu(in[i], i));
	return bad == 0;
}

static bool t_o0_module() {
	// build/suite-<hash>.o0.co beside build/suite-<hash> (what
	// /proc/self/exe names through the build/suite link).
	char exe[4096];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 8);
	if (len <= 0) {
		printf("  %s: readlink /proc/self/exe failed\n", cur);
		return false;
	}
	strcpy(exe + len, ".o0.co");
	hipModule_t mod;
	hipFunction_t fn;
	CHECK(hipModuleLoad(&mod, exe));
	CHECK(hipModuleGetFunction(&fn, mod, "o0_kernel"));
	const int n = 300;
	std::vector<unsigned> in(n), out(n);
	unsigned seed = 17;
	for (int i = 0; i < n; i++)
		in[i] = lcg(seed);
	unsigned *din, *dout;
	CHECK(hipMalloc(&din, n * sizeof(unsigned)));
	CHECK(hipMalloc(&dout, n * sizeof(unsigned)));
	CHECK(hipMemcpy(din, in.data(), n * sizeof(unsigned), hipMemcpyHostToDevice));
	struct {
		const unsigned *in;
		unsigned *out;
		int n;
	} args = {din, dout, n};
	size_t size = sizeof args;
	void *config[] = {HIP_LAUNCH_PARAM_BUFFER_POINTER, &args, HIP_LAUNCH_PARAM_BUFFER_SIZE, &size, HIP_LAUNCH_PARAM_END};
	CHECK(hipModuleLaunchKernel(fn, (n + 127) / 128, 1, 1, 128, 1, 1, 0, 0, nullptr, config));
	CHECK(hipMemcpy(out.data(), dout, n * sizeof(unsigned), hipMemcpyDeviceToHost));
	CHECK(hipFree(din));
	CHECK(hipFree(dout));
	CHECK(hipModuleUnload(mod));
	int bad = 0;
	for (int i = 0; i < n; i++)
		if (out[i] != o0_cpu(in[i], i))
			MISMATCH(bad, "out[%d] = %#x, want %#x", i, out[i], o0_cpu(in[i], i));
	return bad == 0;
}

// Pick a device of the target this binary was built for (build.sh:
// RKFD_HIP_ARCH, gfx90a or gfx1030).
static int use_target_device() {
	int count = 0;
	if (hipGetDeviceCount(&count) != hipSuccess)
		return -1;
	for (int d = 0; d < count; d++) {
		hipDeviceProp_t p;
		if (hipGetDeviceProperties(&p, d) == hipSuccess && strncmp(p.gcnArchName, RKFD_HIP_ARCH, strlen(RKFD_HIP_ARCH)) == 0)
			return hipSetDevice(d) == hipSuccess ? d : -1;
	}
	return -1;
}

int main(int argc, char **argv) {
	static const struct {
		const char *name;
		bool (*fn)();
	} tests[] = {
		{"vadd", t_vadd},
		{"saxpy", t_saxpy},
		{"reduce", t_reduce},
		{"histo_global", t_histo_global},
		{"histo_lds", t_histo_lds},
		{"memset", t_memset},
		{"memcpy_d2d", t_memcpy_d2d},
		{"streams", t_streams},
		{"events", t_events},
		{"f64", t_f64},
		{"o0_scratch", t_o0_scratch},
		{"o0_module", t_o0_module},
	};
	if (use_target_device() < 0) {
		printf("FAIL suite: no %s device\n", RKFD_HIP_ARCH);
		return 1;
	}
	for (const auto &t : tests) {
		bool only = argc < 2;
		for (int k = 1; k < argc; k++)
			only |= strcmp(argv[k], t.name) == 0;
		if (!only)
			continue;
		cur = t.name;
		auto t0 = std::chrono::steady_clock::now();
		bool ok = t.fn();
		// A failed sub-test may leave the device unusable: say so, go on.
		hipError_t e = hipDeviceSynchronize();
		if (ok && e != hipSuccess) {
			printf("FAIL %s: hipDeviceSynchronize: %s\n", t.name, hipGetErrorString(e));
			ok = false;
		} else if (ok) {
			printf("PASS %s\n", t.name);
		} else {
			printf("FAIL %s\n", t.name);
		}
		long ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
		printf("  %s: %ld ms\n", t.name, ms);
		fflush(stdout);
		ok ? passed++ : failed++;
	}
	printf("suite: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
