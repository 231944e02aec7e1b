// Block-level reductions through shared memory, a row softmax, and the same block
// reduction with a barrier missing.

// Sums 2 * blockDim.x elements per block (blockDim.x = 256) with a shared-memory tree.
// The order of the additions is fixed, so the CPU can reproduce the result bit for bit.
extern "C" __global__ void block_sum(const float* in, float* out, int n) {
  __shared__ float s[256];
  unsigned tid = threadIdx.x;
  unsigned i = blockIdx.x * blockDim.x * 2 + tid;
  float v = 0.0f;
  if (i < n) v = in[i];
  if (i + blockDim.x < n) v += in[i + blockDim.x];
  s[tid] = v;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (tid < stride) s[tid] += s[tid + stride];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = s[0];
}

// block_sum without the barrier between filling s[] and the first step of the tree:
// a warp may read s[tid + 128] before the warp owning it has written it.
extern "C" __global__ void block_sum_missing_barrier(const float* in, float* out, int n) {
  __shared__ float s[256];
  unsigned tid = threadIdx.x;
  unsigned i = blockIdx.x * blockDim.x * 2 + tid;
  float v = 0.0f;
  if (i < n) v = in[i];
  if (i + blockDim.x < n) v += in[i + blockDim.x];
  s[tid] = v;
  // (missing: __syncthreads();)
  for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (tid < stride) s[tid] += s[tid + stride];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = s[0];
}

// Block-wide reduction (op 0: max, 1: sum) of one value per thread: shuffles inside
// each warp, then the warps' results through shared memory. All threads get the result.
__device__ float block_reduce(float v, int op, float* scratch) {
  unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  unsigned warps = (blockDim.x + 31) >> 5;
  for (int mask = 16; mask > 0; mask >>= 1) {
    float o = __shfl_xor_sync(0xffffffffu, v, mask);
    v = op == 0 ? fmaxf(v, o) : v + o;
  }
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? scratch[lane] : (op == 0 ? -INFINITY : 0.0f);
    for (int mask = 16; mask > 0; mask >>= 1) {
      float o = __shfl_xor_sync(0xffffffffu, v, mask);
      v = op == 0 ? fmaxf(v, o) : v + o;
    }
    if (lane == 0) scratch[32] = v;
  }
  __syncthreads();
  v = scratch[32];
  __syncthreads();  // scratch is reused by the next call
  return v;
}

// Softmax of each row of a rows x cols matrix, one block per row.
extern "C" __global__ void softmax_rows(const float* x, float* y, int cols) {
  __shared__ float scratch[33];
  const float* row = x + (size_t)blockIdx.x * cols;
  float* out = y + (size_t)blockIdx.x * cols;
  float m = -INFINITY;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) m = fmaxf(m, row[i]);
  m = block_reduce(m, 0, scratch);
  float s = 0.0f;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) s += __expf(row[i] - m);
  s = block_reduce(s, 1, scratch);
  for (int i = threadIdx.x; i < cols; i += blockDim.x) out[i] = __expf(row[i] - m) / s;
}
