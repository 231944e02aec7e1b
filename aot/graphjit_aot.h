// The runtime of graphjit's ahead-of-time compiled models (`graphjit aot`): what the
// generated header's class runs. It holds the model's buffers and calls its kernels (in
// the object file `graphjit aot` wrote) in order, on the calling thread. No MLIR, no LLVM,
// no graphjit libraries: this file, graphjit_aot.cc and the C++ standard library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace graphjit_aot {

// A kernel's packed entry point: args[0] and args[1] point at the row range [begin, end),
// args[2 + i] at the address of its buffer i.
using PackedKernel = void (*)(void** args);

struct Buffer {
  enum Kind { kArgument, kConstant, kTemp, kView };
  Kind kind;
  int64_t bytes;
  int source;  // kArgument: the argument; kConstant: the constant; kView: the buffer it views
};

struct Kernel {
  PackedKernel function;
  int64_t rows;
  int first_buffer, num_buffers;  // its buffers: Program::kernel_buffers[first, first + num)
};

// A compiled model, as the generated header describes it.
struct Program {
  const Buffer* buffers;
  int num_buffers;
  const Kernel* kernels;
  int num_kernels;
  const int* kernel_buffers;
  const void* const* constants;
  const int64_t* argument_bytes;
  int num_arguments;
  const int* results;  // the buffer of each result
  int num_results;
};

class Runner {
 public:
  explicit Runner(const Program& program);
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  void* argument(int i) { return arguments_[i].get(); }
  const void* result(int i) const { return results_[i].get(); }
  int64_t argument_bytes(int i) const { return program_.argument_bytes[i]; }
  int64_t result_bytes(int i) const { return program_.buffers[program_.results[i]].bytes; }
  // Runs the kernels on the arguments as they are now; the results hold the outputs.
  void Run();

 private:
  struct Free {
    void operator()(void* p) const;
  };
  using Memory = std::unique_ptr<unsigned char, Free>;
  static Memory Allocate(int64_t bytes);  // 64-byte aligned, zeroed

  const Program& program_;
  std::vector<Memory> arguments_, temps_, results_;
  std::vector<void*> addresses_;  // per buffer
};

}  // namespace graphjit_aot
