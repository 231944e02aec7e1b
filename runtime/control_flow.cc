#include "runtime/control_flow.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "ir/attr.h"
#include "ir/graphdef.h"
#include "runtime/const_node.h"
#include "runtime/tensor.h"

namespace graphjit {

namespace {

bool IsListOp(const std::string& op) { return op.rfind("TensorList", 0) == 0; }

// The value of a Const node's output, or nothing.
std::optional<Tensor> ConstOf(const Graph& graph, TensorId t) {
  const Node* n = graph.node(t.node);
  const tensorflow::AttrValue* v = n->FindAttr("value");
  if (n->op != "Const" || t.index != 0 || v == nullptr) return std::nullopt;
  auto tensor = TensorFromProto(v->tensor());
  if (!tensor.ok()) return std::nullopt;
  return std::move(tensor).value();
}

void SetType(Node* n, const std::string& attr, DType t) { n->attrs[attr].set_type(static_cast<tensorflow::DataType>(t)); }

}  // namespace

// ---- TensorLists as dense tensors ----------------------------------------------------

StatusOr<bool> LowerTensorLists(Graph* graph) {
  static const std::map<std::string, size_t> kInputs = {{"TensorListReserve", 2},
                                                        {"TensorListFromTensor", 2},
                                                        {"TensorListStack", 2},
                                                        {"TensorListGetItem", 3},
                                                        {"TensorListSetItem", 3}};
  std::map<int, DType> list_dtype;  // node id -> element dtype of the list it makes
  for (int id = 0; id < graph->num_nodes(); ++id) {
    Node* n = graph->node(id);
    auto arity = kInputs.find(n->op);
    if (arity == kInputs.end() || n->inputs.size() != arity->second) continue;  // left for the analysis
    auto element = GetTypeAttr(*n, "element_dtype");
    if (!element.ok()) return element.status().WithContext(NodeLabel(*n));
    const AttrMap internal = InternalAttrs(*n);
    if (n->op == "TensorListReserve") {
      // A list of `num_elements` zero tensors of shape `element_shape`.
      auto shape = ConstOf(*graph, n->inputs[0]);
      auto count = ConstOf(*graph, n->inputs[1]);
      if (!shape || !count || count->num_elements() != 1 || shape->shape().rank() != 1) continue;
      std::vector<int64_t> dims = {count->ValueAsInt(0)};
      for (int64_t i = 0; i < shape->num_elements(); ++i) dims.push_back(shape->ValueAsInt(i));
      if (std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d < 0; })) continue;
      auto checked = CheckedNumElements(dims);
      if (!checked.ok()) return checked.status().WithContext(NodeLabel(*n));
      GJ_ASSIGN_OR_RETURN(Tensor zeros, Tensor::Allocate(*element, Shape(dims)));
      std::memset(zeros.raw(), 0, zeros.bytes());
      ReplaceWithConst(*graph, id, zeros);
    } else if (n->op == "TensorListFromTensor" || n->op == "TensorListStack") {
      n->op = "Identity";
      n->inputs.resize(1);
      n->attrs = internal;
      SetType(n, "T", *element);
    } else if (n->op == "TensorListGetItem") {
      const TensorId axis{AddConst(*graph, n->name + "/axis", Tensor::Scalar(int32_t{0}), n->device)->id, 0};
      n = graph->node(id);
      n->op = "GatherV2";
      n->inputs = {n->inputs[0], n->inputs[1], axis};
      n->attrs = internal;
      SetType(n, "Tparams", *element);
      SetType(n, "Tindices", DType::kInt32);
      SetType(n, "Taxis", DType::kInt32);
    } else if (n->op == "TensorListSetItem") {
      n->op = "_GraphjitSetRow";
      n->attrs = internal;
      SetType(n, "T", *element);
    } else {
      continue;
    }
    list_dtype[id] = *element;
  }
  // The loop ops and Identities that pass a former list on: their T is the element type.
  for (bool changed = true; changed;) {
    changed = false;
    for (int id = 0; id < graph->num_nodes(); ++id) {
      Node* n = graph->node(id);
      const tensorflow::AttrValue* t = n->FindAttr("T");
      if (t == nullptr || t->type() != tensorflow::DT_VARIANT) continue;
      for (const TensorId& in : n->inputs) {
        auto known = list_dtype.find(in.node);
        if (known == list_dtype.end()) continue;
        SetType(n, "T", known->second);
        list_dtype[id] = known->second;
        changed = true;
        break;
      }
    }
  }
  return !list_dtype.empty();
}

namespace {

// ---- while loops -----------------------------------------------------------------------

// One while loop: a frame's nodes, as TensorFlow's lowering writes them.
struct Loop {
  std::string frame;
  std::vector<int> enters, merges, switches, next_iterations, exits;  // per variable (exit -1: none)
  std::vector<int> invariants;                                        // Enters with is_constant
  int loop_cond = -1;
};

// Finds each frame's loop structure; a frame that is not a loop of the expected form is
// skipped (its ops stay, for the analysis to reject).
std::vector<Loop> FindLoops(const Graph& graph, const std::vector<std::vector<OutEdge>>& out) {
  std::map<std::string, Loop> frames;
  for (int id = 0; id < graph.num_nodes(); ++id) {
    const Node* n = graph.node(id);
    if (n->op != "Enter" || n->inputs.size() != 1) continue;
    auto frame = GetStringAttr(*n, "frame_name");
    if (!frame.ok()) continue;
    Loop& loop = frames[*frame];
    loop.frame = *frame;
    if (GetBoolAttrOr(*n, "is_constant", false).value_or(false))
      loop.invariants.push_back(id);
    else
      loop.enters.push_back(id);
  }
  std::vector<Loop> loops;
  for (auto& [name, loop] : frames) {
    bool ok = !loop.enters.empty();
    for (int enter : loop.enters) {
      int merge = -1, sw = -1, next = -1, exit = -1;
      for (const OutEdge& e : out[enter])
        if (e.dst_input >= 0 && graph.node(e.dst)->op == "Merge") merge = e.dst;
      if (merge < 0 || graph.node(merge)->inputs.size() != 2) {
        ok = false;
        break;
      }
      for (const TensorId& in : graph.node(merge)->inputs)
        if (graph.node(in.node)->op == "NextIteration") next = in.node;
      for (const OutEdge& e : out[merge])
        if (e.dst_input == 0 && graph.node(e.dst)->op == "Switch" && graph.node(e.dst)->inputs.size() == 2) sw = e.dst;
      if (next < 0 || sw < 0 || graph.node(next)->inputs.size() != 1) {
        ok = false;
        break;
      }
      for (const OutEdge& e : out[sw])
        if (e.src_output == 0 && e.dst_input >= 0 && graph.node(e.dst)->op == "Exit") exit = e.dst;
      const int cond = graph.node(sw)->inputs[1].node;
      if (graph.node(cond)->op != "LoopCond" || graph.node(cond)->inputs.size() != 1 ||
          (loop.loop_cond >= 0 && loop.loop_cond != cond)) {
        ok = false;
        break;
      }
      loop.loop_cond = cond;
      loop.merges.push_back(merge);
      loop.switches.push_back(sw);
      loop.next_iterations.push_back(next);
      loop.exits.push_back(exit);
    }
    if (ok) loops.push_back(loop);
  }
  return loops;
}

// A loop's cond or body, or a conditional's branch, as a graph of its own: the nodes that
// `outputs` need, back to the boundary tensors (each becomes the placeholder _arg_i) and
// the nodes `outside`; control edges to those are dropped. Fails on a path that leaves
// the frame another way.
StatusOr<tensorflow::GraphDef> Extract(const Graph& graph, const std::map<std::pair<int, int>, int>& boundary,
                                       const std::function<bool(int)>& outside, const std::vector<DType>& arg_types,
                                       const std::vector<TensorId>& outputs, std::vector<std::string>* output_names,
                                       std::set<int>* members) {
  std::vector<int> order, stack;
  std::set<int> seen;
  auto visit = [&](int id) {
    if (!outside(id) && seen.insert(id).second) stack.push_back(id);
  };
  for (const TensorId& t : outputs) {
    if (!boundary.count({t.node, t.index})) visit(t.node);
  }
  while (!stack.empty()) {
    const int id = stack.back();
    stack.pop_back();
    order.push_back(id);
    const Node* n = graph.node(id);
    static const std::set<std::string> kLoopOps = {"Enter", "Exit", "Merge", "Switch", "NextIteration", "LoopCond"};
    if (kLoopOps.count(n->op))
      return Unimplemented("while loop: " + NodeLabel(*n) +
                           " inside a loop's cond or body, of a loop or conditional "
                           "graphjit does not read");
    for (const TensorId& in : n->inputs)
      if (!boundary.count({in.node, in.index})) visit(in.node);
    for (int c : n->control_inputs) visit(c);
  }
  std::sort(order.begin(), order.end());
  Graph sub;
  std::map<std::pair<int, int>, TensorId> renamed;  // outer tensor -> sub tensor
  for (size_t i = 0; i < arg_types.size(); ++i) {
    Node* arg = sub.AddNode("_arg_" + std::to_string(i), "Placeholder");
    SetType(arg, "dtype", arg_types[i]);
  }
  for (const auto& [tensor, arg] : boundary) renamed[tensor] = {arg, 0};
  std::map<int, int> new_id;
  for (int id : order) {
    const Node* n = graph.node(id);
    Node* copy = sub.AddNode(n->name, n->op);
    copy->device = n->device;
    copy->attrs = n->attrs;
    copy->passthrough = n->passthrough;
    new_id[id] = copy->id;
  }
  for (int id : order) {
    const Node* n = graph.node(id);
    Node* copy = sub.node(new_id[id]);
    for (const TensorId& in : n->inputs) {
      auto b = renamed.find({in.node, in.index});
      if (b == renamed.end() && !new_id.count(in.node))
        return Unimplemented("while loop: " + NodeLabel(*n) + " reads " + NodeLabel(*graph.node(in.node)) +
                             " other than through the loop's Switch or Merge");
      copy->inputs.push_back(b != renamed.end() ? b->second : TensorId{new_id.at(in.node), in.index});
    }
    for (int c : n->control_inputs)
      if (new_id.count(c)) copy->control_inputs.push_back(new_id[c]);
  }
  for (const TensorId& t : outputs) {
    auto b = renamed.find({t.node, t.index});
    output_names->push_back(sub.TensorName(b != renamed.end() ? b->second : TensorId{new_id.at(t.node), t.index}));
  }
  members->insert(order.begin(), order.end());
  return ExportGraphDef(sub);
}

DType TypeOf(const Node& n) { return GetTypeAttr(n, "T").value_or(DType::kInvalid); }

// A loop's cond and body as graphs of their own (see Extract), with their outputs' names;
// `members` gets the nodes they hold.
struct LoopGraphs {
  tensorflow::GraphDef cond, body;
  std::vector<std::string> cond_out, body_out;
};
StatusOr<LoopGraphs> ExtractLoop(const Graph& graph, const Loop& loop, const std::vector<DType>& types, std::set<int>* members) {
  const size_t vars = loop.enters.size();
  // The cond reads the Merges; the body the Switches' true outputs; both the invariants.
  std::map<std::pair<int, int>, int> cond_in, body_in;
  std::set<int> cond_stop, body_stop;
  for (size_t i = 0; i < vars; ++i) {
    cond_in[{loop.merges[i], 0}] = static_cast<int>(i);
    body_in[{loop.switches[i], 1}] = static_cast<int>(i);
    cond_stop.insert(loop.merges[i]);
    body_stop.insert(loop.switches[i]);
  }
  for (size_t j = 0; j < loop.invariants.size(); ++j) {
    cond_in[{loop.invariants[j], 0}] = body_in[{loop.invariants[j], 0}] = static_cast<int>(vars + j);
    cond_stop.insert(loop.invariants[j]);
    body_stop.insert(loop.invariants[j]);
  }
  // Both stop at every loop op of the frame (their control edges to those are dropped).
  for (int id : loop.merges) body_stop.insert(id);
  for (int id : loop.switches) cond_stop.insert(id);
  for (int id : loop.enters) cond_stop.insert(id), body_stop.insert(id);
  cond_stop.insert(loop.loop_cond);
  body_stop.insert(loop.loop_cond);
  LoopGraphs g;
  auto in = [](const std::set<int>& set) { return [&set](int id) { return set.count(id) > 0; }; };
  GJ_ASSIGN_OR_RETURN(
      g.cond, Extract(graph, cond_in, in(cond_stop), types, {graph.node(loop.loop_cond)->inputs[0]}, &g.cond_out, members));
  std::vector<TensorId> next_values;
  for (int next : loop.next_iterations) next_values.push_back(graph.node(next)->inputs[0]);
  GJ_ASSIGN_OR_RETURN(g.body, Extract(graph, body_in, in(body_stop), types, next_values, &g.body_out, members));
  return g;
}

// The nodes the loop takes: the frame's loop ops, and the nodes its cond or body holds
// (`members`) unless a node outside reads one (a constant both use): then it stays, with
// what it reads, and must not read the loop.
StatusOr<std::set<int>> TakenByLoop(const Graph& graph, const Loop& loop, const std::set<int>& members,
                                    const std::vector<std::vector<OutEdge>>& out) {
  std::set<int> loop_ops;
  for (const auto* ids : {&loop.enters, &loop.invariants, &loop.merges, &loop.switches, &loop.next_iterations})
    loop_ops.insert(ids->begin(), ids->end());
  loop_ops.insert(loop.loop_cond);
  auto outside = [&](int id) { return !loop_ops.count(id) && !members.count(id); };
  for (int id : loop_ops)
    for (const OutEdge& e : out[id])
      if (e.dst_input >= 0 && outside(e.dst) && std::find(loop.exits.begin(), loop.exits.end(), e.dst) == loop.exits.end())
        return Unimplemented("while loop " + loop.frame + ": " + NodeLabel(*graph.node(e.dst)) + " reads " +
                             NodeLabel(*graph.node(id)) + " inside the loop");
  std::set<int> kept;
  std::vector<int> stack;
  for (int id : members)
    for (const OutEdge& e : out[id])
      if (e.dst_input >= 0 && outside(e.dst) && kept.insert(id).second) stack.push_back(id);
  for (const auto* ids : {&loop.enters, &loop.invariants})  // the While node reads what they read
    for (int id : *ids) {
      const int in = graph.node(id)->inputs[0].node;
      if (members.count(in) && kept.insert(in).second) stack.push_back(in);
    }
  while (!stack.empty()) {
    const Node* n = graph.node(stack.back());
    stack.pop_back();
    for (const TensorId& in : n->inputs) {
      if (loop_ops.count(in.node))
        return Unimplemented("while loop " + loop.frame + ": " + NodeLabel(*n) + " is read outside the loop but reads " +
                             NodeLabel(*graph.node(in.node)));
      if (members.count(in.node) && kept.insert(in.node).second) stack.push_back(in.node);
    }
  }
  std::set<int> frame(loop_ops);
  for (int id : members)
    if (!kept.count(id)) frame.insert(id);
  return frame;
}

// The _GraphjitWhile node of the loop.
Node* AddWhileNode(Graph* graph, const Loop& loop, const std::vector<DType>& types, const LoopGraphs& g) {
  Node* w = graph->AddNode(UniqueName(*graph, loop.frame), "_GraphjitWhile");
  const Node* first = graph->node(loop.enters[0]);
  w->device = first->device;
  for (int enter : loop.enters) w->inputs.push_back(graph->node(enter)->inputs[0]);
  for (int inv : loop.invariants) w->inputs.push_back(graph->node(inv)->inputs[0]);
  std::set<int> controls;
  for (const auto* ids : {&loop.enters, &loop.invariants})
    for (int id : *ids)
      for (int c : graph->node(id)->control_inputs) controls.insert(c);
  w->control_inputs.assign(controls.begin(), controls.end());
  auto* tlist = w->attrs["T"].mutable_list();
  for (DType t : types) tlist->add_type(static_cast<tensorflow::DataType>(t));
  w->attrs["num_vars"].set_i(static_cast<int64_t>(loop.enters.size()));
  w->attrs["frame_name"].set_s(loop.frame);
  w->attrs["cond"].set_s(g.cond.SerializeAsString());
  w->attrs["body"].set_s(g.body.SerializeAsString());
  w->attrs["cond_output"].set_s(g.cond_out[0]);
  for (const std::string& b : g.body_out) w->attrs["body_outputs"].mutable_list()->add_s(b);
  return w;
}

Status Functionalize(Graph* graph, const Loop& loop, std::vector<bool>* remove) {
  const std::vector<std::vector<OutEdge>> out = graph->ComputeOutEdges();
  const size_t vars = loop.enters.size();
  std::vector<DType> types;
  for (int enter : loop.enters) types.push_back(TypeOf(*graph->node(enter)));
  for (int inv : loop.invariants) types.push_back(TypeOf(*graph->node(inv)));
  for (DType t : types)
    if (t == DType::kInvalid) return Unimplemented("while loop " + loop.frame + ": a loop value of a type graphjit lacks");
  std::set<int> members;
  GJ_ASSIGN_OR_RETURN(const LoopGraphs g, ExtractLoop(*graph, loop, types, &members));
  GJ_ASSIGN_OR_RETURN(const std::set<int> frame, TakenByLoop(*graph, loop, members, out));
  Node* w = AddWhileNode(graph, loop, types, g);
  // Each Exit reads its variable's final value; control edges from the loop's nodes to
  // outside nodes come from the While node.
  for (size_t i = 0; i < vars; ++i) {
    if (loop.exits[i] < 0) continue;
    Node* exit = graph->node(loop.exits[i]);
    exit->op = "Identity";
    exit->inputs = {{w->id, static_cast<int>(i)}};
    exit->control_inputs.clear();
  }
  for (int id = 0; id < graph->num_nodes(); ++id) {
    Node* n = graph->node(id);
    if (frame.count(id)) continue;
    bool reads_loop = false;
    for (int& c : n->control_inputs)
      if (frame.count(c)) c = w->id, reads_loop = true;
    if (reads_loop) {
      std::sort(n->control_inputs.begin(), n->control_inputs.end());
      n->control_inputs.erase(std::unique(n->control_inputs.begin(), n->control_inputs.end()), n->control_inputs.end());
    }
  }
  remove->resize(graph->num_nodes(), false);
  for (int id : frame) (*remove)[id] = true;
  return Status::Ok();
}

// ---- conditionals -----------------------------------------------------------------------

// One conditional as TensorFlow writes it (tf.cond in a v1 graph, or an If its lowering
// made): the Switches on one predicate, the nodes each branch runs (everything forward of
// the Switches' outputs 0, else, and 1, then, up to the Merges), and the Merges that take
// the value of the branch that ran.
struct Cond {
  TensorId pred;
  std::vector<int> switches;
  std::map<int, int> side;  // branch node -> 0 (else) or 1 (then)
  std::vector<int> merges;
  std::vector<std::array<TensorId, 2>> values;  // per Merge: what it reads from each side
  std::vector<int> markers;                     // Merges of control edges alone: "the conditional ran"
};

bool IsLoopOp(const std::string& op) { return op == "Enter" || op == "Exit" || op == "NextIteration" || op == "LoopCond"; }

// A Const a branch reads without it coming through a Switch: the branch gets a copy.
bool FreeConst(const Node& n) { return n.op == "Const" && n.inputs.empty() && n.control_inputs.empty(); }

// The conditional of the Switches on `pred`, if it has the form above and holds no other
// Switch (a conditional inside it is made a node first).
std::optional<Cond> FindCond(const Graph& graph, const std::vector<std::vector<OutEdge>>& out, TensorId pred,
                             const std::vector<int>& switches) {
  Cond c{pred, switches, {}, {}, {}, {}};
  const std::set<int> own(switches.begin(), switches.end());
  std::set<int> merges;
  std::vector<std::pair<int, int>> stack;  // (node, side)
  for (int s : switches)
    for (const OutEdge& e : out[s]) {
      // A control edge from a Switch holds for either side; an output past 1 does not
      // exist (the analysis says so).
      if (e.dst_input < 0 || e.src_output < 0 || e.src_output > 1) return std::nullopt;
      stack.push_back({e.dst, e.src_output});
    }
  while (!stack.empty()) {
    const auto [id, side] = stack.back();
    stack.pop_back();
    const Node* n = graph.node(id);
    if (n->op == "Merge") {
      merges.insert(id);
      continue;
    }
    if (n->op == "Switch" || IsLoopOp(n->op)) return std::nullopt;
    const auto [at, fresh] = c.side.emplace(id, side);
    if (!fresh) {
      if (at->second != side) return std::nullopt;  // a node of both branches
      continue;
    }
    for (const OutEdge& e : out[id]) stack.push_back({e.dst, side});
  }
  auto side_of = [&](TensorId t) {
    if (own.count(t.node)) return t.index;
    const auto at = c.side.find(t.node);
    return at == c.side.end() ? -1 : at->second;
  };
  for (const auto& [id, side] : c.side)
    for (const TensorId& in : graph.node(id)->inputs)
      if (side_of(in) != side && !FreeConst(*graph.node(in.node))) return std::nullopt;  // reads around the Switches
  for (int m : merges) {
    const Node* n = graph.node(m);
    if (n->inputs.empty()) {
      for (int from : n->control_inputs)
        if (!c.side.count(from)) return std::nullopt;
      c.markers.push_back(m);
      continue;
    }
    if (n->inputs.size() != 2 || side_of(n->inputs[0]) < 0 || side_of(n->inputs[1]) < 0 ||
        side_of(n->inputs[0]) == side_of(n->inputs[1]))
      return std::nullopt;
    for (const OutEdge& e : out[m])
      if (e.src_output == 1) return std::nullopt;  // value_index: which branch ran
    c.merges.push_back(m);
    const int first = side_of(n->inputs[0]);
    c.values.push_back({n->inputs[first], n->inputs[1 - first]});
  }
  if (c.merges.empty() && c.markers.empty()) return std::nullopt;
  return c;
}

// The scope the names of a conditional's Switches and Merges share ("cond"), or "cond".
std::string CondName(const Graph& graph, const Cond& c) {
  std::string prefix = graph.node(c.switches[0])->name;
  for (const auto* ids : {&c.switches, &c.merges, &c.markers})
    for (int id : *ids) {
      const std::string& name = graph.node(id)->name;
      prefix.resize(std::mismatch(prefix.begin(), prefix.end(), name.begin(), name.end()).first - prefix.begin());
    }
  const size_t slash = prefix.rfind('/');
  return slash == std::string::npos || slash == 0 ? "cond" : prefix.substr(0, slash);
}

// Makes the conditional one _GraphjitIf node: its inputs are the predicate and the
// Switches' values; each Merge becomes an Identity of one of its outputs, each marker a
// NoOp after it.
Status FunctionalizeCond(Graph* graph, const Cond& c, std::vector<bool>* remove) {
  std::vector<TensorId> args;
  std::vector<DType> types;
  std::map<std::pair<int, int>, int> boundary[2];
  for (int s : c.switches) {
    const Node* sw = graph->node(s);
    const TensorId value = sw->inputs[0];
    auto at = std::find(args.begin(), args.end(), value);
    if (at == args.end()) {
      if (TypeOf(*sw) == DType::kInvalid) return Unimplemented(NodeLabel(*sw) + ": a value of a type graphjit lacks");
      args.push_back(value);
      types.push_back(TypeOf(*sw));
      at = args.end() - 1;
    }
    for (int side = 0; side < 2; ++side) boundary[side][{s, side}] = static_cast<int>(at - args.begin());
  }
  std::string branch[2];
  std::vector<std::string> outputs[2];
  std::set<int> members;
  for (int side = 0; side < 2; ++side) {
    std::vector<TensorId> values;
    for (const auto& v : c.values) values.push_back(v[side]);
    auto outside = [&](int id) {
      const auto at = c.side.find(id);
      return at == c.side.end() ? !FreeConst(*graph->node(id)) : at->second != side;
    };
    GJ_ASSIGN_OR_RETURN(tensorflow::GraphDef gd,
                        Extract(*graph, boundary[side], outside, types, values, &outputs[side], &members));
    branch[side] = gd.SerializeAsString();
  }
  std::set<int> taken(c.switches.begin(), c.switches.end());
  for (const auto& [id, side] : c.side) taken.insert(id);
  std::set<int> controls;
  for (int id : taken)
    for (int from : graph->node(id)->control_inputs)
      if (!taken.count(from)) controls.insert(from);
  const std::string name = UniqueName(*graph, CondName(*graph, c));
  Node* f = graph->AddNode(name, "_GraphjitIf");
  f->device = graph->node(c.switches[0])->device;
  f->inputs.push_back(c.pred);
  f->inputs.insert(f->inputs.end(), args.begin(), args.end());
  f->control_inputs.assign(controls.begin(), controls.end());
  auto* tout = f->attrs["Tout"].mutable_list();
  for (int m : c.merges) tout->add_type(static_cast<tensorflow::DataType>(TypeOf(*graph->node(m))));
  for (int side = 0; side < 2; ++side) {
    const std::string attr = side == 0 ? "else" : "then";
    f->attrs[attr].set_s(branch[side]);
    for (const std::string& o : outputs[side]) f->attrs[attr + "_outputs"].mutable_list()->add_s(o);
  }
  for (size_t i = 0; i < c.merges.size(); ++i) {
    Node* merge = graph->node(c.merges[i]);
    merge->op = "Identity";
    merge->attrs = InternalAttrs(*merge);
    SetType(merge, "T", static_cast<DType>(tout->type(static_cast<int>(i))));
    merge->inputs = {{f->id, static_cast<int>(i)}};
    merge->control_inputs.clear();
  }
  for (int m : c.markers) {
    Node* marker = graph->node(m);
    marker->op = "NoOp";
    marker->attrs = InternalAttrs(*marker);
    marker->control_inputs = {f->id};
  }
  remove->assign(graph->num_nodes(), false);
  for (int id : taken) (*remove)[id] = true;
  return Status::Ok();
}

// ---- functional While ------------------------------------------------------------------

// The flat output index of "node:arg:i", an output of a FunctionDef's node: i, past the
// outputs of the op's earlier output args. The table lists every op graphjit runs that has
// several output args (and a few more); every other op it runs has one, and a body with an
// op it does not run is rejected when the body is analyzed.
StatusOr<int> OutputIndex(const tensorflow::NodeDef& node, const std::string& arg, int i) {
  static const std::map<std::string, std::vector<std::string>> kArgs = {
      {"FusedBatchNorm", {"y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2"}},
      {"FusedBatchNormV2", {"y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2"}},
      {"FusedBatchNormV3", {"y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2", "reserve_space_3"}},
      {"FusedBatchNormGradV3", {"x_backprop", "scale_backprop", "offset_backprop", "reserve_space_4", "reserve_space_5"}},
      {"SoftmaxCrossEntropyWithLogits", {"loss", "backprop"}},
      {"SparseSoftmaxCrossEntropyWithLogits", {"loss", "backprop"}},
      {"TopKV2", {"values", "indices"}},
      {"Unique", {"y", "idx"}}};
  auto it = kArgs.find(node.op());
  if (it == kArgs.end()) return i;
  const auto& args = it->second;
  const auto at = std::find(args.begin(), args.end(), arg);
  if (at == args.end()) return Unimplemented("output '" + arg + "' of " + node.op() + " node '" + node.name() + "'");
  return static_cast<int>(at - args.begin()) + i;
}

// A FunctionDef (no calls of other functions) as a GraphDef, with the library its loops and
// conditionals name, whose inputs are the
// placeholders _arg_0, _arg_1, ... and whose outputs, in the signature's order, are
// returned in `outputs` as GraphDef tensor names.
StatusOr<tensorflow::GraphDef> FunctionAsGraph(const tensorflow::FunctionDef& f, const tensorflow::FunctionDefLibrary& library,
                                               std::vector<std::string>* outputs) {
  const std::string what = "function '" + f.signature().name() + "'";
  tensorflow::GraphDef gd;
  *gd.mutable_library() = library;  // for the loops and conditionals it holds
  std::map<std::string, std::string> arg_of;
  for (int i = 0; i < f.signature().input_arg_size(); ++i) {
    const auto& arg = f.signature().input_arg(i);
    if (arg.type() == tensorflow::DT_INVALID) return Unimplemented(what + ": argument '" + arg.name() + "' has no fixed type");
    tensorflow::NodeDef* p = gd.add_node();
    p->set_name("_arg_" + std::to_string(i));
    p->set_op("Placeholder");
    (*p->mutable_attr())["dtype"].set_type(arg.type());
    arg_of[arg.name()] = p->name();
  }
  std::map<std::string, const tensorflow::NodeDef*> nodes;
  for (const auto& n : f.node_def()) nodes[n.name()] = &n;
  // "arg", "node:out:i", "^node" -> the GraphDef's names.
  auto rename = [&](const std::string& in) -> StatusOr<std::string> {
    if (!in.empty() && in[0] == '^') {
      auto a = arg_of.find(in.substr(1));
      return "^" + (a == arg_of.end() ? in.substr(1) : a->second);
    }
    const size_t colon = in.find(':');
    if (colon == std::string::npos) {
      auto a = arg_of.find(in);
      if (a == arg_of.end()) return InvalidArgument(what + ": no argument '" + in + "'");
      return a->second;
    }
    const std::string node = in.substr(0, colon), rest = in.substr(colon + 1);
    const size_t second = rest.find(':');
    auto n = nodes.find(node);
    if (n == nodes.end() || second == std::string::npos) return InvalidArgument(what + ": bad input '" + in + "'");
    int i = 0;
    const std::string digits = rest.substr(second + 1);
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), i);
    if (error != std::errc() || end != digits.data() + digits.size() || i < 0)
      return InvalidArgument(what + ": bad input '" + in + "'");
    GJ_ASSIGN_OR_RETURN(int index, OutputIndex(*n->second, rest.substr(0, second), i));
    return index == 0 ? node : node + ":" + std::to_string(index);
  };
  for (const auto& n : f.node_def()) {
    tensorflow::NodeDef* copy = gd.add_node();
    *copy = n;
    copy->clear_input();
    for (const std::string& in : n.input()) {
      GJ_ASSIGN_OR_RETURN(std::string name, rename(in));
      copy->add_input(name);
    }
  }
  for (const auto& arg : f.signature().output_arg()) {
    auto r = f.ret().find(arg.name());
    if (r == f.ret().end()) return InvalidArgument(what + ": output '" + arg.name() + "' is not returned");
    GJ_ASSIGN_OR_RETURN(std::string name, rename(r->second));
    outputs->push_back(name);
  }
  return gd;
}

// The function of the graph's library a node's func attr names, or null.
const tensorflow::FunctionDef* LibraryFunction(const Graph& graph, const Node& node, const char* attr) {
  const tensorflow::AttrValue* a = node.FindAttr(attr);
  if (a == nullptr) return nullptr;
  for (const auto& f : graph.library().function())
    if (f.signature().name() == a->func().name()) return &f;
  return nullptr;
}

// A While/StatelessWhile (cond and body functions over all its inputs) as _GraphjitWhile;
// one whose functions are not in the library stays a While.
Status FunctionalWhile(Graph* graph, Node* w) {
  const tensorflow::FunctionDef* cond_f = LibraryFunction(*graph, *w, "cond");
  const tensorflow::FunctionDef* body_f = LibraryFunction(*graph, *w, "body");
  if (cond_f == nullptr || body_f == nullptr) return Status::Ok();  // not a loop it can read: left as is
  std::vector<std::string> cond_out, body_out;
  auto cond = FunctionAsGraph(*cond_f, graph->library(), &cond_out);
  if (!cond.ok()) return cond.status().WithContext(NodeLabel(*w));
  auto body = FunctionAsGraph(*body_f, graph->library(), &body_out);
  if (!body.ok()) return body.status().WithContext(NodeLabel(*w));
  const tensorflow::AttrValue* t = w->FindAttr("T");
  if (cond_out.size() != 1 || body_out.size() != w->inputs.size() || t == nullptr ||
      t->list().type_size() != static_cast<int>(w->inputs.size()) ||
      cond_f->signature().input_arg_size() != t->list().type_size() ||
      body_f->signature().input_arg_size() != t->list().type_size())
    return InvalidArgument(NodeLabel(*w) +
                           ": cond must take the loop variables and return one value, and body take "
                           "and return one per loop variable (attr T lists their types)");
  const AttrMap internal = InternalAttrs(*w);
  const tensorflow::AttrValue types = w->attrs["T"];
  w->op = "_GraphjitWhile";
  w->attrs = internal;
  w->attrs["T"] = types;
  w->attrs["num_vars"].set_i(static_cast<int64_t>(w->inputs.size()));
  w->attrs["cond"].set_s(cond->SerializeAsString());
  w->attrs["body"].set_s(body->SerializeAsString());
  w->attrs["cond_output"].set_s(cond_out[0]);
  for (const std::string& b : body_out) w->attrs["body_outputs"].mutable_list()->add_s(b);
  return Status::Ok();
}

// An If/StatelessIf (then_branch and else_branch functions over its inputs after the
// condition) as _GraphjitIf; one whose functions are not in the library stays an If.
Status FunctionalIf(Graph* graph, Node* n) {
  const tensorflow::FunctionDef* f[2] = {LibraryFunction(*graph, *n, "else_branch"), LibraryFunction(*graph, *n, "then_branch")};
  if (f[0] == nullptr || f[1] == nullptr) return Status::Ok();
  GJ_ASSIGN_OR_RETURN(std::vector<DType> tout, GetTypeListAttr(*n, "Tout"));
  AttrMap attrs = InternalAttrs(*n);
  attrs["Tout"] = n->attrs["Tout"];
  if (const tensorflow::AttrValue* shapes = n->FindAttr("output_shapes")) attrs["output_shapes"] = *shapes;
  for (int side = 0; side < 2; ++side) {
    std::vector<std::string> outputs;
    auto gd = FunctionAsGraph(*f[side], graph->library(), &outputs);
    if (!gd.ok()) return gd.status().WithContext(NodeLabel(*n));
    if (outputs.size() != tout.size() || f[side]->signature().input_arg_size() + 1 != static_cast<int>(n->inputs.size()))
      return InvalidArgument(NodeLabel(*n) +
                             ": each branch must take the inputs after the condition and return one "
                             "value per type of Tout");
    const std::string attr = side == 0 ? "else" : "then";
    attrs[attr].set_s(gd->SerializeAsString());
    for (const std::string& o : outputs) attrs[attr + "_outputs"].mutable_list()->add_s(o);
  }
  n->op = "_GraphjitIf";
  n->attrs = std::move(attrs);
  return Status::Ok();
}

// ---- function calls ------------------------------------------------------------------

bool IsCallOp(const std::string& op) { return op == "PartitionedCall" || op == "StatefulPartitionedCall"; }

// Puts the body of the function a PartitionedCall/StatefulPartitionedCall names in the
// call's place: its nodes, named "<call>/<node>", read the call's inputs where the body
// reads its arguments; the call becomes an Identity (IdentityN for several outputs, a NoOp
// for none) of the body's results, so that its name and outputs stay. A body's node with
// no inputs waits for the call's control inputs. Returns the new nodes' ids.
StatusOr<std::vector<int>> InlineCall(Graph* graph, int call_id) {
  Node* call = graph->node(call_id);
  const tensorflow::FunctionDef* f = LibraryFunction(*graph, *call, "f");
  if (f == nullptr) {
    const tensorflow::AttrValue* name = call->FindAttr("f");
    return InvalidArgument(NodeLabel(*call) + ": calls function '" + (name ? name->func().name() : "") +
                           "', which the graph's library does not hold");
  }
  std::vector<std::string> results;
  auto gd = FunctionAsGraph(*f, graph->library(), &results);
  if (!gd.ok()) return gd.status().WithContext(NodeLabel(*call));
  auto body = ImportGraphDef(*gd);
  if (!body.ok()) return body.status().WithContext(NodeLabel(*call) + ": function '" + f->signature().name() + "'");
  GJ_ASSIGN_OR_RETURN(std::vector<DType> tout, GetTypeListAttr(*call, "Tout"));
  const size_t args = f->signature().input_arg_size();
  if (args != call->inputs.size() || results.size() != tout.size())
    return InvalidArgument(NodeLabel(*call) + ": function '" + f->signature().name() + "' takes " + std::to_string(args) +
                           " arguments and returns " + std::to_string(results.size()) + " values; the call passes " +
                           std::to_string(call->inputs.size()) + " and expects " + std::to_string(tout.size()));
  // Body ids -> the graph's: a new node, or (for the arguments) the call's input.
  std::vector<int> at(body->num_nodes(), -1);
  std::vector<int> arg(body->num_nodes(), -1);
  std::vector<int> added;
  for (int b = 0; b < static_cast<int>(args); ++b) arg[b] = b;  // FunctionAsGraph puts _arg_i first
  for (int b = static_cast<int>(args); b < body->num_nodes(); ++b) {
    const Node& src = *body->node(b);
    Node* n = graph->AddNode(UniqueName(*graph, graph->node(call_id)->name + "/" + src.name), src.op);
    n->device = src.device.empty() ? graph->node(call_id)->device : src.device;
    n->attrs = src.attrs;
    n->passthrough = src.passthrough;
    at[b] = n->id;
    added.push_back(n->id);
  }
  call = graph->node(call_id);
  auto tensor = [&](TensorId t) { return arg[t.node] >= 0 ? call->inputs[arg[t.node]] : TensorId{at[t.node], t.index}; };
  for (int b = static_cast<int>(args); b < body->num_nodes(); ++b) {
    const Node& src = *body->node(b);
    Node* n = graph->node(at[b]);
    for (const TensorId& in : src.inputs) n->inputs.push_back(tensor(in));
    for (int c : src.control_inputs) n->control_inputs.push_back(arg[c] >= 0 ? call->inputs[arg[c]].node : at[c]);
    if (n->inputs.empty() && n->control_inputs.empty()) n->control_inputs = call->control_inputs;
  }
  std::vector<TensorId> outs;
  for (const std::string& r : results) {
    ParsedInput p;
    const Node* producer = ParseInputString(r, &p) ? body->FindNode(p.node) : nullptr;
    if (producer == nullptr) return Internal(NodeLabel(*call) + ": no result '" + r + "' in its function's body");
    outs.push_back(tensor({producer->id, p.index}));
  }
  AttrMap attrs = InternalAttrs(*call);
  if (tout.empty()) {
    call->op = "NoOp";
    call->control_inputs.insert(call->control_inputs.end(), added.begin(), added.end());
  } else if (tout.size() == 1) {
    call->op = "Identity";
    attrs["T"].set_type(static_cast<tensorflow::DataType>(tout[0]));
  } else {
    call->op = "IdentityN";
    attrs["T"] = call->attrs["Tout"];
  }
  call->attrs = std::move(attrs);
  call->inputs = std::move(outs);
  return added;
}

// Drops the nodes a loop or conditional took (marked in `remove`), with the edges between them.
Status RemoveTaken(Graph* graph, std::vector<bool> remove) {
  remove.resize(graph->num_nodes(), false);
  for (int id = 0; id < graph->num_nodes(); ++id) {
    Node* n = graph->node(id);
    if (remove[id]) {
      n->inputs.clear();
      n->control_inputs.clear();
      continue;
    }
    for (const TensorId& in : n->inputs)
      if (remove[in.node])
        return Internal(NodeLabel(*n) + " reads " + NodeLabel(*graph->node(in.node)) + ", which a " + "loop or conditional took");
    for (int c : n->control_inputs)
      if (remove[c])
        return Internal(NodeLabel(*n) + " waits for " + NodeLabel(*graph->node(c)) + ", which a loop or " + "conditional took");
  }
  graph->RemoveNodes(remove);
  return Status::Ok();
}

// Makes one conditional a node, an innermost one (a branch holding no Switch); false if
// there is none it can.
StatusOr<bool> FunctionalizeOneCond(Graph* graph) {
  std::map<std::pair<int, int>, std::vector<int>> by_pred;
  for (int id = 0; id < graph->num_nodes(); ++id) {
    const Node* n = graph->node(id);
    if (n->op != "Switch" || n->inputs.size() != 2 || graph->node(n->inputs[1].node)->op == "LoopCond") continue;
    // tf.cond's own Switch is on the predicate, those of the values it reads on an
    // Identity of it.
    TensorId pred = n->inputs[1];
    for (int steps = 0;
         steps < graph->num_nodes() && graph->node(pred.node)->op == "Identity" && graph->node(pred.node)->inputs.size() == 1;
         ++steps)
      pred = graph->node(pred.node)->inputs[0];
    by_pred[{pred.node, pred.index}].push_back(id);
  }
  if (by_pred.empty()) return false;
  const std::vector<std::vector<OutEdge>> out = graph->ComputeOutEdges();
  for (const auto& [pred, switches] : by_pred) {
    const std::optional<Cond> c = FindCond(*graph, out, {pred.first, pred.second}, switches);
    if (!c) continue;
    std::vector<bool> remove;
    GJ_RETURN_IF_ERROR(FunctionalizeCond(graph, *c, &remove));
    GJ_RETURN_IF_ERROR(RemoveTaken(graph, std::move(remove)));
    return true;
  }
  return false;
}

// Whether a loop's cond or body holds another loop (its Enter or Exit nodes).
bool HoldsALoop(const Graph& graph, const Loop& loop) {
  std::set<int> own = {loop.loop_cond};
  for (const auto* ids : {&loop.enters, &loop.invariants, &loop.merges, &loop.switches, &loop.next_iterations})
    own.insert(ids->begin(), ids->end());
  std::vector<int> stack = {graph.node(loop.loop_cond)->inputs[0].node};
  for (int next : loop.next_iterations) stack.push_back(graph.node(next)->inputs[0].node);
  std::set<int> seen;
  while (!stack.empty()) {
    const int id = stack.back();
    stack.pop_back();
    if (own.count(id) || !seen.insert(id).second) continue;
    const Node* n = graph.node(id);
    if (n->op == "Enter" || n->op == "Exit") return true;
    for (const TensorId& in : n->inputs) stack.push_back(in.node);
    stack.insert(stack.end(), n->control_inputs.begin(), n->control_inputs.end());
  }
  return false;
}

// Makes one loop a node, an innermost one; false if there is no loop it recognizes. A
// loop of the expected form it cannot make a node is an error.
StatusOr<bool> FunctionalizeOneLoop(Graph* graph) {
  const std::vector<Loop> loops = FindLoops(*graph, graph->ComputeOutEdges());
  if (loops.empty()) return false;
  auto inner = std::find_if(loops.begin(), loops.end(), [&](const Loop& l) { return !HoldsALoop(*graph, l); });
  std::vector<bool> remove;
  GJ_RETURN_IF_ERROR(Functionalize(graph, inner != loops.end() ? *inner : loops.front(), &remove));
  GJ_RETURN_IF_ERROR(RemoveTaken(graph, std::move(remove)));
  return true;
}

}  // namespace

StatusOr<bool> InlineFunctionCalls(Graph* graph) {
  // A body may call functions too: its calls come after, and are inlined in turn, one level
  // deeper. A function that calls itself would never end; one that calls another twice at
  // each of many levels would fill memory.
  constexpr int kMaxDepth = 32;
  constexpr int kMaxNodes = 1 << 22;
  std::vector<int> depth(graph->num_nodes(), 0);
  bool changed = false;
  for (int id = 0; id < graph->num_nodes(); ++id) {
    if (!IsCallOp(graph->node(id)->op)) continue;
    if (depth[id] >= kMaxDepth)
      return Unimplemented(NodeLabel(*graph->node(id)) + ": function calls nested more than " + std::to_string(kMaxDepth) +
                           " deep (a function that calls itself?)");
    if (graph->num_nodes() > kMaxNodes)
      return Unimplemented(NodeLabel(*graph->node(id)) + ": function calls expand the graph past " + std::to_string(kMaxNodes) +
                           " nodes");
    GJ_ASSIGN_OR_RETURN(std::vector<int> added, InlineCall(graph, id));
    depth.resize(graph->num_nodes(), 0);
    for (int a : added) depth[a] = depth[id] + 1;
    changed = true;
  }
  return changed;
}

StatusOr<bool> FunctionalizeConditionals(Graph* graph) {
  bool changed = false;
  for (int id = 0; id < graph->num_nodes(); ++id) {
    Node* n = graph->node(id);
    if (n->op != "If" && n->op != "StatelessIf") continue;
    GJ_RETURN_IF_ERROR(FunctionalIf(graph, n));
    changed |= n->op == "_GraphjitIf";
  }
  for (;;) {
    GJ_ASSIGN_OR_RETURN(bool cond, FunctionalizeOneCond(graph));
    if (!cond) return changed;
    changed = true;
  }
}

StatusOr<bool> FunctionalizeLoops(Graph* graph) {
  bool changed = false;
  for (int id = 0; id < graph->num_nodes(); ++id) {
    Node* n = graph->node(id);
    if (n->op != "While" && n->op != "StatelessWhile") continue;
    GJ_RETURN_IF_ERROR(FunctionalWhile(graph, n));
    changed |= n->op == "_GraphjitWhile";
  }
  for (;;) {
    GJ_ASSIGN_OR_RETURN(bool loop, FunctionalizeOneLoop(graph));
    if (!loop) return changed;
    changed = true;
  }
}

Status FunctionalizeControlFlow(Graph* graph) {
  GJ_RETURN_IF_ERROR(InlineFunctionCalls(graph).status());
  bool has_lists = false, has_loops = false;
  for (int id = 0; id < graph->num_nodes(); ++id) {
    Node* n = graph->node(id);
    has_lists |= IsListOp(n->op);
    has_loops |= n->op == "Enter";
    if (n->op == "While" || n->op == "StatelessWhile") GJ_RETURN_IF_ERROR(FunctionalWhile(graph, n));
    if (n->op == "If" || n->op == "StatelessIf") GJ_RETURN_IF_ERROR(FunctionalIf(graph, n));
  }
  if (has_lists) GJ_RETURN_IF_ERROR(LowerTensorLists(graph).status());
  // Inner ones first: a loop's body may hold a conditional or a loop, a branch a loop.
  for (;;) {
    GJ_ASSIGN_OR_RETURN(bool cond, FunctionalizeOneCond(graph));
    if (cond) continue;
    if (!has_loops) break;
    GJ_ASSIGN_OR_RETURN(bool loop, FunctionalizeOneLoop(graph));
    if (!loop) break;
  }
  return Status::Ok();
}

}  // namespace graphjit
