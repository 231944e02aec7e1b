// Thread-block clusters (sm_90): the cluster's special registers, distributed shared
// memory (mapa, then a generic load) and the cluster barrier.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

// Block b of a cluster puts in[b] in its shared memory; after the cluster's barrier every
// thread sums the cluster's values in rank order through distributed shared memory, and
// writes the sum, its block's rank, the cluster's size and the block's cluster index. The
// second barrier keeps each block's shared memory until the others have read it: without
// it (`exit_early`) a block may exit while another still reads its value.
extern "C" __global__ void cluster_sums(const float* in, float* sums, unsigned* ids, int exit_early) {
#if __CUDA_ARCH__ >= 900
  __shared__ float value;
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) value = in[blockIdx.x];
  cluster.sync();
  float sum = 0;
  for (unsigned r = 0; r < cluster.num_blocks(); ++r) sum += *cluster.map_shared_rank(&value, r);
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  sums[t] = sum;
  ids[3 * t] = cluster.block_rank();
  ids[3 * t + 1] = cluster.num_blocks();
  ids[3 * t + 2] = blockIdx.x / cluster.dim_blocks().x;
  if (!exit_early) cluster.sync();
#endif
}
