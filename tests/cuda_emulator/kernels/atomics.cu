// Global and shared atomics.

struct AtomicResults {
  int sum;                   // atomicAdd(int)
  float fsum;                // atomicAdd(float); inputs are exact in float
  int max;                   // atomicMax(int)
  int min;                   // atomicMin(int)
  unsigned cas_sum;          // sum built with an atomicCAS loop
  unsigned umax;             // atomicMax(unsigned)
  unsigned long long sum64;  // atomicAdd(unsigned long long)
  int exch;                  // atomicExch slot
  unsigned ticket;           // atomicAdd(unsigned) counter whose old values are returned
  unsigned or_bits;          // atomicOr
  unsigned and_bits;         // atomicAnd
  unsigned xor_bits;         // atomicXor
};

// Every thread applies each atomic once; exch_seen[gid] and tickets[gid] get the old
// values returned by atomicExch and atomicAdd.
extern "C" __global__ void atomics_global(const int* in, int n, AtomicResults* r, int* exch_seen,
                                          unsigned* tickets) {
  int gid = blockIdx.x * blockDim.x + threadIdx.x;
  if (gid >= n) return;
  int v = in[gid];
  atomicAdd(&r->sum, v);
  atomicAdd(&r->fsum, v * 0.25f);
  atomicMax(&r->max, v);
  atomicMin(&r->min, v);
  unsigned add = 2u * (unsigned)(v & 0xff) + 1u;
  unsigned old = r->cas_sum, assumed;
  do {
    assumed = old;
    old = atomicCAS(&r->cas_sum, assumed, assumed + add);
  } while (assumed != old);
  atomicMax(&r->umax, (unsigned)v * 2654435761u);
  atomicAdd(&r->sum64, (unsigned long long)(v & 0xffff) << 20);
  exch_seen[gid] = atomicExch(&r->exch, gid);
  tickets[gid] = atomicAdd(&r->ticket, 1u);
  atomicOr(&r->or_bits, 1u << (gid & 31));
  atomicAnd(&r->and_bits, ~(1u << (v & 31)));
  atomicXor(&r->xor_bits, (unsigned)v);
}

// 256-bin histogram of bytes: per-block counts in shared memory (shared atomics),
// flushed to the global bins with atomicAdd.
extern "C" __global__ void histogram256(const unsigned char* data, int n, unsigned* bins) {
  __shared__ unsigned h[256];
  for (int i = threadIdx.x; i < 256; i += blockDim.x) h[i] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    atomicAdd(&h[data[i]], 1u);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < 256; i += blockDim.x) {
    if (h[i] != 0) atomicAdd(&bins[i], h[i]);
  }
}
