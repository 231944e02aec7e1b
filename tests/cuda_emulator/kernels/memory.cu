// Loads and stores of every width: int2, double, 8- and 16-bit integers (signed and
// unsigned, i.e. sign- and zero-extension), 64-bit integers, and float4.

struct MemoryIn {
  const int2* i2;
  const double* d;
  const signed char* s8;
  const unsigned char* u8;
  const short* s16;
  const unsigned short* u16;
  const unsigned long long* u64;
};

struct MemoryOut {
  int2* i2;
  double* d;
  signed char* s8;
  short* s16;
  unsigned long long* u64;
  int* widened;  // 4 ints per element
};

// The structs are passed by value: one .param of 56 bytes and one of 48.
extern "C" __global__ void vector_memory(MemoryIn in, MemoryOut out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int2 b = in.i2[i];
  out.i2[i] = make_int2(b.y - b.x, b.x ^ b.y);
  out.d[i] = -2.0 * in.d[n - 1 - i];
  out.s8[i] = (signed char)(in.s8[i] * 3);
  out.s16[i] = (short)(in.s16[i] >> 1);
  unsigned long long u = in.u64[i];
  out.u64[i] = (u ^ (u >> 17)) * 0x9E3779B97F4A7C15ull;
  out.widened[4 * i + 0] = in.s8[i];   // sign-extended
  out.widened[4 * i + 1] = in.u8[i];   // zero-extended
  out.widened[4 * i + 2] = in.s16[i];  // sign-extended
  out.widened[4 * i + 3] = in.u16[i];  // zero-extended
}

// 16-byte vector load and store (ld/st.global.v4.f32).
extern "C" __global__ void float4_memory(const float4* in, float4* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float4 a = in[i];
  out[i] = make_float4(a.w, a.z * 2.0f, a.y + 1.0f, a.x);
}
