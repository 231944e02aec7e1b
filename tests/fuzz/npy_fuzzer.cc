// libFuzzer target: bytes -> graphjit's .npy reader (runtime/npy.h), then the tensor it
// read written back and read again, which must give the same bytes. A malformed file must
// end in an error status: any crash or sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include "runtime/npy.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  graphjit::Allocator::Default()->set_max_allocation_bytes(int64_t{256} << 20);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto tensor = graphjit::ParseNpy(std::string(reinterpret_cast<const char*>(data), size), "fuzz input");
  if (!tensor.ok() || tensor->bytes() > (size_t{1} << 20)) return 0;
  // A tensor it read round-trips (f16 and bf16 are written widened to float32).
  if (tensor->dtype() == graphjit::DType::kHalf || tensor->dtype() == graphjit::DType::kBFloat16) return 0;
  static const std::string path = "/tmp/npy_fuzzer_" + std::to_string(getpid()) + ".npy";
  if (!graphjit::WriteNpy(path, *tensor).ok()) std::abort();
  auto again = graphjit::ReadNpy(path);
  if (!again.ok() || again->dtype() != tensor->dtype() || again->shape() != tensor->shape() ||
      std::memcmp(again->raw(), tensor->raw(), tensor->bytes()) != 0) {
    std::fprintf(stderr, "npy_fuzzer: the tensor read did not round-trip\n");
    std::abort();
  }
  return 0;
}
