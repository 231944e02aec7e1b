// Small graph edits the passes share: rewiring uses, bypassing forwarders, removing
// what nothing needs any more, evaluating constant subgraphs; constants are made as
// runtime/const_node.h makes them.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/pass_manager.h"
#include "runtime/const_node.h"
#include "runtime/graph_analysis.h"

namespace graphjit {

// Makes the consumers of a single-output forwarder (Identity-like: output 0 equals its
// input `forwarded`) read that tensor instead. Its data consumers also wait for its
// control inputs; its control consumers wait for the producer of `forwarded` and its
// control inputs. The node is left without consumers. For a NoOp, pass {-1, 0}.
void Bypass(Graph& graph, int node, TensorId forwarded);

// Who reads each node, through data or control inputs.
using Consumers = std::vector<std::vector<int>>;
Consumers ComputeConsumers(const Graph& graph);

// Bypass for a batch of bypasses with no other edit in between: each costs its node's
// consumers instead of the whole graph. Keeps `consumers` current for the next one.
void Bypass(Graph& graph, int node, TensorId forwarded, Consumers& consumers);

// Makes every consumer of `from` (data, output by output, and control) use `to`,
// which must have the same outputs.
void ReplaceNode(Graph& graph, int from, int to);

// Turns `node` into Identity(input): for a node a rewrite would bypass but the context
// preserves (its name and output stay).
void MakeIdentity(Graph& graph, int node, TensorId input, DType dtype);

// Removes each seed that nothing consumes and the context does not preserve, then,
// transitively, its inputs that became unused. Returns how many nodes were removed.
int RemoveDeadNodes(Graph& graph, const PassContext& context, const std::vector<int>& seeds);

// The value of a Const node's output, or nullptr.
const Tensor* ConstValue(const AnalyzedGraph& graph, TensorId t);

// Runs one node on the given input values (for folding), returning all its outputs.
StatusOr<std::vector<Tensor>> EvaluateNode(const Node& node, const std::vector<Tensor>& inputs);

}  // namespace graphjit
