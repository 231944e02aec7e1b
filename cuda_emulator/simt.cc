// The SIMT executor. A warp runs the group of its lanes that are at the lowest program
// counter (so lanes that diverged at a branch reconverge where their paths meet), until
// every lane has exited or waits at a barrier; then the block's next warp runs. The blocks
// of a thread-block cluster run together: each until its lanes wait at the cluster's
// barrier or exit, then the next. Every memory access is checked against its allocation
// or state space (another block's shared memory too, which is gone once that block exits).
#include "cuda_emulator/simt.h"

#include <algorithm>
#include <bit>
#include <cfenv>
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

#include "cuda_emulator/fp.h"

namespace cuemu {

// ---------------------------------------------------------------------------------------
// Device memory

uint64_t DeviceMemory::Allocate(uint64_t bytes) {
  if (bytes == 0 || bytes > capacity_ - used_) return 0;
  Allocation a;
  a.base = next_;
  a.size = bytes;
  a.data.reset(static_cast<uint8_t*>(std::calloc(bytes, 1)));
  if (!a.data) return 0;
  // Uninitialized memory reads as NaN; past 256 MiB the pages stay the OS's lazy zeros,
  // so a large allocation costs no time and no memory until it is written.
  if (bytes <= (256ull << 20)) std::memset(a.data.get(), 0xff, bytes);
  // 256-byte aligned like cudaMalloc, at least 64 KiB of unmapped space after each.
  next_ = (next_ + bytes + 0x10000 + 0xffff) & ~0xffffull;
  used_ += bytes;
  uint64_t base = a.base;
  live_.emplace(base, std::move(a));
  return base;
}

bool DeviceMemory::Free(uint64_t base) {
  auto it = live_.find(base);
  if (it == live_.end()) return false;
  used_ -= it->second.size;
  freed_[base] = it->second.size;
  live_.erase(it);
  return true;
}

DeviceMemory::Allocation* DeviceMemory::Find(uint64_t address, uint64_t bytes) {
  auto it = live_.upper_bound(address);
  if (it == live_.begin()) return nullptr;
  --it;
  Allocation& a = it->second;
  if (address - a.base + bytes > a.size) return nullptr;
  return &a;
}

const DeviceMemory::Allocation* DeviceMemory::Nearest(uint64_t address) const {
  auto it = live_.upper_bound(address);
  if (it == live_.begin()) return nullptr;
  return &std::prev(it)->second;
}

bool DeviceMemory::WasFreed(uint64_t address) const {
  auto it = freed_.upper_bound(address);
  if (it == freed_.begin()) return false;
  --it;
  return address - it->first < it->second;
}

namespace {

// The floating-point operations of one thread's instruction: 1, 2 for an FMA, twice that
// on a pair of halves; 0 for anything else.
int FloatOps(const Instr& in) {
  if (!IsFloat(in.type)) return 0;
  const bool pair = in.type == Type::kF16x2 || in.type == Type::kBF16x2;
  int ops = 0;
  switch (in.op) {
    case Op::kAdd:
    case Op::kSub:
    case Op::kMul:
    case Op::kDiv:
    case Op::kMin:
    case Op::kMax:
    case Op::kSqrt:
    case Op::kRsqrt:
    case Op::kRcp:
    case Op::kEx2:
    case Op::kLg2:
    case Op::kSin:
    case Op::kCos:
    case Op::kTanh: ops = 1; break;
    case Op::kFma:
    case Op::kMad: ops = 2; break;
    default: return 0;
  }
  return pair ? 2 * ops : ops;
}

// ---------------------------------------------------------------------------------------
// Values in slots: the bits of T, zero-extended.

template <class T>
inline T As(uint64_t v) {
  if constexpr (std::is_same_v<T, float>)
    return std::bit_cast<float>(static_cast<uint32_t>(v));
  else if constexpr (std::is_same_v<T, double>)
    return std::bit_cast<double>(v);
  else
    return static_cast<T>(v);
}
template <class T>
inline uint64_t Bits(T v) {
  if constexpr (std::is_same_v<T, float>)
    return std::bit_cast<uint32_t>(v);
  else if constexpr (std::is_same_v<T, double>)
    return std::bit_cast<uint64_t>(v);
  else
    return static_cast<std::make_unsigned_t<T>>(v);
}

template <class F>
inline void ForLanes(uint32_t mask, F f) {
  for (uint32_t m = mask; m; m &= m - 1) f(std::countr_zero(m));
}

// Calls f with a value of the C++ type of an integer PTX type.
template <class F>
bool WithIntType(Type t, F f) {
  switch (t) {
    case Type::kS8: f(int8_t{}); return true;
    case Type::kS16: f(int16_t{}); return true;
    case Type::kS32: f(int32_t{}); return true;
    case Type::kS64: f(int64_t{}); return true;
    case Type::kU8:
    case Type::kB8: f(uint8_t{}); return true;
    case Type::kU16:
    case Type::kB16: f(uint16_t{}); return true;
    case Type::kU32:
    case Type::kB32: f(uint32_t{}); return true;
    case Type::kU64:
    case Type::kB64: f(uint64_t{}); return true;
    case Type::kPred: f(bool{}); return true;
    default: return false;
  }
}
template <class F>
bool WithFloatType(Type t, F f) {
  switch (t) {
    case Type::kF32: f(float{}); return true;
    case Type::kF64: f(double{}); return true;
    default: return false;
  }
}

template <class T>
using Wider = std::conditional_t<
    sizeof(T) == 1, std::conditional_t<std::is_signed_v<T>, int16_t, uint16_t>,
    std::conditional_t<sizeof(T) == 2, std::conditional_t<std::is_signed_v<T>, int32_t, uint32_t>,
                       std::conditional_t<sizeof(T) == 4, std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>,
                                          std::conditional_t<std::is_signed_v<T>, __int128, unsigned __int128>>>>;

bool IsWarpSync(Op op) {
  return op == Op::kShfl || op == Op::kVote || op == Op::kRedux || op == Op::kMatch || op == Op::kBarWarp;
}

bool IsHalfType(Type t) { return t == Type::kF16 || t == Type::kF16x2 || t == Type::kBF16 || t == Type::kBF16x2; }

// ---------------------------------------------------------------------------------------

class Executor {
 public:
  Executor(const Launch& launch, DeviceMemory* memory, Stats* stats, std::string* message)
      : l_(launch), k_(*launch.kernel), mem_(memory), stats_(stats), message_(message) {}

  Fault Run();

 private:
  struct Warp {
    int index = 0;
    int rank = 0;  // its block's in the cluster
    uint32_t all = 0, exited = 0, waiting = 0;
    // barrier.cluster: per lane, its arrivals and its completed waits (its k-th wait returns
    // once every lane of the cluster that has not exited has arrived k times), and the lanes
    // blocked in a wait.
    uint32_t arrivals[32] = {}, waits[32] = {};
    uint32_t cluster_waiting = 0;
    uint32_t parked = 0;    // lanes waiting at a warp-synchronous instruction for its other members
    uint32_t backward = 0;  // backward branches taken while diverged, since the last rotation
    uint32_t last_pc = 0;   // where the last group stopped (to rotate past it)
    uint32_t pc[32] = {};
    uint32_t carry = 0;  // CC.CF, by lane: what add.cc, sub.cc and mad.cc wrote
    uint64_t* regs = nullptr;
    // Global loads issued and not yet waited for, and the registers they write (see
    // WaitForLoads).
    uint32_t loads_in_flight = 0;
    std::vector<int32_t> loading;
  };
  // Memory-level parallelism as the hardware sees it after ptxas, which schedules the
  // independent loads of a basic block ahead of the instructions that use them: a warp's
  // loads in flight are waited for (counted in Stats::load_waits, and cleared) where its
  // basic block ends (a branch target, a branch, a barrier, an exit) or an access's address
  // is a loaded value.
  void WaitForLoads(Warp& w, const Instr& in, uint32_t pc);
  template <class T>
  void CarryChainStep(Warp& w, const Instr& in, uint32_t exec);
  std::vector<bool> block_starts_;  // per instruction: a branch's target

  // A block of the running cluster, its state its own.
  struct Block {
    unsigned index[3] = {0, 0, 0};
    std::vector<Warp> warps;
    std::vector<uint64_t> regs;
    std::vector<uint8_t> shared, local;
    bool exited = false;  // every thread has: its shared memory is gone
  };

  uint64_t* R(Warp& w, int slot) { return w.regs + static_cast<size_t>(slot) * 32; }
  void StartBlock(Block& b, const unsigned index[3], const unsigned rank[3]);
  bool RunCluster();
  // The fewest arrivals at the cluster's barrier of any lane of the cluster that has not
  // exited (UINT32_MAX when none is left).
  uint32_t ClusterArrivals() const;
  // Runs the block until each of its lanes has exited or waits at barrier.cluster.wait.
  bool RunBlock(Block& b);
  bool RunWarp(Warp& w);
  bool Step(Warp& w, const Instr& in, uint32_t exec, uint32_t group);
  bool Fail(Fault fault, const Instr& in, const std::string& what);
  std::string ThreadName(const Warp& w, int lane) const;

  // `hint`: the allocation the previous lane of the same instruction hit.
  uint8_t* Access(Warp& w, int lane, const Instr& in, uint64_t address, unsigned bytes, bool write, Space* resolved,
                  DeviceMemory::Allocation** hint);
  [[gnu::cold, gnu::noinline]] void AccessFault(Warp& w, int lane, const Instr& in, uint64_t address, uint64_t offset,
                                                unsigned bytes, bool write, Space space);
  bool LoadStore(Warp& w, const Instr& in, uint32_t exec);
  bool Atomic(Warp& w, const Instr& in, uint32_t exec);
  // Warp-synchronous instructions (shfl, vote, redux, match, bar.warp): each executing
  // lane's member mask in masks[lane]. Lanes naming one mask must all execute the
  // instruction together; *missing gets the members that have not arrived yet.
  bool Members(Warp& w, const Instr& in, uint32_t exec, uint32_t masks[32], uint32_t* missing);
  bool SyncMask(Warp& w, const Instr& in, uint32_t exec, uint32_t masks[32]);
  // The lanes of one warp-level access, by the memory they reached, for the counters.
  struct WarpAccess {
    uint64_t addresses[32];  // global addresses, or offsets in shared memory
    uint32_t global = 0, shared = 0;
    DeviceMemory::Allocation* hint = nullptr;
    void Record(int lane, const Instr& in, Space space, uint64_t address) {
      if (space == Space::kShared) {
        addresses[lane] = in.space == Space::kGeneric ? address - kSharedWindow : address;
        shared |= 1u << lane;
      } else if (space == Space::kGlobal || space == Space::kConst) {
        addresses[lane] = address;
        global |= 1u << lane;
      }
    }
  };
  void Count(const WarpAccess& access, bool store, unsigned bytes);
  void CountGlobal(bool store, const uint64_t* addresses, uint32_t mask, unsigned bytes);
  void CountShared(const uint64_t* addresses, uint32_t mask, unsigned bytes);

  bool Arith(Warp& w, const Instr& in, uint32_t exec);
  bool HalfArith(Warp& w, const Instr& in, uint32_t exec);
  bool Convert(Warp& w, const Instr& in, uint32_t exec);

  const Launch& l_;
  const Kernel& k_;
  DeviceMemory* mem_;
  Stats* stats_;
  std::string* message_;
  Fault fault_ = Fault::kNone;

  unsigned threads_per_block_ = 0;
  unsigned cluster_[3] = {1, 1, 1};
  std::vector<Block> blocks_;  // the running cluster's, by rank
  std::vector<int> warp_order_, block_order_;
  int lane_order_[32];
  std::mt19937_64 rng_;
};

std::string Hex(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

std::string BlockName(const unsigned index[3]) {
  return "block (" + std::to_string(index[0]) + "," + std::to_string(index[1]) + "," + std::to_string(index[2]) + ")";
}

std::string Executor::ThreadName(const Warp& w, int lane) const {
  unsigned t = w.index * 32 + lane;
  const unsigned* b = l_.block;
  std::ostringstream s;
  s << "thread (" << t % b[0] << "," << (t / b[0]) % b[1] << "," << t / (b[0] * b[1]) << ") of "
    << BlockName(blocks_[w.rank].index);
  return s.str();
}

bool Executor::Fail(Fault fault, const Instr& in, const std::string& what) {
  if (fault_ == Fault::kNone) {
    fault_ = fault;
    *message_ = "kernel '" + l_.kernel_name + "', PTX line " + std::to_string(in.line) + ": " + what;
  }
  return false;
}

Fault Executor::Run() {
  block_starts_.assign(k_.code.size() + 1, false);
  for (const Instr& in : k_.code)
    if (in.op == Op::kBra && in.target >= 0) block_starts_[in.target] = true;
  const unsigned* b = l_.block;
  threads_per_block_ = b[0] * b[1] * b[2];
  for (int d = 0; d < 3; ++d) cluster_[d] = std::max(l_.cluster[d], 1u);
  const int nwarps = static_cast<int>((threads_per_block_ + 31) / 32);
  const unsigned size = cluster_[0] * cluster_[1] * cluster_[2];
  blocks_.resize(size);
  block_order_.resize(size);
  warp_order_.resize(nwarps);
  rng_.seed(l_.seed);
  for (int i = 0; i < 32; ++i) lane_order_[i] = l_.order == ThreadOrder::kReverse ? 31 - i : i;
  if (l_.order == ThreadOrder::kShuffle) std::shuffle(lane_order_, lane_order_ + 32, rng_);
  for (unsigned rank = 0; rank < size; ++rank) {
    Block& block = blocks_[rank];
    block.warps.resize(nwarps);
    block.regs.assign(static_cast<size_t>(nwarps) * k_.num_slots * 32, 0);
    block.shared.resize(l_.dynamic_shared == 0 ? k_.static_shared_bytes : k_.dynamic_shared_offset + l_.dynamic_shared);
    block.local.resize(static_cast<size_t>(k_.local_bytes) * nwarps * 32);
    for (int i = 0; i < nwarps; ++i) {
      Warp& w = block.warps[i];
      w.index = i;
      w.rank = static_cast<int>(rank);
      w.regs = block.regs.data() + static_cast<size_t>(i) * k_.num_slots * 32;
      unsigned first = i * 32;
      unsigned count = std::min(32u, threads_per_block_ - first);
      w.all = count == 32 ? ~0u : (1u << count) - 1;
      for (size_t c = 0; c < k_.constants.size(); ++c) {
        uint64_t* r = R(w, k_.constants[c].slot);
        std::fill(r, r + 32, l_.constant_values[c]);
      }
      uint64_t* s = R(w, k_.special_base);
      auto set = [&](int special, uint64_t v) { std::fill(s + special * 32, s + special * 32 + 32, v); };
      for (int lane = 0; lane < 32; ++lane) {
        unsigned t = first + lane;
        s[kTidX * 32 + lane] = t % b[0];
        s[kTidY * 32 + lane] = (t / b[0]) % b[1];
        s[kTidZ * 32 + lane] = t / (b[0] * b[1]);
        s[kLaneid * 32 + lane] = lane;
        s[kLanemaskEq * 32 + lane] = 1u << lane;
        s[kLanemaskLe * 32 + lane] = lane == 31 ? ~0u : (2u << lane) - 1;
        s[kLanemaskLt * 32 + lane] = (1u << lane) - 1;
        s[kLanemaskGe * 32 + lane] = ~((1u << lane) - 1) & 0xffffffffu;
        s[kLanemaskGt * 32 + lane] = lane == 31 ? 0 : ~((2u << lane) - 1) & 0xffffffffu;
      }
      for (int d = 0; d < 3; ++d) {
        set(kNtidX + d, b[d]);
        set(kNctaidX + d, l_.grid[d]);
        set(kClusterNctaidX + d, cluster_[d]);
        set(kNclusteridX + d, l_.grid[d] / cluster_[d]);
      }
      set(kWarpid, i);
      set(kNwarpid, 64);
      set(kNsmid, l_.multiprocessors);
      set(kGridid, 1);
      set(kDynamicSmemSize, l_.dynamic_shared);
      set(kTotalSmemSize, block.shared.size());
      set(kClusterCtarank, rank);
      set(kClusterNctarank, size);
    }
  }
  for (unsigned z = 0; z < l_.grid[2]; z += cluster_[2])
    for (unsigned y = 0; y < l_.grid[1]; y += cluster_[1])
      for (unsigned x = 0; x < l_.grid[0]; x += cluster_[0]) {
        for (unsigned rank = 0; rank < size; ++rank) {
          const unsigned r[3] = {rank % cluster_[0], rank / cluster_[0] % cluster_[1], rank / (cluster_[0] * cluster_[1])};
          const unsigned index[3] = {x + r[0], y + r[1], z + r[2]};
          StartBlock(blocks_[rank], index, r);
        }
        if (!RunCluster()) return fault_;
      }
  return Fault::kNone;
}

void Executor::StartBlock(Block& b, const unsigned index[3], const unsigned rank[3]) {
  std::copy(index, index + 3, b.index);
  b.exited = false;
  ++stats_->blocks;
  stats_->threads += threads_per_block_;
  // A read before a write shows as NaN.
  if (!b.shared.empty()) std::memset(b.shared.data(), 0xff, b.shared.size());
  if (!b.local.empty()) std::memset(b.local.data(), 0xff, b.local.size());
  uint64_t linear = index[0] + static_cast<uint64_t>(l_.grid[0]) * (index[1] + static_cast<uint64_t>(l_.grid[1]) * index[2]);
  for (Warp& w : b.warps) {
    w.exited = ~w.all;
    w.waiting = w.parked = w.backward = w.last_pc = 0;
    w.cluster_waiting = 0;
    std::fill(std::begin(w.arrivals), std::end(w.arrivals), 0);
    std::fill(std::begin(w.waits), std::end(w.waits), 0);
    w.loads_in_flight = 0;
    w.loading.clear();
    std::fill(std::begin(w.pc), std::end(w.pc), 0);
    uint64_t* s = R(w, k_.special_base);
    for (int d = 0; d < 3; ++d) {
      std::fill(s + (kCtaidX + d) * 32, s + (kCtaidX + d) * 32 + 32, index[d]);
      std::fill(s + (kClusterCtaidX + d) * 32, s + (kClusterCtaidX + d) * 32 + 32, rank[d]);
      std::fill(s + (kClusteridX + d) * 32, s + (kClusteridX + d) * 32 + 32, index[d] / cluster_[d]);
    }
    std::fill(s + kSmid * 32, s + kSmid * 32 + 32, linear % l_.multiprocessors);
  }
}

bool Executor::RunCluster() {
  for (size_t i = 0; i < blocks_.size(); ++i) block_order_[i] = static_cast<int>(i);
  for (;;) {
    if (l_.order == ThreadOrder::kReverse) std::reverse(block_order_.begin(), block_order_.end());
    if (l_.order == ThreadOrder::kShuffle) std::shuffle(block_order_.begin(), block_order_.end(), rng_);
    bool done = true;
    for (int i : block_order_) {
      Block& b = blocks_[i];
      if (b.exited) continue;
      if (!RunBlock(b)) return false;
      b.exited = std::all_of(b.warps.begin(), b.warps.end(), [](const Warp& w) { return w.exited == ~0u; });
      done &= b.exited;
    }
    if (done) return true;
    // Every block waits for the cluster: release the waits every lane has arrived for.
    const uint32_t arrived = ClusterArrivals();
    bool released = false;
    for (Block& b : blocks_)
      for (Warp& w : b.warps)
        ForLanes(w.cluster_waiting, [&](int l) {
          if (arrived <= w.waits[l]) return;
          ++w.waits[l];
          w.cluster_waiting &= ~(1u << l);
          released = true;
        });
    if (!released) {
      fault_ = Fault::kLaunchFailed;
      *message_ = "kernel '" + l_.kernel_name + "': deadlock in the cluster of " + BlockName(blocks_[0].index) +
                  ": lanes wait at barrier.cluster.wait for lanes that never arrive (waiting at bar.sync or at a "
                  "warp-synchronous instruction)";
      return false;
    }
  }
}

uint32_t Executor::ClusterArrivals() const {
  uint32_t fewest = UINT32_MAX;
  for (const Block& b : blocks_)
    for (const Warp& w : b.warps) ForLanes(~w.exited, [&](int l) { fewest = std::min(fewest, w.arrivals[l]); });
  return fewest;
}

bool Executor::RunBlock(Block& b) {
  for (size_t i = 0; i < b.warps.size(); ++i) warp_order_[i] = static_cast<int>(i);
  for (;;) {
    if (l_.order == ThreadOrder::kReverse) std::reverse(warp_order_.begin(), warp_order_.end());
    if (l_.order == ThreadOrder::kShuffle) std::shuffle(warp_order_.begin(), warp_order_.end(), rng_);
    for (int i : warp_order_)
      if (!RunWarp(b.warps[i])) return false;
    bool done = true, at_bar = false, at_cluster = false;
    for (Warp& w : b.warps) {
      done &= w.exited == ~0u;
      at_bar |= w.waiting != 0;
      at_cluster |= w.cluster_waiting != 0;
    }
    // Lanes waiting for the cluster: the block goes on once RunCluster releases them (its
    // lanes at bar.sync wait for them meanwhile).
    if (done || !at_bar || at_cluster) return true;
    for (Warp& w : b.warps) w.waiting = 0;  // every lane that has not exited waits at the barrier: release
    if (l_.order == ThreadOrder::kReverse) std::reverse(warp_order_.begin(), warp_order_.end());
  }
}

// Which lanes run next: those at the lowest program counter, so that lanes which
// diverged reconverge where their paths meet. Lanes parked at a warp-synchronous
// instruction join when the others reach it. A group that keeps branching backward while
// other lanes wait (a spin loop, e.g. on a lock another lane holds) yields to the lanes
// after it, as independent thread scheduling guarantees progress on sm_70 and later.
bool Executor::RunWarp(Warp& w) {
  const Instr* code = k_.code.data();
  for (;;) {
    uint32_t runnable = ~w.exited & ~w.waiting & ~w.cluster_waiting & ~w.parked;
    if (!runnable) {
      if (!w.parked || w.waiting || w.cluster_waiting) return true;  // parked lanes may be joined after the barrier
      // Parked lanes whose members will never come: run them, to report it.
      runnable = w.parked;
      w.parked = 0;
    }
    uint32_t pc = UINT32_MAX;
    if (w.backward > 256) {  // rotate: the lowest program counter past the last group's
      ForLanes(runnable, [&](int l) {
        if (w.pc[l] > w.last_pc) pc = std::min(pc, w.pc[l]);
      });
      w.backward = 0;
    }
    if (pc == UINT32_MAX) ForLanes(runnable, [&](int l) { pc = std::min(pc, w.pc[l]); });
    uint32_t group = 0;
    ForLanes(runnable | w.parked, [&](int l) { group |= (w.pc[l] == pc) << l; });
    w.parked &= ~group;
    const bool diverged = group != (~w.exited & ~w.waiting);  // lanes waiting for the cluster are elsewhere
    for (;;) {
      const Instr& in = code[pc];
      uint32_t exec = group;
      if (in.guard >= 0) {
        const uint64_t* p = R(w, in.guard);
        exec = 0;
        ForLanes(group, [&](int l) { exec |= static_cast<uint32_t>((p[l] & 1) != in.guard_negated) << l; });
      }
      if (diverged && IsWarpSync(in.op) && exec) {
        uint32_t masks[32], missing;
        if (!Members(w, in, exec, masks, &missing)) return false;
        uint32_t could_arrive = ~w.exited & ~w.parked & ~group;
        if (missing & could_arrive) {  // wait here for them
          w.parked |= group;
          ForLanes(group, [&](int l) { w.pc[l] = pc; });
          break;
        }
      }
      if (++stats_->warp_instructions > l_.max_warp_instructions)
        return Fail(Fault::kTimeout, in,
                    "more than " + std::to_string(l_.max_warp_instructions) +
                        " warp instructions (CUEMU_MAX_WARP_INSTRUCTIONS): an endless loop, or a "
                        "wait for another warp, which runs only when this one exits or waits at a barrier");
      stats_->thread_instructions += std::popcount(exec);
      stats_->float_ops += static_cast<uint64_t>(std::popcount(exec)) * FloatOps(in);
      if (w.loads_in_flight) WaitForLoads(w, in, pc);
      if (in.op == Op::kBra) {
        if (diverged && exec && static_cast<uint32_t>(in.target) <= pc) ++w.backward;
        if (exec == group) {
          pc = in.target;
        } else if (exec == 0) {
          ++pc;
        } else {
          ForLanes(group, [&](int l) { w.pc[l] = (exec >> l & 1) ? in.target : pc + 1; });
          w.last_pc = pc;
          break;
        }
      } else if (in.op == Op::kRet || in.op == Op::kExit) {
        w.exited |= exec;
        group &= ~exec;
        if (!group) break;
        ++pc;
      } else if (in.op == Op::kBar && exec == 0) {
        ++pc;  // no lane executes it
      } else if (in.op == Op::kBar) {
        if (exec != group) return Fail(Fault::kLaunchFailed, in, "bar.sync under a predicate that differs between lanes");
        if (in.nsrc > 0 && R(w, in.src[0])[std::countr_zero(exec)] != 0)
          return Fail(Fault::kLaunchFailed, in, "only barrier 0 is supported");
        if (in.nsrc > 1 && R(w, in.src[1])[std::countr_zero(exec)] != threads_per_block_)
          return Fail(Fault::kLaunchFailed, in, "bar.sync with a thread count other than the block's");
        w.waiting |= group;
        ForLanes(group, [&](int l) { w.pc[l] = pc + 1; });
        break;
      } else if (in.op == Op::kBarCluster && exec == 0) {
        ++pc;  // no lane executes it
      } else if (in.op == Op::kBarCluster) {
        if (exec != group) return Fail(Fault::kLaunchFailed, in, "barrier.cluster under a predicate that differs between lanes");
        bool ok = true;
        if (in.mode == static_cast<uint8_t>(BarClusterMode::kArrive)) {
          ForLanes(exec, [&](int l) { ok &= w.arrivals[l]++ == w.waits[l]; });
          if (!ok) return Fail(Fault::kLaunchFailed, in, "barrier.cluster.arrive twice without a wait between");
          ++pc;
        } else {
          ForLanes(exec, [&](int l) { ok &= w.arrivals[l] == w.waits[l] + 1; });
          if (!ok) return Fail(Fault::kLaunchFailed, in, "barrier.cluster.wait without barrier.cluster.arrive first");
          // It returns at once where the whole cluster has arrived, else it waits.
          const uint32_t arrived = ClusterArrivals();
          bool now = true;
          ForLanes(exec, [&](int l) { now &= arrived > w.waits[l]; });
          if (now) {
            ForLanes(exec, [&](int l) { ++w.waits[l]; });
            ++pc;
          } else {
            w.cluster_waiting |= group;
            ForLanes(group, [&](int l) { w.pc[l] = pc + 1; });
            break;
          }
        }
      } else {
        if (!Step(w, in, exec, group)) return false;
        ++pc;
      }
      if (diverged) {
        ForLanes(group, [&](int l) { w.pc[l] = pc; });
        w.last_pc = pc;
        break;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// Memory

uint8_t* Executor::Access(Warp& w, int lane, const Instr& in, uint64_t address, unsigned bytes, bool write, Space* resolved,
                          DeviceMemory::Allocation** hint) {
  Space space = in.space;
  uint64_t offset = address;
  Block* block = &blocks_[w.rank];
  if (space == Space::kGeneric) {
    if (address - kSharedWindow < kWindowSize) {
      // The shared memory of the cluster's block of rank offset >> 32 (mapa's addresses).
      space = Space::kShared;
      offset = address - kSharedWindow;
      const uint64_t rank = offset >> kRankShift;
      offset &= (uint64_t{1} << kRankShift) - 1;
      if (rank >= blocks_.size()) {
        Fail(Fault::kIllegalAddress, in,
             "shared memory of rank " + std::to_string(rank) + " of a cluster of " + std::to_string(blocks_.size()) +
                 " blocks, read by " + ThreadName(w, lane));
        return nullptr;
      }
      block = &blocks_[rank];
      if (block->exited) {
        Fail(Fault::kIllegalAddress, in,
             std::string(write ? "write to" : "read of") + " the shared memory of " + BlockName(block->index) +
                 ", which has exited, by " + ThreadName(w, lane));
        return nullptr;
      }
    } else if (address - kLocalWindow < kWindowSize) {
      space = Space::kLocal;
      offset = address - kLocalWindow;
    } else if (address - kParamWindow < kWindowSize) {
      space = Space::kParam;
      offset = address - kParamWindow;
    } else {
      space = Space::kGlobal;
    }
  }
  *resolved = space;
  if (offset % bytes == 0) {
    switch (space) {
      case Space::kShared:
        if (offset + bytes <= block->shared.size()) return block->shared.data() + offset;
        break;
      case Space::kLocal:
        if (offset + bytes <= static_cast<uint64_t>(k_.local_bytes))
          return block->local.data() + (static_cast<size_t>(w.index) * 32 + lane) * k_.local_bytes + offset;
        break;
      case Space::kParam:
        if (!write && offset + bytes <= l_.params.size()) return const_cast<uint8_t*>(l_.params.data()) + offset;
        break;
      default: {
        DeviceMemory::Allocation* a = *hint;
        if (!a || address < a->base || address - a->base + bytes > a->size) a = *hint = mem_->Find(address, bytes);
        if (a) return a->data.get() + (address - a->base);
      }
    }
  }
  AccessFault(w, lane, in, address, offset, bytes, write, space);
  return nullptr;
}

void Executor::AccessFault(Warp& w, int lane, const Instr& in, uint64_t address, uint64_t offset, unsigned bytes, bool write,
                           Space space) {
  const char* kind = write ? "write" : "read";
  std::ostringstream s;
  if (offset % bytes != 0) {
    s << "misaligned " << kind << " of " << bytes << " bytes at address " << Hex(address) << " by " << ThreadName(w, lane);
    Fail(Fault::kMisalignedAddress, in, s.str());
    return;
  }
  if (space == Space::kParam && write) {
    Fail(Fault::kIllegalAddress, in, "a store to kernel parameter space by " + ThreadName(w, lane));
    return;
  }
  const char* name = space == Space::kShared  ? "shared"
                     : space == Space::kLocal ? "local"
                     : space == Space::kParam ? "param"
                                              : "global";
  s << "out-of-bounds " << name << " " << kind << " of " << bytes << " bytes at address " << Hex(address) << " by "
    << ThreadName(w, lane);
  if (space == Space::kShared) {
    s << " (the block has " << blocks_[w.rank].shared.size() << " bytes of shared memory)";
  } else if (space == Space::kLocal) {
    s << " (each thread has " << k_.local_bytes << " bytes of local memory)";
  } else if (space == Space::kParam) {
    s << " (the parameters take " << l_.params.size() << " bytes)";
  } else if (mem_->WasFreed(address)) {
    s << ": the memory was freed";
  } else if (const DeviceMemory::Allocation* n = mem_->Nearest(address)) {
    s << "; the nearest allocation below is " << Hex(n->base) << " of " << n->size << " bytes, " << address - (n->base + n->size)
      << " bytes before the address";
  } else {
    s << "; no allocation lies below it";
  }
  Fail(Fault::kIllegalAddress, in, s.str());
}

void Executor::CountGlobal(bool store, const uint64_t* addresses, uint32_t mask, unsigned bytes) {
  uint64_t sectors[32];
  int n = 0;
  ForLanes(mask, [&](int l) { sectors[n++] = addresses[l] >> 5; });
  bool sorted = std::is_sorted(sectors, sectors + n);
  if (!sorted) std::sort(sectors, sectors + n);
  uint64_t distinct = std::unique(sectors, sectors + n) - sectors;
  uint64_t requested = static_cast<uint64_t>(n) * bytes;
  // An access of 16 bytes or less at its natural alignment lies in one sector.
  std::unordered_set<uint64_t>& footprint = store ? stats_->store_sector_set : stats_->load_sector_set;
  footprint.insert(sectors, sectors + distinct);
  if (store) {
    ++stats_->global_store_requests;
    stats_->global_store_bytes += requested;
    stats_->global_store_sectors += distinct;
  } else {
    ++stats_->global_load_requests;
    stats_->global_load_bytes += requested;
    stats_->global_load_sectors += distinct;
  }
}

void Executor::CountShared(const uint64_t* addresses, uint32_t mask, unsigned bytes) {
  ++stats_->shared_requests;
  // 32 banks of 4 bytes, one wavefront serves 128 bytes: 8-byte accesses go in two phases
  // of 16 lanes, 16-byte accesses in four of 8; within a phase, the wavefronts are the most
  // distinct words any one bank is asked for.
  unsigned lanes_per_phase = bytes <= 4 ? 32 : 128 / bytes;
  unsigned words = std::max(1u, bytes / 4);
  for (unsigned first = 0; first < 32; first += lanes_per_phase) {
    uint64_t word[128];
    int n = 0;
    for (unsigned l = first; l < first + lanes_per_phase; ++l) {
      if (!(mask >> l & 1)) continue;
      for (unsigned i = 0; i < words; ++i) word[n++] = (addresses[l] >> 2) + i;
    }
    if (n == 0) continue;
    std::sort(word, word + n);
    n = static_cast<int>(std::unique(word, word + n) - word);
    int per_bank[32] = {};
    int wavefronts = 0;
    for (int i = 0; i < n; ++i) wavefronts = std::max(wavefronts, ++per_bank[word[i] & 31]);
    stats_->shared_bank_conflicts += wavefronts - 1;
  }
}

bool Executor::LoadStore(Warp& w, const Instr& in, uint32_t exec) {
  const bool store = in.op == Op::kSt;
  const unsigned size = Bytes(in.type);
  const unsigned bytes = size * in.vec;
  const bool sign_extend = IsSigned(in.type) && size < 8;  // a narrow signed load
  const int sign_shift = 64 - 8 * size;
  const uint64_t* base = R(w, in.src[0]);
  WarpAccess access;
  for (int i = 0; i < 32; ++i) {
    int l = lane_order_[i];
    if (!(exec >> l & 1)) continue;
    uint64_t address = base[l] + in.offset;
    Space space;
    uint8_t* p = Access(w, l, in, address, bytes, store, &space, &access.hint);
    if (!p) return false;
    access.Record(l, in, space, address);
    for (int e = 0; e < in.vec; ++e) {
      uint8_t* q = p + e * size;
      if (store) {
        uint64_t v = R(w, in.src[1 + e])[l];
        switch (size) {  // little-endian: the low bytes
          case 1: *q = static_cast<uint8_t>(v); break;
          case 2: std::memcpy(q, &v, 2); break;
          case 4: std::memcpy(q, &v, 4); break;
          default: std::memcpy(q, &v, 8); break;
        }
      } else {
        uint64_t v = 0;
        switch (size) {
          case 1: v = *q; break;
          case 2: std::memcpy(&v, q, 2); break;
          case 4: std::memcpy(&v, q, 4); break;
          default: std::memcpy(&v, q, 8); break;
        }
        if (sign_extend) v = static_cast<uint64_t>(static_cast<int64_t>(v << sign_shift) >> sign_shift);
        R(w, in.dst[e])[l] = v;
      }
    }
  }
  Count(access, store, bytes);
  if (!store && access.global) {
    ++w.loads_in_flight;
    w.loading.insert(w.loading.end(), in.dst, in.dst + in.vec);
  }
  return true;
}

void Executor::WaitForLoads(Warp& w, const Instr& in, uint32_t pc) {
  auto loading = [&](int32_t slot) {
    return slot >= 0 && std::find(w.loading.begin(), w.loading.end(), slot) != w.loading.end();
  };
  const bool memory = in.op == Op::kLd || in.op == Op::kSt || in.op == Op::kAtom || in.op == Op::kRed;
  const bool waits = block_starts_[pc] || in.op == Op::kBra || in.op == Op::kBar || in.op == Op::kRet || in.op == Op::kExit ||
                     (memory && loading(in.src[0]));
  if (!waits) return;
  ++stats_->load_waits;
  stats_->loads_in_flight_at_waits += w.loads_in_flight;
  w.loads_in_flight = 0;
  w.loading.clear();
}

void Executor::Count(const WarpAccess& access, bool store, unsigned bytes) {
  if (access.global) CountGlobal(store, access.addresses, access.global, bytes);
  if (access.shared) CountShared(access.addresses, access.shared, bytes);
}

template <class T>
T AtomicOp(AtomOp op, T old, T b, T c) {
  switch (op) {
    case AtomOp::kAdd:
      if constexpr (std::is_integral_v<T>)
        return static_cast<T>(static_cast<uint64_t>(old) + static_cast<uint64_t>(b));
      else
        return old + b;
    case AtomOp::kMin:
      if constexpr (std::is_floating_point_v<T>)
        return FMin(old, b, false);
      else
        return std::min(old, b);
    case AtomOp::kMax:
      if constexpr (std::is_floating_point_v<T>)
        return FMax(old, b, false);
      else
        return std::max(old, b);
    case AtomOp::kExch: return b;
    case AtomOp::kCas: return old == b ? c : old;
    default: break;
  }
  if constexpr (std::is_integral_v<T>) {
    switch (op) {
      case AtomOp::kAnd: return old & b;
      case AtomOp::kOr: return old | b;
      case AtomOp::kXor: return old ^ b;
      case AtomOp::kInc: return old >= b ? 0 : old + 1;
      case AtomOp::kDec: return (old == 0 || old > b) ? b : old - 1;
      default: break;
    }
  }
  return old;
}

bool Executor::Atomic(Warp& w, const Instr& in, uint32_t exec) {
  const unsigned size = Bytes(in.type);
  const uint64_t* base = R(w, in.src[0]);
  const AtomOp op = static_cast<AtomOp>(in.mode);
  WarpAccess access;
  bool ok = true;
  for (int i = 0; i < 32 && ok; ++i) {
    int l = lane_order_[i];
    if (!(exec >> l & 1)) continue;
    uint64_t address = base[l] + in.offset;
    Space space;
    uint8_t* p = Access(w, l, in, address, size, true, &space, &access.hint);
    if (!p) return false;
    access.Record(l, in, space, address);
    uint64_t b = R(w, in.src[1])[l], c = in.nsrc > 2 ? R(w, in.src[2])[l] : 0;
    auto apply = [&](auto tag) {
      using T = decltype(tag);
      T old;
      std::memcpy(&old, p, sizeof(T));
      T next;
      if constexpr (std::is_same_v<T, float>) {
        // atom.add.f32 on global memory flushes subnormal inputs and results (the ISA's note).
        if (op == AtomOp::kAdd && space == Space::kGlobal)
          next = Ftz(Ftz(old) + Ftz(As<T>(b)));
        else
          next = AtomicOp<T>(op, old, As<T>(b), As<T>(c));
      } else {
        next = AtomicOp<T>(op, old, As<T>(b), As<T>(c));
      }
      std::memcpy(p, &next, sizeof(T));
      if (in.op == Op::kAtom) R(w, in.dst[0])[l] = Bits<T>(old);
    };
    if (in.type == Type::kF32)
      apply(float{});
    else if (in.type == Type::kF64)
      apply(double{});
    else if (IsFloat(in.type) || !WithIntType(in.type, [&](auto tag) {
               if constexpr (std::is_same_v<decltype(tag), bool>)
                 ok = false;
               else
                 apply(tag);
             }))
      ok = false;
  }
  if (!ok) return Fail(Fault::kLaunchFailed, in, std::string("atomics on .") + TypeName(in.type) + " are not supported");
  Count(access, true, size);
  return true;
}

bool Executor::Members(Warp& w, const Instr& in, uint32_t exec, uint32_t masks[32], uint32_t* missing) {
  int src = in.op == Op::kShfl ? 3 : in.op == Op::kBarWarp ? 0 : 1;
  const uint64_t* m = R(w, in.src[src]);
  *missing = 0;
  bool ok = true;
  ForLanes(exec, [&](int l) { masks[l] = static_cast<uint32_t>(m[l]); });
  ForLanes(exec, [&](int l) {
    if (!ok) return;
    if (!(masks[l] >> l & 1)) {
      ok = Fail(Fault::kLaunchFailed, in,
                "lane " + std::to_string(l) + " executes it but is not in its member mask " + Hex(masks[l]));
      return;
    }
    ForLanes(exec & masks[l], [&](int j) {
      if (ok && masks[j] != masks[l])
        ok = Fail(Fault::kLaunchFailed, in,
                  "lanes " + std::to_string(l) + " and " + std::to_string(j) +
                      " name different member masks that overlap: " + Hex(masks[l]) + " and " + Hex(masks[j]));
    });
    *missing |= masks[l] & ~w.exited & ~exec;
  });
  return ok;
}

// In Step, every member has arrived (RunWarp parks lanes until they do), or never will.
bool Executor::SyncMask(Warp& w, const Instr& in, uint32_t exec, uint32_t masks[32]) {
  uint32_t missing;
  if (!Members(w, in, exec, masks, &missing)) return false;
  if (missing)
    return Fail(Fault::kLaunchFailed, in,
                "lanes " + Hex(missing) + " of the member mask have not exited and never reach this instruction (warp " +
                    std::to_string(w.index) + " of " + BlockName(blocks_[w.rank].index) + ")");
  return true;
}

// ---------------------------------------------------------------------------------------
// Arithmetic

template <class T>
bool Compare(Cmp c, T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    bool unordered = std::isnan(a) || std::isnan(b);
    switch (c) {
      case Cmp::kEq: return a == b;
      case Cmp::kNe: return !unordered && a != b;
      case Cmp::kLt: return a < b;
      case Cmp::kLe: return a <= b;
      case Cmp::kGt: return a > b;
      case Cmp::kGe: return a >= b;
      case Cmp::kEqu: return unordered || a == b;
      case Cmp::kNeu: return a != b;
      case Cmp::kLtu: return unordered || a < b;
      case Cmp::kLeu: return unordered || a <= b;
      case Cmp::kGtu: return unordered || a > b;
      case Cmp::kGeu: return unordered || a >= b;
      case Cmp::kNum: return !unordered;
      case Cmp::kNan: return unordered;
      default: return false;
    }
  } else {
    using U = std::make_unsigned_t<T>;
    switch (c) {
      case Cmp::kEq: return a == b;
      case Cmp::kNe: return a != b;
      case Cmp::kLt: return a < b;
      case Cmp::kLe: return a <= b;
      case Cmp::kGt: return a > b;
      case Cmp::kGe: return a >= b;
      case Cmp::kLo: return static_cast<U>(a) < static_cast<U>(b);
      case Cmp::kLs: return static_cast<U>(a) <= static_cast<U>(b);
      case Cmp::kHi: return static_cast<U>(a) > static_cast<U>(b);
      case Cmp::kHs: return static_cast<U>(a) >= static_cast<U>(b);
      default: return false;
    }
  }
}

template <class T>
T Saturate01(T x) {
  if (std::isnan(x)) return 0;
  return std::min<T>(std::max<T>(x, 0), 1);
}

// Float arithmetic in a directed rounding mode (.rz, .rm, .rp) is the host FPU's, in that
// mode for the scope (this file is compiled with -frounding-math, so the compiler does
// not move or fold arithmetic across the mode changes).
class RoundingScope {
 public:
  explicit RoundingScope(Round round) {
    int mode = round == Round::kRz ? FE_TOWARDZERO : round == Round::kRm ? FE_DOWNWARD : round == Round::kRp ? FE_UPWARD : -1;
    if (mode >= 0) {
      saved_ = std::fegetround();
      std::fesetround(mode);
    }
  }
  ~RoundingScope() {
    if (saved_ >= 0) std::fesetround(saved_);
  }

 private:
  int saved_ = -1;
};

// The bounds the PTX ISA states for its .approx instructions (f32): ex2 and div 2 ulp,
// rcp 1 ulp, sqrt 2^-23 relative, and these.
const double kRsqrtError = std::exp2(-22.9);   // relative
const double kLg2Error = std::exp2(-22.6);     // absolute, for inputs in [0.5, 2]
const double kSinCosError = std::exp2(-20.5);  // absolute, for inputs in [-pi, pi]
const double kTanhError = std::exp2(-10.987);  // relative

// The float operations whose result the ISA defines exactly (.rn) or within a bound (.approx).
template <class T>
T FloatUnary(Op op, T a, bool approx, bool* ok) {
  switch (op) {
    case Op::kAbs: return std::fabs(a);
    case Op::kNeg: return -a;
    case Op::kSqrt:
      if (!approx || std::is_same_v<T, double>) return std::sqrt(a);
      return WithRelativeError(std::sqrt(static_cast<double>(a)), a, 0x1.0p-23);
    case Op::kRcp:
      if (!approx || std::is_same_v<T, double>) return T(1) / a;
      return WithUlpError(1.0 / static_cast<double>(a), a, 1);
    case Op::kRsqrt:
      if constexpr (std::is_same_v<T, double>)
        return 1.0 / std::sqrt(a);  // rsqrt.approx.f64: ~2^-40
      else
        return WithRelativeError(1.0 / std::sqrt(static_cast<double>(a)), a, kRsqrtError);
    case Op::kEx2:
      if constexpr (std::is_same_v<T, float>) return WithUlpError(std::exp2(static_cast<double>(a)), a, 2);
      break;
    case Op::kLg2:
      if constexpr (std::is_same_v<T, float>) {
        double exact = std::log2(static_cast<double>(a));
        if (a >= 0.5f && a <= 2.0f) return WithAbsoluteError(exact, a, kLg2Error);
        return WithRelativeError(exact, a, 0x1.0p-22);
      }
      break;
    case Op::kSin:
      if constexpr (std::is_same_v<T, float>) return WithAbsoluteError(std::sin(static_cast<double>(a)), a, kSinCosError);
      break;
    case Op::kCos:
      if constexpr (std::is_same_v<T, float>) return WithAbsoluteError(std::cos(static_cast<double>(a)), a, kSinCosError);
      break;
    case Op::kTanh:
      if constexpr (std::is_same_v<T, float>) return WithRelativeError(std::tanh(static_cast<double>(a)), a, kTanhError);
      break;
    default: break;
  }
  *ok = false;
  return a;
}

// add, sub or mad.lo/.hi of a carry chain (the parser admits no other): with addc, subc
// and madc, CC.CF comes in (a borrow for subc); with .cc, the carry (or borrow) out is
// written to it, per lane.
template <class T>
void Executor::CarryChainStep(Warp& w, const Instr& in, uint32_t exec) {
  using U = std::make_unsigned_t<T>;
  using W = Wider<T>;
  constexpr int kBits = 8 * sizeof(T);
  uint64_t* d = R(w, in.dst[0]);
  const uint64_t *a = R(w, in.src[0]), *b = R(w, in.src[1]), *c = in.nsrc > 2 ? R(w, in.src[2]) : nullptr;
  uint32_t carry = w.carry;
  ForLanes(exec, [&](int l) {
    const U in_carry = (in.flags & kCarryIn) && (w.carry >> l & 1) ? 1 : 0;
    U x = static_cast<U>(a[l]), y = static_cast<U>(b[l]);
    if (in.op == Op::kMad) {  // the product's low or high half, then + c (+ CF)
      const W p = static_cast<W>(As<T>(a[l])) * static_cast<W>(As<T>(b[l]));
      x = static_cast<U>(in.flags & kHi ? p >> kBits : p);
      y = static_cast<U>(c[l]);
    }
    U r;
    bool out;
    if (in.op == Op::kSub) {
      r = static_cast<U>(x - y - in_carry);
      out = x < y || static_cast<U>(x - y) < in_carry;  // a borrow
    } else {
      const U sum = static_cast<U>(x + y);
      r = static_cast<U>(sum + in_carry);
      out = sum < x || r < sum;
    }
    d[l] = Bits<T>(static_cast<T>(r));
    if (in.flags & kCc) carry = (carry & ~(1u << l)) | (static_cast<uint32_t>(out) << l);
  });
  w.carry = carry;
}

bool Executor::Arith(Warp& w, const Instr& in, uint32_t exec) {
  uint64_t* d = in.ndst ? R(w, in.dst[0]) : nullptr;
  const uint64_t* a = in.nsrc > 0 ? R(w, in.src[0]) : nullptr;
  const uint64_t* b = in.nsrc > 1 ? R(w, in.src[1]) : nullptr;
  const uint64_t* c = in.nsrc > 2 ? R(w, in.src[2]) : nullptr;
  const bool ftz = in.flags & kFtz, sat = in.flags & kSat, approx = in.flags & kApprox;
  const Round round = static_cast<Round>(in.mode);
  bool ok = true;

  if (IsHalfType(in.type)) return HalfArith(w, in, exec);

  if (IsFloat(in.type)) {
    RoundingScope scope(round);
    WithFloatType(in.type, [&](auto tag) {
      using T = decltype(tag);
      auto in_ = [&](uint64_t v) {
        T x = As<T>(v);
        return ftz ? Ftz(x) : x;
      };
      auto out = [&](T r) {
        if (std::isnan(r)) r = CanonicalNaN<T>();  // GPUs do not keep NaN payloads
        if (ftz) r = Ftz(r);
        if (sat) r = Saturate01(r);
        return Bits<T>(r);
      };
      switch (in.op) {
        case Op::kAdd: ForLanes(exec, [&](int l) { d[l] = out(in_(a[l]) + in_(b[l])); }); break;
        case Op::kSub: ForLanes(exec, [&](int l) { d[l] = out(in_(a[l]) - in_(b[l])); }); break;
        case Op::kMul: ForLanes(exec, [&](int l) { d[l] = out(in_(a[l]) * in_(b[l])); }); break;
        case Op::kMad:
        case Op::kFma: ForLanes(exec, [&](int l) { d[l] = out(std::fma(in_(a[l]), in_(b[l]), in_(c[l]))); }); break;
        case Op::kDiv:
          ForLanes(exec, [&](int l) {
            T x = in_(a[l]), y = in_(b[l]);
            if (approx && std::is_same_v<T, float>)  // div.approx / div.full: 2 ulp
              d[l] = out(WithUlpError(static_cast<double>(x) / y, x, 2));
            else
              d[l] = out(x / y);
          });
          break;
        case Op::kMin: ForLanes(exec, [&](int l) { d[l] = out(FMin(in_(a[l]), in_(b[l]), in.flags & kNaN)); }); break;
        case Op::kMax: ForLanes(exec, [&](int l) { d[l] = out(FMax(in_(a[l]), in_(b[l]), in.flags & kNaN)); }); break;
        case Op::kCopysign: ForLanes(exec, [&](int l) { d[l] = Bits<T>(std::copysign(As<T>(b[l]), As<T>(a[l]))); }); break;
        case Op::kTestp:
          ForLanes(exec, [&](int l) {
            T x = As<T>(a[l]);
            bool r = false;
            switch (static_cast<TestpMode>(in.mode)) {
              case TestpMode::kFinite: r = std::isfinite(x); break;
              case TestpMode::kInfinite: r = std::isinf(x); break;
              case TestpMode::kNumber: r = !std::isnan(x); break;
              case TestpMode::kNotANumber: r = std::isnan(x); break;
              case TestpMode::kNormal: r = std::isnormal(x); break;
              case TestpMode::kSubnormal: r = std::fpclassify(x) == FP_SUBNORMAL; break;
            }
            d[l] = r;
          });
          break;
        default: ForLanes(exec, [&](int l) { d[l] = out(FloatUnary<T>(in.op, in_(a[l]), approx, &ok)); });
      }
    });
    if (!ok) return Fail(Fault::kLaunchFailed, in, "unsupported float instruction");
    return true;
  }

  bool handled = WithIntType(in.type, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      switch (in.op) {
        case Op::kAnd: ForLanes(exec, [&](int l) { d[l] = (a[l] & b[l]) & 1; }); break;
        case Op::kOr: ForLanes(exec, [&](int l) { d[l] = (a[l] | b[l]) & 1; }); break;
        case Op::kXor: ForLanes(exec, [&](int l) { d[l] = (a[l] ^ b[l]) & 1; }); break;
        case Op::kNot: ForLanes(exec, [&](int l) { d[l] = ~a[l] & 1; }); break;
        default: ok = false;
      }
    } else if (in.flags & (kCc | kCarryIn)) {
      CarryChainStep<T>(w, in, exec);
    } else {
      using U = std::make_unsigned_t<T>;
      using W = Wider<T>;
      constexpr int kBits = 8 * sizeof(T);
      switch (in.op) {
        case Op::kAdd:
          ForLanes(exec, [&](int l) {
            if (sat) {
              W r = static_cast<W>(As<T>(a[l])) + As<T>(b[l]);
              d[l] = Bits<T>(static_cast<T>(std::clamp<W>(r, std::numeric_limits<T>::min(), std::numeric_limits<T>::max())));
            } else {
              d[l] = Bits<T>(static_cast<T>(static_cast<U>(a[l]) + static_cast<U>(b[l])));
            }
          });
          break;
        case Op::kSub:
          ForLanes(exec, [&](int l) {
            if (sat) {
              W r = static_cast<W>(As<T>(a[l])) - As<T>(b[l]);
              d[l] = Bits<T>(static_cast<T>(std::clamp<W>(r, std::numeric_limits<T>::min(), std::numeric_limits<T>::max())));
            } else {
              d[l] = Bits<T>(static_cast<T>(static_cast<U>(a[l]) - static_cast<U>(b[l])));
            }
          });
          break;
        case Op::kMul:
        case Op::kMad:
          ForLanes(exec, [&](int l) {
            W p = static_cast<W>(As<T>(a[l])) * static_cast<W>(As<T>(b[l]));
            uint64_t r;
            if (in.flags & kWide) {
              r = static_cast<uint64_t>(p);
              if (in.op == Op::kMad) r += c[l];
              if constexpr (sizeof(T) < 4) r = static_cast<std::make_unsigned_t<W>>(static_cast<W>(r));
            } else if (in.flags & kHi) {
              r = Bits<T>(static_cast<T>(p >> kBits));
              if (in.op == Op::kMad) r = Bits<T>(static_cast<T>(static_cast<U>(r) + static_cast<U>(c[l])));
            } else {
              r = Bits<T>(static_cast<T>(static_cast<uint64_t>(a[l]) * static_cast<uint64_t>(b[l])));
              if (in.op == Op::kMad) r = Bits<T>(static_cast<T>(static_cast<U>(r) + static_cast<U>(c[l])));
            }
            d[l] = r;
          });
          break;
        case Op::kDiv:
        case Op::kRem:
          ForLanes(exec, [&](int l) {
            T x = As<T>(a[l]), y = As<T>(b[l]);
            T r;
            if (y == 0)
              r = in.op == Op::kDiv ? static_cast<T>(~U{0}) : x;  // what GPUs give
            else if (std::is_signed_v<T> && y == T(-1))
              r = in.op == Op::kDiv ? static_cast<T>(U{0} - static_cast<U>(x)) : 0;
            else
              r = in.op == Op::kDiv ? x / y : x % y;
            d[l] = Bits<T>(r);
          });
          break;
        case Op::kMin: ForLanes(exec, [&](int l) { d[l] = Bits<T>(std::min(As<T>(a[l]), As<T>(b[l]))); }); break;
        case Op::kMax: ForLanes(exec, [&](int l) { d[l] = Bits<T>(std::max(As<T>(a[l]), As<T>(b[l]))); }); break;
        case Op::kAbs:
          ForLanes(exec, [&](int l) {
            T x = As<T>(a[l]);
            d[l] = Bits<T>(x < 0 ? static_cast<T>(U{0} - static_cast<U>(x)) : x);
          });
          break;
        case Op::kNeg: ForLanes(exec, [&](int l) { d[l] = Bits<T>(static_cast<T>(U{0} - static_cast<U>(a[l]))); }); break;
        case Op::kAnd: ForLanes(exec, [&](int l) { d[l] = Bits<T>(static_cast<T>(a[l] & b[l])); }); break;
        case Op::kOr: ForLanes(exec, [&](int l) { d[l] = Bits<T>(static_cast<T>(a[l] | b[l])); }); break;
        case Op::kXor: ForLanes(exec, [&](int l) { d[l] = Bits<T>(static_cast<T>(a[l] ^ b[l])); }); break;
        case Op::kNot: ForLanes(exec, [&](int l) { d[l] = Bits<T>(static_cast<T>(~a[l])); }); break;
        case Op::kCnot: ForLanes(exec, [&](int l) { d[l] = As<T>(a[l]) == 0 ? 1 : 0; }); break;
        case Op::kShl:
          ForLanes(exec, [&](int l) {
            uint32_t s = static_cast<uint32_t>(b[l]);
            d[l] = s >= kBits ? 0 : Bits<T>(static_cast<T>(static_cast<U>(a[l]) << s));
          });
          break;
        case Op::kShr:
          ForLanes(exec, [&](int l) {
            uint32_t s = std::min<uint32_t>(static_cast<uint32_t>(b[l]), kBits);
            T x = As<T>(a[l]);
            if constexpr (std::is_signed_v<T>)
              d[l] = Bits<T>(static_cast<T>(s >= kBits ? (x < 0 ? -1 : 0) : x >> s));
            else
              d[l] = s >= kBits ? 0 : Bits<T>(static_cast<T>(x >> s));
          });
          break;
        case Op::kPopc: ForLanes(exec, [&](int l) { d[l] = std::popcount(static_cast<U>(a[l])); }); break;
        case Op::kClz: ForLanes(exec, [&](int l) { d[l] = std::countl_zero(static_cast<U>(a[l])); }); break;
        case Op::kBrev:
          ForLanes(exec, [&](int l) {
            U x = static_cast<U>(a[l]), r = 0;
            for (int i = 0; i < kBits; ++i) r |= static_cast<U>((x >> i) & 1) << (kBits - 1 - i);
            d[l] = r;
          });
          break;
        case Op::kBfe:
          ForLanes(exec, [&](int l) {
            uint32_t pos = b[l] & 0xff, len = c[l] & 0xff;
            U x = static_cast<U>(a[l]);
            bool sign_bit = std::is_signed_v<T> && (len == 0 ? false : ((x >> std::min<uint32_t>(pos + len - 1, kBits - 1)) & 1));
            U r = 0;
            for (uint32_t i = 0; i < static_cast<uint32_t>(kBits); ++i) {
              bool bit = i < len ? (pos + i < static_cast<uint32_t>(kBits) ? (x >> (pos + i)) & 1 : sign_bit) : sign_bit;
              if (!std::is_signed_v<T> && i >= len) bit = false;
              r |= static_cast<U>(bit) << i;
            }
            d[l] = r;
          });
          break;
        case Op::kBfi:
          ForLanes(exec, [&](int l) {
            uint32_t pos = c[l] & 0xff, len = R(w, in.src[3])[l] & 0xff;
            U r = static_cast<U>(b[l]);
            for (uint32_t i = 0; i < len && pos + i < static_cast<uint32_t>(kBits); ++i) {
              U bit = static_cast<U>((static_cast<U>(a[l]) >> i) & 1);
              r = (r & ~(U{1} << (pos + i))) | (bit << (pos + i));
            }
            d[l] = r;
          });
          break;
        case Op::kBfind:
          ForLanes(exec, [&](int l) {
            U x = static_cast<U>(a[l]);
            if (std::is_signed_v<T> && As<T>(a[l]) < 0) x = static_cast<U>(~x);  // the highest bit unlike the sign
            int pos = x == 0 ? -1 : kBits - 1 - std::countl_zero(x);
            d[l] = pos < 0 ? 0xffffffffull : static_cast<uint32_t>((in.flags & kShiftAmt) ? kBits - 1 - pos : pos);
          });
          break;
        case Op::kLop3:
          ForLanes(exec, [&](int l) {
            U x = static_cast<U>(a[l]), y = static_cast<U>(b[l]), z = static_cast<U>(c[l]), r = 0;
            uint32_t lut = static_cast<uint32_t>(R(w, in.src[3])[l]) & 0xff;
            for (int i = 0; i < kBits; ++i) {
              uint32_t index = ((x >> i) & 1) << 2 | ((y >> i) & 1) << 1 | ((z >> i) & 1);
              r |= static_cast<U>((lut >> index) & 1) << i;
            }
            d[l] = r;
          });
          break;
        case Op::kSad:
          ForLanes(exec, [&](int l) {
            T x = As<T>(a[l]), y = As<T>(b[l]);
            U diff = x > y ? static_cast<U>(static_cast<U>(x) - static_cast<U>(y))
                           : static_cast<U>(static_cast<U>(y) - static_cast<U>(x));
            d[l] = Bits<T>(static_cast<T>(static_cast<U>(c[l]) + diff));
          });
          break;
        case Op::kTestp: ok = false; break;
        default: ok = false;
      }
    }
  });
  if (!handled || !ok)
    return Fail(Fault::kLaunchFailed, in, std::string("unsupported type .") + TypeName(in.type) + " for this instruction");
  return true;
}

// f16/bf16 (and their x2 pairs): computed in float, rounded to the half type.
bool Executor::HalfArith(Warp& w, const Instr& in, uint32_t exec) {
  const bool bf = in.type == Type::kBF16 || in.type == Type::kBF16x2;
  const bool ftz = in.flags & kFtz;
  const int halves = (in.type == Type::kF16x2 || in.type == Type::kBF16x2) ? 2 : 1;
  auto flush = [&](double x) { return ftz && std::fabs(x) < (bf ? 0x1.0p-126 : 0x1.0p-14) ? std::copysign(0.0, x) : x; };
  auto to_double = [&](uint16_t h) { return flush(bf ? Bf16ToFloat(h) : HalfToFloat(h)); };
  auto to_half = [&](double x) {
    x = flush(x);
    return bf ? DoubleToBf16(x) : DoubleToHalf(x);
  };
  uint64_t* d = R(w, in.dst[0]);
  bool ok = true;
  // Computed in double rounded to odd, then rounded once to the 16-bit type.
  RoundingScope toward_zero(Round::kRz);
  ForLanes(exec, [&](int l) {
    uint64_t result = 0;
    for (int h = 0; h < halves; ++h) {
      auto arg = [&](int i) { return to_double(static_cast<uint16_t>(R(w, in.src[i])[l] >> (16 * h))); };
      double r = 0;
      switch (in.op) {
        case Op::kAdd: r = ComputeRoundedToOdd([&] { return arg(0) + arg(1); }); break;
        case Op::kSub: r = ComputeRoundedToOdd([&] { return arg(0) - arg(1); }); break;
        case Op::kMul: r = ComputeRoundedToOdd([&] { return arg(0) * arg(1); }); break;
        case Op::kFma: r = ComputeRoundedToOdd([&] { return std::fma(arg(0), arg(1), arg(2)); }); break;
        case Op::kMin: r = FMin(arg(0), arg(1), in.flags & kNaN); break;
        case Op::kMax: r = FMax(arg(0), arg(1), in.flags & kNaN); break;
        case Op::kNeg: r = -arg(0); break;
        case Op::kAbs: r = std::fabs(arg(0)); break;
        default: ok = false;
      }
      if (in.flags & kSat) r = Saturate01(r);
      result |= static_cast<uint64_t>(to_half(r)) << (16 * h);
    }
    d[l] = result;
  });
  if (!ok) return Fail(Fault::kLaunchFailed, in, std::string("unsupported instruction on .") + TypeName(in.type));
  return true;
}

// The value of a slot read as `type`, widened: integers to int64/uint64, floats to double.
struct Wide {
  bool is_float = false;
  bool is_signed = false;
  double f = 0;
  int64_t s = 0;
  uint64_t u = 0;
};

Wide Read(uint64_t v, Type t) {
  Wide r;
  switch (t) {
    case Type::kF16:
      r.is_float = true;
      r.f = HalfToFloat(static_cast<uint16_t>(v));
      return r;
    case Type::kBF16:
      r.is_float = true;
      r.f = Bf16ToFloat(static_cast<uint16_t>(v));
      return r;
    case Type::kF32:
      r.is_float = true;
      r.f = As<float>(v);
      return r;
    case Type::kF64:
      r.is_float = true;
      r.f = As<double>(v);
      return r;
    default: break;
  }
  int bits = 8 * Bytes(t);
  uint64_t u = bits == 64 ? v : v & ((1ull << bits) - 1);
  r.u = u;
  r.is_signed = IsSigned(t);
  r.s = bits == 64 ? static_cast<int64_t>(u) : static_cast<int64_t>(u << (64 - bits)) >> (64 - bits);
  if (!r.is_signed) r.s = static_cast<int64_t>(u);
  return r;
}

// A double rounded to float in a directed mode.
float RoundToFloat(double x, Round round) {
  float r = static_cast<float>(x);
  if (std::isnan(x) || static_cast<double>(r) == x) return r;
  switch (round) {
    case Round::kRz:
      if (std::fabs(static_cast<double>(r)) > std::fabs(x)) r = std::nextafter(r, 0.0f);
      break;
    case Round::kRm:
      if (static_cast<double>(r) > x) r = std::nextafter(r, -INFINITY);
      break;
    case Round::kRp:
      if (static_cast<double>(r) < x) r = std::nextafter(r, INFINITY);
      break;
    default: break;
  }
  return r;
}

double RoundIntegral(double x, Round round) {
  switch (round) {
    case Round::kRni: return std::nearbyint(x);
    case Round::kRzi: return std::trunc(x);
    case Round::kRmi: return std::floor(x);
    case Round::kRpi: return std::ceil(x);
    default: return x;
  }
}

bool Executor::Convert(Warp& w, const Instr& in, uint32_t exec) {
  uint64_t* d = R(w, in.dst[0]);
  const uint64_t* a = R(w, in.src[0]);
  const Type dt = in.type, st = in.type2;
  const Round round = static_cast<Round>(in.mode);
  const bool ftz = in.flags & kFtz, sat = in.flags & kSat;
  if ((dt == Type::kF16x2 || dt == Type::kBF16x2) && st == Type::kF32 && in.nsrc == 2) {
    const uint64_t* b = R(w, in.src[1]);
    const bool bf = dt == Type::kBF16x2, rz = round == Round::kRz;
    if (round != Round::kDefault && round != Round::kRn && !rz)
      return Fail(Fault::kLaunchFailed, in, "cvt to a packed pair rounds .rn or .rz only");
    auto half = [&](uint64_t v) -> uint64_t {
      float f = As<float>(v);
      if (sat) f = Saturate01(f);
      return bf ? FloatToBf16(f, rz) : FloatToHalf(f, rz);
    };
    ForLanes(exec, [&](int l) { d[l] = half(a[l]) << 16 | half(b[l]); });
    return true;
  }
  if (dt == Type::kF16x2 || dt == Type::kBF16x2 || st == Type::kF16x2 || st == Type::kBF16x2)
    return Fail(Fault::kLaunchFailed, in, "cvt of packed pairs other than from two f32 is not supported");
  const bool to_float = IsFloat(dt);
  const bool rounding_to_int = round == Round::kRni || round == Round::kRzi || round == Round::kRmi || round == Round::kRpi;
  if ((dt == Type::kF16 || dt == Type::kBF16) && (round == Round::kRm || round == Round::kRp))
    return Fail(Fault::kLaunchFailed, in, "cvt.rm/.rp to f16 or bf16 is not supported");
  RoundingScope scope(rounding_to_int ? Round::kDefault : round);
  ForLanes(exec, [&](int l) {
    Wide x = Read(a[l], st);
    if (to_float) {
      double v = x.is_float ? x.f : (x.is_signed ? static_cast<double>(x.s) : static_cast<double>(x.u));
      if (!x.is_float && dt != Type::kF64 && (round == Round::kDefault || round == Round::kRn)) {
        // An integer to f32: round once, from the integer (a double may already have rounded).
        v = x.is_signed ? static_cast<double>(static_cast<float>(x.s)) : static_cast<double>(static_cast<float>(x.u));
      }
      if (ftz && st == Type::kF32) v = Ftz(static_cast<float>(v));
      if (rounding_to_int) v = RoundIntegral(v, round);
      if (sat) v = Saturate01(v);
      switch (dt) {
        case Type::kF64: d[l] = Bits<double>(v); break;
        case Type::kF32: {
          float f = RoundToFloat(v, round);
          if (ftz) f = Ftz(f);
          if (sat) f = Saturate01(f);
          d[l] = Bits<float>(f);
          break;
        }
        case Type::kF16:
        case Type::kBF16: {
          // Rounded once: a 64-bit integer goes through a double rounded to odd.
          double exact = v;
          if (!x.is_float && !sat) {
            bool negative = x.is_signed && x.s < 0;
            exact = IntegerToOdd(negative, negative      ? 0 - static_cast<uint64_t>(x.s)
                                           : x.is_signed ? static_cast<uint64_t>(x.s)
                                                         : x.u);
          }
          d[l] = dt == Type::kF16 ? DoubleToHalf(exact, round == Round::kRz) : DoubleToBf16(exact, round == Round::kRz);
          break;
        }
        default: break;
      }
      return;
    }
    // To an integer type: saturating, NaN gives 0.
    int bits = 8 * Bytes(dt);
    bool is_signed = IsSigned(dt);
    int64_t lo = is_signed ? (bits == 64 ? INT64_MIN : -(int64_t{1} << (bits - 1))) : 0;
    uint64_t hi = is_signed ? (bits == 64 ? INT64_MAX : (uint64_t{1} << (bits - 1)) - 1)
                            : (bits == 64 ? UINT64_MAX : (uint64_t{1} << bits) - 1);
    uint64_t r;
    if (x.is_float) {
      double v = RoundIntegral(ftz ? static_cast<double>(Ftz(static_cast<float>(x.f))) : x.f, round);
      if (std::isnan(v))
        r = 0;
      else if (v <= static_cast<double>(lo))
        r = static_cast<uint64_t>(lo);
      else if (v >= static_cast<double>(hi))
        r = hi;
      else
        r = is_signed ? static_cast<uint64_t>(static_cast<int64_t>(v)) : static_cast<uint64_t>(v);
    } else if (sat) {
      if (x.is_signed && x.s < lo)
        r = static_cast<uint64_t>(lo);
      else if (x.is_signed ? (x.s >= 0 && static_cast<uint64_t>(x.s) > hi) : x.u > hi)
        r = hi;
      else
        r = x.is_signed ? static_cast<uint64_t>(x.s) : x.u;
    } else {
      r = x.is_signed ? static_cast<uint64_t>(x.s) : x.u;  // sign- or zero-extend, then truncate
    }
    if (bits < 64) {
      r &= (uint64_t{1} << bits) - 1;
      // In a wider register, a signed result is sign-extended (the ISA's rule).
      if (is_signed) r = static_cast<uint64_t>(static_cast<int64_t>(r << (64 - bits)) >> (64 - bits));
    }
    d[l] = r;
  });
  return true;
}

bool Executor::Step(Warp& w, const Instr& in, uint32_t exec, uint32_t group) {
  switch (in.op) {
    case Op::kNop: return true;
    case Op::kMov: {
      uint64_t* d = R(w, in.dst[0]);
      const uint64_t* a = R(w, in.src[0]);
      int bits = 8 * Bytes(in.type);
      uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
      if (in.type == Type::kPred) mask = 1;
      ForLanes(exec, [&](int l) { d[l] = a[l] & mask; });
      return true;
    }
    case Op::kPack:
    case Op::kUnpack: {
      int width = 8 * Bytes(in.type) / in.vec;
      uint64_t mask = width >= 64 ? ~0ull : (1ull << width) - 1;
      ForLanes(exec, [&](int l) {
        if (in.op == Op::kPack) {
          uint64_t v = 0;
          for (int i = 0; i < in.vec; ++i) v |= (R(w, in.src[i])[l] & mask) << (width * i);
          R(w, in.dst[0])[l] = v;
        } else {
          uint64_t v = R(w, in.src[0])[l];
          for (int i = 0; i < in.vec; ++i) R(w, in.dst[i])[l] = (v >> (width * i)) & mask;
        }
      });
      return true;
    }
    case Op::kSelp: {
      uint64_t* d = R(w, in.dst[0]);
      const uint64_t *a = R(w, in.src[0]), *b = R(w, in.src[1]), *c = R(w, in.src[2]);
      ForLanes(exec, [&](int l) { d[l] = (c[l] & 1) ? a[l] : b[l]; });
      return true;
    }
    case Op::kSetp: {
      uint64_t* p = R(w, in.dst[0]);
      uint64_t* q = in.dst2 >= 0 ? R(w, in.dst2) : nullptr;
      const uint64_t *a = R(w, in.src[0]), *b = R(w, in.src[1]);
      const uint64_t* c = in.bool_op != BoolOp::kNone ? R(w, in.src[2]) : nullptr;
      const Cmp cmp = static_cast<Cmp>(in.mode);
      const bool ftz = in.flags & kFtz;
      auto combine = [&](bool t, int l) {
        if (!c) return t;
        bool cv = (c[l] & 1) != ((in.flags & (kNegated0 << 2)) != 0);
        switch (in.bool_op) {
          case BoolOp::kAnd: return t && cv;
          case BoolOp::kOr: return t || cv;
          case BoolOp::kXor: return t != cv;
          default: return t;
        }
      };
      auto run = [&](auto tag) {
        using T = decltype(tag);
        ForLanes(exec, [&](int l) {
          T x = As<T>(a[l]), y = As<T>(b[l]);
          if constexpr (std::is_floating_point_v<T>) {
            if (ftz) x = Ftz(x), y = Ftz(y);
          }
          bool t = Compare<T>(cmp, x, y);
          p[l] = combine(t, l);
          if (q) q[l] = combine(!t, l);
        });
      };
      if (in.type == Type::kF16x2 || in.type == Type::kBF16x2) {
        // p|q: the low halves' comparison in p, the high halves' in q.
        const bool bf = in.type == Type::kBF16x2;
        ForLanes(exec, [&](int l) {
          bool t[2];
          for (int h = 0; h < 2; ++h) {
            const auto x = static_cast<uint16_t>(a[l] >> (16 * h)), y = static_cast<uint16_t>(b[l] >> (16 * h));
            t[h] = Compare<float>(cmp, bf ? Bf16ToFloat(x) : HalfToFloat(x), bf ? Bf16ToFloat(y) : HalfToFloat(y));
          }
          p[l] = combine(t[0], l);
          if (q) q[l] = combine(t[1], l);
        });
        return true;
      }
      if (in.type == Type::kF16 || in.type == Type::kBF16) {
        bool bf = in.type == Type::kBF16;
        ForLanes(exec, [&](int l) {
          float x = bf ? Bf16ToFloat(static_cast<uint16_t>(a[l])) : HalfToFloat(static_cast<uint16_t>(a[l]));
          float y = bf ? Bf16ToFloat(static_cast<uint16_t>(b[l])) : HalfToFloat(static_cast<uint16_t>(b[l]));
          bool t = Compare<float>(cmp, x, y);
          p[l] = combine(t, l);
          if (q) q[l] = combine(!t, l);
        });
        return true;
      }
      if (WithFloatType(in.type, run)) return true;
      bool ok = WithIntType(in.type, [&](auto tag) {
        if constexpr (!std::is_same_v<decltype(tag), bool>) run(tag);
      });
      if (!ok || in.type == Type::kPred) return Fail(Fault::kLaunchFailed, in, "setp on this type is not supported");
      return true;
    }
    case Op::kCvt: return Convert(w, in, exec);
    case Op::kCvta: {
      uint64_t* d = R(w, in.dst[0]);
      const uint64_t* a = R(w, in.src[0]);
      uint64_t window = in.space == Space::kShared  ? kSharedWindow
                        : in.space == Space::kLocal ? kLocalWindow
                        : in.space == Space::kParam ? kParamWindow
                                                    : 0;
      // A generic shared address names the block's rank in its cluster (see kRankShift).
      if (in.space == Space::kShared) window += static_cast<uint64_t>(w.rank) << kRankShift;
      bool to = in.flags & kTo;
      uint64_t mask = Bytes(in.type) == 4 ? 0xffffffffull : ~0ull;
      ForLanes(exec, [&](int l) { d[l] = (to ? a[l] - window : a[l] + window) & mask; });
      return true;
    }
    case Op::kMapa: {
      uint64_t* d = R(w, in.dst[0]);
      const uint64_t* a = R(w, in.src[0]);
      const uint64_t* rank = R(w, in.src[1]);
      bool ok = true;
      ForLanes(exec, [&](int l) {
        if (!ok) return;
        if (a[l] - kSharedWindow >= kWindowSize)
          ok = Fail(Fault::kIllegalAddress, in, "mapa of " + Hex(a[l]) + ", not a shared memory address, by " + ThreadName(w, l));
        else if (static_cast<uint32_t>(rank[l]) >= blocks_.size())
          ok = Fail(Fault::kIllegalAddress, in,
                    "mapa to rank " + std::to_string(static_cast<uint32_t>(rank[l])) + " of a cluster of " +
                        std::to_string(blocks_.size()) + " blocks, by " + ThreadName(w, l));
        else
          d[l] = kSharedWindow + (static_cast<uint64_t>(static_cast<uint32_t>(rank[l])) << kRankShift) +
                 ((a[l] - kSharedWindow) & ((uint64_t{1} << kRankShift) - 1));
      });
      return ok;
    }
    case Op::kLd:
    case Op::kSt: return LoadStore(w, in, exec);
    case Op::kAtom:
    case Op::kRed: return Atomic(w, in, exec);
    case Op::kShfl: {
      uint32_t masks[32];
      if (!SyncMask(w, in, exec, masks)) return false;
      uint64_t* d = R(w, in.dst[0]);
      uint64_t* p = in.dst2 >= 0 ? R(w, in.dst2) : nullptr;
      const uint64_t *a = R(w, in.src[0]), *b = R(w, in.src[1]), *c = R(w, in.src[2]);
      uint64_t source[32];
      std::copy(a, a + 32, source);  // all lanes read before any writes
      ForLanes(exec, [&](int lane) {
        int bval = static_cast<int>(b[lane] & 0x1f), cval = static_cast<int>(c[lane] & 0x1f);
        int segmask = static_cast<int>((c[lane] >> 8) & 0x1f);
        int max_lane = (lane & segmask) | (cval & ~segmask);
        int min_lane = lane & segmask;
        int j = lane;
        bool pval = false;
        switch (static_cast<ShflMode>(in.mode)) {
          case ShflMode::kUp:
            j = lane - bval;
            pval = j >= max_lane;
            break;
          case ShflMode::kDown:
            j = lane + bval;
            pval = j <= max_lane;
            break;
          case ShflMode::kBfly:
            j = lane ^ bval;
            pval = j <= max_lane;
            break;
          case ShflMode::kIdx:
            j = min_lane | (bval & ~segmask);
            pval = j <= max_lane;
            break;
        }
        if (!pval) j = lane;
        // A source lane that does not take part gives an undefined value: NaN bits here.
        d[lane] = (exec & masks[lane]) >> j & 1 ? source[j] : 0xffffffffull;
        if (p) p[lane] = pval;
      });
      return true;
    }
    case Op::kVote: {
      uint32_t masks[32];
      if (!SyncMask(w, in, exec, masks)) return false;
      const uint64_t* a = R(w, in.src[0]);
      bool negate = in.flags & kNegated0;
      uint32_t ballot = 0;
      ForLanes(exec, [&](int l) { ballot |= static_cast<uint32_t>((a[l] & 1) != negate) << l; });
      uint64_t* d = R(w, in.dst[0]);
      ForLanes(exec, [&](int l) {
        uint32_t members = exec & masks[l], yes = ballot & masks[l];
        switch (static_cast<VoteMode>(in.mode)) {
          case VoteMode::kAll: d[l] = yes == members; break;
          case VoteMode::kAny: d[l] = yes != 0; break;
          case VoteMode::kUni: d[l] = yes == 0 || yes == members; break;
          case VoteMode::kBallot: d[l] = yes; break;
        }
      });
      return true;
    }
    case Op::kRedux: {
      uint32_t masks[32];
      if (!SyncMask(w, in, exec, masks)) return false;
      const uint64_t* a = R(w, in.src[0]);
      uint64_t* d = R(w, in.dst[0]);
      const bool is_signed = IsSigned(in.type);
      ForLanes(exec, [&](int l) {
        uint32_t r = 0;
        bool first = true;
        ForLanes(exec & masks[l], [&](int j) {
          uint32_t v = static_cast<uint32_t>(a[j]);
          if (first) {
            r = v;
            first = false;
            return;
          }
          switch (static_cast<AtomOp>(in.mode)) {
            case AtomOp::kAdd: r += v; break;
            case AtomOp::kAnd: r &= v; break;
            case AtomOp::kOr: r |= v; break;
            case AtomOp::kXor: r ^= v; break;
            case AtomOp::kMin: r = is_signed ? static_cast<uint32_t>(std::min<int32_t>(r, v)) : std::min(r, v); break;
            case AtomOp::kMax: r = is_signed ? static_cast<uint32_t>(std::max<int32_t>(r, v)) : std::max(r, v); break;
            default: break;
          }
        });
        d[l] = r;
      });
      return true;
    }
    case Op::kBarWarp: {
      uint32_t masks[32];
      return SyncMask(w, in, exec, masks);
    }
    case Op::kActivemask: {
      uint64_t* d = R(w, in.dst[0]);
      ForLanes(exec, [&](int l) { d[l] = group; });
      return true;
    }
    case Op::kClock: {
      uint64_t* d = R(w, in.dst[0]);
      ForLanes(exec, [&](int l) { d[l] = stats_->warp_instructions; });
      return true;
    }
    case Op::kShf: {
      uint64_t* d = R(w, in.dst[0]);
      const uint64_t *a = R(w, in.src[0]), *b = R(w, in.src[1]), *c = R(w, in.src[2]);
      ForLanes(exec, [&](int l) {
        uint32_t n = static_cast<uint32_t>(c[l]);
        n = (in.flags & kShfWrap) ? n & 31 : std::min(n, 32u);
        uint64_t both = (b[l] & 0xffffffffull) << 32 | (a[l] & 0xffffffffull);
        d[l] = (in.flags & kShfLeft) ? static_cast<uint32_t>((both << n) >> 32) : static_cast<uint32_t>(both >> n);
      });
      return true;
    }
    case Op::kPrmt: {
      uint64_t* d = R(w, in.dst[0]);
      const uint64_t *a = R(w, in.src[0]), *b = R(w, in.src[1]), *c = R(w, in.src[2]);
      ForLanes(exec, [&](int l) {
        uint64_t bytes = (b[l] & 0xffffffffull) << 32 | (a[l] & 0xffffffffull);
        uint32_t r = 0;
        for (int i = 0; i < 4; ++i) {
          uint32_t sel = (c[l] >> (4 * i)) & 0xf;
          uint32_t byte = (bytes >> (8 * (sel & 7))) & 0xff;
          if (sel & 8) byte = (byte & 0x80) ? 0xff : 0;
          r |= byte << (8 * i);
        }
        d[l] = r;
      });
      return true;
    }
    case Op::kMatch: {
      uint32_t masks[32];
      if (!SyncMask(w, in, exec, masks)) return false;
      const uint64_t* a = R(w, in.src[0]);
      uint64_t* d = R(w, in.dst[0]);
      uint64_t* p = in.dst2 >= 0 ? R(w, in.dst2) : nullptr;
      const bool wide = Bytes(in.type) == 8;
      auto value = [&](int l) { return wide ? a[l] : a[l] & 0xffffffffull; };
      ForLanes(exec, [&](int l) {
        uint32_t same = 0, members = exec & masks[l];
        ForLanes(members, [&](int j) { same |= static_cast<uint32_t>(value(j) == value(l)) << j; });
        if (in.flags & kMatchAll) {
          d[l] = same == members ? masks[l] : 0;
          if (p) p[l] = same == members;
        } else {
          d[l] = same;
        }
      });
      return true;
    }
    case Op::kTrap: return Fail(Fault::kTrap, in, "trap executed");
    default: return Arith(w, in, exec);
  }
}

}  // namespace

Fault RunGrid(const Launch& launch, DeviceMemory* memory, Stats* stats, std::string* message) {
  Executor executor(launch, memory, stats, message);
  return executor.Run();
}

}  // namespace cuemu
