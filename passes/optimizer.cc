#include <atomic>

#include "passes/passes.h"
#include "runtime/pass_registry.h"

namespace graphjit {

namespace {

// TensorFlow's toggles: DEFAULT, ON and AGGRESSIVE enable; only OFF disables.
bool Enabled(tensorflow::RewriterConfig::Toggle toggle) { return toggle != tensorflow::RewriterConfig::OFF; }

}  // namespace

PassManager DefaultPipeline(const SessionOptions& options) {
  const tensorflow::RewriterConfig& rw = options.rewrite_options;
  PassManagerOptions pm_options;
  pm_options.disabled.insert(options.disabled_passes.begin(), options.disabled_passes.end());
  if (!options.dump_to.empty()) pm_options.dump_to = options.dump_to + "/graph_passes";
  PassManager pm(pm_options);
  if (rw.disable_meta_optimizer()) return pm;
  if (!rw.disable_model_pruning()) pm.Add("prune", Prune);
  if (Enabled(rw.constant_folding())) pm.Add("constant_folding", FoldConstants);
  if (Enabled(rw.arithmetic_optimization())) pm.Add("arithmetic", SimplifyArithmetic);
  if (Enabled(rw.common_subgraph_elimination())) pm.Add("cse", EliminateCommonSubexpressions);
  if (Enabled(rw.remapping())) {  // a fusion of patterns, as the remapper's
    pm.Add("dilated_convolutions", FuseDilatedConvolutions);
    pm.Add("remapper", Remap);
  }
  return pm;
}

void RegisterGraphOptimizer() {
  static std::atomic<bool> registered{false};
  if (registered.exchange(true)) return;
  // Before clustering (priority 1000), as Grappler runs before XLA's clustering.
  PassRegistry::Global()->Register({"graph_optimizer", 100, [](Graph& graph, const GraphPassContext& c) {
                                      PassContext context(c.feeds, c.fetches, c.targets);
                                      return DefaultPipeline(c.options).Run(graph, context);
                                    }});
}

}  // namespace graphjit
