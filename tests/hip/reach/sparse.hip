// SPDX-License-Identifier: GPL-2.0
// Guest test, by hand (tests/hip/run.sh reach/NAME; see the README): Debian's
// librocsparse0, built for gfx90a by Debian, multiplying a sparse matrix
// by a vector on the virtual GPU (its own kernels, run on the shader
// interpreter), checked against a CPU reference.  The matrix: 300 x 280,
// rows of 0 to 40 nonzeros (a few long rows, empty ones), values and
// columns from a fixed LCG.
//   general   rocsparse_scsrmv without analysis (y = 1.5 A x - 0.5 y)
//   adaptive  rocsparse_scsrmv_analysis, then rocsparse_scsrmv with its info
//   double    rocsparse_dcsrmv without analysis
// subtests: general adaptive double
// link: -lrocsparse
// timeout: 900
#include <hip/hip_runtime.h>
#include <rocsparse/rocsparse.h>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

static const int M = 300, NCOLS = 280;

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

static unsigned lcg_state = 12345;
static unsigned lcg() {
	lcg_state = lcg_state * 1664525u + 1013904223u;
	return lcg_state >> 8;
}

struct Csr {
	std::vector<int> row_ptr, col;
	std::vector<double> val;
};

static Csr make_matrix() {
	Csr a;
	a.row_ptr.push_back(0);
	for (int r = 0; r < M; r++) {
		int len = r % 50 == 7 ? 40 : lcg() % 9; // a few long rows; some empty
		int c = lcg() % 7;
		for (int k = 0; k < len && c < NCOLS; k++, c += 1 + lcg() % 6) {
			a.col.push_back(c);
			a.val.push_back(((int)(lcg() % 2001) - 1000) / 256.0);
		}
		a.row_ptr.push_back(a.col.size());
	}
	return a;
}

// The float and double entry points under one name.
static rocsparse_status analysis(rocsparse_handle h, int nnz, rocsparse_mat_descr d, const float *v, const int *r, const int *c, rocsparse_mat_info i) {
	return rocsparse_scsrmv_analysis(h, rocsparse_operation_none, M, NCOLS, nnz, d, v, r, c, i);
}
static rocsparse_status analysis(rocsparse_handle h, int nnz, rocsparse_mat_descr d, const double *v, const int *r, const int *c, rocsparse_mat_info i) {
	return rocsparse_dcsrmv_analysis(h, rocsparse_operation_none, M, NCOLS, nnz, d, v, r, c, i);
}
static rocsparse_status csrmv(rocsparse_handle h, int nnz, const float *alpha, rocsparse_mat_descr d, const float *v, const int *r, const int *c,
			      rocsparse_mat_info i, const float *x, const float *beta, float *y) {
	return rocsparse_scsrmv(h, rocsparse_operation_none, M, NCOLS, nnz, alpha, d, v, r, c, i, x, beta, y);
}
static rocsparse_status csrmv(rocsparse_handle h, int nnz, const double *alpha, rocsparse_mat_descr d, const double *v, const int *r, const int *c,
			      rocsparse_mat_info i, const double *x, const double *beta, double *y) {
	return rocsparse_dcsrmv(h, rocsparse_operation_none, M, NCOLS, nnz, alpha, d, v, r, c, i, x, beta, y);
}

template <typename T> static T *to_device(const std::vector<T> &h) {
	T *d = nullptr;
	if (hipMalloc(&d, h.size() * sizeof(T)) != hipSuccess || hipMemcpy(d, h.data(), h.size() * sizeof(T), hipMemcpyHostToDevice) != hipSuccess)
		return nullptr;
	return d;
}

// y = alpha A x + beta y in T, on the GPU through rocsparse, compared with
// the same in double on the CPU, relative to the row's magnitude.
template <typename T>
static void spmv(const char *name, rocsparse_handle handle, const Csr &a, bool adaptive) {
	int nnz = a.col.size();
	std::vector<T> val(a.val.begin(), a.val.end()), x(NCOLS), y(M), out(M);
	for (auto &v : x)
		v = ((int)(lcg() % 201) - 100) / 64.0;
	for (auto &v : y)
		v = ((int)(lcg() % 201) - 100) / 32.0;
	T alpha = 1.5, beta = -0.5;
	int *d_row = to_device(a.row_ptr), *d_col = to_device(a.col);
	T *d_val = to_device(val), *d_x = to_device(x), *d_y = to_device(y);
	if (!d_row || !d_col || !d_val || !d_x || !d_y) {
		printf("FAIL %s: device allocation\n", name);
		return;
	}
	rocsparse_mat_descr descr;
	rocsparse_mat_info info = nullptr;
	rocsparse_create_mat_descr(&descr);
	rocsparse_status s = rocsparse_status_success;
	if (adaptive) {
		rocsparse_create_mat_info(&info);
		s = analysis(handle, nnz, descr, d_val, d_row, d_col, info);
		if (s != rocsparse_status_success) {
			printf("FAIL %s: csrmv_analysis status %d\n", name, (int)s);
			return;
		}
	}
	s = csrmv(handle, nnz, &alpha, descr, d_val, d_row, d_col, info, d_x, &beta, d_y);
	if (s != rocsparse_status_success || hipDeviceSynchronize() != hipSuccess ||
	    hipMemcpy(out.data(), d_y, M * sizeof(T), hipMemcpyDeviceToHost) != hipSuccess) {
		printf("FAIL %s: csrmv status %d\n", name, (int)s);
		return;
	}
	double eps = sizeof(T) == 4 ? 1e-5 : 1e-13;
	int bad = 0;
	double checksum = 0;
	for (int r = 0; r < M; r++) {
		double want = 0, mag = fabs((double)beta * y[r]);
		for (int k = a.row_ptr[r]; k < a.row_ptr[r + 1]; k++) {
			want += (double)val[k] * x[a.col[k]];
			mag += fabs((double)alpha * val[k] * x[a.col[k]]);
		}
		want = alpha * want + beta * (double)y[r];
		checksum += want;
		if (fabs(out[r] - want) > eps * (mag + 1)) {
			if (bad++ < 5)
				printf("FAIL %s: y[%d] = %.9g, want %.9g\n", name, r, (double)out[r], want);
		}
	}
	printf("%s: %d x %d, nnz %d, %d rows wrong, sum of y %.6f\n", name, M, NCOLS, nnz, bad, checksum);
	if (info)
		rocsparse_destroy_mat_info(info);
	rocsparse_destroy_mat_descr(descr);
	hipFree(d_row);
	hipFree(d_col);
	hipFree(d_val);
	hipFree(d_x);
	hipFree(d_y);
	if (bad == 0)
		printf("PASS %s\n", name);
}

int main() {
	setvbuf(stdout, nullptr, _IOLBF, 0);
	if (!pick_gfx90a()) {
		printf("no gfx90a device\n");
		return 1;
	}
	rocsparse_handle handle;
	rocsparse_status s = rocsparse_create_handle(&handle);
	if (s != rocsparse_status_success) {
		printf("rocsparse_create_handle: status %d\n", (int)s);
		return 1;
	}
	Csr a = make_matrix();
	spmv<float>("general", handle, a, false);
	spmv<float>("adaptive", handle, a, true);
	spmv<double>("double", handle, a, false);
	rocsparse_destroy_handle(handle);
	return 0;
}
