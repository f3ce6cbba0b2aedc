// SPDX-License-Identifier: GPL-2.0
// Guest test (tests/hip/run.sh): a HIP vector add on the virtual GPU,
// checked against the CPU.  Covers ROCr's code-object load (its blit
// kernels copy the code object), hipMalloc/hipMemcpy and a kernel launch
// of a partial last workgroup.  Prints "PASS vadd ..." or "FAIL vadd: why".
#include <hip/hip_runtime.h>
#include <cstdio>
#include <cstring>
#include <vector>

__global__ void vadd(const float *a, const float *b, float *c, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + b[i];
}

#define CHECK(x)                                                              \
	do {                                                                  \
		hipError_t e_ = (x);                                          \
		if (e_ != hipSuccess) {                                       \
			printf("FAIL vadd: %s: %s\n", #x, hipGetErrorString(e_)); \
			return 1;                                             \
		}                                                             \
	} while (0)

// The virtual GPU runs gfx90a code only: pick a gfx90a device (the guest of
// `make check` has one GPU of each profile).
static int use_gfx90a() {
	int count = 0;
	if (hipGetDeviceCount(&count) != hipSuccess)
		return -1;
	for (int d = 0; d < count; d++) {
		hipDeviceProp_t p;
		if (hipGetDeviceProperties(&p, d) == hipSuccess && strncmp(p.gcnArchName, "gfx90a", 6) == 0)
			return hipSetDevice(d) == hipSuccess ? d : -1;
	}
	return -1;
}

int main() {
	const int n = 4099; // not a multiple of the workgroup size
	int dev = use_gfx90a();
	if (dev < 0) {
		printf("FAIL vadd: no gfx90a device\n");
		return 1;
	}
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
	const int wg = 256;
	hipLaunchKernelGGL(vadd, dim3((n + wg - 1) / wg), dim3(wg), 0, 0, da, db, dc, n);
	CHECK(hipGetLastError());
	CHECK(hipDeviceSynchronize());
	CHECK(hipMemcpy(c.data(), dc, n * sizeof(float), hipMemcpyDeviceToHost));
	int bad = 0;
	for (int i = 0; i < n; i++) {
		float want = a[i] + b[i];
		if (memcmp(&c[i], &want, sizeof want) != 0) {
			if (bad < 5)
				printf("  c[%d] = %a, want %a\n", i, c[i], want);
			bad++;
		}
	}
	CHECK(hipFree(da));
	CHECK(hipFree(db));
	CHECK(hipFree(dc));
	if (bad) {
		printf("FAIL vadd: %d of %d elements differ\n", bad, n);
		return 1;
	}
	printf("PASS vadd n=%d on device %d\n", n, dev);
	return 0;
}
