#include "tools/compare_command.h"

#include <cmath>
#include <cstdio>

#include "runtime/npy.h"
#include "tools/options.h"

namespace graphjit {

void AddCompareCommand(CLI::App& app, CompareArgs* a) {
  CLI::App* c = app.add_subcommand("compare", "Compare two .npy files within a tolerance (floats of two types by value)");
  c->add_option("actual", a->actual)->required();
  c->add_option("expected", a->expected)->required();
  c->add_option("--rtol", a->rtol, "Relative tolerance");
  c->add_option("--atol", a->atol, "Absolute tolerance");
}

int CompareCommand(const CompareArgs& a) {
  auto x = ReadNpy(a.actual);
  auto y = ReadNpy(a.expected);
  for (const auto* t : {&x, &y}) {
    if (!t->ok()) return Fail(kExitBadInput, t->status().message());
  }
  // Floats of two types compare by value: `run --out` writes float16 and bfloat16 as
  // float32, where TensorFlow's file may hold float16.
  const bool both_float = IsFloatingPoint(x->dtype()) && IsFloatingPoint(y->dtype());
  if (x->shape() != y->shape() || (x->dtype() != y->dtype() && !both_float)) {
    std::fprintf(stderr, "graphjit: %s is %s%s but %s is %s%s\n", a.actual.c_str(), DTypeName(x->dtype()).c_str(),
                 x->shape().ToString().c_str(), a.expected.c_str(), DTypeName(y->dtype()).c_str(), y->shape().ToString().c_str());
    return 2;
  }
  int64_t bad = 0, worst = -1;
  double worst_excess = 0, max_abs = 0;
  for (int64_t i = 0; i < x->num_elements(); ++i) {
    double u = x->ValueAsDouble(i), v = y->ValueAsDouble(i);
    if (std::isnan(u) || std::isnan(v) || std::isinf(u) || std::isinf(v)) {
      bool same = (std::isnan(u) && std::isnan(v)) || u == v;
      if (!same) ++bad, worst = i, worst_excess = INFINITY;
      continue;
    }
    double diff = std::fabs(u - v), allowed = a.atol + a.rtol * std::fabs(v);
    max_abs = std::max(max_abs, diff);
    if (diff > allowed) {
      ++bad;
      if (diff - allowed > worst_excess) worst_excess = diff - allowed, worst = i;
    }
  }
  std::printf("%s vs %s: %s, %lld of %lld elements outside rtol=%g atol=%g, max |diff| = %.3g", a.actual.c_str(),
              a.expected.c_str(), bad ? "DIFFERENT" : "match", static_cast<long long>(bad),
              static_cast<long long>(x->num_elements()), a.rtol, a.atol, max_abs);
  if (bad)
    std::printf(" (worst at flat index %lld: %.9g vs %.9g)", static_cast<long long>(worst), x->ValueAsDouble(worst),
                y->ValueAsDouble(worst));
  std::printf("\n");
  return bad ? 1 : 0;
}

}  // namespace graphjit
