// The kernel emitter every fusion kind's emitter is (internal to jit/), writing through the
// typed builder (jit/ir_builder.h): the elements of fused values computed through the
// elemental emitter, buffers loaded and stored, reductions folded, indexed ops as element
// generators. What the kinds' CPU kernels share is in jit/cpu_schedule.cc (row ranges),
// what their GPU kernels share in jit/gpu_schedule.cc (grids of threads, warps and blocks,
// launched as jit/gpu_launch.h chooses).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "jit/fusion_emitter.h"
#include "jit/gpu_launch.h"
#include "jit/ir_builder.h"

namespace graphjit::emitter {

// The memref element type a tensor of `dtype` is stored as.
Type StorageType(DType dtype);
// A buffer's memref type. MLIR 19 cannot pass a memref with a 0-size dim to LLVM; such
// a dim is declared as 1: nothing reads or writes it, since the loop over it is empty.
Type MemRefType(const Shape& shape, DType dtype);

// An index's values' names, as a key.
std::string Names(const Index& index);

// A reduction's combining op and identity in the computed type `t` (f32, i32 or i64).
struct Reducer {
  Op combine;
  enum Identity { kZero, kOne, kLowest, kHighest } init;  // kLowest: -Inf for f32, the minimum for integers
};
Reducer ReducerOf(const std::string& op, Type t);

// Whether a row of `fusion` can be split across a GPU's threads: its reductions combine
// partial results of 32-bit values (floats are computed in f32).
bool SplitsAcrossThreads(const AnalyzedGraph& g, const FusionPlan::Fusion& fusion);

// What every fusion kind's emitter shares: it writes one fusion as one function (on a GPU,
// one kernel or more), through one builder whose errors name the emitter. The kinds
// (jit/loop_emitter.h, jit/row_emitter.h, jit/reduce_emitter.h) write the loops around the
// elements: CpuBody and GpuBody.
class KernelEmitter {
 public:
  // The emitter of fusion `f`'s kind (a library call has none).
  static StatusOr<std::unique_ptr<KernelEmitter>> For(const AnalyzedGraph& g, const FusionPlan& p, int f,
                                                      const TargetDescription& target);
  virtual ~KernelEmitter() = default;

  // The emitter of a fusion's kind, as errors name it: "the row emitter (fusion_3)".
  static std::string EmitterName(const FusionPlan::Fusion& fusion, int f);

  // The fusion's kernels (one, or on a GPU two for a reduction in two phases) as functions
  // of the target's schedule: their text; appended to `module`: each kernel's name, buffers
  // and launch, the scratch areas they share, and the elementwise ops written.
  // CPU: `canonical` (if given) gets the kernel's canonical form (Builder::Function): equal
  // for kernels of the same code.
  StatusOr<std::string> Emit(EmittedModule* module, std::string* canonical = nullptr);

 protected:
  KernelEmitter(const AnalyzedGraph& g, const FusionPlan& p, int f, const TargetDescription& target)
      : g_(g),
        p_(p),
        f_(f),
        fusion_(p.fusions[f]),
        b_(EmitterName(p.fusions[f], f)),
        target_(target),
        schedule_(target.schedule),
        warp_(target.gpu.warp_size) {}

  // --- The kind's code.
  // CPU: the kernel's rows (Rows) and their code; returns the elements per row (its cost).
  virtual StatusOr<int64_t> CpuBody(EmittedKernel* kernel) = 0;
  // GPU: the kernel's code and launch, in the function EmitGpu started (a kind that writes
  // more than one kernel ends each itself: EndGpuFunction).
  virtual Status GpuBody(EmittedKernel* kernel, EmittedModule* module, std::string* functions) = 0;
  // What a kind keeps for its later loops (the row emitter: jit/row_emitter.h): an element
  // of a fused value (Get), an element of a buffer (Load), the dynamic shared memory a GPU
  // kernel uses.
  virtual std::optional<Value> FromRowCache(TensorId, const Index&) { return std::nullopt; }
  virtual void ToRowCache(TensorId, const Index&, const Value&) {}
  virtual std::optional<Value> FromStage(int /*buffer*/, const Index&, int /*level*/) { return std::nullopt; }
  virtual void ToStage(int /*buffer*/, const Index&, const Value&) {}
  virtual int64_t SharedBytes() const { return 0; }

  // The function around the kind's code (jit/cpu_schedule.cc, jit/gpu_schedule.cc).
  StatusOr<std::string> EmitCpu(EmittedKernel* kernel, std::string* canonical);
  StatusOr<std::string> EmitGpu(EmittedModule* module);
  // Starts a new function: no code, constants or parameters yet.
  void StartFunction();
  // --- Code and scopes.
  int Innermost() const { return b_.Innermost(); }
  Value IndexConst(int64_t c) { return b_.IndexConst(c); }
  Value FloatConst(float v) { return b_.Float(v); }
  Value IntConst(int64_t v, Type type) { return b_.Int(v, type); }
  // `count` elements are reduced: a float sum of one or more starts at -0, so that a sum of
  // -0s is -0, as in IEEE arithmetic and the reference kernels (an empty sum is +0).
  Value IdentityOf(const Reducer& reducer, Type type, int64_t count);
  void OpenScope() { b_.OpenScope(); }

  // --- Loops.
  // The row loop over [begin, end) of the rows (the product of `dims`), with row_ set.
  Status Rows(const std::vector<int64_t>& dims, EmittedKernel* kernel, const std::function<Status()>& body);

  // A loop over lower, lower + step, ... below upper; the same carrying values (body gives
  // the next from the current: `args`), which returns the last.
  Status Loop(const Value& lower, int64_t upper, int64_t step, const std::function<Status(const Value&)>& body);
  Status Loop(const Value& lower, const Value& upper, int64_t step, const std::function<Status(const Value&)>& body);
  using CarriedBody = std::function<StatusOr<std::vector<Value>>(const Value& iv, const std::vector<Value>& args)>;
  StatusOr<std::vector<Value>> LoopCarrying(const Value& lower, int64_t upper, int64_t step, const std::vector<Value>& accs,
                                            const CarriedBody& body);
  StatusOr<std::vector<Value>> LoopCarrying(const Value& lower, const Value& upper, int64_t step, const std::vector<Value>& accs,
                                            const CarriedBody& body);
  // Folds the values elements(lower), elements(lower + step), ... below upper into `accs`
  // in that order, the loop unrolled `unroll` times: an iteration computes the values of
  // `unroll` steps first (their loads independent, in flight together), then folds them in
  // order, so the result is the plain loop's; the steps after the last whole group run in a
  // loop of their own.
  using Elements = std::function<StatusOr<std::vector<Value>>(const Value& iv)>;
  using FoldValues = std::function<std::vector<Value>(const std::vector<Value>& accs, const std::vector<Value>& values)>;
  StatusOr<std::vector<Value>> LoopFolding(const Value& lower, int64_t upper, int64_t step, int64_t unroll,
                                           const std::vector<Value>& accs, const Elements& elements, const FoldValues& fold);
  StatusOr<std::vector<Value>> LoopFolding(const Value& lower, const Value& upper, int64_t step, int64_t unroll,
                                           const std::vector<Value>& accs, const Elements& elements, const FoldValues& fold);
  // LoopFolding's loops: the groups below `group_upper` (none: no groups), then the rest.
  StatusOr<std::vector<Value>> FoldGroups(const Value& lower, const Value& upper, const std::optional<Value>& group_upper,
                                          int64_t step, int64_t unroll, const std::vector<Value>& accs, const Elements& elements,
                                          const FoldValues& fold);
  Block CloseScope();

  // A loop nest over dims[k..], appending its induction variables to `index`.
  Status Nest(const std::vector<int64_t>& dims, size_t k, Index& index, const std::function<Status(const Index&)>& body);

  // A loop nest over dims[k..] folding each element into the accumulators `accs` with
  // `step` (which writes the new accumulators from the old ones and the element).
  using Step = std::function<std::vector<Value>(const std::vector<Value>& accs, const Value& element)>;
  StatusOr<std::vector<Value>> Fold(const std::vector<int64_t>& dims, size_t k, Index& index, const std::vector<Value>& accs,
                                    const Step& step, const std::function<StatusOr<Value>(const Index&)>& element);

  // --- Buffers.
  Value Param(int buffer);
  // A buffer's memref type: CPU: its shape; GPU: flat, 1-D.
  Type BufferType(int buffer) const;
  // The subscript of an element of a buffer: CPU: its index; GPU: its linear index (from
  // linear_ when the buffer has the fusion's shape and the index is a known one).
  Index Subscript(int buffer, const Index& index);
  // An element of a buffer, widened to the type it is computed in; its level `level`
  // (-1: the index's).
  Value Load(int buffer, const Index& index, int level = -1);
  void Store(int buffer, const Index& index, const Value& v);
  Status StoreRoots(const std::vector<TensorId>& roots, const Index& index);

  const Shape& ShapeOf(TensorId v) const { return g_.info(v.node).shapes[v.index]; }
  bool Full(TensorId v) const { return ShapeOf(v) == fusion_.space; }

  // --- Rows and reductions.
  // `linear` (an index below the product of `dims`) as an index into `dims`, row-major.
  Index Delinearize(const Value& linear, const std::vector<int64_t>& dims);

  // How `n` reduces in the computed type `type`, `count` elements: the accumulators'
  // initial values, the step that folds one element in, per accumulator the op that
  // combines two partial results (a thread's and another's, with its fast-math flags), and
  // the finish that makes the result of the accumulators.
  struct Folding {
    std::vector<Value> init;
    Step step;
    std::vector<std::pair<Op, unsigned>> combine;
    std::function<Value(const std::vector<Value>&)> finish;
  };
  Folding FoldingOf(const Node& n, Type type, int64_t count, bool reassoc);

  // Folds the elements `element` gives over `dims` (their indices appended to `index`) with
  // n's reducer in the computed type `type`, and divides a Mean by `count`. Integers are
  // exact in any order. Floats may reassociate if `reassoc`. Max and Min combine with nnan
  // and nsz, which makes them one vmaxps/vminps instead of six instructions that order NaN
  // and signed zeros (and keeps LLVM from making a half-vector maximum of values loaded from
  // f16, which lost NaNs). Two integer folds beside the value, over the elements' bits, give
  // IEEE maximum/minimum all the same: the largest magnitude's bits (above Inf's: a NaN was
  // seen, the result is NaN), and the smallest bits of +0 for Max (x ^ sign for Min, to find
  // -0): a zero result is +0 for Max if any +0 was seen (-0 for Min if any -0 was), as in
  // the reference kernels. (Integer folds vectorize without the packing of i1 flags.)
  StatusOr<Value> FoldReduction(const Node& n, Type type, const std::vector<int64_t>& dims, Index& index, int64_t count,
                                bool reassoc, const std::function<StatusOr<Value>(const Index&)>& element);

  // ArgMax (ArgMin) along an axis of `size` elements: the first index of the largest
  // (smallest) value, as the reference kernel finds it (a NaN is never larger or smaller;
  // the first element is taken even if it is NaN). `at(i)` is the input's index for
  // position `i` on the axis.
  StatusOr<Value> ArgMaxOrMin(int id, int64_t size, Index& index, const std::function<Index(const Value&)>& at);

  // --- Elements.
  // The element of `v` at `index` (in v's shape).
  StatusOr<Value> Get(TensorId v, const Index& index);

  bool IsApproximate(TensorId v);
  bool MayRoundDivision(TensorId v);
  Value DivideByInvariant(const Value& x, const Value& d);
  std::optional<std::pair<TensorId, double>> ScaledArgument(const Node& erf);
  StatusOr<Value> Compute(TensorId v, const Index& index);

  // A 16-bit float value, computed in f32, rounded to its type as the reference kernels
  // round each op's result: an f16 chain overflows to Inf where they do.
  Value RoundedTo(DType dtype, const Value& v);

  // The index of an operand of shape `s` broadcast into `out` at `index`.
  // The index of an input of shape `in` read through `dims` (see ReadDims) at `index`.
  Index ReadAt(const std::vector<int>& dims, const Index& index, const Shape& in);

  // `cond` ? then() : otherwise(), each computed inside its branch: nothing either loads
  // leaves it.
  StatusOr<Value> Branch(const Value& cond, const std::function<StatusOr<Value>()>& then,
                         const std::function<StatusOr<Value>()>& otherwise);
  // Pieces laid end to end along `axis` (piece k ends at ends[k]): piece(k, local), local the
  // index along the axis within piece k, for the piece `index` falls in (a chain of branches).
  using Piece = std::function<StatusOr<Value>(size_t k, const Value& local)>;
  StatusOr<Value> Pieces(const Index& index, int axis, const std::vector<int64_t>& ends, const Piece& piece, size_t k = 0);
  // a <op> b on indices, and the comparison `pred` of two indices.
  Value IndexArith(Op op, const Value& a, const Value& b);
  Value IndexCmp(Pred pred, const Value& a, const Value& b);
  // A kIndexed node's element at `index`: its op's element generator (a table keyed by op),
  // which every fusion kind fuses.
  StatusOr<Value> Indexed(TensorId v, const Index& index);
  struct IndexedElement;
  StatusOr<Value> SliceElement(const IndexedElement& x);
  StatusOr<Value> StridedSliceElement(const IndexedElement& x);
  StatusOr<Value> TileElement(const IndexedElement& x);
  StatusOr<Value> ReverseElement(const IndexedElement& x);
  StatusOr<Value> MirrorPadElement(const IndexedElement& x);
  StatusOr<Value> PadElement(const IndexedElement& x);
  StatusOr<Value> GatherElement(const IndexedElement& x);
  StatusOr<Value> SetRowElement(const IndexedElement& x);
  StatusOr<Value> PackElement(const IndexedElement& x);
  StatusOr<Value> UnpackElement(const IndexedElement& x);
  StatusOr<Value> SplitElement(const IndexedElement& x, int axis_input);
  StatusOr<Value> RangeElement(const IndexedElement& x);
  StatusOr<Value> OneHotElement(const IndexedElement& x);
  StatusOr<Value> ScanElement(const IndexedElement& x, bool sum);
  StatusOr<Value> DepthToSpaceElement(const IndexedElement& x);
  StatusOr<Value> SpaceToDepthElement(const IndexedElement& x);
  StatusOr<Value> SpaceToBatchElement(const IndexedElement& x);
  StatusOr<Value> BatchToSpaceElement(const IndexedElement& x);
  StatusOr<Value> BandPartElement(const IndexedElement& x);
  StatusOr<Value> GatherNdElement(const IndexedElement& x);
  StatusOr<Value> ResizeElement(const IndexedElement& x, bool bilinear);
  // A resize's source coordinates for output position `o` of an axis of `in` elements
  // scaled by `scale`: the lower and upper ones and the weight of the upper (bilinear), or
  // the nearest (in `lower`).
  struct ResizeTaps {
    Value lower, upper, weight;
  };
  ResizeTaps ResizeSource(const Node& n, const Value& o, float scale, int64_t in, bool bilinear);
  // The integers of constant input `input` of `n`; i + c; the zero of v's computed type.
  std::vector<int64_t> ConstantInts(const Node& n, int input) const;
  Value Plus(const Value& i, int64_t c);
  StatusOr<Value> ZeroOf(TensorId v);

  // --- GPU (jit/gpu_schedule.cc).
  // Reduction `n`: `outputs` results, each over `count` elements, in two kernels, `name`
  // and `name`_finish. First, `parts` threads per output: thread (part, output) folds
  // `element(output, i)` for i = part, part + parts, ... in order, into scratch memory;
  // then each output's partial results are combined in a fixed tree, and `store(output,
  // result)` writes the result.
  using PhaseElement = std::function<StatusOr<Value>(const Value& output, const Value& i)>;
  using PhaseStore = std::function<Status(const Value& output, const Value& result)>;
  Status ReduceInTwoPhases(const Node& n, int64_t outputs, int64_t count, int64_t parts, const std::string& name,
                           const PhaseElement& element, const PhaseStore& store, EmittedModule* module, std::string* functions);
  Status FirstPhase(const Node& n, const PhasesLaunch& l, int64_t outputs, int64_t count, const std::string& name,
                    const PhaseElement& element, std::vector<int>* areas, EmittedModule* module, std::string* functions);
  // A GPU kernel's function: started (its thread and block ids), and ended: its text
  // appended to *functions, the kernel (its buffers and scratch areas set) to `module`.
  virtual void StartGpuFunction();
  void EndGpuFunction(EmittedKernel kernel, EmittedModule* module, std::string* functions);
  // Scratch memory: a new area of `bytes`; area `area` seen as `elements` 4-byte values of
  // `type` (or as `memref`), a parameter of the current function.
  static int NewScratch(int64_t bytes, EmittedModule* module);
  Value Scratch(int area, int64_t elements, Type type);
  Value Scratch(int area, Type memref);
  // values[i] stored into arrays[i] at `at` where `cond` holds.
  void StoreWhere(const Value& cond, const std::vector<Value>& values, const std::vector<Value>& arrays, const Index& at);
  // `body` once per unit of [0, units), a thread each, in a grid-stride loop of blocks of
  // at most `block` threads; sets the kernel's launch.
  Status GridStride(int64_t units, int64_t block, EmittedKernel* kernel, const std::function<Status(const Value&)>& body);
  // `then` where `cond` holds; nothing it reads leaves it (it may read out of
  // bounds where `cond` does not hold). The second form yields what `then` makes, else
  // `otherwise`.
  Status If(const Value& cond, const std::function<Status()>& then);
  StatusOr<std::vector<Value>> If(const Value& cond, const std::vector<Value>& otherwise,
                                  const std::function<StatusOr<std::vector<Value>>()>& then);
  // Partial results of `threads` threads (a warp or a block, one row) combined, in a fixed
  // order; every thread gets the result.
  // A new shared array (a workgroup attribution of the function) of `dims` elements of
  // `type`.
  Value SharedArray(const std::vector<int64_t>& dims, Type type);
  std::vector<Value> CombineAcross(const Folding& f, std::vector<Value> accs, int64_t threads);
  // The results of the `cluster` blocks of a thread-block cluster (each block's in all its
  // threads) combined in rank order through distributed shared memory; every thread gets
  // the result. The kernel then ends with the cluster's barrier: a block's shared memory
  // stays until the others have read it.
  std::vector<Value> CombineAcrossCluster(const Folding& f, std::vector<Value> accs, int64_t cluster);
  // Accumulator i's partial results `a` and `b` combined.
  Value Combine(const Folding& f, size_t i, const Value& a, const Value& b);

  const AnalyzedGraph& g_;
  const FusionPlan& p_;
  const int f_;
  const FusionPlan::Fusion& fusion_;
  Builder b_;
  int num_ops_ = 0;
  // The elements written so far in the open scopes, by tensor and index (Get): a tensor
  // read at one index by many consumers is written once, so emission stays linear on a
  // DAG. What another scope computes again, MLIR's CSE merges (backends/kernel_cleanup.h).
  std::map<std::pair<TensorId, std::string>, Value> memo_;
  std::map<int, bool> approximate_;              // IsApproximate's answers, by node
  std::vector<std::vector<OutEdge>> consumers_;  // made on first use
  std::vector<int> params_;
  std::map<int, Value> reduced_;
  Index row_;
  Value row_index_, begin_, end_;  // CPU: the row loop's index, and its bounds (the function's first parameters)
  const TargetDescription& target_;
  const Schedule schedule_;
  const int64_t warp_;                   // GPU: threads per warp
  std::map<std::string, Value> linear_;  // GPU: index (Names) -> its linear index, in the fusion's shape
  Value tid_, bid_;                      // GPU: the thread's index in its block, the block's
  bool cluster_wait_at_end_ = false;     // GPU: the kernel ends with its cluster's barrier
  std::map<int, Type> scratch_params_;   // GPU: the scratch areas a function reads or writes -> memref type
};

}  // namespace graphjit::emitter
