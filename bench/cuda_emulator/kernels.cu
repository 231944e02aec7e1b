// Kernels for the CUDA emulator's speed benchmark (bench/cuda_emulator_bench.cc):
// memory-bound, warp-synchronous and arithmetic-bound work.

extern "C" __global__ void bench_vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// One block per row: a max and a sum through warp shuffles and shared memory.
extern "C" __global__ void bench_softmax(const float* x, float* y, int cols) {
  __shared__ float partial[32];
  const float* row = x + static_cast<long>(blockIdx.x) * cols;
  float m = -INFINITY;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) m = fmaxf(m, row[i]);
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = m;
  __syncthreads();
  m = partial[0];
  for (int w = 1; w < blockDim.x / 32; ++w) m = fmaxf(m, partial[w]);
  __syncthreads();
  float s = 0;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) s += __expf(row[i] - m);
  for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffff, s, o);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = s;
  __syncthreads();
  s = 0;
  for (int w = 0; w < blockDim.x / 32; ++w) s += partial[w];
  for (int i = threadIdx.x; i < cols; i += blockDim.x)
    y[static_cast<long>(blockIdx.x) * cols + i] = __expf(row[i] - m) / s;
}

// Arithmetic only: a chain of fused multiply-adds per thread.
extern "C" __global__ void bench_fma_chain(float* out, int steps) {
  float x = threadIdx.x * 1e-3f, y = 1.0f;
  for (int i = 0; i < steps; ++i) y = fmaf(y, 0.999f, x);
  out[blockIdx.x * blockDim.x + threadIdx.x] = y;
}
