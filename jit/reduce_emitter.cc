#include "jit/reduce_emitter.h"

#include "jit/elemental.h"
#include "jit/gpu_launch.h"
#include "runtime/op_traits.h"

namespace graphjit::emitter {

StatusOr<int64_t> ReduceEmitter::CpuBody(EmittedKernel* kernel) {
  GJ_RETURN_IF_ERROR(Rows({}, kernel, [&] { return ReduceAll(fusion_.reductions[0]); }));
  return fusion_.space.num_elements();
}

// A reduction over any axes: the output is initialized, then accumulated in place while
// the input is read in memory order.
Status ReduceEmitter::ReduceAll(int r) {
  const Node& n = *g_.graph.node(r);
  const int out = p_.buffer_of.at({r, 0});
  GJ_ASSIGN_OR_RETURN(ReductionAxes axes, GetReductionAxes(g_, r));
  const Shape& in = fusion_.space;
  const std::vector<int64_t>& out_dims = p_.buffers[out].shape.dims();
  Index index;
  if (IsArgReduction(n.op)) {  // per output element, a loop along the axis
    const int axis = axes.axes[0];
    return Nest(out_dims, 0, index, [&](const Index& at) -> Status {
      Index along;
      GJ_ASSIGN_OR_RETURN(Value best, ArgMaxOrMin(r, in.dim(axis), along, [&](const Value& i) {
                            Index full = at;
                            full.insert(full.begin() + axis, i);
                            return full;
                          }));
      Store(out, at, best);
      return Status::Ok();
    });
  }
  const DType dtype = p_.buffers[out].dtype;
  if (dtype == DType::kHalf || dtype == DType::kBFloat16) return ReduceAllPerOutput(n, out, axes);
  if (dtype != DType::kFloat && dtype != DType::kInt32 && dtype != DType::kInt64)
    return Unimplemented(NodeLabel(n) + ": a column reduction of " + DTypeName(dtype));
  const Type type = ElementType(dtype);
  const Reducer reducer = ReducerOf(n.op, type);
  int64_t count = 1;
  for (int a : axes.axes) count *= in.dim(a);
  GJ_RETURN_IF_ERROR(Nest(out_dims, 0, index, [&](const Index& at) {
    Store(out, at, IdentityOf(reducer, type, count));
    return Status::Ok();
  }));
  GJ_RETURN_IF_ERROR(Nest(in.dims(), 0, index, [&](const Index& at) -> Status {
    Index to;
    for (int i = 0; i < in.rank(); ++i) {
      const bool is_reduced = std::binary_search(axes.axes.begin(), axes.axes.end(), i);
      if (!is_reduced)
        to.push_back(at[i]);
      else if (axes.keep_dims)
        to.push_back(IndexConst(0));
    }
    GJ_ASSIGN_OR_RETURN(Value v, Get(n.inputs[0], at));
    const Value acc = Load(out, to, Innermost());
    Store(out, to, b_.Apply(reducer.combine, {acc, v}));
    return Status::Ok();
  }));
  if (TraitsOf(n.op).reducer != OpReducer::kMean) return Status::Ok();
  if (type != Type::F32() && count == 0) return Status::Ok();  // an integer mean of nothing stays 0
  return Nest(out_dims, 0, index, [&](const Index& at) {
    const Value sum = Load(out, at, Innermost());
    const bool f = type == Type::F32();
    Store(out, at, b_.Apply(f ? Op::kDivF : Op::kDivSI, {sum, f ? FloatConst(count) : IntConst(count, type)}));
    return Status::Ok();
  });
}

// --- GPU.
Status ReduceEmitter::GpuBody(EmittedKernel* kernel, EmittedModule* module, std::string* functions) {
  const int r = fusion_.reductions[0];
  const Node& n = *g_.graph.node(r);
  const int out = p_.buffer_of.at({r, 0});
  GJ_ASSIGN_OR_RETURN(ReductionAxes axes, GetReductionAxes(g_, r));
  const std::vector<int64_t>& out_dims = p_.buffers[out].shape.dims();
  const int64_t outputs = p_.buffers[out].shape.num_elements();
  std::vector<int64_t> reduced;
  int64_t count = 1;
  for (int a : axes.axes) {
    reduced.push_back(fusion_.space.dim(a));
    count *= fusion_.space.dim(a);
  }
  const bool arg = IsArgReduction(n.op);
  if (outputs == 0) return Status::Ok();
  const ReduceLaunch launch = ChooseReduceLaunch(target_.gpu, outputs, count, !arg && SplitsAcrossThreads(g_, fusion_));
  if (launch.kind == ReduceLaunch::Kind::kInPhases) {
    return ReduceInTwoPhases(
        n, outputs, count, launch.parts, kernel->function,
        [&](const Value& output, const Value& i) {
          return Get(n.inputs[0], InputIndex(axes, Delinearize(output, out_dims), Delinearize(i, reduced)));
        },
        [&](const Value& output, const Value& result) {
          Store(out, Delinearize(output, out_dims), result);
          return Status::Ok();
        },
        module, functions);
  }
  // Many outputs, or a reduction the threads cannot share: a thread per output element.
  if (launch.kind == ReduceLaunch::Kind::kThreadPerOutput) {
    return GridStride(outputs, kGpuBlock, kernel, [&](const Value& o) -> Status {
      const Index at = Delinearize(o, out_dims);
      Value v;
      if (arg) {
        Index along;
        GJ_ASSIGN_OR_RETURN(v, ArgMaxOrMin(r, count, along, [&](const Value& i) { return InputIndex(axes, at, {i}); }));
      } else {
        GJ_ASSIGN_OR_RETURN(v, ReduceOne(n, axes, at));
      }
      Store(out, at, v);
      return Status::Ok();
    });
  }
  // A block per output element: its threads fold strided elements, then combine.
  const int64_t threads = launch.threads;
  kernel->block = threads;
  kernel->grid = outputs;
  const Index at = Delinearize(bid_, out_dims);
  const Folding f = FoldingOf(n, ElementType(p_.buffers[out].dtype), count, /*reassoc=*/true);
  GJ_ASSIGN_OR_RETURN(std::vector<Value> accs,
                      LoopCarrying(tid_, count, threads, f.init,
                                   [&](const Value& i, const std::vector<Value>& args) -> StatusOr<std::vector<Value>> {
                                     GJ_ASSIGN_OR_RETURN(Value v,
                                                         Get(n.inputs[0], InputIndex(axes, at, Delinearize(i, reduced))));
                                     return f.step(args, v);
                                   }));
  const Value result = f.finish(CombineAcross(f, accs, threads));
  return If(b_.Cmp(Pred::kEq, tid_, IndexConst(0)), [&] {
    Store(out, at, result);
    return Status::Ok();
  });
}

// A reduction into a 16-bit float type: per output element, a loop over what it reduces,
// accumulated in f32 and rounded once, as the reference kernel does (accumulating in the
// 16-bit output itself would round every partial result).
Status ReduceEmitter::ReduceAllPerOutput(const Node& n, int out, const ReductionAxes& axes) {
  Index index;
  return Nest(p_.buffers[out].shape.dims(), 0, index, [&](const Index& at) -> Status {
    GJ_ASSIGN_OR_RETURN(Value acc, ReduceOne(n, axes, at));
    Store(out, at, acc);
    return Status::Ok();
  });
}

StatusOr<Value> ReduceEmitter::ReduceOne(const Node& n, const ReductionAxes& axes, const Index& at) {
  std::vector<int64_t> reduced_dims;
  int64_t count = 1;
  for (int a : axes.axes) {
    reduced_dims.push_back(fusion_.space.dim(a));
    count *= fusion_.space.dim(a);
  }
  Index along;
  return FoldReduction(n, ElementType(g_.info(n.id).dtypes[0]), reduced_dims, along, count, /*reassoc=*/false,
                       [&](const Index& r) { return Get(n.inputs[0], InputIndex(axes, at, r)); });
}

Index ReduceEmitter::InputIndex(const ReductionAxes& axes, const Index& at, const Index& reduced) {
  Index full;
  size_t o = 0, k = 0;
  for (int i = 0; i < fusion_.space.rank(); ++i) {
    if (std::binary_search(axes.axes.begin(), axes.axes.end(), i)) {
      full.push_back(reduced[k++]);
      if (axes.keep_dims) ++o;
    } else {
      full.push_back(at[o++]);
    }
  }
  return full;
}

}  // namespace graphjit::emitter
