// Half-precision and bfloat16 conversions.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// float -> f16 / bf16 (round to nearest even) and back to float.
extern "C" __global__ void float_to_half_bf16(const float* in, unsigned short* h, float* h_back,
                                              unsigned short* b, float* b_back, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half hv = __float2half_rn(in[i]);
  h[i] = __half_as_ushort(hv);
  h_back[i] = __half2float(hv);
  __nv_bfloat16 bv = __float2bfloat16_rn(in[i]);
  b[i] = __bfloat16_as_ushort(bv);
  b_back[i] = __bfloat162float(bv);
}

// Every 16-bit pattern, read as f16 and as bf16, widened to float.
extern "C" __global__ void bits_to_float(float* from_half, float* from_bf16) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= 65536) return;
  unsigned short bits = (unsigned short)i;
  from_half[i] = __half2float(__ushort_as_half(bits));
  from_bf16[i] = __bfloat162float(__ushort_as_bfloat16(bits));
}
