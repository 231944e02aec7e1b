// Kernels that access memory out of bounds (each has exactly one global load or
// shared store that faults, so a test can find its PTX line).

// Thread t reads in[t + offset]: with a large offset, far past the allocation.
extern "C" __global__ void oob_global_read(const float* in, float* out, long long offset) {
  out[threadIdx.x] = in[threadIdx.x + offset];
}

// Thread 0 writes a 16-bit word at s + 2 * index of a 64-int shared array (the only
// st.shared.u16 of the kernel); with a large index, past the block's shared memory.
extern "C" __global__ void oob_shared_write(int* out, int index) {
  __shared__ int s[64];
  if (threadIdx.x < 64) s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  if (threadIdx.x == 0) reinterpret_cast<short*>(s)[index] = 2;
  __syncthreads();
  out[threadIdx.x] = s[threadIdx.x & 63];
}

// Waits for a flag that nothing sets: a launch that never ends (on a GPU too).
extern "C" __global__ void spin_forever(volatile int* flag) {
  while (*flag == 0) {
  }
}

// Thread 0 stores a float at byte offset 2 of `out`: a misaligned address.
extern "C" __global__ void misaligned_store(float* out) {
  if (threadIdx.x == 0) *reinterpret_cast<float*>(reinterpret_cast<char*>(out) + 2) = 1.0f;
}
