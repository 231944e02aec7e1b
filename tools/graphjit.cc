// The graphjit command line.
//
// Exit status, the same for every subcommand: 0 success; 2 bad usage or invalid input
// (a missing file, a malformed .npy, an invalid or unsupported model); 1 a run-time
// error (a missing feed, a wrong feed, a shape mismatch inside the graph).

#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>

#include "jit/jit.h"
#include "runtime/build_info.h"
#include "tools/aot_command.h"
#include "tools/bench_command.h"
#include "tools/clusters_command.h"
#include "tools/compare_command.h"
#include "tools/devices_command.h"
#include "tools/dump_command.h"
#include "tools/optimize_command.h"
#include "passes/passes.h"
#include "tools/run_command.h"

int main(int argc, char** argv) {
  CLI::App app("graphjit: runs TensorFlow graphs, and compiles their fusible parts", "graphjit");
  app.set_version_flag("--version", std::string("graphjit ") + GRAPHJIT_VERSION + " (reference kernels for " + graphjit::KernelsIsa() + ")");
  app.require_subcommand(0, 1);
  app.add_subcommand("help", "Show this help");

  graphjit::RunArgs run_args;
  graphjit::AddRunCommand(app, &run_args);
  graphjit::CompareArgs compare_args;
  graphjit::AddCompareCommand(app, &compare_args);
  graphjit::ClustersArgs clusters_args;
  graphjit::AddClustersCommand(app, &clusters_args);
  graphjit::OptimizeArgs optimize_args;
  graphjit::AddOptimizeCommand(app, &optimize_args);
  graphjit::BenchArgs bench_args;
  graphjit::AddBenchCommand(app, &bench_args);
  graphjit::DumpArgs dump_args;
  graphjit::AddDumpCommand(app, &dump_args);
  graphjit::DevicesArgs devices_args;
  graphjit::AddDevicesCommand(app, &devices_args);
  graphjit::AotArgs aot_args;
  graphjit::AddAotCommand(app, &aot_args);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "graphjit: %s (see 'graphjit help')\n", e.what());
    return 2;
  }
  // The graph optimizations and the JIT (its clustering pass and cluster kernel) are in
  // every session the tool creates; clustering does nothing at JIT level OFF unless
  // nodes ask for compilation.
  graphjit::RegisterGraphOptimizer();
  graphjit::RegisterJit();
  if (app.got_subcommand("run")) return graphjit::RunCommand(run_args);
  if (app.got_subcommand("clusters")) return graphjit::ClustersCommand(clusters_args);
  if (app.got_subcommand("compare")) return graphjit::CompareCommand(compare_args);
  if (app.got_subcommand("optimize")) return graphjit::OptimizeCommand(optimize_args);
  if (app.got_subcommand("bench")) return graphjit::BenchCommand(bench_args);
  if (app.got_subcommand("dump")) return graphjit::DumpCommand(dump_args);
  if (app.got_subcommand("devices")) return graphjit::DevicesCommand(devices_args);
  if (app.got_subcommand("aot")) return graphjit::AotCommand(aot_args);
  // `graphjit help` or no subcommand: the top-level help (for the latter, on stderr).
  const bool asked = app.got_subcommand("help");
  app.clear();
  std::string help = app.help("", CLI::AppFormatMode::Normal);
  if (asked) {
    std::cout << help;
    return 0;
  }
  std::cerr << help;
  return 2;
}
