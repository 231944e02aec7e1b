// Elementwise kernels, launch-parameter kernels and a large dynamic shared-memory kernel.

// c[i] = a[i] + b[i], one element per thread.
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// y = a * x + y with a grid-stride loop, so any grid covers any n. The fused
// multiply-add is explicit, making the result exactly reproducible with std::fma.
extern "C" __global__ void saxpy_grid_stride(int n, float a, const float* x, float* y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    y[i] = __fmaf_rn(a, x[i], y[i]);
  }
}

// Parameters (u32, u64): 16 bytes when packed at natural alignment. Used for the
// `extra` (CU_LAUNCH_PARAM_BUFFER_POINTER) form of cuLaunchKernel.
extern "C" __global__ void fill_affine(unsigned n, unsigned* out) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 3u * i + 1u;
}

// Writes the block and thread coordinates of every thread of a 3-D grid of 3-D blocks.
extern "C" __global__ void thread_coords(unsigned* out) {
  unsigned block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  unsigned t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  unsigned* o = out + 4u * (block * threads + t);
  o[0] = threadIdx.x | (threadIdx.y << 10) | (threadIdx.z << 20);
  o[1] = blockIdx.x | (blockIdx.y << 10) | (blockIdx.z << 20);
  o[2] = blockDim.x | (blockDim.y << 10) | (blockDim.z << 20);
  o[3] = gridDim.x | (gridDim.y << 10) | (gridDim.z << 20);
}

// Reverses n floats through dynamic shared memory (n * 4 bytes of it), one block.
extern "C" __global__ void dyn_shared_reverse(const float* in, float* out, int n) {
  extern __shared__ float buf[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = in[i];
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = buf[n - 1 - i];
}

// The same with 4 KB of static shared memory as well: the dynamic part may then be at
// most the opt-in maximum minus 4 KB. Static words hold i + 0.5, added to the result.
extern "C" __global__ void dyn_plus_static_shared(const float* in, float* out, int n) {
  __shared__ float fixed[1024];
  extern __shared__ float buf[];
  for (int i = threadIdx.x; i < 1024; i += blockDim.x) fixed[i] = i + 0.5f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = in[i];
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = buf[n - 1 - i] + fixed[i & 1023];
}

// Each block reads its shared arrays before writing them, then writes them: the emulator
// fills shared memory with 0xFF bytes at the start of every block, so every block
// (not only the first) reads NaN floats and -1 ints. out[32 * block + tid].
extern "C" __global__ void shared_uninitialized(float* fout, int* iout) {
  __shared__ float f[32];
  __shared__ int k[32];
  unsigned o = blockIdx.x * 32 + threadIdx.x;
  fout[o] = f[threadIdx.x];
  iout[o] = k[threadIdx.x];
  __syncthreads();
  f[threadIdx.x] = 1.0f;
  k[threadIdx.x] = blockIdx.x;
  __syncthreads();
  fout[o + 32 * gridDim.x] = f[31 - threadIdx.x];
  iout[o + 32 * gridDim.x] = k[31 - threadIdx.x];
}
