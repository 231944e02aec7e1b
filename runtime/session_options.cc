#include "runtime/session_options.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>

#include "ir/graphdef.h"
#include "ir/logging.h"

namespace graphjit {

const char* JitLevelName(JitLevel level) {
  switch (level) {
    case JitLevel::kDefault: return "DEFAULT";
    case JitLevel::kOff: return "OFF";
    case JitLevel::kOn1: return "ON_1";
    case JitLevel::kOn2: return "ON_2";
  }
  return "?";
}

bool ParseJitLevel(const std::string& text, JitLevel* out) {
  if (text == "off" || text == "OFF")
    *out = JitLevel::kOff;
  else if (text == "on" || text == "on_1" || text == "ON_1")
    *out = JitLevel::kOn1;
  else if (text == "on_2" || text == "ON_2")
    *out = JitLevel::kOn2;
  else if (text == "default" || text == "DEFAULT")
    *out = JitLevel::kDefault;
  else
    return false;
  return true;
}

SessionOptions SessionOptions::FromConfigProto(const tensorflow::ConfigProto& config) {
  SessionOptions o;
  o.intra_op_threads = config.intra_op_parallelism_threads();
  o.inter_op_threads = config.inter_op_parallelism_threads();
  const auto& opt = config.graph_options().optimizer_options();
  o.jit_level = static_cast<JitLevel>(opt.global_jit_level());
  o.cpu_global_jit = opt.cpu_global_jit();
  o.rewrite_options = config.graph_options().rewrite_options();
  o.gpu_memory_fraction = config.gpu_options().per_process_gpu_memory_fraction();
  o.gpu_allow_growth = config.gpu_options().allow_growth();
  return o;
}

StatusOr<SessionOptions> SessionOptions::FromConfigFile(const std::string& path) {
  tensorflow::ConfigProto config;
  GJ_RETURN_IF_ERROR(ReadTextProtoFile(path, &config));
  return FromConfigProto(config);
}

tensorflow::ConfigProto SessionOptions::ToConfigProto() const {
  tensorflow::ConfigProto c;
  c.set_intra_op_parallelism_threads(intra_op_threads);
  c.set_inter_op_parallelism_threads(inter_op_threads);
  auto* opt = c.mutable_graph_options()->mutable_optimizer_options();
  opt->set_global_jit_level(static_cast<tensorflow::OptimizerOptions::GlobalJitLevel>(jit_level));
  opt->set_cpu_global_jit(cpu_global_jit);
  *c.mutable_graph_options()->mutable_rewrite_options() = rewrite_options;
  c.mutable_gpu_options()->set_per_process_gpu_memory_fraction(gpu_memory_fraction);
  c.mutable_gpu_options()->set_allow_growth(gpu_allow_growth);
  return c;
}

std::vector<std::string> SplitList(const std::string& list) {
  std::vector<std::string> items;
  size_t p = 0;
  while (p <= list.size()) {
    size_t comma = list.find(',', p);
    if (comma == std::string::npos) comma = list.size();
    if (comma > p) items.push_back(list.substr(p, comma - p));
    p = comma + 1;
  }
  return items;
}

Status ApplyFlags(const std::string& flags, SessionOptions* options) {
  size_t pos = 0;
  while (pos < flags.size()) {
    size_t start = flags.find_first_not_of(" \t\n", pos);
    if (start == std::string::npos) break;
    size_t end = flags.find_first_of(" \t\n", start);
    if (end == std::string::npos) end = flags.size();
    std::string flag = flags.substr(start, end - start);
    pos = end;
    size_t eq = flag.find('=');
    std::string key = flag.substr(0, eq), value = eq == std::string::npos ? "" : flag.substr(eq + 1);
    // An integer in [min, max] (max: an int's, for the options that are ints).
    auto number = [&](int64_t min, int64_t* out, int64_t max = INT32_MAX) -> Status {
      char* end = nullptr;
      errno = 0;
      long long v = std::strtoll(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || errno == ERANGE || v < min || v > max)
        return InvalidArgument("GRAPHJIT_FLAGS: " + key + " must be an integer from " + std::to_string(min) + " to " +
                               std::to_string(max) + ", got '" + value + "'");
      *out = v;
      return Status::Ok();
    };
    int64_t v = 0;
    if (key == "--jit_level") {
      if (!ParseJitLevel(value, &options->jit_level))
        return InvalidArgument("GRAPHJIT_FLAGS: --jit_level must be off, on, on_1, on_2 or default, got '" + value + "'");
    } else if (key == "--min_cluster_size") {
      GJ_RETURN_IF_ERROR(number(1, &v));
      options->min_cluster_size = static_cast<int>(v);
    } else if (key == "--max_cluster_size") {
      GJ_RETURN_IF_ERROR(number(0, &v));
      options->max_cluster_size = static_cast<int>(v);
    } else if (key == "--clustering_fuel") {
      GJ_RETURN_IF_ERROR(number(-1, &v, INT64_MAX));
      options->clustering_fuel = v;
    } else if (key == "--cluster_exclude_ops") {
      options->cluster_exclude_ops = SplitList(value);
    } else if (key == "--disable_pass") {
      options->disabled_passes = SplitList(value);
    } else if (key == "--jit_strict") {
      options->jit_strict = value.empty() || value == "true" || value == "1";
    } else if (key == "--gpu_ptxas_check") {
      options->gpu_ptxas_check = value.empty() || value == "true" || value == "1";
    } else if (key == "--gpu_graphs") {
      if (value != "on" && value != "off")
        return InvalidArgument("GRAPHJIT_FLAGS: --gpu_graphs must be on or off, got '" + value + "'");
      options->gpu_graphs = value == "on";
    } else if (key == "--gpu_tf32") {
      if (value != "on" && value != "off")
        return InvalidArgument("GRAPHJIT_FLAGS: --gpu_tf32 must be on or off, got '" + value + "'");
      options->gpu_tf32 = value == "on";
    } else if (key == "--gpu_autotune") {
      if (value != "on" && value != "off")
        return InvalidArgument("GRAPHJIT_FLAGS: --gpu_autotune must be on or off, got '" + value + "'");
      options->gpu_autotune = value == "on";
    } else if (key == "--gpu_arch") {
      if (value != "sm_80" && value != "sm_90")
        return InvalidArgument("GRAPHJIT_FLAGS: --gpu_arch must be sm_80 or sm_90, got '" + value + "'");
      options->gpu_arch = value;
    } else if (key == "--jit_check_numerics") {
      using Check = SessionOptions::NumericsCheck;
      if (value.empty() || value == "warn")
        options->jit_check_numerics = Check::kWarn;
      else if (value == "fail")
        options->jit_check_numerics = Check::kFail;
      else if (value == "off")
        options->jit_check_numerics = Check::kOff;
      else
        return InvalidArgument("GRAPHJIT_FLAGS: --jit_check_numerics must be warn, fail or off, got '" + value + "'");
    } else if (key == "--jit_async") {
      options->jit_async = value.empty() || value == "true" || value == "1";
    } else if (key == "--jit_verbose") {
      options->jit_verbose = value.empty() || value == "true" || value == "1";
    } else if (key == "--dump_to") {
      if (value.empty()) return InvalidArgument("GRAPHJIT_FLAGS: --dump_to needs a directory");
      options->dump_to = value;
    } else if (key == "--jit_cpu") {
      if (value.empty()) return InvalidArgument("GRAPHJIT_FLAGS: --jit_cpu needs an LLVM CPU name (e.g. x86-64-v3)");
      options->jit_cpu = value;
    } else if (key == "--jit_cpu_features") {
      options->jit_cpu_features = value;
    } else if (key == "--prefer_vector_width") {
      GJ_RETURN_IF_ERROR(number(0, &v));
      if (v != 128 && v != 256 && v != 512)
        return InvalidArgument("GRAPHJIT_FLAGS: --prefer_vector_width must be 128, 256 or 512, got '" + value + "'");
      options->prefer_vector_width = static_cast<int>(v);
    } else if (key == "--jit_cache_mb") {
      GJ_RETURN_IF_ERROR(number(1, &options->jit_cache_mb, int64_t{1} << 40));
    } else if (key == "--cache_dir") {
      if (value.empty()) return InvalidArgument("GRAPHJIT_FLAGS: --cache_dir needs a directory");
      options->cache_dir = value;
    } else if (key == "--cache_max_mb") {
      GJ_RETURN_IF_ERROR(number(1, &options->cache_max_mb, int64_t{1} << 40));
    } else if (key == "--device") {
      auto device = ParseDevice(value);
      if (!device.ok() || value.empty())
        return InvalidArgument("GRAPHJIT_FLAGS: --device must be cpu, gpu, gpu-emu, gpu:N or gpu-emu:N, got '" + value + "'");
      options->device = device->kind;
      options->gpu_index = device->index;
    } else if (key == "--v") {
      // The process's verbose level: the logger reads it from GRAPHJIT_FLAGS itself
      // (ir/logging.h), as the messages it filters come before any session; here it is checked.
      int level = 0;
      if (!ParseVerboseLevel(value, &level))
        return InvalidArgument("GRAPHJIT_FLAGS: --v must be a verbose level (0, 1, 2, ...), got '" + value + "'");
    } else if (key == "--cuda_driver") {
      if (value.empty()) return InvalidArgument("GRAPHJIT_FLAGS: --cuda_driver needs the path of a CUDA driver library");
      options->cuda_driver = value;
      if (options->device == DeviceKind::kCpu) options->device = DeviceKind::kGpu;
    } else {
      return InvalidArgument(
          "GRAPHJIT_FLAGS: unknown flag '" + flag +
          "' (known: --jit_level, --min_cluster_size, --max_cluster_size, --cluster_exclude_ops, "
          "--clustering_fuel, --disable_pass, --dump_to, --jit_strict, --jit_verbose, --jit_check_numerics, --jit_async, "
          "--jit_cpu, "
          "--jit_cpu_features, --prefer_vector_width, --jit_cache_mb, --cache_dir, --cache_max_mb, --device, --cuda_driver, "
          "--gpu_arch, "
          "--gpu_ptxas_check, --gpu_graphs, --gpu_tf32, --gpu_autotune, --v)");
    }
  }
  return Status::Ok();
}

}  // namespace graphjit
