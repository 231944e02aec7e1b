// What every kind's GPU kernels share: one `gpu.func @fusion_N(<buffers>...) kernel` per
// fusion (or more: a reduction in two phases), launched on a 1-D grid
// (EmittedKernel::grid blocks of EmittedKernel::block threads, in thread-block clusters of
// EmittedKernel::cluster blocks where that is above 1); grid-stride loops, branches,
// scratch memory, and partial results combined across the threads of a warp, a block or a
// cluster, and in two phases. Each kind's schedule is in its emitter (jit/loop_emitter.h,
// jit/row_emitter.h, jit/reduce_emitter.h).
#include <algorithm>
#include <set>

#include "jit/elemental.h"
#include "jit/gpu_launch.h"
#include "jit/kernel_emitter.h"
#include "runtime/gpu_model.h"
#include "runtime/op_traits.h"

namespace graphjit::emitter {

// Whether a row of `fusion` can be split across threads: its reductions combine partial
// results of 32-bit values (floats are computed in f32).
bool SplitsAcrossThreads(const AnalyzedGraph& g, const FusionPlan::Fusion& fusion) {
  for (int r : fusion.reductions) {
    if (IsArgReduction(g.graph.node(r)->op)) return false;
    const Type type = ElementType(g.info(r).dtypes[0]);
    if (type != Type::F32() && type != Type::I32()) return false;
  }
  return true;
}

StatusOr<std::string> KernelEmitter::EmitGpu(EmittedModule* module) {
  EmittedKernel kernel;
  kernel.function = "fusion_" + std::to_string(f_);
  StartGpuFunction();
  std::string functions;
  const size_t before = module->kernels.size();
  GJ_RETURN_IF_ERROR(GpuBody(&kernel, module, &functions));
  if (module->kernels.size() == before) EndGpuFunction(std::move(kernel), module, &functions);
  return functions;
}

void KernelEmitter::StartGpuFunction() {
  StartFunction();
  reduced_.clear();
  row_.clear();
  cluster_wait_at_end_ = false;
  tid_ = b_.ThreadId();
  bid_ = b_.BlockId();
}

void KernelEmitter::EndGpuFunction(EmittedKernel kernel, EmittedModule* module, std::string* functions) {
  // Every buffer is 16-byte aligned (the runtime's allocations, and borrowed ones checked).
  std::vector<FunctionParam> params;
  for (int b : params_) {
    params.push_back({Param(b), /*noalias=*/true, 0, 16});
    kernel.buffers.push_back(b);
  }
  for (const auto& [area, type] : scratch_params_) {
    params.push_back({Scratch(area, type), /*noalias=*/true, 0, 16});
    kernel.scratch.push_back(area);
  }
  kernel.shared_bytes = SharedBytes();
  if (cluster_wait_at_end_) b_.ClusterArriveAndWait();
  *functions += b_.GpuKernel(kernel.function, params, kernel.block);
  module->kernels.push_back(std::move(kernel));
}

int KernelEmitter::NewScratch(int64_t bytes, EmittedModule* module) {
  module->scratch.push_back(bytes);
  return static_cast<int>(module->scratch.size()) - 1;
}

Value KernelEmitter::Scratch(int area, int64_t elements, Type type) {
  return Scratch(area, scratch_params_[area] = Type::MemRef({elements}, type));
}

Value KernelEmitter::Scratch(int area, Type memref) { return b_.Parameter("%s" + std::to_string(area), memref); }

Status KernelEmitter::GridStride(int64_t units, int64_t block, EmittedKernel* kernel,
                                 const std::function<Status(const Value&)>& body) {
  const Launch launch = Launch1D(units, block, target_.gpu);
  kernel->grid = launch.grid;
  kernel->block = launch.block;
  if (units == 0) {
    kernel->grid = 0;
    return Status::Ok();
  }
  const Value first = b_.Apply(Op::kMulI, {bid_, IndexConst(kernel->block)});
  const Value start = b_.Apply(Op::kAddI, {first, tid_});
  return Loop(start, units, kernel->grid * kernel->block, body);
}

Status KernelEmitter::If(const Value& cond, const std::function<Status()>& then) {
  return If(cond, {},
            [&]() -> StatusOr<std::vector<Value>> {
              GJ_RETURN_IF_ERROR(then());
              return std::vector<Value>{};
            })
      .status();
}

StatusOr<std::vector<Value>> KernelEmitter::If(const Value& cond, const std::vector<Value>& otherwise,
                                               const std::function<StatusOr<std::vector<Value>>()>& then) {
  const int saved_floor = b_.floor();
  OpenScope();
  b_.set_floor(Innermost());
  auto values = then();
  b_.set_floor(saved_floor);
  Block inner = CloseScope();
  if (!values.ok()) return values.status();
  return b_.If(cond, std::move(inner), *values, {}, otherwise);
}

Value KernelEmitter::Combine(const Folding& f, size_t i, const Value& a, const Value& b) {
  return b_.Apply(f.combine[i].first, {a, b}, f.combine[i].second);
}

void KernelEmitter::StoreWhere(const Value& cond, const std::vector<Value>& values, const std::vector<Value>& arrays,
                               const Index& at) {
  OpenScope();
  for (size_t i = 0; i < values.size(); ++i) b_.Store(values[i], arrays[i], at);
  b_.If(cond, CloseScope(), {}, {}, {});
}

Value KernelEmitter::SharedArray(const std::vector<int64_t>& dims, Type type) {
  return b_.Workgroup(Type::MemRef(dims, type, /*workgroup=*/true));
}

std::vector<Value> KernelEmitter::CombineAcross(const Folding& f, std::vector<Value> accs, int64_t threads) {
  // 1. Within each warp: a butterfly, after which every lane holds the warp's result.
  const Value width = IntConst(warp_, Type::I32());
  for (int64_t offset = warp_ / 2; offset >= 1; offset /= 2) {
    const Value o = IntConst(offset, Type::I32());
    for (size_t i = 0; i < accs.size(); ++i) accs[i] = Combine(f, i, accs[i], b_.ShuffleXor(accs[i], o, width));
  }
  if (threads <= warp_) return accs;
  // 2. Across warps: each warp's first lane writes its result to shared memory; after a
  // barrier every thread folds them, in order.
  const Value lane = b_.Apply(Op::kRemUI, {tid_, IndexConst(warp_)});
  const Value warp = b_.Apply(Op::kDivUI, {tid_, IndexConst(warp_)});
  std::vector<Value> arrays;
  for (const Value& acc : accs) arrays.push_back(SharedArray({warp_}, acc.type));
  StoreWhere(b_.Cmp(Pred::kEq, lane, IndexConst(0)), accs, arrays, {warp});
  b_.Barrier();
  for (size_t i = 0; i < accs.size(); ++i) {
    Value acc;
    for (int64_t w = 0; w < threads / warp_; ++w) {
      const Value v = b_.Load(arrays[i], {IndexConst(w)}, Innermost());
      acc = w == 0 ? v : Combine(f, i, acc, v);
    }
    accs[i] = acc;
  }
  return accs;
}

std::vector<Value> KernelEmitter::CombineAcrossCluster(const Folding& f, std::vector<Value> accs, int64_t cluster) {
  // Thread 0 of each block writes the block's results to its shared memory; after the
  // cluster's barrier every thread reads them from each block (mapa: the address of the
  // same array in the block of a rank) and folds them in rank order.
  std::vector<Value> arrays;
  for (const Value& acc : accs) arrays.push_back(SharedArray({1}, acc.type));
  StoreWhere(b_.Cmp(Pred::kEq, tid_, IndexConst(0)), accs, arrays, {IndexConst(0)});
  b_.ClusterArriveAndWait();
  for (size_t i = 0; i < accs.size(); ++i) {
    const Value generic = b_.GenericPointer(arrays[i]);
    Value acc;
    for (int64_t rank = 0; rank < cluster; ++rank) {
      const Value v = b_.LoadPointer(b_.InClusterBlock(generic, IntConst(rank, Type::I32())), accs[i].type);
      acc = rank == 0 ? v : Combine(f, i, acc, v);
    }
    accs[i] = acc;
  }
  cluster_wait_at_end_ = true;  // no block may exit (its shared memory gone) before the others read it
  return accs;
}

Status KernelEmitter::ReduceInTwoPhases(const Node& n, int64_t outputs, int64_t count, int64_t parts, const std::string& name,
                                        const PhaseElement& element, const PhaseStore& store, EmittedModule* module,
                                        std::string* functions) {
  const Type type = ElementType(g_.info(n.id).dtypes[0]);
  // 1. Many outputs: a block is a tile of a warp's width of outputs over `tile_parts` parts
  // (its warps); neighbouring threads read neighbouring outputs, and the block combines its
  // warps' partial results per output, in order, into one: partial result `group` of output
  // o at group * outputs + o. Few (and parts for whole blocks): u = output * parts + part,
  // parts a multiple of the block, neighbouring threads read neighbouring elements of one
  // output, and each block combines its threads' results into one. Either way the second
  // phase has few partial results to read, however many threads the first had.
  const PhasesLaunch l = ChoosePhases(target_.gpu, outputs, parts);
  std::vector<int> areas;  // per accumulator: the partial results (f32 or i32)
  GJ_RETURN_IF_ERROR(FirstPhase(n, l, outputs, count, name, element, &areas, module, functions));
  // 2. Each output's partial results in order (several loads in flight): a thread per output
  // when there are many (reading neighbouring outputs), else a block per output.
  StartGpuFunction();
  EmittedKernel kernel;
  kernel.function = name + "_finish";
  const Folding f = FoldingOf(n, type, count, /*reassoc=*/true);
  auto partials = [&](const Value& output, const Value& first, int64_t step) {
    return LoopFolding(
        first, l.kept, step, GpuLoadsInFlight(target_.gpu), f.init,
        [&](const Value& part) -> StatusOr<std::vector<Value>> {
          const Value scaled = b_.Apply(Op::kMulI, {l.by_block ? output : part, IndexConst(l.by_block ? l.kept : outputs)});
          const Value u = b_.Apply(Op::kAddI, {scaled, l.by_block ? part : output});
          std::vector<Value> loaded;
          for (size_t i = 0; i < areas.size(); ++i)
            loaded.push_back(b_.Load(Scratch(areas[i], l.kept * outputs, f.init[i].type), {u}));
          return loaded;
        },
        [&](const std::vector<Value>& args, const std::vector<Value>& loaded) {
          std::vector<Value> next;
          for (size_t i = 0; i < args.size(); ++i) next.push_back(Combine(f, i, args[i], loaded[i]));
          return next;
        });
  };
  if (l.finish_threads == 0) {
    GJ_RETURN_IF_ERROR(GridStride(outputs, kGpuBlock, &kernel, [&](const Value& output) -> Status {
      GJ_ASSIGN_OR_RETURN(std::vector<Value> accs, partials(output, IndexConst(0), 1));
      return store(output, f.finish(accs));
    }));
  } else {
    kernel.block = l.finish_threads;
    kernel.grid = outputs;
    GJ_ASSIGN_OR_RETURN(std::vector<Value> accs, partials(bid_, tid_, l.finish_threads));
    const Value result = f.finish(CombineAcross(f, accs, l.finish_threads));
    GJ_RETURN_IF_ERROR(If(b_.Cmp(Pred::kEq, tid_, IndexConst(0)), [&] { return store(bid_, result); }));
  }
  EndGpuFunction(std::move(kernel), module, functions);
  return Status::Ok();
}

// The first phase's kernel: each thread folds its part of an output's elements; a block's
// (or a tile's) partial results are combined into one per output, stored in new scratch
// areas (one per accumulator).
Status KernelEmitter::FirstPhase(const Node& n, const PhasesLaunch& l, int64_t outputs, int64_t count, const std::string& name,
                                 const PhaseElement& element, std::vector<int>* areas_out, EmittedModule* module,
                                 std::string* functions) {
  StartGpuFunction();
  EmittedKernel kernel;
  kernel.function = name;
  const Folding f = FoldingOf(n, ElementType(g_.info(n.id).dtypes[0]), count, /*reassoc=*/true);
  const int64_t kept = l.kept * outputs;  // the partial results
  std::vector<int>& areas = *areas_out;
  for (size_t i = 0; i < f.init.size(); ++i) areas.push_back(NewScratch(kept * 4, module));
  auto fold = [&](const Value& output, const Value& part) {
    return LoopFolding(
        part, count, l.parts, GpuLoadsInFlight(target_.gpu), f.init,
        [&](const Value& i) -> StatusOr<std::vector<Value>> {
          GJ_ASSIGN_OR_RETURN(Value v, element(output, i));
          return std::vector<Value>{v};
        },
        [&](const std::vector<Value>& args, const std::vector<Value>& v) { return f.step(args, v[0]); });
  };
  if (l.by_block) {
    kernel.block = kGpuBlock;
    kernel.grid = l.parts * outputs / kGpuBlock;
    const Value u = b_.Apply(Op::kAddI, {b_.Apply(Op::kMulI, {bid_, IndexConst(kGpuBlock)}), tid_});
    GJ_ASSIGN_OR_RETURN(std::vector<Value> accs,
                        fold(b_.Apply(Op::kDivUI, {u, IndexConst(l.parts)}), b_.Apply(Op::kRemUI, {u, IndexConst(l.parts)})));
    accs = CombineAcross(f, accs, kGpuBlock);
    std::vector<Value> partials;
    for (size_t i = 0; i < accs.size(); ++i) partials.push_back(Scratch(areas[i], kept, accs[i].type));
    StoreWhere(b_.Cmp(Pred::kEq, tid_, IndexConst(0)), accs, partials, {bid_});
    EndGpuFunction(std::move(kernel), module, functions);
    return Status::Ok();
  }
  const int64_t tiles = CeilDiv(outputs, warp_);
  kernel.block = warp_ * l.tile_parts;
  kernel.grid = tiles * (l.parts / l.tile_parts);
  const Value group = b_.Apply(Op::kDivUI, {bid_, IndexConst(tiles)});
  const Value lane = b_.Apply(Op::kRemUI, {tid_, IndexConst(warp_)});
  const Value warp = b_.Apply(Op::kDivUI, {tid_, IndexConst(warp_)});
  const Value output =
      b_.Apply(Op::kAddI, {b_.Apply(Op::kMulI, {b_.Apply(Op::kRemUI, {bid_, IndexConst(tiles)}), IndexConst(warp_)}), lane});
  const Value part = b_.Apply(Op::kAddI, {b_.Apply(Op::kMulI, {group, IndexConst(l.tile_parts)}), warp});
  const Value inside = b_.Cmp(Pred::kUlt, output, IndexConst(outputs));
  std::vector<Value> accs = f.init;
  if (outputs % warp_ == 0) {
    GJ_ASSIGN_OR_RETURN(accs, fold(output, part));
  } else {
    GJ_ASSIGN_OR_RETURN(accs, If(inside, f.init, [&] { return fold(output, part); }));
  }
  // The warps' partial results per output, through shared memory, folded in order by the
  // first warp.
  std::vector<Value> arrays;
  for (const Value& acc : accs) {
    arrays.push_back(SharedArray({l.tile_parts, warp_}, acc.type));
    b_.Store(acc, arrays.back(), {warp, lane});
  }
  b_.Barrier();
  const Value stores_results = b_.Cmp(Pred::kEq, warp, IndexConst(0));
  const Value store_here = outputs % warp_ == 0 ? stores_results : b_.Apply(Op::kAndI, {stores_results, inside});
  GJ_RETURN_IF_ERROR(If(store_here, [&] {
    const Value at = b_.Apply(Op::kAddI, {b_.Apply(Op::kMulI, {group, IndexConst(outputs)}), output});
    for (size_t i = 0; i < accs.size(); ++i) {
      Value acc;
      for (int64_t w = 0; w < l.tile_parts; ++w) {
        const Value v = b_.Load(arrays[i], {IndexConst(w), lane}, Innermost());
        acc = w == 0 ? v : Combine(f, i, acc, v);
      }
      b_.Store(acc, Scratch(areas[i], kept, acc.type), {at});
    }
    return Status::Ok();
  }));
  EndGpuFunction(std::move(kernel), module, functions);
  return Status::Ok();
}

}  // namespace graphjit::emitter

namespace graphjit {

int64_t GpuLoadsInFlight(const GpuDescription& gpu) {
  // The bytes in flight a fold keeps, over what Little's law asks to keep the DRAM busy: its
  // latency grows under load.
  constexpr double kHeadroom = 2;
  if (gpu.dram_bytes_per_s <= 0 || gpu.multiprocessors <= 0 || gpu.max_threads_per_multiprocessor <= 0) return 4;
  const double per_sm = kHeadroom * gpu.dram_bytes_per_s * kDramLatencyUs * 1e-6 / gpu.multiprocessors;
  const double per_thread = per_sm / (gpu.max_threads_per_multiprocessor * 4.0);
  int64_t loads = 2;
  while (loads < 8 && loads < per_thread) loads *= 2;
  return loads;
}

}  // namespace graphjit
