// What every kind's CPU kernel shares: a kernel `@fusion_N(%begin: index, %end: index,
// <buffers>...)` computes rows [begin, end) of its fusion, so the caller can split the rows
// across the intra-op threads; each row is a loop nest over its elements (the kind's),
// vectorized by LLVM.
#include <algorithm>
#include <cmath>

#include "jit/elemental.h"
#include "jit/kernel_emitter.h"
#include "runtime/allocator.h"
#include "runtime/op_traits.h"

namespace graphjit::emitter {

StatusOr<std::string> KernelEmitter::EmitCpu(EmittedKernel* kernel, std::string* canonical) {
  GJ_ASSIGN_OR_RETURN(const int64_t cols, CpuBody(kernel));
  kernel->cost_per_row = cols * (num_ops_ + 1);
  kernel->function = "fusion_" + std::to_string(f_);
  std::vector<FunctionParam> params = {{begin_}, {end_}};
  for (int b : params_) {
    const FusionPlan::Buffer& buffer = p_.buffers[b];
    // What LLVM may rely on: the buffer's bytes and, for the outputs this kernel stores
    // (which the runtime allocates for it, as the ahead-of-time runner does),
    // Allocator::kAlignment; what it reads may be a caller's memory, aligned or not.
    // With them, stores into a large output stream past the caches (CompileOptions::
    // streaming_store_bytes).
    FunctionParam param{Param(b), /*noalias=*/true};
    param.dereferenceable = CheckedBytes(buffer.shape.dims(), static_cast<int64_t>(DTypeSize(buffer.dtype))).value_or(0);
    if (buffer.kind == FusionPlan::Buffer::Kind::kTemp && buffer.fusion == f_) param.align = Allocator::kAlignment;
    params.push_back(param);
    kernel->buffers.push_back(b);
  }
  if (canonical) *canonical = b_.Function("kernel", params, /*locations=*/false);
  return b_.Function(kernel->function, params);
}

// --- Loops.
// The row loop over [begin, end) of the rows (the product of `dims`), with row_ set.
Status KernelEmitter::Rows(const std::vector<int64_t>& dims, EmittedKernel* kernel, const std::function<Status()>& body) {
  kernel->rows = 1;
  for (int64_t d : dims) kernel->rows *= d;
  begin_ = b_.Parameter("%begin", Type::Index());
  end_ = b_.Parameter("%end", Type::Index());
  OpenScope();
  row_index_ = b_.InductionVar("%r");
  row_ = Delinearize(row_index_, dims);
  Status s = body();
  Block inner = CloseScope();
  GJ_RETURN_IF_ERROR(s);
  b_.For(row_index_, begin_, end_, IndexConst(1), {}, {}, std::move(inner), {});
  return Status::Ok();
}

}  // namespace graphjit::emitter
