// What a cluster program claims to be, and the check that a call fits it (jit/backend.h).
#include <cinttypes>
#include <cstdio>

#include "jit/backend.h"
#include "jit/disk_cache.h"

namespace graphjit {

namespace {

std::string Describe(DType dtype, const Shape& shape) { return DTypeName(dtype) + shape.ToString(); }

std::string List(const std::vector<int>& buffers) {
  std::string text;
  for (int b : buffers) text += (text.empty() ? "b" : " b") + std::to_string(b);
  return text;
}

}  // namespace

std::string Interface(const ClusterProgram& program) {
  std::string text;
  for (size_t i = 0; i < program.outputs.size(); ++i) {
    const FusionPlan::Buffer& buffer = program.buffers[program.outputs[i]];
    text += "output " + std::to_string(i) + " b" + std::to_string(program.outputs[i]) + " " +
            Describe(buffer.dtype, buffer.shape) + "\n";
  }
  for (size_t k = 0; k < program.module.kernels.size(); ++k) {
    const EmittedKernel& kernel = program.module.kernels[k];
    text += "kernel " + std::to_string(k) + " " + kernel.function;
    if (kernel.library_node >= 0) text += " (library: " + program.calls[k].op->name + ")";
    text += " rows " + std::to_string(kernel.rows) + " grid " + std::to_string(kernel.grid) + " block " +
            std::to_string(kernel.block) + " (" + List(kernel.buffers) + ")";
    if (kernel.cluster > 1) text += " cluster " + std::to_string(kernel.cluster);
    if (kernel.shared_bytes) text += " shared " + std::to_string(kernel.shared_bytes);
    for (int area : kernel.scratch) text += " scratch " + std::to_string(program.module.scratch[area]);
    text += "\n";
  }
  static const char* kKinds[] = {"argument", "constant", "temp", "view"};
  for (size_t b = 0; b < program.buffers.size(); ++b) {
    const FusionPlan::Buffer& buffer = program.buffers[b];
    text += "buffer " + std::to_string(b) + " " + kKinds[static_cast<int>(buffer.kind)];
    if (buffer.kind != FusionPlan::Buffer::Kind::kTemp) text += " " + std::to_string(buffer.source);
    text += " " + Describe(buffer.dtype, buffer.shape) + "\n";
  }
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016" PRIx64, Fnv1a(program.module.mlir.data(), program.module.mlir.size()));
  text += "module " + std::string(hash) + ", " + std::to_string(program.module.mlir.size()) + " bytes of MLIR\n";
  return text;
}

Status CheckCall(const ClusterProgram& program, const KernelContext& ctx) {
  for (size_t b = 0; b < program.buffers.size(); ++b) {
    const FusionPlan::Buffer& buffer = program.buffers[b];
    if (buffer.kind != FusionPlan::Buffer::Kind::kArgument) continue;
    const size_t i = static_cast<size_t>(buffer.source);
    if (i >= ctx.inputs.size())
      return Internal("the kernel reads input " + std::to_string(i) + " of a call with " + std::to_string(ctx.inputs.size()));
    const Tensor& input = ctx.inputs[i];
    if (input.dtype() != buffer.dtype || input.num_elements() != buffer.shape.num_elements())
      return Internal("the kernel takes input " + std::to_string(i) + " as " + Describe(buffer.dtype, buffer.shape) +
                      ", the call has " + Describe(input.dtype(), input.shape()));
  }
  if (program.outputs.size() != ctx.outputs.size())
    return Internal("the kernel makes " + std::to_string(program.outputs.size()) + " outputs, the cluster has " +
                    std::to_string(ctx.outputs.size()));
  for (size_t i = 0; i < program.outputs.size(); ++i) {
    const FusionPlan::Buffer& buffer = program.buffers[program.outputs[i]];
    if (buffer.dtype != ctx.output_dtypes[i] || !IsCompatible(ctx.output_shapes[i], buffer.shape))
      return Internal("the kernel makes output " + std::to_string(i) + " as " + Describe(buffer.dtype, buffer.shape) +
                      ", the cluster's is " + Describe(ctx.output_dtypes[i], ctx.output_shapes[i]));
  }
  return Status::Ok();
}

std::string TargetDescription::CodeDecidingFacts() const {
  char text[192];
  if (schedule == Schedule::kGpu)
    std::snprintf(text, sizeof text, "%d SMs x %d blocks x %d threads, warp %d, %d threads, %d KB shared, %.0f GB/s",
                  gpu.multiprocessors, gpu.max_blocks_per_multiprocessor, gpu.max_threads_per_multiprocessor, gpu.warp_size,
                  gpu.max_threads_per_block, gpu.shared_memory_per_block_optin >> 10, gpu.dram_bytes_per_s / 1e9);
  else
    std::snprintf(text, sizeof text, "%d-bit vectors", cpu.vector_bits);
  return text;
}

}  // namespace graphjit
