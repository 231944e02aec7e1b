// Handing a PTX module to the toolkit's ptxas, as a GPU driver would compile it: a module
// ptxas rejects is rejected, and `ptxas -v` gives each kernel's registers and spills.
#ifndef GRAPHJIT_CUDA_EMULATOR_PTXAS_H_
#define GRAPHJIT_CUDA_EMULATOR_PTXAS_H_

#include <map>
#include <string>

namespace cuemu {

struct KernelResources {
  int registers = -1;
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  int stack_bytes = 0;
  int shared_bytes = 0;
};

struct PtxasResult {
  bool ran = false;  // false: no ptxas (CUEMU_PTXAS=off, or none found)
  bool accepted = true;
  std::string log;  // what ptxas printed
  std::map<std::string, KernelResources> kernels;
};

// The ptxas that will be used ("" if none): $CUEMU_PTXAS, else ptxas on PATH, else
// /usr/local/cuda/bin/ptxas.
std::string FindPtxas();

// Assembles `ptx` for `arch` (e.g. "sm_90"); results are cached by the text.
PtxasResult RunPtxas(const std::string& ptx, const std::string& arch);

}  // namespace cuemu

#endif  // GRAPHJIT_CUDA_EMULATOR_PTXAS_H_
