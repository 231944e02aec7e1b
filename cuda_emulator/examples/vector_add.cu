// Kernel of examples/vector_add.cc, compiled to PTX with `nvcc -ptx`:
// C = A + B for N floats, one element per thread.
extern "C" __global__ void VecAdd_kernel(const float* A, const float* B, float* C, int N) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < N) C[i] = A[i] + B[i];
}
