#include <hip/hip_runtime.h>
extern "C" __global__ void vadd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
extern "C" __global__ void saxpy(float alpha, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = alpha * x[i] + y[i];
}
extern "C" __global__ void reduce(const float* in, float* out, int n) {
  __shared__ float s[256];
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  s[t] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (int st = blockDim.x / 2; st > 0; st >>= 1) {
    if (t < st) s[t] += s[t + st];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}
extern "C" __global__ void histo(const unsigned* in, unsigned* bins, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&bins[in[i] & 255], 1u);
}
extern "C" __global__ void divsqrt(const float* a, const float* b, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[4 * i + 0] = a[i] / b[i];
    out[4 * i + 1] = sqrtf(a[i]);
    out[4 * i + 2] = floorf(b[i]);
    out[4 * i + 3] = (float)(int)a[i];
  }
}
extern "C" __global__ void warpsum(const float* in, float* out, int* counter) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = in[i];
  for (int off = 32; off > 0; off >>= 1) v += __shfl_xor(v, off);
  out[3 * i] = v;
  out[3 * i + 1] = __shfl_down(in[i], 1);
  out[3 * i + 2] = __shfl(in[i], 5);
  unsigned long long positive = __ballot(in[i] > 0.0f);
  if (threadIdx.x % 64 == 0) atomicAdd(counter, __popcll(positive));
}
extern "C" __global__ void f64ops(const double* a, const double* b, double* out, float* narrowed, int* flags, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    double x = a[i], y = b[i];
    out[4 * i + 0] = x + y;
    out[4 * i + 1] = x * y;
    out[4 * i + 2] = fma(x, y, -x);
    out[4 * i + 3] = fmin(x, y) - (double)(float)x;
    narrowed[i] = (float)(x - y);
    flags[i] = (x < y ? 1 : 0) | (x == y ? 2 : 0) | (int)x * 4;
  }
}
extern "C" __global__ void f64div(const double* a, const double* b, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[3 * i + 0] = a[i] / b[i];
    out[3 * i + 1] = sqrt(a[i]);
    out[3 * i + 2] = floor(b[i]);
  }
}
