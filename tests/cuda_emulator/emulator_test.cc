// What the emulator adds to a driver: out-of-bounds accesses reported with the kernel,
// PTX line and address (and the context broken afterwards, as on a GPU), per-launch
// counters, and thread orders that expose a missing __syncthreads.
#include <cuda.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cuda_emulator/cuemu.h"
#include "tests/cuda_emulator/cuemu_test_util.h"

namespace cuemu_test {
namespace {

// The 1-based line of `ptx` holding the first instruction starting with `opcode`
// inside the body of `.entry kernel`; 0 if there is none.
int PtxLine(const std::string& ptx, const std::string& kernel, const std::string& opcode) {
  std::istringstream lines(ptx);
  std::string line;
  bool inside = false;
  for (int number = 1; std::getline(lines, line); ++number) {
    if (line.find(".entry " + kernel + "(") != std::string::npos) inside = true;
    if (!inside) continue;
    const size_t start = line.find_first_not_of(" \t");
    if (start != std::string::npos && line.compare(start, opcode.size(), opcode) == 0) return number;
    if (line == "}") inside = false;
  }
  return 0;
}

// The numbers that follow "line " in `message`.
std::vector<int> LineNumbers(const std::string& message) {
  std::vector<int> numbers;
  static const std::regex pattern("line\\s+(\\d+)");
  for (auto it = std::sregex_iterator(message.begin(), message.end(), pattern); it != std::sregex_iterator(); ++it) {
    numbers.push_back(std::stoi((*it)[1]));
  }
  return numbers;
}

// The hexadecimal numbers ("0x...") in `message`.
std::vector<uint64_t> HexNumbers(const std::string& message) {
  std::vector<uint64_t> numbers;
  static const std::regex pattern("0[xX]([0-9a-fA-F]{1,16})");
  for (auto it = std::sregex_iterator(message.begin(), message.end(), pattern); it != std::sregex_iterator(); ++it) {
    numbers.push_back(std::stoull((*it)[1], nullptr, 16));
  }
  return numbers;
}

// Checks the message of an out-of-bounds access: the kernel's name, "line <N>" with
// the PTX line of the faulting instruction, and an address (in [lo, hi] if hi != 0).
void ExpectFaultMessage(const std::string& message, const std::string& kernel, int line, uint64_t lo, uint64_t hi) {
  EXPECT_NE(message.find(kernel), std::string::npos) << "kernel name missing: '" << message << "'";
  ASSERT_GT(line, 0) << "the faulting instruction is not in the PTX";
  std::vector<int> lines = LineNumbers(message);
  EXPECT_NE(std::find(lines.begin(), lines.end(), line), lines.end()) << "want \"line " << line << "\": '" << message << "'";
  std::vector<uint64_t> addresses = HexNumbers(message);
  ASSERT_FALSE(addresses.empty()) << "no 0x address: '" << message << "'";
  if (hi != 0) {
    bool found = false;
    for (uint64_t a : addresses) found |= a >= lo && a <= hi;
    EXPECT_TRUE(found) << std::hex << "want an address in [0x" << lo << ", 0x" << hi << "]: '" << message << "'";
  }
}

// Out-of-bounds tests run in a context of their own (cuCtxCreate), destroyed after:
// the error breaks the context.
class FaultTest : public KernelTest {
 protected:
  void SetUp() override {
    KernelTest::SetUp();
    ptx_ = ReadPtx("faults", Arch());
    if (ptx_.empty()) {
      if (InCi()) FAIL() << MissingPtxMessage("faults", Arch());
      GTEST_SKIP() << MissingPtxMessage("faults", Arch());
    }
    Check(cuCtxCreate(&context_, nullptr, 0, Device()), "cuCtxCreate");
    std::string log;
    ASSERT_EQ(LoadPtx(ptx_, &module_, &log), CUDA_SUCCESS) << log;
  }
  void TearDown() override {
    if (context_ != nullptr) CU_EXPECT_OK(cuCtxDestroy(context_));
    KernelTest::TearDown();
  }
  CUfunction Kernel(const char* name) {
    CUfunction f = nullptr;
    Check(cuModuleGetFunction(&f, module_, name), name);
    return f;
  }

  std::string ptx_;
  CUcontext context_ = nullptr;
  CUmodule module_ = nullptr;
};

// A global load 1 MiB past a 4 KB allocation: cuLaunchKernel succeeds, the next
// synchronization returns CUDA_ERROR_ILLEGAL_ADDRESS with a message naming the kernel,
// the PTX line of the ld.global and the address; later calls in the context fail.
TEST_P(FaultTest, OutOfBoundsGlobalReadIsIllegalAddress) {
  CUfunction f = Kernel("oob_global_read");
  CUdeviceptr in = 0, out = 0;
  CU_ASSERT_OK(cuMemAlloc(&in, 4096));
  CU_ASSERT_OK(cuMemAlloc(&out, 128));
  const long long offset = (1 << 20) / 4 + 1024;  // elements
  CU_ASSERT_OK(Launch(f, {1}, {32}, 0, nullptr, in, out, offset));
  CUresult sync = cuCtxSynchronize();
  ASSERT_EQ(sync, CUDA_ERROR_ILLEGAL_ADDRESS) << Describe(sync);
  ExpectFaultMessage(LastMessage(), "oob_global_read", PtxLine(ptx_, "oob_global_read", "ld.global"), in + 4 * offset,
                     in + 4 * (offset + 31) + 3);
  // The error is sticky.
  CUdeviceptr p = 0;
  EXPECT_NE(cuMemAlloc(&p, 16), CUDA_SUCCESS);
  EXPECT_NE(cuCtxSynchronize(), CUDA_SUCCESS);
}

// A shared store far past the block's shared memory, detected by a synchronous
// cuMemcpyDtoH (which runs the pending launch first).
TEST_P(FaultTest, OutOfBoundsSharedWriteIsIllegalAddress) {
  CUfunction f = Kernel("oob_shared_write");
  CUdeviceptr out = 0;
  CU_ASSERT_OK(cuMemAlloc(&out, 64 * 4));
  const int index = 1 << 20;  // 2 MiB into shared memory
  CU_ASSERT_OK(Launch(f, {1}, {64}, 0, nullptr, out, index));
  std::vector<int> host(64);
  CUresult copy = cuMemcpyDtoH(host.data(), out, 64 * 4);
  ASSERT_EQ(copy, CUDA_ERROR_ILLEGAL_ADDRESS) << Describe(copy);
  const int line = PtxLine(ptx_, "oob_shared_write", "st.shared.u16");
  ExpectFaultMessage(LastMessage(), "oob_shared_write", line, 0, 0);
  EXPECT_NE(cuCtxSynchronize(), CUDA_SUCCESS);
}

// The error reaches cuStreamSynchronize too, for a launch on a stream.
TEST_P(FaultTest, StreamSynchronizeReportsTheFault) {
  CUfunction f = Kernel("oob_global_read");
  CUstream stream = nullptr;
  CU_ASSERT_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUdeviceptr in = 0, out = 0;
  CU_ASSERT_OK(cuMemAlloc(&in, 4096));
  CU_ASSERT_OK(cuMemAlloc(&out, 128));
  CU_ASSERT_OK(Launch(f, {1}, {32}, 0, stream, in, out, (long long)(1 << 22)));
  CUresult sync = cuStreamSynchronize(stream);
  EXPECT_EQ(sync, CUDA_ERROR_ILLEGAL_ADDRESS) << Describe(sync);
  EXPECT_NE(LastMessage().find("oob_global_read"), std::string::npos) << LastMessage();
}

// A misaligned store: CUDA_ERROR_MISALIGNED_ADDRESS, naming the kernel and the address.
TEST_P(FaultTest, MisalignedStoreIsMisalignedAddress) {
  CUfunction f = Kernel("misaligned_store");
  CUdeviceptr out = 0;
  CU_ASSERT_OK(cuMemAlloc(&out, 64));
  CU_ASSERT_OK(Launch(f, {1}, {32}, 0, nullptr, out));
  CUresult sync = cuCtxSynchronize();
  ASSERT_EQ(sync, CUDA_ERROR_MISALIGNED_ADDRESS) << Describe(sync);
  EXPECT_NE(LastMessage().find("misaligned_store"), std::string::npos) << LastMessage();
  std::ostringstream address;
  address << "0x" << std::hex << out + 2;
  EXPECT_NE(LastMessage().find(address.str()), std::string::npos) << LastMessage();
}

// A launch that never ends stops after CUEMU_MAX_WARP_INSTRUCTIONS with
// CUDA_ERROR_LAUNCH_TIMEOUT instead of hanging (run by the ctest
// cuda_emulator_timeout, which sets a small limit).
TEST_P(FaultTest, EndlessLoopTimesOut) {
  const char* limit = std::getenv("CUEMU_MAX_WARP_INSTRUCTIONS");
  if (!limit) GTEST_SKIP() << "needs CUEMU_MAX_WARP_INSTRUCTIONS (the ctest cuda_emulator_timeout)";
  CUfunction f = Kernel("spin_forever");
  CUdeviceptr flag = 0;
  CU_ASSERT_OK(cuMemAlloc(&flag, 4));
  CU_ASSERT_OK(cuMemsetD32(flag, 0, 1));
  CU_ASSERT_OK(Launch(f, {1}, {32}, 0, nullptr, flag));
  CUresult sync = cuCtxSynchronize();
  ASSERT_EQ(sync, CUDA_ERROR_LAUNCH_TIMEOUT) << Describe(sync);
  EXPECT_NE(LastMessage().find("spin_forever"), std::string::npos) << LastMessage();
  EXPECT_NE(LastMessage().find(std::string("more than ") + limit + " warp instructions"), std::string::npos) << LastMessage();
}

CUEMU_INSTANTIATE_ARCHS(FaultTest);

class PrimaryResetTest : public KernelTest {};

// In the primary context, cuDevicePrimaryCtxReset clears the error: kernels run again.
TEST_P(PrimaryResetTest, PrimaryContextResetClearsTheError) {
  CUEMU_LOAD_KERNEL(oob, "faults", "oob_global_read");
  CUdeviceptr in = 0, out = 0;
  CU_ASSERT_OK(cuMemAlloc(&in, 4096));
  CU_ASSERT_OK(cuMemAlloc(&out, 128));
  CU_ASSERT_OK(Launch(oob, {1}, {32}, 0, nullptr, in, out, (long long)(1 << 20)));
  CUresult sync = cuCtxSynchronize();
  EXPECT_EQ(sync, CUDA_ERROR_ILLEGAL_ADDRESS) << Describe(sync);
  CU_ASSERT_OK(cuDevicePrimaryCtxReset(Device()));
  ReacquirePrimaryContext();

  CUEMU_LOAD_KERNEL(add, "basic", "vector_add");
  const int n = 256;
  std::vector<float> a = RandomFloats(n, -1, 1, 30), b = RandomFloats(n, -1, 1, 31);
  CUdeviceptr da = mem_.Upload(a), db = mem_.Upload(b), dc = mem_.Alloc<float>(n);
  CU_ASSERT_OK(Launch(add, {1}, {256}, 0, nullptr, da, db, dc, n));
  CU_ASSERT_OK(cuCtxSynchronize());
  std::vector<float> want(n);
  for (int i = 0; i < n; ++i) want[i] = a[i] + b[i];
  EXPECT_TRUE(SameValues(Download<float>(dc, n), want));
}

CUEMU_INSTANTIATE_ARCHS(PrimaryResetTest);

// --- Counters -----------------------------------------------------------------------

class CounterTest : public KernelTest {
 protected:
  CUemuCounters Counters() {
    CUemuCounters c;
    std::memset(&c, 0, sizeof(c));
    Check(cuemuGetLastLaunchCounters(&c), "cuemuGetLastLaunchCounters");
    return c;
  }
  // ptxas ran (it is next to nvcc): its register count is known.
  void ExpectRegisters(const CUemuCounters& c) {
    if (CUEMU_TEST_HAVE_NVCC) {
      EXPECT_GT(c.registers, 0);
    }
  }
};

// Vector add of N floats, one per thread, coalesced: 8N bytes loaded in 8N/32 sectors,
// 4N bytes stored in 4N/32 sectors (100% efficiency); one load request per warp and
// array, one store per warp; no divergence.
TEST_P(CounterTest, VectorAddIsFullyCoalesced) {
  CUEMU_LOAD_KERNEL(f, "basic", "vector_add");
  const int n = 4096;
  CUdeviceptr a = mem_.Alloc<float>(n), b = mem_.Alloc<float>(n), c = mem_.Alloc<float>(n);
  CU_ASSERT_OK(Launch(f, {n / 256}, {256}, 0, nullptr, a, b, c, n));
  CU_ASSERT_OK(cuCtxSynchronize());
  CUemuCounters k = Counters();
  EXPECT_EQ(k.blocks, 16u);
  EXPECT_EQ(k.threads, 4096u);
  EXPECT_EQ(k.global_load_requests, 2u * 128);
  EXPECT_EQ(k.global_load_bytes, 8u * n);
  EXPECT_EQ(k.global_load_sectors, 8u * n / 32);
  EXPECT_EQ(k.global_store_requests, 128u);
  EXPECT_EQ(k.global_store_bytes, 4u * n);
  EXPECT_EQ(k.global_store_sectors, 4u * n / 32);
  EXPECT_EQ(k.shared_requests, 0u);
  EXPECT_EQ(k.shared_bank_conflicts, 0u);
  EXPECT_GT(k.warp_instructions, 0u);
  EXPECT_LE(k.thread_instructions, 32 * k.warp_instructions);
  ExpectRegisters(k);
}

// Loads at a stride of 32 floats: each lane's 4 bytes lie in a sector of their own, so
// the efficiency bytes / (32 * sectors) is 4 / 32 = 12.5%. The stores are coalesced.
TEST_P(CounterTest, StridedLoadUsesOneSectorPerLane) {
  CUEMU_LOAD_KERNEL(f, "counters", "load_stride32");
  const unsigned threads = 1024;
  CUdeviceptr in = mem_.Alloc<float>(32 * threads), out = mem_.Alloc<float>(threads);
  CU_ASSERT_OK(Launch(f, {4}, {256}, 0, nullptr, in, out));
  CU_ASSERT_OK(cuCtxSynchronize());
  CUemuCounters k = Counters();
  EXPECT_EQ(k.global_load_requests, 32u);
  EXPECT_EQ(k.global_load_bytes, 4u * threads);
  EXPECT_EQ(k.global_load_sectors, threads);
  EXPECT_DOUBLE_EQ(static_cast<double>(k.global_load_bytes) / (32.0 * k.global_load_sectors), 0.125);
  EXPECT_EQ(k.global_store_bytes, 4u * threads);
  EXPECT_EQ(k.global_store_sectors, threads / 8);
}

// The coalesced copy for comparison: 100% efficiency on both sides.
TEST_P(CounterTest, CoalescedCopy) {
  CUEMU_LOAD_KERNEL(f, "counters", "copy_coalesced");
  const unsigned n = 8192;
  CUdeviceptr in = mem_.Alloc<float>(n), out = mem_.Alloc<float>(n);
  CU_ASSERT_OK(Launch(f, {n / 128}, {128}, 0, nullptr, in, out));
  CU_ASSERT_OK(cuCtxSynchronize());
  CUemuCounters k = Counters();
  EXPECT_EQ(k.blocks, 64u);
  EXPECT_EQ(k.global_load_requests, n / 32);
  EXPECT_EQ(k.global_load_bytes, 4u * n);
  EXPECT_EQ(k.global_load_sectors, n / 8);
  EXPECT_EQ(k.global_store_bytes, 4u * n);
  EXPECT_EQ(k.global_store_sectors, n / 8);
  // No branch and no predicate: every instruction runs on all 32 lanes.
  EXPECT_EQ(k.thread_instructions, 32 * k.warp_instructions);
}

// Shared memory, one block of 1024 threads (32 warps), each warp one store of 32
// consecutive words and one load: 64 requests. Loads of 32 consecutive words or of one
// word by all lanes have no conflict; 32 distinct words of bank 0 cost 31 extra
// wavefronts per warp (32 * 31 in all). ptxas reports the 4 KB of static shared memory.
TEST_P(CounterTest, SharedMemoryBankConflicts) {
  struct Case {
    const char* kernel;
    unsigned long long conflicts;
  };
  for (const Case& c : {Case{"shared_consecutive", 0}, Case{"shared_stride32", 32 * 31}, Case{"shared_broadcast", 0}}) {
    SCOPED_TRACE(c.kernel);
    CUEMU_LOAD_KERNEL(f, "counters", c.kernel);
    CUdeviceptr out = mem_.Alloc<float>(1024);
    CU_ASSERT_OK(Launch(f, {1}, {1024}, 0, nullptr, out));
    CU_ASSERT_OK(cuCtxSynchronize());
    CUemuCounters k = Counters();
    EXPECT_EQ(k.shared_requests, 64u);
    EXPECT_EQ(k.shared_bank_conflicts, c.conflicts);
    EXPECT_EQ(k.global_store_bytes, 4096u);
    ExpectRegisters(k);
    if (k.registers >= 0) {
      EXPECT_EQ(k.static_shared_bytes, 4096);
    }
    // The values read: s[i] = i.
    std::vector<float> got = Download<float>(out, 1024);
    for (unsigned t = 0; t < 1024; t += 97) {
      const unsigned lane = t & 31;
      const float want = c.conflicts ? 32.0f * lane : (std::string(c.kernel) == "shared_broadcast" ? 0.0f : lane);
      EXPECT_EQ(got[t], want) << "thread " << t;
    }
  }
}

CUEMU_INSTANTIATE_ARCHS(CounterTest);

// --- Thread order -------------------------------------------------------------------

struct Order {
  CUemuThreadOrder order;
  unsigned long long seed;
  const char* name;
};
const Order kOrders[] = {{CUEMU_ORDER_FORWARD, 0, "forward"},
                         {CUEMU_ORDER_REVERSE, 0, "reverse"},
                         {CUEMU_ORDER_SHUFFLE, 1, "shuffle:1"},
                         {CUEMU_ORDER_SHUFFLE, 2, "shuffle:2"},
                         {CUEMU_ORDER_SHUFFLE, 12345, "shuffle:12345"}};

class ThreadOrderTest : public KernelTest {};

// Correct kernels (barriers where needed; shuffles; atomics whose result does not
// depend on the order) give bit-identical results in every order.
TEST_P(ThreadOrderTest, CorrectKernelsGiveTheSameResultInEveryOrder) {
  CUEMU_LOAD_KERNEL(sum, "reduce", "block_sum");
  CUEMU_LOAD_KERNEL(softmax, "reduce", "softmax_rows");
  CUEMU_LOAD_KERNEL(shuffles, "warp", "warp_shuffles");
  CUEMU_LOAD_KERNEL(histogram, "atomics", "histogram256");
  const int n = 8192, rows = 8, cols = 300, warps = 4;
  const unsigned blocks = Blocks(n, 512);
  std::vector<float> in = RandomFloats(n, -1, 1, 40), x = RandomFloats(rows * cols, -5, 5, 41);
  std::vector<int> lanes = RandomInts(32 * warps, -1000, 1000, 42);
  std::vector<unsigned char> bytes(20000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(i * i % 251 % 7);
  CUdeviceptr din = mem_.Upload(in), dsum = mem_.Alloc<float>(blocks);
  CUdeviceptr dx = mem_.Upload(x), dy = mem_.Alloc<float>(rows * cols);
  CUdeviceptr dl = mem_.Upload(lanes), dsh = mem_.Alloc<int>(14 * 32 * warps), dshd = mem_.Alloc<double>(32 * warps);
  CUdeviceptr dbytes = mem_.Upload(bytes), dbins = mem_.Alloc<unsigned>(256);

  std::vector<unsigned> want_bins(256, 0);
  for (unsigned char b : bytes) ++want_bins[b];
  const std::vector<float> want_sum = ModelBlockSum(in, blocks);
  std::vector<float> first_softmax;
  std::vector<int> first_shuffles;
  for (const Order& o : kOrders) {
    SCOPED_TRACE(o.name);
    CU_ASSERT_OK(cuemuSetThreadOrder(o.order, o.seed));
    CU_ASSERT_OK(cuMemsetD32(dbins, 0, 256));
    CU_ASSERT_OK(Launch(sum, {blocks}, {256}, 0, nullptr, din, dsum, n));
    CU_ASSERT_OK(Launch(softmax, {rows}, {96}, 0, nullptr, dx, dy, cols));
    CU_ASSERT_OK(Launch(shuffles, {2}, {64}, 0, nullptr, dl, dsh, dshd, 32 * warps));
    CU_ASSERT_OK(Launch(histogram, {5}, {128}, 0, nullptr, dbytes, (int)bytes.size(), dbins));
    CU_ASSERT_OK(cuCtxSynchronize());
    EXPECT_TRUE(SameValues(Download<float>(dsum, blocks), want_sum, "block_sum"));
    EXPECT_TRUE(SameValues(Download<unsigned>(dbins, 256), want_bins, "histogram256"));
    std::vector<float> y = Download<float>(dy, rows * cols);
    std::vector<int> sh = Download<int>(dsh, 14 * 32 * warps);
    if (first_softmax.empty()) {
      first_softmax = y;
      first_shuffles = sh;
      for (float v : y) ASSERT_TRUE(std::isfinite(v) && v > 0.0f) << "softmax output " << v;
    } else {
      EXPECT_TRUE(SameValues(y, first_softmax, "softmax_rows vs forward"));
      EXPECT_TRUE(SameValues(sh, first_shuffles, "warp_shuffles vs forward"));
    }
  }
}

// block_sum without the barrier after filling shared memory: a warp reads words of
// another warp that has not run yet (still 0xFF: NaN), so at least one order gives a
// wrong result, and NaN among them. The same seed gives the same result again.
TEST_P(ThreadOrderTest, MissingBarrierIsWrongInSomeOrder) {
  CUEMU_LOAD_KERNEL(racy, "reduce", "block_sum_missing_barrier");
  const int n = 4096;
  const unsigned blocks = Blocks(n, 512);
  std::vector<float> in = RandomFloats(n, -1, 1, 43);
  const std::vector<float> want = ModelBlockSum(in, blocks);
  CUdeviceptr din = mem_.Upload(in), dout = mem_.Alloc<float>(blocks);
  int wrong_orders = 0;
  bool saw_nan = false;
  std::string summary;
  for (const Order& o : kOrders) {
    CU_ASSERT_OK(cuemuSetThreadOrder(o.order, o.seed));
    CU_ASSERT_OK(Launch(racy, {blocks}, {256}, 0, nullptr, din, dout, n));
    CU_ASSERT_OK(cuCtxSynchronize());
    std::vector<float> got = Download<float>(dout, blocks);
    const bool wrong = !SameValues(got, want);
    for (float v : got) saw_nan |= std::isnan(v);
    wrong_orders += wrong;
    summary += std::string(" ") + o.name + (wrong ? ":wrong" : ":right");

    if (o.order == CUEMU_ORDER_SHUFFLE) {  // reproducible
      CU_ASSERT_OK(cuemuSetThreadOrder(o.order, o.seed));
      CU_ASSERT_OK(Launch(racy, {blocks}, {256}, 0, nullptr, din, dout, n));
      CU_ASSERT_OK(cuCtxSynchronize());
      EXPECT_TRUE(SameValues(Download<float>(dout, blocks), got, std::string(o.name) + " run twice"));
    }
  }
  EXPECT_GE(wrong_orders, 1) << "the missing barrier went unnoticed in every order:" << summary;
  EXPECT_TRUE(saw_nan) << "no NaN from unwritten shared memory:" << summary;
}

CUEMU_INSTANTIATE_ARCHS(ThreadOrderTest);

// Thread-block clusters (sm_90 only): cuLaunchKernelEx with a cluster dimension.
class ClusterTest : public KernelTest {
 protected:
  void SetUp() override {
    KernelTest::SetUp();
    if (std::string(Arch()) != "sm_90") GTEST_SKIP() << "clusters need sm_90";
  }
  CUresult LaunchCluster(CUfunction f, unsigned grid, unsigned block, unsigned cluster, CUdeviceptr in, CUdeviceptr sums,
                         CUdeviceptr ids, int exit_early) {
    CUlaunchAttribute attribute{};
    attribute.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attribute.value.clusterDim.x = cluster;
    attribute.value.clusterDim.y = attribute.value.clusterDim.z = 1;
    CUlaunchConfig config{};
    config.gridDimX = grid;
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = block;
    config.blockDimY = config.blockDimZ = 1;
    config.attrs = &attribute;
    config.numAttrs = 1;
    void* params[] = {&in, &sums, &ids, &exit_early};
    return cuLaunchKernelEx(&config, f, params, nullptr);
  }
};

// Each block reads every block of its cluster through distributed shared memory: the
// same sums in every thread order, the cluster's registers as CUDA defines them.
TEST_P(ClusterTest, BlocksReadEachOthersSharedMemory) {
  CUEMU_LOAD_KERNEL(f, "cluster", "cluster_sums");
  const unsigned grid = 12, block = 64;
  std::vector<float> in(grid);
  for (unsigned b = 0; b < grid; ++b) in[b] = static_cast<float>(1u << b);
  CUdeviceptr din = mem_.Upload(in), sums = mem_.Alloc<float>(grid * block), ids = mem_.Alloc<unsigned>(3 * grid * block);
  for (const unsigned cluster : {1u, 2u, 4u, 6u}) {
    for (const Order& o : kOrders) {
      SCOPED_TRACE(std::string(o.name) + ", cluster " + std::to_string(cluster));
      CU_ASSERT_OK(cuemuSetThreadOrder(o.order, o.seed));
      CU_ASSERT_OK(LaunchCluster(f, grid, block, cluster, din, sums, ids, 0));
      CU_ASSERT_OK(cuCtxSynchronize());
      const std::vector<float> got = Download<float>(sums, grid * block);
      const std::vector<unsigned> got_ids = Download<unsigned>(ids, 3 * grid * block);
      for (unsigned t = 0; t < grid * block; ++t) {
        const unsigned b = t / block, first = b / cluster * cluster;
        float want = 0;
        for (unsigned r = 0; r < cluster; ++r) want += in[first + r];
        ASSERT_EQ(got[t], want) << "thread " << t;
        ASSERT_EQ(got_ids[3 * t], b % cluster) << "rank of thread " << t;
        ASSERT_EQ(got_ids[3 * t + 1], cluster) << "cluster size seen by thread " << t;
        ASSERT_EQ(got_ids[3 * t + 2], b / cluster) << "cluster index of thread " << t;
      }
    }
  }
}

// A block that exits while another block of its cluster still reads its shared memory
// (the kernel without its last cluster barrier): an illegal address, naming the block.
TEST_P(ClusterTest, ReadingTheSharedMemoryOfAnExitedBlockFaults) {
  CUcontext context = nullptr;
  Check(cuCtxCreate(&context, nullptr, 0, Device()), "cuCtxCreate");
  CUmodule module = nullptr;
  std::string log;
  ASSERT_EQ(LoadPtx(ReadPtx("cluster", Arch()), &module, &log), CUDA_SUCCESS) << log;
  CUfunction f = nullptr;
  CU_ASSERT_OK(cuModuleGetFunction(&f, module, "cluster_sums"));
  CUdeviceptr in = 0, sums = 0, ids = 0;
  CU_ASSERT_OK(cuMemAlloc(&in, 4 * 4));
  CU_ASSERT_OK(cuMemAlloc(&sums, 4 * 4 * 32));
  CU_ASSERT_OK(cuMemAlloc(&ids, 12 * 4 * 32));
  CU_ASSERT_OK(LaunchCluster(f, 4, 32, 4, in, sums, ids, 1));
  const CUresult sync = cuCtxSynchronize();
  EXPECT_EQ(sync, CUDA_ERROR_ILLEGAL_ADDRESS) << Describe(sync);
  EXPECT_NE(LastMessage().find("which has exited"), std::string::npos) << LastMessage();
  CU_EXPECT_OK(cuCtxDestroy(context));
  CU_ASSERT_OK(cuCtxSetCurrent(PrimaryContext()));
}

// Launches the driver refuses: a cluster that does not divide the grid, one of more than
// the portable 8 blocks, a launch attribute the emulator does not model.
TEST_P(ClusterTest, BadClustersAreRefused) {
  CUEMU_LOAD_KERNEL(f, "cluster", "cluster_sums");
  CUdeviceptr in = mem_.Alloc<float>(16), sums = mem_.Alloc<float>(16 * 32), ids = mem_.Alloc<unsigned>(3 * 16 * 32);
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_CLUSTER_SIZE, LaunchCluster(f, 6, 32, 4, in, sums, ids, 0));
  EXPECT_NE(LastMessage().find("does not divide grid (6,1,1)"), std::string::npos) << LastMessage();
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_CLUSTER_SIZE, LaunchCluster(f, 16, 32, 16, in, sums, ids, 0));
  CUlaunchAttribute zero{};
  zero.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  zero.value.clusterDim.x = 2;  // y and z 0
  CUlaunchConfig with_zero{};
  with_zero.gridDimX = 4;
  with_zero.gridDimY = with_zero.gridDimZ = 1;
  with_zero.blockDimX = 32;
  with_zero.blockDimY = with_zero.blockDimZ = 1;
  with_zero.attrs = &zero;
  with_zero.numAttrs = 1;
  int no_exit = 0;
  void* zero_params[] = {&in, &sums, &ids, &no_exit};
  CU_EXPECT_RESULT(CUDA_ERROR_INVALID_CLUSTER_SIZE, cuLaunchKernelEx(&with_zero, f, zero_params, nullptr));
  int launchable = 0;
  CU_EXPECT_OK(cuDeviceGetAttribute(&launchable, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, Device()));
  EXPECT_EQ(launchable, 1);
  CUlaunchAttribute attribute{};
  attribute.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  attribute.value.cooperative = 1;
  CUlaunchConfig config{};
  config.gridDimX = config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = config.blockDimY = config.blockDimZ = 32;
  config.blockDimY = config.blockDimZ = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  int exit_early = 0;
  void* params[] = {&in, &sums, &ids, &exit_early};
  CU_EXPECT_RESULT(CUDA_ERROR_NOT_SUPPORTED, cuLaunchKernelEx(&config, f, params, nullptr));
  CU_EXPECT_OK(cuCtxSynchronize());
}

CUEMU_INSTANTIATE_ARCHS(ClusterTest);

// The cluster's barrier as the PTX ISA has it: a wait returns once every thread of the
// cluster has arrived, whatever the others wait at meanwhile. Here warp 0 waits at bar.sync
// between its arrive and its wait while warp 1 passes its wait (all have arrived) and meets
// it at bar.sync: legal. With lanes 16-31 held at a warp-wide shuffle before they arrive,
// lanes 0-15 would wait forever: a deadlock, reported as a launch failure.
TEST(CudaEmulatorCluster, TheBarrierWaitsForArrivalsOnly) {
  const std::string ptx = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry arrive_then_bar(.param .u64 out)
{
  .reg .pred %p<3>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  setp.lt.u32 %p1, %r1, 32;
  setp.ge.u32 %p2, %r1, 32;
  barrier.cluster.arrive;
  @%p1 bar.sync 0;
  barrier.cluster.wait;
  @%p2 bar.sync 0;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd2, %rd1, %rd2;
  st.global.u32 [%rd2], %r1;
  ret;
}
.visible .entry shuffle_between(.param .u64 out)
{
  .reg .pred %p<3>;
  .reg .b32 %r<4>;
  mov.u32 %r1, %tid.x;
  setp.lt.u32 %p1, %r1, 16;
  @!%p1 bra SHUFFLE;
  barrier.cluster.arrive;
  barrier.cluster.wait;
SHUFFLE:
  shfl.sync.bfly.b32 %r2, %r1, 1, 31, -1;
  @%p1 bra DONE;
  barrier.cluster.arrive;
  barrier.cluster.wait;
DONE:
  ret;
}
)";
  CUcontext context = nullptr;
  Check(cuCtxCreate(&context, nullptr, 0, Device()), "cuCtxCreate");
  CUmodule module;
  std::string log;
  ASSERT_EQ(LoadPtx(ptx, &module, &log), CUDA_SUCCESS) << log;
  CUfunction legal, deadlock;
  CU_ASSERT_OK(cuModuleGetFunction(&legal, module, "arrive_then_bar"));
  CU_ASSERT_OK(cuModuleGetFunction(&deadlock, module, "shuffle_between"));
  CUdeviceptr out = 0;
  CU_ASSERT_OK(cuMemAlloc(&out, 64 * 4));
  CU_ASSERT_OK(Launch(legal, {1}, {64}, 0, nullptr, out));
  CU_ASSERT_OK(cuCtxSynchronize());
  std::vector<unsigned> got(64);
  CU_ASSERT_OK(cuMemcpyDtoH(got.data(), out, 64 * 4));
  for (unsigned t = 0; t < 64; ++t) EXPECT_EQ(got[t], t);
  CU_ASSERT_OK(Launch(deadlock, {1}, {32}, 0, nullptr, out));
  const CUresult sync = cuCtxSynchronize();
  EXPECT_EQ(sync, CUDA_ERROR_LAUNCH_FAILED) << Describe(sync);
  EXPECT_NE(LastMessage().find("deadlock"), std::string::npos) << LastMessage();
  CU_EXPECT_OK(cuCtxDestroy(context));
  CU_ASSERT_OK(cuCtxSetCurrent(PrimaryContext()));
}

// The ISA's rounding modifiers on float arithmetic and conversions: 1 + 2^-24 is a tie
// that .rn rounds to 1, .rz and .rm keep below, .rp rounds up; 1/3 and 2^24 + 1 likewise.
TEST(CudaEmulatorRounding, DirectedRoundingModes) {
  const std::string ptx = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry rounding(.param .u64 out)
{
  .reg .f32 %f<12>;
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [out];
  mov.f32 %f1, 0f3F800000;
  mov.f32 %f2, 0f33800000;
  add.rn.f32 %f3, %f1, %f2;
  add.rz.f32 %f4, %f1, %f2;
  add.rp.f32 %f5, %f1, %f2;
  sub.rm.f32 %f6, %f1, %f2;
  mov.f32 %f7, 0f40400000;
  div.rz.f32 %f8, %f1, %f7;
  div.rp.f32 %f9, %f1, %f7;
  mov.u32 %r1, 16777217;
  cvt.rz.f32.u32 %f10, %r1;
  cvt.rp.f32.u32 %f11, %r1;
  st.global.v4.f32 [%rd1], {%f3, %f4, %f5, %f6};
  st.global.v4.f32 [%rd1+16], {%f8, %f9, %f10, %f11};
  ret;
}
)";
  CU_ASSERT_OK(cuCtxSetCurrent(PrimaryContext()));
  CUmodule module;
  std::string log;
  ASSERT_EQ(LoadPtx(ptx, &module, &log), CUDA_SUCCESS) << log;
  CUfunction f;
  CU_ASSERT_OK(cuModuleGetFunction(&f, module, "rounding"));
  DeviceMemory mem;
  CUdeviceptr out = mem.Alloc<float>(8);
  CU_ASSERT_OK(Launch(f, {1}, {1}, 0, nullptr, out));
  std::vector<float> got = Download<float>(out, 8);
  const float one_up = std::nextafter(1.0f, 2.0f), one_down = std::nextafter(1.0f, 0.0f);
  const float third_down = 1.0f / 3.0f < 1.0 / 3.0 ? 1.0f / 3.0f : std::nextafter(1.0f / 3.0f, 0.0f);
  EXPECT_EQ(got[0], 1.0f);                              // add.rn: the tie goes to even
  EXPECT_EQ(got[1], 1.0f);                              // add.rz
  EXPECT_EQ(got[2], one_up);                            // add.rp
  EXPECT_EQ(got[3], one_down);                          // sub.rm: 1 - 2^-24 is exact below 1
  EXPECT_EQ(got[4], third_down);                        // div.rz
  EXPECT_EQ(got[5], std::nextafter(third_down, 1.0f));  // div.rp
  EXPECT_EQ(got[6], 16777216.0f);                       // cvt.rz of 2^24 + 1
  EXPECT_EQ(got[7], 16777218.0f);                       // cvt.rp
  CU_EXPECT_OK(cuModuleUnload(module));
}

}  // namespace
}  // namespace cuemu_test
