#include "tools/aot_command.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "ir/graphdef.h"
#include "jit/aot.h"
#include "tools/inputs.h"
#include "tools/options.h"

namespace graphjit {

void AddAotCommand(CLI::App& app, AotArgs* a) {
  CLI::App* aot =
      app.add_subcommand("aot", "Compile a graph ahead of time into an object file and a C++ header (no JIT at run time)");
  aot->add_option("model", a->model, "GraphDef file (.pb binary, .pbtxt text)")->required();
  aot->add_option("--shape", a->shapes, "NAME=d0,d1,...: a feed and its shape (repeatable; the arguments, in order)")->required();
  aot->add_option("--fetch", a->fetches, "A tensor to compute (repeatable; the results, in order)")->required();
  aot->add_option("-o,--out", a->out, "The directory to write <class>.o and <class>.h to")->required();
  aot->add_option("--class", a->class_name, "The generated class's name")->capture_default_str();
  aot->add_option("--jit_cpu", a->cpu, "The CPU to generate code for, an LLVM CPU name (default: this one)");
  aot->add_option("--jit_cpu_features", a->features, "CPU features on top of it: +a,-b");
}

int AotCommand(const AotArgs& a) {
  auto graph_def = ReadGraphDefFile(a.model);
  if (!graph_def.ok()) return Fail(kExitBadInput, graph_def.status().message());
  std::vector<AotFeed> feeds;
  for (const std::string& flag : a.shapes) {
    auto shape = ParseShapeFlag(flag);
    if (!shape.ok()) return Fail(kExitBadInput, shape.status().message());
    feeds.push_back({shape->first, shape->second});
  }
  AotOptions options;
  options.class_name = a.class_name;
  options.cpu = a.cpu;
  options.features = a.features;
  auto model = CompileAheadOfTime(*graph_def, feeds, a.fetches, options);
  if (!model.ok()) {
    const Code code = model.status().code();
    const bool bad_input = code == Code::kInvalidArgument || code == Code::kFailedPrecondition || code == Code::kUnimplemented;
    return Fail(bad_input ? kExitBadInput : 1, a.model + ": " + model.status().message());
  }
  std::error_code ec;
  std::filesystem::create_directories(a.out, ec);
  for (const auto& [file, text] : {std::pair{a.out + "/" + a.class_name + ".o", &model->object},
                                   std::pair{a.out + "/" + a.class_name + ".h", &model->header}}) {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << *text;
    if (!out.flush()) return Fail(1, "cannot write " + file);
    std::printf("%s\n", file.c_str());
  }
  return 0;
}

}  // namespace graphjit
