// What the CUDA emulator adds to the driver API of cuda.h: per-launch counters, the
// message of the last error, the order in which a block's threads run, and what the
// stand-ins for CUDA's libraries use (host tasks, device memory, reports, captures they
// refuse). A program finds these with dlsym (or cuGetProcAddress); a real driver does not
// have them.
//
// The environment the emulator reads: CUEMU_DEVICE (h100, h200, a100), CUEMU_DEVICE_COUNT
// (1 to 8 devices of that model), CUEMU_MEMORY_MB (per device), CUEMU_THREAD_ORDER,
// CUEMU_MAX_WARP_INSTRUCTIONS and CUEMU_QUIET, at cuInit; the stand-ins read
// CUEMU_REJECT_ALGOS and CUEMU_LIBRARY_FIRST_CALL_UNCAPTURABLE, the driver
// CUEMU_INVALIDATE_CAPTURES (every stream capture fails at its end), at each call (see
// cublaslt.cc and cudnn.cc).
#ifndef GRAPHJIT_CUDA_EMULATOR_CUEMU_H_
#define GRAPHJIT_CUDA_EMULATOR_CUEMU_H_

#include <cuda.h>

#ifdef __cplusplus
extern "C" {
#endif

// What one kernel launch did, counted while it executed.
typedef struct CUemuCounters {
  unsigned long long blocks;
  unsigned long long threads;
  unsigned long long warp_instructions;    // instructions issued, once per warp
  unsigned long long thread_instructions;  // the same, once per active thread
  // Global memory, per warp-level ld/st/atom: the bytes the active threads asked for,
  // and the distinct 32-byte sectors those bytes lie in (efficiency = bytes / (32 * sectors)).
  unsigned long long global_load_requests;
  unsigned long long global_load_bytes;
  unsigned long long global_load_sectors;
  unsigned long long global_store_requests;
  unsigned long long global_store_bytes;
  unsigned long long global_store_sectors;
  // Shared memory: warp-level accesses, and the extra wavefronts their bank conflicts cost
  // (32 banks of 4 bytes; threads reading the same word do not conflict).
  unsigned long long shared_requests;
  unsigned long long shared_bank_conflicts;
  // From `ptxas -v` for the device's architecture (-1 when ptxas did not run).
  int registers;
  int spill_store_bytes;
  int spill_load_bytes;
  int static_shared_bytes;
  int dynamic_shared_bytes;  // the launch's (not from ptxas)
  // The distinct 32-byte sectors of global memory the launch loaded and stored (what it
  // moves to and from DRAM at best), and its floating-point operations (per thread; an FMA
  // is 2, an instruction on a pair of halves twice as many).
  unsigned long long global_load_footprint_sectors;
  unsigned long long global_store_footprint_sectors;
  unsigned long long float_ops;
  // Memory-level parallelism: the times a warp waited for its global loads (at the end of
  // its basic block, or at an access whose address is a loaded value: ptxas schedules a
  // block's independent loads ahead of their uses), and the loads it had in flight then,
  // summed: loads_in_flight_at_waits / load_waits loads in flight per warp.
  unsigned long long load_waits;
  unsigned long long loads_in_flight_at_waits;
} CUemuCounters;

// The counters of the last kernel the current context executed. Launches are
// asynchronous: a kernel executes when its stream (or the context) is synchronized.
CUresult cuemuGetLastLaunchCounters(CUemuCounters* counters);

// The message of the last error the emulator reported (an out-of-bounds access names the
// kernel, the PTX line and the address), or "" if there was none.
const char* cuemuGetLastErrorMessage(void);

// The order in which the warps of a block run between barriers and the lanes of a warp
// apply their stores and atomics. A kernel that is missing a barrier gives different
// results in different orders. The default is forward, or CUEMU_THREAD_ORDER
// (forward, reverse, shuffle:SEED) in the environment.
typedef enum CUemuThreadOrder {
  CUEMU_ORDER_FORWARD = 0,
  CUEMU_ORDER_REVERSE = 1,
  CUEMU_ORDER_SHUFFLE = 2,
} CUemuThreadOrder;
CUresult cuemuSetThreadOrder(CUemuThreadOrder order, unsigned long long seed);

// The host address of emulated device memory [address, address + bytes), which must lie
// in one live allocation of the current context's device (of the device whose work runs,
// in a task; CUDA_ERROR_INVALID_VALUE otherwise, e.g. for another device's memory; bytes 0
// counts as 1). An
// allocation's memory does not move until cuMemFree, which first runs all queued work, so
// the address stays valid for work queued before then. Host functions queued with
// cuLaunchHostFunc run under the driver's lock and must not call the driver; tasks queued
// with cuemuLaunchHostTask may call this function (and nothing else of the driver).
CUresult cuemuDeviceMemory(CUdeviceptr address, size_t bytes, void** host);

// What the stand-ins for CUDA's libraries (cuBLASLt) launch in place of their kernels:
// `run(data)` in stream order, as a kernel would run, or, while the stream captures, a
// kernel node of the graph that runs it each time the graph runs. A result other than
// CUDA_SUCCESS is the kernel's fault (it breaks the context, as a kernel's would); `run`
// resolves its device addresses when it runs, with cuemuDeviceMemory. `release(data)` is
// called once nothing can run the task any more (also when this call fails).
CUresult cuemuLaunchHostTask(CUstream stream, CUresult (*run)(void*), void* data, void (*release)(void*));

// The emulator's report channel for the stand-ins: `message` becomes the last error
// message (cuemuGetLastErrorMessage) and is printed on stderr unless CUEMU_QUIET is set.
void cuemuReport(const char* message);

// What a library call that cannot be captured does while `stream` captures: the capture
// is invalidated (cuStreamEndCapture then fails with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
// and `call` is reported. CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED when the stream captured;
// CUDA_SUCCESS when it does not capture (nothing happens).
CUresult cuemuStreamCaptureUnsupported(CUstream stream, const char* call);

#ifdef __cplusplus
}
#endif

#endif  // GRAPHJIT_CUDA_EMULATOR_CUEMU_H_
