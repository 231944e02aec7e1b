#include "jit/loop_emitter.h"

#include <map>

#include "ir/attr.h"
#include "jit/elemental.h"

namespace graphjit {

namespace {

// The memref element type a tensor of `dtype` is stored as.
std::string StorageType(DType dtype) {
  switch (dtype) {
    case DType::kFloat: return "f32";
    case DType::kHalf: return "f16";
    case DType::kBFloat16: return "bf16";
    case DType::kBool: return "i8";
    default: return "";
  }
}

std::string MemRefType(const Shape& shape, DType dtype) {
  std::string t = "memref<";
  for (int64_t d : shape.dims()) t += std::to_string(d) + "x";
  return t + StorageType(dtype) + ">";
}

// The indexing map of a tensor of shape `s` broadcast into the iteration space `out`:
// trailing dims align; a dim of size 1 against a larger one reads index 0.
std::string IndexingMap(const Shape& s, const Shape& out) {
  std::string dims, results;
  for (int i = 0; i < out.rank(); ++i) dims += (i ? ", d" : "d") + std::to_string(i);
  const int offset = out.rank() - s.rank();
  for (int k = 0; k < s.rank(); ++k) {
    const int d = offset + k;
    results += k ? ", " : "";
    results += (s.dim(k) == 1 && out.dim(d) != 1) ? "0" : "d" + std::to_string(d);
  }
  return "affine_map<(" + dims + ") -> (" + results + ")>";
}

// Converts a loaded element to the type it is computed in.
std::string Widen(const std::string& v, DType dtype, MlirWriter& w) {
  if (dtype == DType::kHalf) return w.Let("arith.extf " + v + " : f16 to f32");
  if (dtype == DType::kBFloat16) return w.Let("arith.extf " + v + " : bf16 to f32");
  if (dtype == DType::kBool) return w.Let("arith.trunci " + v + " : i8 to i1");
  return v;
}

std::string Narrow(const std::string& v, DType dtype, MlirWriter& w) {
  if (dtype == DType::kHalf) return w.Let("arith.truncf " + v + " : f32 to f16");
  if (dtype == DType::kBFloat16) return w.Let("arith.truncf " + v + " : f32 to bf16");
  if (dtype == DType::kBool) return w.Let("arith.extui " + v + " : i1 to i8");
  return v;
}

std::string Join(const std::vector<std::string>& items) {
  std::string joined;
  for (const std::string& item : items) joined += (joined.empty() ? "" : ", ") + item;
  return joined;
}

std::string ScalarConstant(const Tensor& t, MlirWriter& w) {
  char buf[80];
  if (t.dtype() == DType::kBool) return w.Let(t.ValueAsInt(0) ? "arith.constant true" : "arith.constant false");
  std::snprintf(buf, sizeof buf, "arith.constant %.9e : f32", t.ValueAsDouble(0));
  return w.Let(buf);
}

}  // namespace

StatusOr<LoopFusion> EmitLoopFusion(const AnalyzedGraph& body, const std::vector<TensorId>& args,
                                    const std::vector<TensorId>& outputs) {
  LoopFusion fusion;
  if (outputs.empty()) return Unimplemented("a cluster without outputs");
  // 1. The iteration space: every output has the same shape.
  const Shape& space = StaticShape(body, outputs[0]);
  for (const TensorId& t : outputs) {
    const Shape& s = body.info(t.node).shapes[t.index];
    if (!s.IsFullyDefined())
      return Unimplemented("output shape " + s.ToString() +
                           " is not known from the input shapes alone (value-dependent shapes are not specialized yet)");
    if (s != space) return Unimplemented("outputs of different shapes (" + space.ToString() + ", " + s.ToString() + ")");
    const DType dtype = body.info(t.node).dtypes[t.index];
    if (StorageType(dtype).empty()) return Unimplemented("an output of type " + DTypeName(dtype));
    fusion.output_shapes.push_back(s);
    fusion.output_dtypes.push_back(dtype);
  }
  // 2. Buffers: the inputs, then the non-scalar constants; each broadcast into the space.
  std::vector<std::string> buffer_types, maps;
  std::map<int, int> buffer_of;  // node id -> buffer index (args and constants)
  auto add_buffer = [&](int node, const Shape& s, DType dtype) -> Status {
    if (StorageType(dtype).empty()) return Unimplemented("an input of type " + DTypeName(dtype));
    if (!s.IsFullyDefined() || s.rank() > space.rank()) return Unimplemented("an input that does not broadcast");
    auto b = BroadcastShapes(s, space);
    if (!b.ok() || *b != space) return Unimplemented("an input of shape " + s.ToString() + " into " + space.ToString());
    buffer_of[node] = static_cast<int>(buffer_types.size());
    buffer_types.push_back(MemRefType(s, dtype));
    maps.push_back(IndexingMap(s, space));
    return Status::Ok();
  };
  for (const TensorId& a : args) GJ_RETURN_IF_ERROR(add_buffer(a.node, StaticShape(body, a), StaticDType(body, a)));
  for (int id : body.topo_order) {
    const Node& n = *body.graph.node(id);
    if (n.op == "Const" && body.constants[id].num_elements() != 1) {
      GJ_RETURN_IF_ERROR(add_buffer(id, body.constants[id].shape(), body.constants[id].dtype()));
      fusion.constants.push_back(body.constants[id]);
    }
  }
  const int num_inputs = static_cast<int>(buffer_types.size());

  // 3. The region: block arguments, then each op at the current element.
  MlirWriter w;
  std::map<int, std::string> value;  // node id -> SSA value (output 0)
  std::map<int, std::string> type;
  std::vector<std::string> in_types(num_inputs);
  for (const auto& [node, index] : buffer_of) {
    const Node& n = *body.graph.node(node);
    const DType dtype = n.op == "Const" ? body.constants[node].dtype() : StaticDType(body, {node, 0});
    in_types[index] = StorageType(dtype);
    value[node] = Widen("%in" + std::to_string(index), dtype, w);
    type[node] = ElementType(dtype);
  }
  for (int id : body.topo_order) {
    const Node& n = *body.graph.node(id);
    if (value.count(id)) continue;
    if (n.op == "Const") {
      value[id] = ScalarConstant(body.constants[id], w);
      type[id] = ElementType(body.constants[id].dtype());
      continue;
    }
    if (n.op == "Placeholder") return Unimplemented("a body placeholder that is not an argument");
    if (!IsElementalOp(n.op)) return Unimplemented(n.op + " is not an elementwise op");
    if (body.info(id).dtypes.size() != 1) return Unimplemented(NodeLabel(n) + " has several outputs");
    const DType out = body.info(id).dtypes[0];
    if (ElementType(out).empty()) return Unimplemented(NodeLabel(n) + " computes " + DTypeName(out));
    std::vector<std::string> operands, operand_types;
    for (const TensorId& in : n.inputs) {
      if (in.index != 0 || !value.count(in.node)) return Unimplemented(NodeLabel(n) + " reads a non-element value");
      operands.push_back(value[in.node]);
      operand_types.push_back(type[in.node]);
    }
    GJ_ASSIGN_OR_RETURN(value[id], EmitElemental(n, operands, operand_types, w));
    type[id] = ElementType(out);
    ++fusion.num_ops;
  }
  std::vector<std::string> yields;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].index != 0) return Unimplemented("a second output of a body op");
    yields.push_back(Narrow(value[outputs[i].node], fusion.output_dtypes[i], w));
  }

  // 4. The module: lists of names and types, one entry per buffer.
  std::vector<std::string> params, ins, in_memrefs, outs, out_memrefs, block_args, out_types;
  for (int i = 0; i < num_inputs; ++i) {
    ins.push_back("%b" + std::to_string(i));
    in_memrefs.push_back(buffer_types[i]);
    params.push_back(ins.back() + ": " + buffer_types[i]);
    block_args.push_back("%in" + std::to_string(i) + ": " + in_types[i]);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    outs.push_back("%o" + std::to_string(i));
    out_memrefs.push_back(MemRefType(space, fusion.output_dtypes[i]));
    params.push_back(outs.back() + ": " + out_memrefs.back());
    out_types.push_back(StorageType(fusion.output_dtypes[i]));
    block_args.push_back("%out" + std::to_string(i) + ": " + out_types.back());
    maps.push_back(IndexingMap(space, space));
  }
  const std::vector<std::string> iterators(space.rank(), "\"parallel\"");
  std::string m = "func.func @kernel(" + Join(params) + ") {\n";
  m += "  linalg.generic {indexing_maps = [" + Join(maps) + "], iterator_types = [" + Join(iterators) + "]}\n";
  if (num_inputs) m += "      ins(" + Join(ins) + " : " + Join(in_memrefs) + ")\n";
  m += "      outs(" + Join(outs) + " : " + Join(out_memrefs) + ") {\n";
  m += "  ^bb0(" + Join(block_args) + "):\n";
  m += w.code();
  m += "    linalg.yield " + Join(yields) + " : " + Join(out_types) + "\n";
  m += "  }\n  return\n}\n";
  fusion.mlir = m;
  return fusion;
}

}  // namespace graphjit
