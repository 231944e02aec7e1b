// Divergent control flow inside a warp and reconvergence.

#define FULL_MASK 0xffffffffu

// Divergent loops: per-lane trip counts, nested if/else and an inner loop with a
// break inside, then a full-warp shuffle after reconvergence, then an early return of
// some lanes followed by a __syncwarp and shuffles over the lanes that remain.
// out[k * n + gid], k = 0..3.
extern "C" __global__ void divergent_loops(const int* trips, int* out, int n) {
  int gid = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x & 31;
  int count = trips[gid];
  int acc = lane;
  for (int i = 0; i < count; ++i) {
    if ((i + lane) & 1) {
      acc += i * 3;
      if (i % 5 == 0) acc ^= lane;
    } else {
      for (int j = 0; j < (i & 3); ++j) {
        acc -= j;
        if (acc < -50) break;
      }
      if (acc > 400) {
        acc -= 7 * lane;
        continue;
      }
      acc += 1;
    }
  }
  out[0 * n + gid] = acc;
  // All 32 lanes are converged again here.
  out[1 * n + gid] = __shfl_sync(FULL_MASK, acc, 31 - lane);

  unsigned stay = __ballot_sync(FULL_MASK, count % 4 != 3);
  if (count % 4 == 3) {
    out[2 * n + gid] = -1;
    out[3 * n + gid] = -1;
    return;
  }
  __syncwarp(stay);
  int first = __clz(__brev(stay));  // the lowest lane that stayed
  out[2 * n + gid] = __shfl_sync(stay, acc, first);
  out[3 * n + gid] = __popc(__ballot_sync(stay, acc > 0));
}
