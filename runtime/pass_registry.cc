#include "runtime/pass_registry.h"

#include <algorithm>

namespace graphjit {

PassRegistry* PassRegistry::Global() {
  static PassRegistry* r = new PassRegistry();
  return r;
}

void PassRegistry::Register(GraphPass pass) { passes_.push_back(std::move(pass)); }

std::vector<GraphPass> PassRegistry::Passes() const {
  std::vector<GraphPass> out = passes_;
  std::sort(out.begin(), out.end(), [](const GraphPass& a, const GraphPass& b) {
    return a.priority != b.priority ? a.priority < b.priority : a.name < b.name;
  });
  return out;
}

}  // namespace graphjit
