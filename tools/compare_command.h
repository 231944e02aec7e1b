// `graphjit compare`: are two .npy files equal within a tolerance?
#pragma once

#include <CLI/CLI.hpp>

namespace graphjit {

struct CompareArgs {
  std::string actual, expected;
  double rtol = 1e-5, atol = 1e-6;
};

void AddCompareCommand(CLI::App& app, CompareArgs* args);
// 0 if every element satisfies |a - e| <= atol + rtol * |e| (NaN matches NaN, Inf
// matches Inf of the same sign), 1 if not, 2 for unreadable files or shape/dtype mismatch.
int CompareCommand(const CompareArgs& args);

}  // namespace graphjit
