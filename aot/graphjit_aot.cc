#include "graphjit_aot.h"

#include <cstdlib>
#include <cstring>

namespace graphjit_aot {

void Runner::Free::operator()(void* p) const { std::free(p); }

Runner::Memory Runner::Allocate(int64_t bytes) {
  const size_t size = (static_cast<size_t>(bytes) + 63) / 64 * 64 + 64;  // never 0
  void* p = std::aligned_alloc(64, size);
  if (p == nullptr) std::abort();
  std::memset(p, 0, size);
  return Memory(static_cast<unsigned char*>(p));
}

Runner::Runner(const Program& program) : program_(program), addresses_(program.num_buffers, nullptr) {
  for (int i = 0; i < program.num_arguments; ++i) arguments_.push_back(Allocate(program.argument_bytes[i]));
  for (int i = 0; i < program.num_results; ++i) results_.push_back(Allocate(result_bytes(i)));
  // Views come after the buffer they view (the plan's order).
  for (int b = 0; b < program.num_buffers; ++b) {
    const Buffer& buffer = program.buffers[b];
    switch (buffer.kind) {
      case Buffer::kArgument: addresses_[b] = arguments_[buffer.source].get(); break;
      case Buffer::kConstant: addresses_[b] = const_cast<void*>(program.constants[buffer.source]); break;
      case Buffer::kTemp:
        temps_.push_back(Allocate(buffer.bytes));
        addresses_[b] = temps_.back().get();
        break;
      case Buffer::kView: addresses_[b] = addresses_[buffer.source]; break;
    }
  }
}

void Runner::Run() {
  std::vector<void*> pointers;
  std::vector<void*> args;
  for (int k = 0; k < program_.num_kernels; ++k) {
    const Kernel& kernel = program_.kernels[k];
    int64_t begin = 0, end = kernel.rows;
    pointers.assign(kernel.num_buffers, nullptr);
    args.assign(kernel.num_buffers + 2, nullptr);
    args[0] = &begin;
    args[1] = &end;
    for (int i = 0; i < kernel.num_buffers; ++i) {
      pointers[i] = addresses_[program_.kernel_buffers[kernel.first_buffer + i]];
      args[i + 2] = &pointers[i];
    }
    kernel.function(args.data());
  }
  for (int i = 0; i < program_.num_results; ++i)
    std::memcpy(results_[i].get(), addresses_[program_.results[i]], static_cast<size_t>(result_bytes(i)));
}

}  // namespace graphjit_aot
