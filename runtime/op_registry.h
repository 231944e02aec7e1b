// The op registry: for every op graphjit runs, its input arity, a type-and-shape
// inference function and a reference CPU kernel.
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ir/attr.h"
#include "ir/graph.h"
#include "runtime/tensor.h"
#include "runtime/thread_pool.h"

namespace graphjit {

class Tracer;

struct SessionOptions;

// Type and shape inference for one node. Works on partial shapes (graph level,
// where input values are mostly unknown) and on concrete ones (run time, where
// every input value is known), so the same function serves both.
struct InferenceContext {
  const Node& node;
  std::vector<DType> input_dtypes;
  std::vector<Shape> input_shapes;
  std::vector<const Tensor*> input_values;  // nullptr where the value is unknown
  std::vector<DType> output_dtypes;         // filled by the inference function
  std::vector<Shape> output_shapes;

  int num_inputs() const { return static_cast<int>(input_dtypes.size()); }
  DType dtype(int i) const { return input_dtypes[i]; }
  const Shape& shape(int i) const { return input_shapes[i]; }
  const Tensor* value(int i) const { return input_values[i]; }
  void AddOutput(DType dtype, Shape shape) {
    output_dtypes.push_back(dtype);
    output_shapes.push_back(std::move(shape));
  }

  // A shape problem (a run-time error: the shapes depend on the feeds).
  Status ShapeError(const std::string& message) const;
  // A type or attr problem (the model itself is invalid).
  Status TypeError(const std::string& message) const;
  // Fails unless input i has one of the given types.
  Status ExpectDType(int i, std::initializer_list<DType> allowed) const;
  // The type attr `attr` (e.g. "T"), checked against the types of the given inputs.
  StatusOr<DType> TypeAttrMatching(std::string_view attr, std::initializer_list<int> inputs) const;
};

struct GpuContext;  // runtime/cuda_device.h

struct KernelContext {
  const Node& node;
  const std::vector<Tensor>& inputs;
  const std::vector<DType>& output_dtypes;
  const std::vector<Shape>& output_shapes;
  std::vector<Tensor>& outputs;
  Allocator* allocator;
  ThreadPool* intra_op;
  const void* state = nullptr;              // what the op's `prepare` built for this node, if anything
  const SessionOptions* options = nullptr;  // the session's, when run in one
  Tracer* tracer = nullptr;                 // when the run is traced
  // Per input, whether its buffer may become an output (see ForwardInputOrAllocateOutput):
  // this node is the tensor's last reader and nothing else holds the buffer. Null: none may.
  const std::vector<bool>* reusable_inputs = nullptr;
  GpuContext* gpu = nullptr;  // the session's GPU, if it has one
  // Per input, whether it is a session constant (a Const's value, not fed): the same buffer
  // with the same contents on every run, which a kernel may cache what it derives from
  // (oneDNN's reordered weights). Null: none is.
  const std::vector<bool>* constant_inputs = nullptr;

  const Tensor& input(int i) const { return inputs[i]; }
  int num_inputs() const { return static_cast<int>(inputs.size()); }
  bool IsConstantInput(int i) const { return constant_inputs && (*constant_inputs)[i]; }
  // Allocates output i with the inferred dtype and shape.
  StatusOr<Tensor*> AllocateOutput(int i);
  // Output i in the buffer of the first of `candidates` (inputs) that is reusable and has
  // the output's dtype and element count, else AllocateOutput(i). For kernels in which
  // output element k depends on element k of that input alone, read before k is written
  // (elementwise ops; under broadcasting, the same count means the same layout).
  StatusOr<Tensor*> ForwardInputOrAllocateOutput(std::initializer_list<int> candidates, int i);
  // Uses an existing tensor (e.g. an input) as output i, without copying.
  void ForwardOutput(int i, Tensor t) { outputs[i] = std::move(t); }
  Status Error(const std::string& message) const;
  // Splits [0, n) over the intra-op threads when n * cost_per_item is large enough (see
  // ThreadPool::ParallelFor for `one_block_per_thread`).
  void ParallelFor(int64_t n, int64_t cost_per_item, const std::function<void(int64_t, int64_t)>& fn,
                   bool one_block_per_thread = false) const;
};

using InferFn = std::function<Status(InferenceContext&)>;
using ComputeFn = std::function<Status(KernelContext&)>;
// Builds per-node state once, when the graph is analyzed (e.g. a cluster's body).
using PrepareFn = std::function<StatusOr<std::shared_ptr<const void>>(const Node&)>;

struct OpDef {
  std::string name;
  int min_inputs = 0;
  int max_inputs = 0;  // -1: any number
  InferFn infer;
  ComputeFn compute;
  PrepareFn prepare;  // optional
  bool stateful = false;
  // The inputs whose values, not only their shapes, decide the output's shape or the axes
  // the op works on (Reshape's shape, a reduction's axes; -1: the last input, ConcatV2's
  // axis). A compiler specializes on their values; the other inputs are data.
  std::vector<int> value_inputs;
  bool IsValueInput(int i, int num_inputs) const {
    for (int v : value_inputs)
      if (v == i || (v < 0 && v + num_inputs == i)) return true;
    return false;
  }
};

class OpRegistry {
 public:
  static OpRegistry* Global();
  void Register(OpDef def);
  // A plugin's kernel in place of a registered op (before any session is created);
  // returns the definition it replaces, for the plugin to fall back on.
  StatusOr<OpDef> Replace(OpDef def);
  const OpDef* Find(std::string_view op) const;
  std::vector<std::string> OpNames() const;

 private:
  std::map<std::string, OpDef, std::less<>> ops_;
};

// Registers at load time: `static const bool r = RegisterOps({...});`
bool RegisterOps(std::vector<OpDef> defs);

}  // namespace graphjit
