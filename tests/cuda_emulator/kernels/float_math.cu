// Floating-point math: approximate intrinsics and correctly rounded operations.

// out[k * n + i], k = 0..9. x anywhere in [-10, 10], y > 0.
extern "C" __global__ void float_math(const float* x, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float a = x[i], b = y[i];
  out[0 * n + i] = __expf(a);                       // ex2.approx
  out[1 * n + i] = __logf(b);                       // lg2.approx
  out[2 * n + i] = rsqrtf(b);                       // rsqrt.approx
  out[3 * n + i] = __sinf(a * 0.3f);                // sin.approx, argument in [-3, 3]
  out[4 * n + i] = __cosf(a * 0.3f);                // cos.approx
  out[5 * n + i] = __fdividef(a, b);                // div.approx
  out[6 * n + i] = sqrtf(b);                        // sqrt.rn: correctly rounded
  out[7 * n + i] = a / b;                           // div.rn: correctly rounded
  out[8 * n + i] = __fmaf_rn(a, b, -1.0f);          // fma.rn
  out[9 * n + i] = __frcp_rn(b) + __fmul_rn(a, b);  // rcp.rn, mul.rn
}

// Double precision: correctly rounded operations. out[k * n + i], k = 0..3.
extern "C" __global__ void double_math(const double* x, const double* y, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double a = x[i], b = y[i];
  out[0 * n + i] = a / b;
  out[1 * n + i] = sqrt(b);
  out[2 * n + i] = __fma_rn(a, b, 0.5);
  out[3 * n + i] = __dadd_rn(a, b) * 3.0;
}
