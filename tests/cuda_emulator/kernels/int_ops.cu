// Integer operations: high halves of products, bit counts and reversal, byte
// permutes, shifts, and 32- and 64-bit division.

// 32-bit integer operations. out[k * n + i], k = 0..11.
extern "C" __global__ void int32_ops(const unsigned* a, const unsigned* b, unsigned* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned x = a[i], y = b[i];
  out[0 * n + i] = __umulhi(x, y);
  out[1 * n + i] = (unsigned)__mulhi((int)x, (int)y);
  out[2 * n + i] = __popc(x);
  out[3 * n + i] = __clz(x);
  out[4 * n + i] = __brev(x);
  out[5 * n + i] = __byte_perm(x, y, 0x7531);
  out[6 * n + i] = __byte_perm(x, y, 0x0426);
  out[7 * n + i] = (unsigned)((int)x >> (y & 31));  // arithmetic shift
  out[8 * n + i] = x >> (y & 31);                   // logical shift
  out[9 * n + i] = x * y;
  out[10 * n + i] = y != 0 ? x / y : 0u;
  out[11 * n + i] =
      (y != 0 && !((int)x == (-2147483647 - 1) && (int)y == -1)) ? (unsigned)((int)x % (int)y) : 0u;
}

// 64-bit integer operations. out[k * n + i], k = 0..9.
extern "C" __global__ void int64_ops(const long long* a, const long long* b, unsigned long long* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  long long x = a[i], y = b[i];
  unsigned long long ux = x, uy = y;
  bool safe = y != 0 && !(x == (-9223372036854775807ll - 1) && y == -1);
  out[0 * n + i] = ux * uy;
  out[1 * n + i] = safe ? (unsigned long long)(x / y) : 0;
  out[2 * n + i] = safe ? (unsigned long long)(x % y) : 0;
  out[3 * n + i] = uy != 0 ? ux / uy : 0;
  out[4 * n + i] = uy != 0 ? ux % uy : 0;
  out[5 * n + i] = (unsigned long long)(x >> (uy & 63));  // arithmetic shift
  out[6 * n + i] = ux >> (uy & 63);
  out[7 * n + i] = __umul64hi(ux, uy);
  out[8 * n + i] = (unsigned long long)__mul64hi(x, y);
  out[9 * n + i] = __popcll(ux) | ((unsigned long long)__clzll(x) << 8);
}
