// The graphjit command line (tools/command_line.h).

#include "tools/command_line.h"

#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>

#include "jit/jit.h"
#include "passes/passes.h"
#include "runtime/build_info.h"
#include "tools/aot_command.h"
#include "tools/bench_command.h"
#include "tools/clusters_command.h"
#include "tools/compare_command.h"
#include "tools/devices_command.h"
#include "tools/dump_command.h"
#include "tools/optimize_command.h"
#include "tools/run_command.h"

namespace graphjit {

int CommandLine(int argc, const char* const* argv) {
  CLI::App app("graphjit: runs TensorFlow graphs, and compiles their fusible parts", "graphjit");
  app.set_version_flag("--version",
                       std::string("graphjit ") + GRAPHJIT_VERSION + " (reference kernels for " + KernelsIsa() + ")");
  app.require_subcommand(0, 1);
  app.add_subcommand("help", "Show this help");

  RunArgs run_args;
  AddRunCommand(app, &run_args);
  CompareArgs compare_args;
  AddCompareCommand(app, &compare_args);
  ClustersArgs clusters_args;
  AddClustersCommand(app, &clusters_args);
  OptimizeArgs optimize_args;
  AddOptimizeCommand(app, &optimize_args);
  BenchArgs bench_args;
  AddBenchCommand(app, &bench_args);
  DumpArgs dump_args;
  AddDumpCommand(app, &dump_args);
  DevicesArgs devices_args;
  AddDevicesCommand(app, &devices_args);
  AotArgs aot_args;
  AddAotCommand(app, &aot_args);

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
  RegisterGraphOptimizer();
  RegisterJit();
  if (app.got_subcommand("run")) return RunCommand(run_args);
  if (app.got_subcommand("clusters")) return ClustersCommand(clusters_args);
  if (app.got_subcommand("compare")) return CompareCommand(compare_args);
  if (app.got_subcommand("optimize")) return OptimizeCommand(optimize_args);
  if (app.got_subcommand("bench")) return BenchCommand(bench_args);
  if (app.got_subcommand("dump")) return DumpCommand(dump_args);
  if (app.got_subcommand("devices")) return DevicesCommand(devices_args);
  if (app.got_subcommand("aot")) return AotCommand(aot_args);
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

}  // namespace graphjit
