// What a benchmark's figures are from. Every Google Benchmark suite here runs through
// Main, which adds the CPU's model name and what its code was made for (the reference
// kernels' vector extensions; the JIT's target and vector width) to the context that
// Google Benchmark prints above its table and writes into --benchmark_out's JSON: a figure
// read without its CPU says little, and the same code runs in 512-bit vectors on one
// x86-64 CPU and 256-bit on the next.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

#include "runtime/build_info.h"

namespace graphjit::bench {

// Google Benchmark's main, with "cpu", "reference_kernels" and the given facts in the context.
inline int Main(int argc, char** argv, const std::vector<std::pair<std::string, std::string>>& context = {}) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("cpu", CpuModelName());
  benchmark::AddCustomContext("reference_kernels", KernelsIsa());
  for (const auto& [key, value] : context) benchmark::AddCustomContext(key, value);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace graphjit::bench
