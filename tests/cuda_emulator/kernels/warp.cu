// Warp-level primitives: shuffles in every mode and votes.

#define FULL_MASK 0xffffffffu

// Each thread writes 14 results to out[k * n + gid], k = 0..13 (n = total threads).
// Every value (not only lane 0's) is checked against a lane-exact model of shfl.sync.
extern "C" __global__ void warp_shuffles(const int* in, int* out, double* dout, int n) {
  int gid = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x & 31;
  int v = in[gid];

  // 0: tree sum with shfl.down; lane 0 ends with the warp's sum.
  int s = v;
  for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(FULL_MASK, s, off);
  out[0 * n + gid] = s;

  // 1: butterfly sum with shfl.bfly; every lane ends with the warp's sum.
  s = v;
  for (int mask = 16; mask > 0; mask >>= 1) s += __shfl_xor_sync(FULL_MASK, s, mask);
  out[1 * n + gid] = s;

  // 2: inclusive prefix sum with shfl.up.
  s = v;
  for (int off = 1; off < 32; off <<= 1) {
    int t = __shfl_up_sync(FULL_MASK, s, off);
    if (lane >= off) s += t;
  }
  out[2 * n + gid] = s;

  // 3: broadcast of lane 5 with shfl.idx.
  out[3 * n + gid] = __shfl_sync(FULL_MASK, v, 5);
  // 4: source lane out of range (lane + 33): only its low 5 bits count (rotate by 1).
  out[4 * n + gid] = __shfl_sync(FULL_MASK, v, lane + 33);

  // 5: segments of 8: butterfly sum inside each segment.
  s = v;
  for (int mask = 4; mask > 0; mask >>= 1) s += __shfl_xor_sync(FULL_MASK, s, mask, 8);
  out[5 * n + gid] = s;
  // 6..8: raw down/up by 3 and idx 2 within segments of 8 (lanes whose source is outside
  // their segment keep their own value).
  out[6 * n + gid] = __shfl_down_sync(FULL_MASK, v, 3, 8);
  out[7 * n + gid] = __shfl_up_sync(FULL_MASK, v, 3, 8);
  out[8 * n + gid] = __shfl_sync(FULL_MASK, v, 2, 8);
  // 9: segments of 16 and xor mask 16 (>= width): the upper half reads the lower half,
  // the lower half keeps its own value.
  out[9 * n + gid] = __shfl_xor_sync(FULL_MASK, v, 16, 16);

  // 10, 11: partial masks in a divergent branch. The lower half sums itself with
  // shfl.down (width 16); the upper half with shfl.bfly (width 16).
  s = v;
  if (lane < 16) {
    for (int off = 8; off > 0; off >>= 1) s += __shfl_down_sync(0x0000ffffu, s, off, 16);
    out[10 * n + gid] = s;
    out[11 * n + gid] = 0;
  } else {
    for (int mask = 8; mask > 0; mask >>= 1) s += __shfl_xor_sync(0xffff0000u, s, mask, 16);
    out[10 * n + gid] = 0;
    out[11 * n + gid] = s;
  }

  // dout: a 64-bit value reversed across the warp (two 32-bit shuffles).
  dout[gid] = __shfl_sync(FULL_MASK, v * 0.5 + 1e10, 31 - lane);

  // 12: float shfl.down by 1 over the full warp (lane 31 keeps its own); 13: up by 0.
  float f = __shfl_down_sync(FULL_MASK, v * 0.25f, 1);
  out[12 * n + gid] = __float_as_int(f);
  out[13 * n + gid] = __shfl_up_sync(FULL_MASK, v, 0);  // delta 0: own value
}

// Votes. out[k * n + gid], k = 0..5.
extern "C" __global__ void warp_votes(const int* in, unsigned* out, int n) {
  int gid = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[gid];
  out[0 * n + gid] = __any_sync(FULL_MASK, v > 50);
  out[1 * n + gid] = __all_sync(FULL_MASK, v > 0);
  out[2 * n + gid] = __ballot_sync(FULL_MASK, v & 1);
  unsigned active = 0, ballot = 0, all = 2, any = 2;
  if (v % 3 == 0) {
    // Only the lanes with v % 3 == 0 are here.
    active = __activemask();
    ballot = __ballot_sync(active, v > 40);
    all = __all_sync(active, v >= 0);
    any = __any_sync(active, v > 90);
  }
  out[3 * n + gid] = active;
  out[4 * n + gid] = ballot;
  out[5 * n + gid] = all | (any << 4);
}
