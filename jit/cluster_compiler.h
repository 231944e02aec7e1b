// The compiler of one `_JitCluster` node (internal to jit/): its body, prepared once; the
// backend, chosen at its first run; each call's signature (the compiler, the body and its
// outputs, the target, the inputs' dtypes and shapes, the values of inputs that decide
// shapes); and its kernels, found in the Jit's kernel cache or made: loaded from the disk
// cache, or specialized, planned and emitted (jit/pipeline.h) and compiled by the backend,
// with each stage dumped and traced. When to compile and what a failure means is the
// compile policy's (jit/compile_policy.h).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "jit/jit_instance.h"
#include "jit/kernel_cache.h"
#include "jit/pipeline.h"
#include "runtime/op_registry.h"
#include "runtime/trace.h"

namespace graphjit {

// Where a compile reports: the dump directory, the run's tracer, one line per kernel made
// (--jit_verbose); and the disk cache it first looks in (--cache_dir), if any.
struct CompileReporting {
  std::string dump_dir;
  Tracer* tracer = nullptr;
  bool verbose = false;
  DiskCache* disk = nullptr;
};

class ClusterCompiler : public std::enable_shared_from_this<ClusterCompiler> {
 public:
  // The compiler of `node`'s body (its `_body` and `_body_outputs`), making kernels for
  // `jit`'s cache.
  static StatusOr<std::shared_ptr<ClusterCompiler>> Make(Jit* jit, const Node& node);

  const std::string& name() const { return name_; }
  const PreparedBody& body() const { return body_; }
  // The least precise float type the body computes in (float16, bfloat16, else float32).
  DType narrowest_float() const { return narrowest_float_; }

  // Chooses the backend at the first call (the session's GPU if it has one and the cluster
  // is placed there, see runtime/placement.h; else the CPU) and whether its ops are fused;
  // the error of an unknown CPU in the options, at every call.
  Status ChooseBackend(const KernelContext& ctx);

  // The call's signature, compared whole by the kernel cache (after ChooseBackend).
  std::string Signature(const std::vector<Tensor>& inputs) const;
  // One dump folder per cluster and signature under `dump_to` ("" without it): two graphs'
  // cluster_0, or one cluster at two shapes, never share one.
  std::string DumpDir(const std::string& dump_to, const std::string& signature) const;

  // The kernel cache's entry for `signature`: compiled now if absent (or waited for while
  // another call compiles it). `*hit` says whether it was there.
  std::shared_ptr<const KernelCache::Entry> GetNow(const std::string& signature, const std::vector<Tensor>& inputs,
                                                   const CompileReporting& report, bool* hit);
  // The entry if compiled, else null, and the compile started on the Jit's background
  // thread unless another call started it (then `*hit` is true). The compile holds its own
  // copies of the inputs and of this compiler.
  std::shared_ptr<const KernelCache::Entry> GetInBackground(const std::string& signature, const std::vector<Tensor>& inputs,
                                                            const CompileReporting& report, bool* hit);
  // The kernel for `inputs`, made without the kernel cache (also to dump its stages), or
  // why not (a failure the compile policy classifies, jit/compile_policy.h).
  KernelCache::Entry Compile(const std::vector<Tensor>& inputs, const CompileReporting& report) const;

 private:
  class Stages;
  ClusterCompiler(Jit* jit, std::string name) : jit_(jit), name_(std::move(name)) {}

  // What the verbose line says of a kernel.
  struct ProgramSize {
    int ops;
    size_t kernels;
  };
  // The entry of a compile that failed with `status` (an internal error is counted).
  KernelCache::Entry Failed(const Status& status) const;
  // The entry of `kernel`, made `how` ("compiled", "loaded from the disk cache") in `ms`.
  KernelCache::Entry Made(std::unique_ptr<ClusterExecutable> kernel, const char* how, const ProgramSize& size,
                          const CompileReporting& report, double ms) const;
  // Step 4 of a compile: the disk cache's code for `signature`, if it has it, it is the code
  // of `program` (its interface says so) and it loads; else null.
  std::unique_ptr<ClusterExecutable> LoadFromDisk(const ClusterProgram& program, const std::string& signature,
                                                  const std::string& interface, DiskCache& disk) const;
  void AppendInputs(const std::vector<Tensor>& inputs, std::string* key) const;
  // The signature as the disk cache keeps it: the compiler, the body and the target written
  // out (interned ids are the process's own).
  std::string DiskSignature(const std::vector<Tensor>& inputs) const;

  Jit* const jit_;
  const std::string name_;
  DType narrowest_float_ = DType::kFloat;
  PreparedBody body_;  // with the row ops written out
  // What every signature of this cluster starts with: the compiler, the body in canonical
  // serialization (attr maps in key order) and which of its tensors are the outputs, in
  // order (one body with other outputs is other code), as its interned id.
  std::string signature_prefix_;
  // The same, whole: signatures on disk start with it.
  std::string disk_prefix_;
  // Set once, at the first call: the backend (or the options' error), its target's interned
  // id, and whether the ops are fused (false: each op a kernel of its own).
  std::once_flag backend_once_;
  StatusOr<std::shared_ptr<const Backend>> backend_ = std::shared_ptr<const Backend>();
  std::string target_key_;
  bool fuse_ = true;
};

}  // namespace graphjit
