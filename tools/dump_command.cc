#include "tools/dump_command.h"

#include <cstdio>
#include <filesystem>

#include "ir/graphdef.h"
#include "tools/options.h"

namespace graphjit {

void AddDumpCommand(CLI::App& app, DumpArgs* a) {
  CLI::App* dump =
      app.add_subcommand("dump", "Run a model once with the JIT on and write every compiled cluster's stages to a directory");
  dump->add_option("model", a->model, "GraphDef file (.pb binary, .pbtxt text)")->required();
  dump->add_option("--to", a->to, "The directory: DIR/<cluster>/<NN>_<stage>.<ext>")->required();
  AddInputOptions(dump, &a->inputs, /*always_random=*/false);
  dump->add_option("--config", a->config, "Text-format TensorFlow ConfigProto");
  dump->add_option("--jit", a->jit, "JIT level: on (= on_1) or on_2")
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "on_1", "on_2"}));
  dump->add_option("--device", a->device,
                   "Device: cpu, gpu or gpu-emu (gpu:N, gpu-emu:N: GPU N); for a GPU without a driver, PTX is written and the "
                   "graph runs on the CPU")
      ->check(CheckDevice);
  dump->add_option("--gpu_arch", a->gpu_arch, "The GPU code's target: sm_80 or sm_90 (default: the device's, else sm_90)")
      ->check(CLI::IsMember({"sm_80", "sm_90"}));
}

int DumpCommand(const DumpArgs& a) {
  auto options = LoadSessionOptions(a.config, a.jit);
  if (!options.ok()) return Fail(kExitBadInput, options.status().message());
  options->dump_to = a.to;
  if (!a.device.empty()) SetDevice(a.device, &*options);
  if (!a.gpu_arch.empty()) options->gpu_arch = a.gpu_arch;
  options->gpu_compile_only = true;
  auto graph_def = ReadGraphDefFile(a.model);
  if (!graph_def.ok()) return Fail(kExitBadInput, graph_def.status().message());
  auto session = Session::Create(*options, *graph_def);
  if (!session.ok()) return Fail(kExitBadInput, a.model + ": " + session.status().message());
  auto inputs = PrepareInputs(a.inputs, **session, *graph_def);
  if (!inputs.ok()) return Fail(kExitBadInput, inputs.status().message());
  std::vector<Tensor> out;
  Status s = (*session)->Run(inputs->feeds, inputs->fetches, {}, &out);
  if (!s.ok()) return Fail(kExitRunError, s.message());
  // What was written, in order.
  std::vector<std::string> files;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(a.to, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file()) files.push_back(std::filesystem::relative(it->path(), a.to).string());
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) std::printf("%s/%s\n", a.to.c_str(), f.c_str());
  std::fprintf(stderr, "graphjit: wrote %zu files to %s\n", files.size(), a.to.c_str());
  return 0;
}

}  // namespace graphjit
