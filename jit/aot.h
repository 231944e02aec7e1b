// Ahead-of-time compilation (`graphjit aot`), as tfcompile does it: a whole graph, at
// fixed feed shapes, compiled into one object file of kernels and constants, and a C++
// header declaring a class that holds its buffers and runs it with the small runtime in
// aot/ (no MLIR or LLVM at run time).
//
// The graph goes through the session's graph passes and is clustered at ON_2: every op
// between the feeds and the fetches must land in one cluster, which is specialized,
// planned and emitted as the JIT does it, with every GEMM as loops (no library calls).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/proto/graph.pb.h"
#include "ir/shape.h"
#include "ir/status.h"

namespace graphjit {

struct AotFeed {
  std::string name;  // a Placeholder of the graph
  Shape shape;       // fully defined
};

struct AotOptions {
  std::string class_name = "Model";  // the header's class (a C++ identifier)
  std::string cpu;                   // an LLVM CPU name; empty: the host's
  std::string features;              // "+a,-b" on top of it
};

struct AotModel {
  std::string object;  // x86-64 ELF, position independent
  std::string header;  // <class_name>.h
};

// FailedPrecondition (`graphjit aot` exits 2) if ops between the feeds and the fetches
// cannot be compiled, naming each; InvalidArgument for bad feeds, fetches or options.
// The JIT must be registered (RegisterJit).
StatusOr<AotModel> CompileAheadOfTime(const tensorflow::GraphDef& graph, const std::vector<AotFeed>& feeds,
                                      const std::vector<std::string>& fetches, const AotOptions& options);

}  // namespace graphjit
