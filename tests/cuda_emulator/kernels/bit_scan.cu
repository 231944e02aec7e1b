// Find-first-set, in a module of its own (it compiles to bfind.shiftamt / brev + bfind).

// __ffs and __ffsll (bfind.shiftamt after brev, or similar). out[2 * i], out[2 * i + 1].
extern "C" __global__ void find_first_set(const unsigned* a, const long long* b, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[2 * i] = __ffs(a[i]);
  out[2 * i + 1] = __ffsll(b[i]);
}
