// SPDX-License-Identifier: GPL-2.0
// Guest test, by hand (tests/hip/run.sh reach/NAME; see the README): Debian's
// libhiprand1 / librocrand1, built for gfx90a by Debian, generating random
// numbers on the virtual GPU (their own kernels, run on the shader
// interpreter), checked statistically on the CPU.  Philox4x32-10, the
// counter-based generator: no state-initialisation kernel.
//   uniform   hiprandGenerateUniform: all in (0, 1], mean 1/2 and variance
//             1/12 within 8 standard errors, 16 equal bins each within
//             8 standard deviations of n/16, and the same seed gives the
//             same numbers again
//   normal    hiprandGenerateNormal (mean 2, stddev 3): mean, variance and
//             the share within one stddev (68.3%) within 8 standard errors
//   double    rocrand_generate_uniform_double through librocrand directly:
//             all in (0, 1], mean and variance as above
// subtests: uniform normal double
// link: -lhiprand -lrocrand
// timeout: 900
#include <hip/hip_runtime.h>
#include <hiprand/hiprand.h>
#include <rocrand/rocrand.h>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

static const size_t N = 1 << 16;

static bool pick_gfx90a() {
	int count = 0;
	if (hipGetDeviceCount(&count) != hipSuccess)
		return false;
	for (int d = 0; d < count; d++) {
		hipDeviceProp_t p;
		if (hipGetDeviceProperties(&p, d) == hipSuccess && strncmp(p.gcnArchName, "gfx90a", 6) == 0)
			return hipSetDevice(d) == hipSuccess;
	}
	return false;
}

// Mean and (unbiased) variance.
template <typename T> static void moments(const std::vector<T> &v, double &mean, double &var) {
	double s = 0, s2 = 0;
	for (T x : v)
		s += x;
	mean = s / v.size();
	for (T x : v)
		s2 += (x - mean) * (x - mean);
	var = s2 / (v.size() - 1);
}

static bool check(bool ok, const char *test, const char *what, double got, double want, double tol) {
	if (!ok)
		printf("FAIL %s: %s %.6f, want %.6f +- %.6f\n", test, what, got, want, tol);
	return ok;
}

static bool near(const char *test, const char *what, double got, double want, double tol) {
	return check(fabs(got - want) <= tol, test, what, got, want, tol);
}

static std::vector<float> uniform_floats(unsigned long long seed) {
	std::vector<float> h(N, -1.0f);
	float *d = nullptr;
	hiprandGenerator_t g;
	if (hipMalloc(&d, N * sizeof(float)) != hipSuccess ||
	    hiprandCreateGenerator(&g, HIPRAND_RNG_PSEUDO_PHILOX4_32_10) != HIPRAND_STATUS_SUCCESS) {
		printf("FAIL uniform: hipMalloc or hiprandCreateGenerator\n");
		return {};
	}
	hiprandSetPseudoRandomGeneratorSeed(g, seed);
	hiprandStatus_t s = hiprandGenerateUniform(g, d, N);
	if (s != HIPRAND_STATUS_SUCCESS || hipDeviceSynchronize() != hipSuccess ||
	    hipMemcpy(h.data(), d, N * sizeof(float), hipMemcpyDeviceToHost) != hipSuccess) {
		printf("FAIL uniform: hiprandGenerateUniform status %d\n", (int)s);
		h.clear();
	}
	hiprandDestroyGenerator(g);
	hipFree(d);
	return h;
}

static void uniform() {
	std::vector<float> h = uniform_floats(1234);
	if (h.empty())
		return;
	bool ok = true;
	size_t bins[16] = {};
	for (size_t i = 0; i < N; i++) {
		if (!(h[i] > 0.0f && h[i] <= 1.0f)) {
			printf("FAIL uniform: [%zu] = %g not in (0, 1]\n", i, h[i]);
			return;
		}
		bins[std::min<size_t>((size_t)(h[i] * 16), 15)]++;
	}
	double mean, var;
	moments(h, mean, var);
	ok &= near("uniform", "mean", mean, 0.5, 8 * sqrt(1.0 / 12 / N));
	// The sample variance of U(0,1) has standard deviation sqrt(1/180/N).
	ok &= near("uniform", "variance", var, 1.0 / 12, 8 * sqrt(1.0 / 180 / N));
	double expect = N / 16.0, sd = sqrt(N * (1.0 / 16) * (15.0 / 16));
	for (int b = 0; b < 16; b++)
		ok &= near("uniform", "bin count", bins[b], expect, 8 * sd);
	std::vector<float> again = uniform_floats(1234), other = uniform_floats(4321);
	if (again != h) {
		printf("FAIL uniform: the same seed gave other numbers\n");
		ok = false;
	}
	if (other.empty() || other == h) {
		printf("FAIL uniform: another seed gave the same numbers\n");
		ok = false;
	}
	printf("uniform: n %zu mean %.5f variance %.5f (1/12 = %.5f) first %.6f %.6f %.6f\n", N, mean, var, 1.0 / 12, h[0], h[1], h[2]);
	if (ok)
		printf("PASS uniform\n");
}

static void normal() {
	std::vector<float> h(N);
	float *d = nullptr;
	hiprandGenerator_t g;
	if (hipMalloc(&d, N * sizeof(float)) != hipSuccess ||
	    hiprandCreateGenerator(&g, HIPRAND_RNG_PSEUDO_PHILOX4_32_10) != HIPRAND_STATUS_SUCCESS) {
		printf("FAIL normal: hipMalloc or hiprandCreateGenerator\n");
		return;
	}
	hiprandSetPseudoRandomGeneratorSeed(g, 5678);
	hiprandStatus_t s = hiprandGenerateNormal(g, d, N, 2.0f, 3.0f);
	if (s != HIPRAND_STATUS_SUCCESS || hipDeviceSynchronize() != hipSuccess ||
	    hipMemcpy(h.data(), d, N * sizeof(float), hipMemcpyDeviceToHost) != hipSuccess) {
		printf("FAIL normal: hiprandGenerateNormal status %d\n", (int)s);
		return;
	}
	hiprandDestroyGenerator(g);
	hipFree(d);
	size_t within = 0;
	for (size_t i = 0; i < N; i++) {
		if (!std::isfinite(h[i])) {
			printf("FAIL normal: [%zu] = %g\n", i, h[i]);
			return;
		}
		within += fabs(h[i] - 2.0f) <= 3.0f;
	}
	double mean, var;
	moments(h, mean, var);
	bool ok = near("normal", "mean", mean, 2.0, 8 * 3.0 / sqrt(N));
	// The sample variance of N(m, s^2) has standard deviation s^2 sqrt(2/(N-1)).
	ok &= near("normal", "variance", var, 9.0, 8 * 9.0 * sqrt(2.0 / (N - 1)));
	double p = 0.682689;
	ok &= near("normal", "share within 1 stddev", (double)within / N, p, 8 * sqrt(p * (1 - p) / N));
	printf("normal: n %zu mean %.4f variance %.4f within 1 stddev %.4f first %.5f %.5f %.5f\n", N, mean, var, (double)within / N, h[0], h[1], h[2]);
	if (ok)
		printf("PASS normal\n");
}

static void uniform_double() {
	std::vector<double> h(N);
	double *d = nullptr;
	rocrand_generator g;
	if (hipMalloc(&d, N * sizeof(double)) != hipSuccess ||
	    rocrand_create_generator(&g, ROCRAND_RNG_PSEUDO_PHILOX4_32_10) != ROCRAND_STATUS_SUCCESS) {
		printf("FAIL double: hipMalloc or rocrand_create_generator\n");
		return;
	}
	rocrand_set_seed(g, 99);
	rocrand_status s = rocrand_generate_uniform_double(g, d, N);
	if (s != ROCRAND_STATUS_SUCCESS || hipDeviceSynchronize() != hipSuccess ||
	    hipMemcpy(h.data(), d, N * sizeof(double), hipMemcpyDeviceToHost) != hipSuccess) {
		printf("FAIL double: rocrand_generate_uniform_double status %d\n", (int)s);
		return;
	}
	rocrand_destroy_generator(g);
	hipFree(d);
	for (size_t i = 0; i < N; i++)
		if (!(h[i] > 0.0 && h[i] <= 1.0)) {
			printf("FAIL double: [%zu] = %g not in (0, 1]\n", i, h[i]);
			return;
		}
	double mean, var;
	moments(h, mean, var);
	bool ok = near("double", "mean", mean, 0.5, 8 * sqrt(1.0 / 12 / N));
	ok &= near("double", "variance", var, 1.0 / 12, 8 * sqrt(1.0 / 180 / N));
	printf("double: n %zu mean %.5f variance %.5f first %.9f %.9f\n", N, mean, var, h[0], h[1]);
	if (ok)
		printf("PASS double\n");
}

int main() {
	setvbuf(stdout, nullptr, _IOLBF, 0);
	if (!pick_gfx90a()) {
		printf("no gfx90a device\n");
		return 1;
	}
	uniform();
	normal();
	uniform_double();
	return 0;
}
