#include "clustering/pass.h"

#include <atomic>

#include "clustering/encapsulate.h"
#include "ir/graphdef.h"
#include "runtime/pass_registry.h"
#include "runtime/placement.h"

namespace graphjit {

namespace {

// The registered pass's oracle: `graphjit clusters` explains what the pass decides.
const CompilabilityOracle* registered_oracle = nullptr;

const CompilabilityOracle& Oracle() {
  static const DeclaredCompilability declared;
  return registered_oracle ? *registered_oracle : declared;
}

}  // namespace

void RegisterClusteringPass(const CompilabilityOracle* oracle) {
  static std::atomic<bool> registered{false};
  if (registered.exchange(true)) return;
  registered_oracle = oracle;
  const CompilabilityOracle* chosen = &Oracle();
  PassRegistry::Global()->Register(
      {"clustering", 1000, [chosen](Graph& graph, const GraphPassContext& context) -> StatusOr<bool> {
         // 1. Analyze a copy (types and shapes), 2. find clusters, 3. encapsulate.
         GJ_ASSIGN_OR_RETURN(AnalyzedGraph analyzed, AnalyzeGraph(graph.Clone()));
         ClusteringOptions options = ClusteringOptions::FromSession(context.options);
         for (const std::string& feed : context.feeds) {
           ParsedInput parsed;
           if (ParseInputString(feed, &parsed)) options.fed_nodes.emplace_back(parsed.node);
         }
         Clustering clustering = FindClusters(analyzed, options, *chosen);
         std::set<TensorId> fetched;
         for (const std::string& fetch : context.fetches) {
           ParsedInput parsed;
           const Node* n = ParseInputString(fetch, &parsed) ? analyzed.graph.FindNode(parsed.node) : nullptr;
           if (n != nullptr) fetched.insert({n->id, parsed.index});
         }
         return EncapsulateClusters(analyzed, clustering, &graph, fetched);
       }});
}

std::string WhyNotAnalyzable(const tensorflow::NodeDef& node, const std::vector<tensorflow::NodeDef>& producers) {
  tensorflow::GraphDef alone;
  tensorflow::NodeDef copy = node;
  copy.clear_input();
  copy.clear_device();
  for (size_t i = 0; i < producers.size(); ++i) {
    tensorflow::NodeDef* p = alone.add_node();
    *p = producers[i];
    p->set_name(node.name() + "/graphjit_input_" + std::to_string(i));
    p->clear_input();
    p->clear_device();
    copy.add_input(p->name());
  }
  *alone.add_node() = std::move(copy);
  auto graph = ImportGraphDef(alone);
  if (!graph.ok()) return graph.status().message();
  auto analyzed = AnalyzeGraph(std::move(graph).value());
  return analyzed.ok() ? "" : analyzed.status().message();
}

StatusOr<std::pair<AnalyzedGraph, Clustering>> ExplainClustering(const tensorflow::GraphDef& graph_def,
                                                                 const SessionOptions& options) {
  GJ_ASSIGN_OR_RETURN(Graph graph, ImportGraphDef(graph_def));
  PlaceNodes(options, &graph);
  GJ_ASSIGN_OR_RETURN(AnalyzedGraph analyzed, AnalyzeGraph(std::move(graph)));
  Clustering clustering = FindClusters(analyzed, ClusteringOptions::FromSession(options), Oracle());
  return std::make_pair(std::move(analyzed), std::move(clustering));
}

}  // namespace graphjit
