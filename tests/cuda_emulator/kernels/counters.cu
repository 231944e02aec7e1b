// Kernels with known memory-access patterns, for the emulator's per-launch counters.
// None has a bounds check, so every warp is full and no instruction is divergent.

// out[i] = in[i]: one 4-byte load and store per thread, consecutive across the warp.
extern "C" __global__ void copy_coalesced(const float* in, float* out) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = in[i];
}

// out[i] = in[32 * i]: the lanes of a warp load from 32 different 32-byte sectors.
extern "C" __global__ void load_stride32(const float* in, float* out) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = in[32u * i];
}

// One block of 1024 threads fills s[tid] (consecutive), then each thread reads one
// word of s chosen by its lane:
//   consecutive: s[lane]       banks 0..31, no conflict
//   stride32:    s[32 * lane]  32 distinct words in bank 0: 31 extra wavefronts
//   broadcast:   s[0]          one word for all lanes: no conflict
extern "C" __global__ void shared_consecutive(float* out) {
  __shared__ float s[1024];
  s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = s[threadIdx.x & 31];
}

extern "C" __global__ void shared_stride32(float* out) {
  __shared__ float s[1024];
  s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = s[32 * (threadIdx.x & 31)];
}

extern "C" __global__ void shared_broadcast(float* out) {
  __shared__ float s[1024];
  s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = s[0];
}
