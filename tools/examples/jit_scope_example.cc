// Builds softmax(relu(x @ W + b)) with the C++ graph builder, asks for compilation of the
// part inside a JitScope (as TensorFlow's jit_scope() does), runs it with the JIT level
// OFF (scopes are compiled at every level) and prints the clusters and the result.
#include <cstdio>

#include "clustering/pass.h"
#include "ir/builder.h"
#include "runtime/session.h"

int main() {
  using namespace graphjit;
  RegisterClusteringPass();

  GraphBuilder b;
  Output x = b.Placeholder("x", DType::kFloat, Shape{2, 3});
  Output w = b.Const("w", DType::kFloat, Shape{3, 4}, {0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.7, 0.8, -0.9, 1.0, 1.1, 1.2});
  Output bias = b.Const("b", DType::kFloat, Shape{4}, {0.1});
  Output logits = b.MatMul(x, w);
  Output probs;
  {
    JitScope jit(b);  // BiasAdd, Relu and Softmax: one cluster
    probs = b.Softmax(b.Relu(b.BiasAdd(logits, bias)));
  }

  auto session = Session::Create(SessionOptions{}, b.graph_def());
  if (!session.ok()) {
    std::fprintf(stderr, "%s\n", session.status().ToString().c_str());
    return 1;
  }
  auto graph = (*session)->OptimizedGraph({x.node}, {probs.ToString()});
  if (!graph.ok()) {
    std::fprintf(stderr, "%s\n", graph.status().ToString().c_str());
    return 1;
  }
  for (int id = 0; id < (*graph)->graph.num_nodes(); ++id) {
    const Node* n = (*graph)->graph.node(id);
    if (n->op == "_JitCluster") std::printf("cluster: %s\n", n->name.c_str());
  }
  Tensor input = Tensor::Allocate(DType::kFloat, Shape{2, 3}).value();
  for (int i = 0; i < 6; ++i) input.data<float>()[i] = 0.5f * static_cast<float>(i) - 1.0f;
  std::vector<Tensor> out;
  Status s = (*session)->Run({{x.node, input}}, {probs.ToString()}, {}, &out);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("%s = %s\n", probs.ToString().c_str(), out[0].DebugString(8).c_str());
  return 0;
}
