// MatMul and BatchMatMulV2. f32 goes through oneDNN's sgemm (fastest of oneDNN,
// OpenBLAS and Eigen on this machine: see bench/) unless it is small; f16/bf16 are
// widened to f32; small f32 and f64 use Eigen's GEMM, integers a plain loop.

#include <dnnl.h>

#include <atomic>
#include <mutex>

#include <Eigen/Dense>

#include "runtime/kernels/common.h"
#include "runtime/kernels/fused.h"

namespace graphjit {
namespace {

template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// GEMMs up to this many multiply-adds (with their epilogue, for _FusedMatMul) go to
// Eigen rather than oneDNN: oneDNN's per-call set-up (argument checks, OpenMP, kernel
// choice) costs more than the arithmetic. These are the attention heads and
// projections of small transformers.
constexpr int64_t kSmallGemm = 32 * 1024;

// C[m,n] = op(A) op(B), with A stored [m,k] (or [k,m] if ta) and B [k,n] (or [n,k] if tb).
template <typename T>
Status Gemm(const KernelContext& ctx, int threads, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, const T* b,
            T* c) {
  if (m == 0 || n == 0) return Status::Ok();
  if (k == 0) {
    std::fill(c, c + m * n, T(0));
    return Status::Ok();
  }
  if constexpr (std::is_same_v<T, float>) {
    if (m * n * k > kSmallGemm) {
      // Blocks of C's rows (or columns, when it has few rows) on the intra-op threads
      // (see OneDnnParallelFor).
      const bool by_rows = m >= n || threads == 1;
      const int64_t lda = ta ? m : k, ldb = tb ? k : n;
      std::atomic<dnnl_status_t> failed{dnnl_success};
      auto block = [&](int64_t begin, int64_t end) {
        const int64_t rows = by_rows ? end - begin : m, cols = by_rows ? n : end - begin;
        const float* ab = by_rows ? a + begin * (ta ? 1 : k) : a;
        const float* bb = by_rows ? b : b + begin * (tb ? k : 1);
        float* cb = c + (by_rows ? begin * n : begin);
        dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', rows, cols, k, 1.0f, ab, lda, bb, ldb, 0.0f, cb, n);
        if (st != dnnl_success) failed = st;
      };
      // One block, on this thread, when it is one of several GEMMs run in parallel.
      if (threads == 1)
        OneDnnParallelFor(ctx, 1, 1, [&](int64_t, int64_t) { block(0, m); });
      else
        OneDnnParallelFor(ctx, by_rows ? m : n, (by_rows ? n : m) * k, block);
      if (failed != dnnl_success) return ctx.Error("oneDNN sgemm failed with status " + std::to_string(failed));
      return Status::Ok();
    }
  } else if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
    std::vector<float> fa(a, a + m * k), fb(b, b + k * n), fc(m * n);
    for (int64_t i = 0; i < m * k; ++i) fa[i] = static_cast<float>(a[i]);
    for (int64_t i = 0; i < k * n; ++i) fb[i] = static_cast<float>(b[i]);
    GJ_RETURN_IF_ERROR(Gemm<float>(ctx, threads, ta, tb, m, n, k, fa.data(), fb.data(), fc.data()));
    for (int64_t i = 0; i < m * n; ++i) c[i] = static_cast<T>(fc[i]);
    return Status::Ok();
  } else if constexpr (std::is_integral_v<T>) {
    // Integers (shape and index arithmetic, small): a plain loop over C's rows, in an
    // unsigned type of at least 32 bits, so products and sums wrap as TensorFlow's do.
    using W = std::conditional_t<(sizeof(T) <= 4), uint32_t, uint64_t>;
    std::vector<W> row(n);
    for (int64_t i = 0; i < m; ++i) {
      std::fill(row.begin(), row.end(), W(0));
      for (int64_t p = 0; p < k; ++p) {
        const W x = static_cast<W>(a[ta ? p * m + i : i * k + p]);
        for (int64_t j = 0; j < n; ++j) row[j] += x * static_cast<W>(b[tb ? j * k + p : p * n + j]);
      }
      for (int64_t j = 0; j < n; ++j) c[i * n + j] = static_cast<T>(row[j]);
    }
    return Status::Ok();
  }
  Eigen::Map<const RowMat<T>> A(a, ta ? k : m, ta ? m : k), B(b, tb ? n : k, tb ? k : n);
  Eigen::Map<RowMat<T>> C(c, m, n);
  if (ta && tb)
    C.noalias() = A.transpose() * B.transpose();
  else if (ta)
    C.noalias() = A.transpose() * B;
  else if (tb)
    C.noalias() = A * B.transpose();
  else
    C.noalias() = A * B;
  return Status::Ok();
}

constexpr TypeSet kGemmTypes = TypeSet::kNumeric;

// Shared by MatMul (rank 2) and BatchMatMulV2 (rank >= 2, batch dims broadcast).
Status InferMatMul(InferenceContext& c, bool batch, const char* ta_attr, const char* tb_attr) {
  GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0, 1}));
  GJ_RETURN_IF_ERROR(CheckTypeSet(c, t, kGemmTypes));
  if (t == DType::kUInt8 || t == DType::kInt8 || t == DType::kInt16)
    return c.TypeError("matrix multiplication of " + DTypeName(t) + " is not supported");
  GJ_ASSIGN_OR_RETURN(bool ta, GetBoolAttrOr(c.node, ta_attr, false));
  GJ_ASSIGN_OR_RETURN(bool tb, GetBoolAttrOr(c.node, tb_attr, false));
  const Shape& a = c.shape(0);
  const Shape& b = c.shape(1);
  if (a.unknown_rank() || b.unknown_rank()) {
    c.AddOutput(t, batch ? Shape::UnknownRank() : Shape{-1, -1});
    return Status::Ok();
  }
  if (batch ? (a.rank() < 2 || b.rank() < 2) : (a.rank() != 2 || b.rank() != 2))
    return c.ShapeError(std::string("inputs must be ") + (batch ? "of rank >= 2" : "matrices") + ", got " + a.ToString() +
                        " and " + b.ToString());
  int64_t m = a.dim(a.rank() - (ta ? 1 : 2)), ka = a.dim(a.rank() - (ta ? 2 : 1));
  int64_t kb = b.dim(b.rank() - (tb ? 1 : 2)), n = b.dim(b.rank() - (tb ? 2 : 1));
  if (ka >= 0 && kb >= 0 && ka != kb)
    return c.ShapeError("inner dimensions do not match: " + a.ToString() + (ta ? "^T" : "") + " x " + b.ToString() +
                        (tb ? "^T" : ""));
  std::vector<int64_t> dims;
  if (batch) {
    Shape ab(std::vector<int64_t>(a.dims().begin(), a.dims().end() - 2));
    Shape bb(std::vector<int64_t>(b.dims().begin(), b.dims().end() - 2));
    auto batch_shape = BroadcastShapes(ab, bb);
    if (!batch_shape.ok()) return c.ShapeError("batch dimensions: " + batch_shape.status().message());
    dims = batch_shape->dims();
  }
  dims.push_back(m);
  dims.push_back(n);
  c.AddOutput(t, Shape(dims));
  return Status::Ok();
}

OpDef MatMulOp() {
  OpDef def;
  def.name = "MatMul";
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](InferenceContext& c) { return InferMatMul(c, false, "transpose_a", "transpose_b"); };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    bool ta = GetBoolAttrOr(ctx.node, "transpose_a", false).value();
    bool tb = GetBoolAttrOr(ctx.node, "transpose_b", false).value();
    const Tensor& a = ctx.input(0);
    int64_t m = out->shape().dim(0), n = out->shape().dim(1), k = a.shape().dim(ta ? 0 : 1);
    return VisitTypes<kGemmTypes>(a.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      int threads = ctx.intra_op ? ctx.intra_op->num_threads() : 1;
      return Gemm<T>(ctx, threads, ta, tb, m, n, k, a.data<T>(), ctx.input(1).data<T>(), out->data<T>());
    });
  };
  return def;
}

OpDef BatchMatMulV2Op() {
  OpDef def;
  def.name = "BatchMatMulV2";
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](InferenceContext& c) { return InferMatMul(c, true, "adj_x", "adj_y"); };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    bool ta = GetBoolAttrOr(ctx.node, "adj_x", false).value();
    bool tb = GetBoolAttrOr(ctx.node, "adj_y", false).value();
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const int ra = a.shape().rank(), ro = out->shape().rank();
    const int64_t m = out->shape().dim(ro - 2), n = out->shape().dim(ro - 1), k = a.shape().dim(ra - (ta ? 2 : 1));
    // Batch index -> offsets of A and B (broadcast over the batch dims).
    std::vector<int64_t> batch_dims(out->shape().dims().begin(), out->shape().dims().end() - 2);
    int64_t batches = 1;
    for (int64_t d : batch_dims) batches *= d;
    auto batch_offset = [&](const Shape& s, int64_t idx) {
      int r = s.rank() - 2;
      int64_t off = 0, stride = 1;
      for (int i = static_cast<int>(batch_dims.size()) - 1, j = r - 1; i >= 0; --i, --j) {
        int64_t coord = idx % batch_dims[i];
        idx /= batch_dims[i];
        if (j >= 0) {
          if (s.dim(j) != 1) off += coord * stride;
          stride *= s.dim(j);
        }
      }
      return off;
    };
    return VisitTypes<kGemmTypes>(a.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      Status status;
      std::mutex mu;
      const bool parallel_batches = batches > 1;
      const int threads = parallel_batches || !ctx.intra_op ? 1 : ctx.intra_op->num_threads();
      ctx.ParallelFor(batches, m * n * k, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          Status s = Gemm<T>(ctx, threads, ta, tb, m, n, k, a.data<T>() + batch_offset(a.shape(), i) * m * k,
                             b.data<T>() + batch_offset(b.shape(), i) * k * n, out->data<T>() + i * m * n);
          if (!s.ok()) {
            std::lock_guard<std::mutex> lock(mu);
            status = s;
          }
        }
      });
      return status;
    });
  };
  return def;
}

// A oneDNN matmul with the bias and activation as post-ops (primitives built once per
// geometry): the epilogue runs on each tile while it is in cache.
Status OneDnnFusedMatMul(const KernelContext& ctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k, Activation act,
                         const Tensor& a, const Tensor& b, const Tensor& bias, Tensor* out) {
  using dnnl::memory;
  static auto* primitives = new OneDnnPrimitives<dnnl::matmul>();
  const dnnl::engine& engine = OneDnnEngine();
  const auto f32 = memory::data_type::f32;
  const memory::desc b_md({k, n}, f32, tb ? memory::format_tag::ba : memory::format_tag::ab);
  const memory::desc bias_md({1, n}, f32, memory::format_tag::ab);
  // Blocks of rows on the intra-op threads (see OneDnnParallelFor); A's rows are strided
  // views when A is stored transposed.
  auto block = [&](int64_t begin, int64_t end) {
    const int64_t rows = end - begin;
    const memory::desc a_md({rows, k}, f32, ta ? memory::dims{1, m} : memory::dims{k, 1});
    const memory::desc c_md({rows, n}, f32, memory::format_tag::ab);
    const std::string key = std::to_string(rows) + "," + std::to_string(m) + "," + std::to_string(n) + "," + std::to_string(k) +
                            "," + std::to_string(ta) + std::to_string(tb) + std::to_string(static_cast<int>(act));
    const auto& e = primitives->Get(key, [&] {
      return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, bias_md, c_md), OneDnnAttr({false, act}), engine);
    });
    dnnl::stream stream(engine);
    memory scratchpad(e.pd.scratchpad_desc(), engine);  // this call's own: runs may overlap
    const float* a_rows = a.data<float>() + begin * (ta ? 1 : k);
    e.primitive.execute(stream, {{DNNL_ARG_SRC, memory(a_md, engine, const_cast<float*>(a_rows))},
                                 {DNNL_ARG_WEIGHTS, memory(b_md, engine, b.raw())},
                                 {DNNL_ARG_BIAS, memory(bias_md, engine, bias.raw())},
                                 {DNNL_ARG_DST, memory(c_md, engine, out->data<float>() + begin * n)},
                                 {DNNL_ARG_SCRATCHPAD, scratchpad}});
    stream.wait();
  };
  const std::string error = OneDnnParallelFor(ctx, m, n * k, block);
  if (!error.empty()) return Internal(NodeLabel(ctx.node) + ": oneDNN matmul failed: " + error);
  return Status::Ok();
}

// TensorFlow's remapper output: MatMul + BiasAdd (+ activation) as one op.
OpDef FusedMatMulOp() {
  OpDef def;
  def.name = "_FusedMatMul";
  def.min_inputs = def.max_inputs = 3;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, c.TypeAttrMatching("T", {0, 1, 2}));
    GJ_RETURN_IF_ERROR(CheckTypeSet(c, t, TypeSet::kFloat));
    GJ_RETURN_IF_ERROR(InferMatMul(c, false, "transpose_a", "transpose_b"));
    return InferFusedEpilogue(c, 2, c.output_shapes[0].dim(1), /*residual_allowed=*/false).status();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    GJ_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0));
    GJ_ASSIGN_OR_RETURN(Epilogue epilogue, ReadEpilogue(ctx.node, /*residual_allowed=*/false));
    const Activation act = epilogue.act;
    bool ta = GetBoolAttrOr(ctx.node, "transpose_a", false).value();
    bool tb = GetBoolAttrOr(ctx.node, "transpose_b", false).value();
    const Tensor& a = ctx.input(0);
    const int64_t m = out->shape().dim(0), n = out->shape().dim(1), k = a.shape().dim(ta ? 0 : 1);
    if (out->num_elements() == 0) return Status::Ok();
    if (a.dtype() == DType::kFloat && k > 0 && m * n * k > kSmallGemm)
      return OneDnnFusedMatMul(ctx, ta, tb, m, n, k, act, a, ctx.input(1), ctx.input(2), out);
    GJ_RETURN_IF_ERROR(VisitTypes<TypeSet::kFloat>(a.dtype(), [&](auto tag) -> Status {
      using T = decltype(tag);
      int threads = ctx.intra_op ? ctx.intra_op->num_threads() : 1;
      return Gemm<T>(ctx, threads, ta, tb, m, n, k, a.data<T>(), ctx.input(1).data<T>(), out->data<T>());
    }));
    return ApplyEpilogue(ctx, ctx.input(2), nullptr, act, out);
  };
  return def;
}

const bool kRegistered = RegisterOps({MatMulOp(), BatchMatMulV2Op(), FusedMatMulOp()});

}  // namespace

StatusOr<Tensor> BatchMatMul3(const KernelContext& ctx, const Tensor& a, const Tensor& b) {
  const int64_t batch = a.shape().dim(0), m = a.shape().dim(1), k = a.shape().dim(2), n = b.shape().dim(2);
  GJ_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(a.dtype(), Shape{batch, m, n}, ctx.allocator));
  GJ_RETURN_IF_ERROR(VisitTypes<TypeSet::kFloat>(a.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    const int threads = batch > 1 || !ctx.intra_op ? 1 : ctx.intra_op->num_threads();
    for (int64_t i = 0; i < batch; ++i)
      GJ_RETURN_IF_ERROR(Gemm<T>(ctx, threads, false, false, m, n, k, a.data<T>() + i * m * k, b.data<T>() + i * k * n,
                                 out.data<T>() + i * m * n));
    return Status::Ok();
  }));
  return out;
}
}  // namespace graphjit
