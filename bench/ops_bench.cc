// Per-op-family benchmarks of graphjit's runtime kernels against plain Eigen.
//
// Each graphjit case runs a one-op graph through a Session (the real executor path,
// one intra- and one inter-op thread); each Eigen case evaluates the same math as a
// single-threaded Eigen expression over the same buffers. Bytes processed are the
// tensors read and written once.
//
//   build/bin/ops_bench --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <Eigen/Dense>
#include <random>

#include "bench/machine.h"
#include "runtime/session.h"

namespace graphjit {
namespace {

using ArrF = Eigen::Array<float, Eigen::Dynamic, 1>;
using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ArrRows = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

Tensor Random(const Shape& shape, uint64_t seed) {
  Tensor t = Tensor::Allocate(DType::kFloat, shape).value();
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

void SetType(tensorflow::NodeDef* n, const char* attr, DType t) {
  (*n->mutable_attr())[attr].set_type(static_cast<tensorflow::DataType>(t));
}

tensorflow::NodeDef* AddNode(tensorflow::GraphDef& gd, const std::string& name, const std::string& op,
                             std::vector<std::string> inputs) {
  auto* n = gd.add_node();
  n->set_name(name);
  n->set_op(op);
  for (auto& i : inputs) n->add_input(i);
  return n;
}

void AddPlaceholder(tensorflow::GraphDef& gd, const std::string& name) {
  SetType(AddNode(gd, name, "Placeholder", {}), "dtype", DType::kFloat);
}

void AddIntConst(tensorflow::GraphDef& gd, const std::string& name, std::vector<int32_t> v) {
  auto* n = AddNode(gd, name, "Const", {});
  SetType(n, "dtype", DType::kInt32);
  auto* t = (*n->mutable_attr())["value"].mutable_tensor();
  t->set_dtype(tensorflow::DT_INT32);
  t->mutable_tensor_shape()->add_dim()->set_size(static_cast<int64_t>(v.size()));
  for (int32_t x : v) t->add_int_val(x);
}

// Runs graph `gd` fetching "op" with the given feeds, on one thread.
void RunGraph(benchmark::State& state, const tensorflow::GraphDef& gd, std::vector<std::pair<std::string, Tensor>> feeds,
              int64_t bytes) {
  SessionOptions o;
  o.intra_op_threads = o.inter_op_threads = static_cast<int>(state.range(1));
  auto s = Session::Create(o, gd);
  if (!s.ok()) {
    state.SkipWithError(s.status().ToString().c_str());
    return;
  }
  std::vector<Tensor> out;
  for (auto _ : state) {
    Status st = (*s)->Run(feeds, {"op"}, {}, &out);
    if (!st.ok()) state.SkipWithError(st.ToString().c_str());
    benchmark::DoNotOptimize(out[0].raw());
    // Release the output, as a consumer would, so the next run reuses its block (the
    // Eigen cases likewise write into one buffer).
    out.clear();
  }
  state.SetBytesProcessed(state.iterations() * bytes);
}

// ---- unary elementwise: y = f(x) on [rows, 1024] -----------------------------------

template <const char* kOp>
void BM_Unary(benchmark::State& state) {
  const int64_t n = state.range(0) * 1024;
  tensorflow::GraphDef gd;
  AddPlaceholder(gd, "x");
  SetType(AddNode(gd, "op", kOp, {"x"}), "T", DType::kFloat);
  RunGraph(state, gd, {{"x", Random(Shape{state.range(0), 1024}, 1)}}, 2 * n * 4);
}

template <typename F>
void EigenUnary(benchmark::State& state, F f) {
  const int64_t n = state.range(0) * 1024;
  Tensor x = Random(Shape{n}, 1), y = Random(Shape{n}, 2);
  Eigen::Map<ArrF> mx(x.data<float>(), n), my(y.data<float>(), n);
  for (auto _ : state) {
    my = f(mx);
    benchmark::DoNotOptimize(y.raw());
  }
  state.SetBytesProcessed(state.iterations() * 2 * n * 4);
}

constexpr char kExp[] = "Exp";
constexpr char kTanh[] = "Tanh";
constexpr char kRelu[] = "Relu";
constexpr char kSigmoid[] = "Sigmoid";
constexpr char kErf[] = "Erf";

void BM_Eigen_Exp(benchmark::State& s) {
  EigenUnary(s, [](const auto& x) { return x.exp(); });
}
void BM_Eigen_Tanh(benchmark::State& s) {
  EigenUnary(s, [](const auto& x) { return x.tanh(); });
}
void BM_Eigen_Relu(benchmark::State& s) {
  EigenUnary(s, [](const auto& x) { return x.max(0.0f); });
}
void BM_Eigen_Sigmoid(benchmark::State& s) {
  EigenUnary(s, [](const auto& x) { return x.logistic(); });
}

// ---- binary elementwise with broadcasting --------------------------------------------

// Same shape: z = x * y on [rows, 1024].
void BM_MulSameShape(benchmark::State& state) {
  tensorflow::GraphDef gd;
  AddPlaceholder(gd, "x");
  AddPlaceholder(gd, "y");
  SetType(AddNode(gd, "op", "Mul", {"x", "y"}), "T", DType::kFloat);
  Shape s{state.range(0), 1024};
  RunGraph(state, gd, {{"x", Random(s, 1)}, {"y", Random(s, 2)}}, 3 * s.num_elements() * 4);
}

void BM_Eigen_MulSameShape(benchmark::State& state) {
  const int64_t n = state.range(0) * 1024;
  Tensor x = Random(Shape{n}, 1), y = Random(Shape{n}, 2), z = Random(Shape{n}, 3);
  Eigen::Map<ArrF> mx(x.data<float>(), n), my(y.data<float>(), n), mz(z.data<float>(), n);
  for (auto _ : state) {
    mz = mx * my;
    benchmark::DoNotOptimize(z.raw());
  }
  state.SetBytesProcessed(state.iterations() * 3 * n * 4);
}

// Row broadcast: z[r, c] = x[r, c] + b[c] (a bias add written as AddV2).
void BM_AddRowBroadcast(benchmark::State& state) {
  tensorflow::GraphDef gd;
  AddPlaceholder(gd, "x");
  AddPlaceholder(gd, "b");
  SetType(AddNode(gd, "op", "AddV2", {"x", "b"}), "T", DType::kFloat);
  Shape s{state.range(0), 1024};
  RunGraph(state, gd, {{"x", Random(s, 1)}, {"b", Random(Shape{1024}, 2)}}, 2 * s.num_elements() * 4);
}

void BM_Eigen_AddRowBroadcast(benchmark::State& state) {
  const int64_t rows = state.range(0);
  Tensor x = Random(Shape{rows, 1024}, 1), b = Random(Shape{1024}, 2), z = Random(Shape{rows, 1024}, 3);
  Eigen::Map<ArrRows> mx(x.data<float>(), rows, 1024), mz(z.data<float>(), rows, 1024);
  Eigen::Map<Eigen::Array<float, 1, Eigen::Dynamic>> mb(b.data<float>(), 1024);
  for (auto _ : state) {
    mz = mx.rowwise() + mb;
    benchmark::DoNotOptimize(z.raw());
  }
  state.SetBytesProcessed(state.iterations() * 2 * rows * 1024 * 4);
}

// Column broadcast: z[r, c] = x[r, c] * s[r] ([rows,1024] * [rows,1]).
void BM_MulColumnBroadcast(benchmark::State& state) {
  tensorflow::GraphDef gd;
  AddPlaceholder(gd, "x");
  AddPlaceholder(gd, "s");
  SetType(AddNode(gd, "op", "Mul", {"x", "s"}), "T", DType::kFloat);
  Shape sh{state.range(0), 1024};
  RunGraph(state, gd, {{"x", Random(sh, 1)}, {"s", Random(Shape{state.range(0), 1}, 2)}}, 2 * sh.num_elements() * 4);
}

void BM_Eigen_MulColumnBroadcast(benchmark::State& state) {
  const int64_t rows = state.range(0);
  Tensor x = Random(Shape{rows, 1024}, 1), sc = Random(Shape{rows}, 2), z = Random(Shape{rows, 1024}, 3);
  Eigen::Map<ArrRows> mx(x.data<float>(), rows, 1024), mz(z.data<float>(), rows, 1024);
  Eigen::Map<Eigen::Array<float, Eigen::Dynamic, 1>> ms(sc.data<float>(), rows);
  for (auto _ : state) {
    mz = mx.colwise() * ms;
    benchmark::DoNotOptimize(z.raw());
  }
  state.SetBytesProcessed(state.iterations() * 2 * rows * 1024 * 4);
}

// ---- reductions ----------------------------------------------------------------------

void BM_SumRows(benchmark::State& state) {  // reduce the last axis of [rows, 1024]
  tensorflow::GraphDef gd;
  AddPlaceholder(gd, "x");
  AddIntConst(gd, "axis", {1});
  SetType(AddNode(gd, "op", "Sum", {"x", "axis"}), "T", DType::kFloat);
  SetType(gd.mutable_node(2), "Tidx", DType::kInt32);
  Shape s{state.range(0), 1024};
  RunGraph(state, gd, {{"x", Random(s, 1)}}, s.num_elements() * 4);
}

void BM_Eigen_SumRows(benchmark::State& state) {
  const int64_t rows = state.range(0);
  Tensor x = Random(Shape{rows, 1024}, 1), z = Random(Shape{rows}, 3);
  Eigen::Map<ArrRows> mx(x.data<float>(), rows, 1024);
  Eigen::Map<ArrF> mz(z.data<float>(), rows);
  for (auto _ : state) {
    mz = mx.rowwise().sum();
    benchmark::DoNotOptimize(z.raw());
  }
  state.SetBytesProcessed(state.iterations() * rows * 1024 * 4);
}

void BM_SumColumns(benchmark::State& state) {  // reduce the first axis of [rows, 1024]
  tensorflow::GraphDef gd;
  AddPlaceholder(gd, "x");
  AddIntConst(gd, "axis", {0});
  SetType(AddNode(gd, "op", "Sum", {"x", "axis"}), "T", DType::kFloat);
  SetType(gd.mutable_node(2), "Tidx", DType::kInt32);
  Shape s{state.range(0), 1024};
  RunGraph(state, gd, {{"x", Random(s, 1)}}, s.num_elements() * 4);
}

void BM_Eigen_SumColumns(benchmark::State& state) {
  const int64_t rows = state.range(0);
  Tensor x = Random(Shape{rows, 1024}, 1), z = Random(Shape{1024}, 3);
  Eigen::Map<ArrRows> mx(x.data<float>(), rows, 1024);
  Eigen::Map<Eigen::Array<float, 1, Eigen::Dynamic>> mz(z.data<float>(), 1024);
  for (auto _ : state) {
    mz = mx.colwise().sum();
    benchmark::DoNotOptimize(z.raw());
  }
  state.SetBytesProcessed(state.iterations() * rows * 1024 * 4);
}

// ---- softmax -------------------------------------------------------------------------

void BM_Softmax(benchmark::State& state) {
  tensorflow::GraphDef gd;
  AddPlaceholder(gd, "x");
  SetType(AddNode(gd, "op", "Softmax", {"x"}), "T", DType::kFloat);
  Shape s{state.range(0), 1024};
  RunGraph(state, gd, {{"x", Random(s, 1)}}, 2 * s.num_elements() * 4);
}

void BM_Eigen_Softmax(benchmark::State& state) {
  const int64_t rows = state.range(0);
  Tensor x = Random(Shape{rows, 1024}, 1), z = Random(Shape{rows, 1024}, 3);
  Eigen::Map<ArrRows> mx(x.data<float>(), rows, 1024), mz(z.data<float>(), rows, 1024);
  for (auto _ : state) {
    // TensorFlow's Eigen formulation: shift by the row max, exp, normalise.
    Eigen::Array<float, Eigen::Dynamic, 1> m = mx.rowwise().maxCoeff();
    mz = (mx.colwise() - m).exp();
    Eigen::Array<float, Eigen::Dynamic, 1> sum = mz.rowwise().sum();
    mz.colwise() /= sum;
    benchmark::DoNotOptimize(z.raw());
  }
  state.SetBytesProcessed(state.iterations() * 2 * rows * 1024 * 4);
}

// ---- data movement -------------------------------------------------------------------

void BM_Transpose2D(benchmark::State& state) {
  tensorflow::GraphDef gd;
  AddPlaceholder(gd, "x");
  AddIntConst(gd, "perm", {1, 0});
  auto* n = AddNode(gd, "op", "Transpose", {"x", "perm"});
  SetType(n, "T", DType::kFloat);
  SetType(n, "Tperm", DType::kInt32);
  Shape s{state.range(0), 1024};
  RunGraph(state, gd, {{"x", Random(s, 1)}}, 2 * s.num_elements() * 4);
}

void BM_Eigen_Transpose2D(benchmark::State& state) {
  const int64_t rows = state.range(0);
  Tensor x = Random(Shape{rows, 1024}, 1), z = Random(Shape{1024, rows}, 3);
  Eigen::Map<MatF> mx(x.data<float>(), rows, 1024), mz(z.data<float>(), 1024, rows);
  for (auto _ : state) {
    mz = mx.transpose();
    benchmark::DoNotOptimize(z.raw());
  }
  state.SetBytesProcessed(state.iterations() * 2 * rows * 1024 * 4);
}

// ---- GEMM ----------------------------------------------------------------------------

void BM_MatMul(benchmark::State& state) {  // [m, 512] x [512, 512]
  tensorflow::GraphDef gd;
  AddPlaceholder(gd, "a");
  AddPlaceholder(gd, "b");
  SetType(AddNode(gd, "op", "MatMul", {"a", "b"}), "T", DType::kFloat);
  const int64_t m = state.range(0);
  RunGraph(state, gd, {{"a", Random(Shape{m, 512}, 1)}, {"b", Random(Shape{512, 512}, 2)}}, 0);
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * m * 512 * 512, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

void BM_Eigen_MatMul(benchmark::State& state) {
  const int64_t m = state.range(0);
  Tensor a = Random(Shape{m, 512}, 1), b = Random(Shape{512, 512}, 2), c = Random(Shape{m, 512}, 3);
  Eigen::Map<MatF> ma(a.data<float>(), m, 512), mb(b.data<float>(), 512, 512), mc(c.data<float>(), m, 512);
  for (auto _ : state) {
    mc.noalias() = ma * mb;
    benchmark::DoNotOptimize(c.raw());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * m * 512 * 512, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

// Args: {rows, threads}; Eigen baselines are single-threaded.
void Rows(benchmark::internal::Benchmark* b) { b->Args({256, 1})->Args({256, 2})->Args({4096, 1}); }
void EigenRows(benchmark::internal::Benchmark* b) { b->Args({256, 1})->Args({4096, 1}); }

BENCHMARK(BM_Unary<kExp>)->Apply(Rows);
BENCHMARK(BM_Eigen_Exp)->Apply(EigenRows);
BENCHMARK(BM_Unary<kTanh>)->Apply(Rows);
BENCHMARK(BM_Eigen_Tanh)->Apply(EigenRows);
BENCHMARK(BM_Unary<kSigmoid>)->Apply(Rows);
BENCHMARK(BM_Eigen_Sigmoid)->Apply(EigenRows);
BENCHMARK(BM_Unary<kRelu>)->Apply(Rows);
BENCHMARK(BM_Eigen_Relu)->Apply(EigenRows);
BENCHMARK(BM_Unary<kErf>)->Apply(Rows);
BENCHMARK(BM_MulSameShape)->Apply(Rows);
BENCHMARK(BM_Eigen_MulSameShape)->Apply(EigenRows);
BENCHMARK(BM_AddRowBroadcast)->Apply(Rows);
BENCHMARK(BM_Eigen_AddRowBroadcast)->Apply(EigenRows);
BENCHMARK(BM_MulColumnBroadcast)->Apply(Rows);
BENCHMARK(BM_Eigen_MulColumnBroadcast)->Apply(EigenRows);
BENCHMARK(BM_SumRows)->Apply(Rows);
BENCHMARK(BM_Eigen_SumRows)->Apply(EigenRows);
BENCHMARK(BM_SumColumns)->Apply(Rows);
BENCHMARK(BM_Eigen_SumColumns)->Apply(EigenRows);
BENCHMARK(BM_Softmax)->Apply(Rows);
BENCHMARK(BM_Eigen_Softmax)->Apply(EigenRows);
BENCHMARK(BM_Transpose2D)->Apply(Rows);
BENCHMARK(BM_Eigen_Transpose2D)->Apply(EigenRows);
BENCHMARK(BM_MatMul)->Args({256, 1})->Args({256, 2});
BENCHMARK(BM_Eigen_MatMul)->Args({256, 1});

}  // namespace
}  // namespace graphjit

int main(int argc, char** argv) { return graphjit::bench::Main(argc, argv); }
