// Executing a grid of a decoded PTX kernel on the CPU: clusters of blocks one after another
// (a block is a cluster of one), the blocks of a cluster one at a time between cluster
// barriers, the warps of a block one at a time between barriers, 32 lanes per warp with an
// active mask.
#ifndef GRAPHJIT_CUDA_EMULATOR_SIMT_H_
#define GRAPHJIT_CUDA_EMULATOR_SIMT_H_

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "cuda_emulator/ptx.h"

namespace cuemu {

// Device memory: allocations at addresses that are never reused, with gaps between them,
// so an access past an allocation's end or after its free finds no allocation.
class DeviceMemory {
 public:
  struct Allocation {
    uint64_t base = 0;
    uint64_t size = 0;
    struct Free {
      void operator()(uint8_t* p) const { std::free(p); }
    };
    std::unique_ptr<uint8_t, Free> data;
  };
  // Addresses from `base` on (each device of the emulator has a range of its own).
  explicit DeviceMemory(uint64_t capacity, uint64_t base = 0x7e0000000000ull) : capacity_(capacity), next_(base) {}
  uint64_t capacity() const { return capacity_; }
  uint64_t used() const { return used_; }
  // 0 when the capacity would be exceeded.
  uint64_t Allocate(uint64_t bytes);
  bool Free(uint64_t base);
  // The allocation that holds [address, address + bytes), or null.
  Allocation* Find(uint64_t address, uint64_t bytes);
  // The allocation nearest below `address` (for messages), or null.
  const Allocation* Nearest(uint64_t address) const;
  // Whether `address` was in an allocation that has been freed.
  bool WasFreed(uint64_t address) const;

 private:
  uint64_t capacity_;
  uint64_t used_ = 0;
  uint64_t next_;
  std::map<uint64_t, Allocation> live_;
  std::map<uint64_t, uint64_t> freed_;  // base -> size
};

// Where generic addresses of shared, local and parameter memory live (they are offsets in
// their own state spaces; cvta adds these bases).
constexpr uint64_t kSharedWindow = 0x0000100000000000ull;
constexpr uint64_t kLocalWindow = 0x0000200000000000ull;
constexpr uint64_t kParamWindow = 0x0000300000000000ull;  // kernel parameters (cvta.param)
constexpr uint64_t kWindowSize = 0x0000010000000000ull;
// A generic shared address is kSharedWindow + (rank << kRankShift) + offset: the offset in
// the shared memory of the block of that rank in the cluster (cvta.shared gives the
// block's own, mapa another's).
constexpr int kRankShift = 32;

enum class ThreadOrder { kForward, kReverse, kShuffle };

struct Launch {
  const Kernel* kernel = nullptr;
  std::string kernel_name;
  std::vector<uint64_t> constant_values;  // resolved kernel->constants[i].value
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned cluster[3] = {1, 1, 1};  // blocks per thread-block cluster (divides grid)
  unsigned dynamic_shared = 0;
  unsigned multiprocessors = 132;  // the device's: %nsmid, and %smid's range
  std::vector<uint8_t> params;     // kernel->param_bytes
  ThreadOrder order = ThreadOrder::kForward;
  uint64_t seed = 0;
  // A launch that issues more warp instructions than this stops with kTimeout (an
  // endless loop, or a warp spinning on a flag another warp sets: warps switch only at
  // barriers and exits).
  uint64_t max_warp_instructions = UINT64_MAX;
};

struct Stats {
  uint64_t blocks = 0, threads = 0;
  uint64_t warp_instructions = 0, thread_instructions = 0;
  uint64_t global_load_requests = 0, global_load_bytes = 0, global_load_sectors = 0;
  uint64_t global_store_requests = 0, global_store_bytes = 0, global_store_sectors = 0;
  uint64_t shared_requests = 0, shared_bank_conflicts = 0;
  // The distinct 32-byte sectors the launch loaded and stored (its footprint), and its
  // floating-point operations (per thread: an FMA is 2, a half pair twice).
  std::unordered_set<uint64_t> load_sector_set, store_sector_set;
  uint64_t float_ops = 0;
  // Memory-level parallelism: the times a warp waited for its global loads (where its basic
  // block ended, or an access's address was a loaded value: ptxas schedules a block's
  // independent loads first), and the loads in flight at those times, summed: their ratio
  // is how many loads a warp has in flight at once.
  uint64_t load_waits = 0, loads_in_flight_at_waits = 0;
};

enum class Fault { kNone, kIllegalAddress, kMisalignedAddress, kTrap, kLaunchFailed, kTimeout };

// Runs the whole grid. On a fault, stops and says where in *message.
Fault RunGrid(const Launch& launch, DeviceMemory* memory, Stats* stats, std::string* message);

}  // namespace cuemu

#endif  // GRAPHJIT_CUDA_EMULATOR_SIMT_H_
