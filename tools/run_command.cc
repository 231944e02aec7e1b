#include "tools/run_command.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "ir/attr.h"
#include "ir/graphdef.h"
#include "runtime/npy.h"
#include "runtime/session.h"
#include "jit/jit.h"
#include "tools/options.h"

namespace graphjit {

void AddRunCommand(CLI::App& app, RunArgs* a) {
  CLI::App* run = app.add_subcommand("run", "Run a model (GraphDef .pb or .pbtxt) and print what it fetched");
  run->add_option("model", a->model, "GraphDef file (.pb binary, .pbtxt text)")->required();
  run->add_option("--feed", a->feeds, "NAME=FILE.npy: a value for a placeholder or any tensor")->take_all();
  run->add_option("--fetch", a->fetches, "Tensor to fetch (node or node:i); default: every node without consumers");
  run->add_option("--out", a->out_dir, "Write each fetched tensor to DIR/<name>.npy");
  run->add_option("--config", a->config, "Text-format TensorFlow ConfigProto");
  run->add_option("--jit", a->jit, "Global JIT level: off, on (= on_1), on_2")
      ->check(CLI::IsMember({"off", "on", "on_1", "on_2", "default"}));
  run->add_option("--threads", a->threads, "Intra- and inter-op threads (default: one per core)")
      ->check(CLI::Range(1, 1024));
  run->add_option("--repeat", a->repeat, "Run N times (timings, caches)")->check(CLI::Range(1, 1000000));
  run->add_flag("--random-feeds", a->random_feeds, "Fill every placeholder without a feed with seeded random data");
  run->add_option("--seed", a->seed, "Seed for --random-feeds");
  run->add_option("--shape", a->shapes, "NAME=d0,d1,...: shape of a random feed whose placeholder has unknown dims");
  run->add_option("--trace", a->trace, "Write a Chrome trace-event file of the (last) run");
  auto* on = run->add_flag("--optimize", a->optimize, "Run the graph optimizations (the default)");
  run->add_flag("--no-optimize", a->no_optimize, "Skip the graph optimizations (pruning, folding, remapping, ...)")
      ->excludes(on);
  run->add_flag("--stats", a->stats,
                "Print the JIT's counters last: clusters, compiled, fallback, cache hits and misses, compile ms");
}

namespace {

double Millis(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

// Splits "NAME=VALUE" at the last '=' (tensor names contain no '=').
bool SplitAssignment(const std::string& s, std::string* name, std::string* value) {
  size_t eq = s.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size()) return false;
  *name = s.substr(0, eq);
  *value = s.substr(eq + 1);
  return true;
}

std::string Summary(const std::string& name, const Tensor& t) {
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  bool nan = false;
  const int64_t n = t.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    double v = t.ValueAsDouble(i);
    nan |= std::isnan(v);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  if (n == 0 || nan) lo = hi = NAN;
  char buf[256];
  std::snprintf(buf, sizeof buf, " min=%.6g max=%.6g mean=%.6g", lo, hi, n ? sum / n : NAN);
  return name + " " + DTypeName(t.dtype()) + " " + t.shape().ToString() + buf;
}

StatusOr<std::vector<int64_t>> ParseDims(const std::string& arg, const std::string& dims) {
  std::vector<int64_t> v;
  if (dims == "scalar" || dims == "[]") return v;
  size_t pos = 0;
  while (pos <= dims.size()) {
    size_t comma = dims.find(',', pos);
    if (comma == std::string::npos) comma = dims.size();
    std::string d = dims.substr(pos, comma - pos);
    char* end = nullptr;
    long long x = std::strtoll(d.c_str(), &end, 10);
    if (d.empty() || *end != '\0' || x < 0) return InvalidArgument("--shape " + arg + ": bad dimension '" + d + "'");
    v.push_back(x);
    pos = comma + 1;
  }
  return v;
}

// Fills every placeholder that has no feed with seeded random data: floats standard
// normal, integers in [0, 10), bools fair coins.
Status AddRandomFeeds(const RunArgs& a, const Session& session, std::vector<std::pair<std::string, Tensor>>* feeds) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const std::string& s : a.shapes) {
    std::string name, dims;
    if (!SplitAssignment(s, &name, &dims)) return InvalidArgument("--shape expects NAME=d0,d1,..., got '" + s + "'");
    GJ_ASSIGN_OR_RETURN(shapes[name], ParseDims(s, dims));
  }
  std::set<std::string> fed;
  for (const auto& f : *feeds) fed.insert(f.first);
  std::mt19937_64 rng(a.seed);
  std::normal_distribution<double> normal;
  std::uniform_int_distribution<int> digit(0, 9);
  const Graph& g = session.graph().graph;
  for (int id = 0; id < g.num_nodes(); ++id) {
    const Node* n = g.node(id);
    if (n->op != "Placeholder" || fed.count(n->name) || fed.count(n->name + ":0")) continue;
    DType dtype = session.graph().info(id).dtypes[0];
    Shape declared = session.graph().info(id).shapes[0];
    Shape shape = declared;
    if (auto it = shapes.find(n->name); it != shapes.end()) {
      shape = Shape(it->second);
      if (!IsCompatible(declared, shape))
        return InvalidArgument("--shape " + n->name + "=" + shape.ToString() + " does not match the placeholder's " +
                               declared.ToString());
    }
    if (!shape.IsFullyDefined())
      return InvalidArgument("placeholder '" + n->name + "' has shape " + declared.ToString() +
                             "; give its dims with --shape " + n->name + "=d0,d1,...");
    GJ_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(dtype, shape));
    VisitDType(dtype, [&](auto tag) {
      using T = decltype(tag);
      for (int64_t i = 0; i < t.num_elements(); ++i) {
        if constexpr (std::is_same_v<T, bool>) {
          t.data<T>()[i] = digit(rng) < 5;
        } else if constexpr (std::is_integral_v<T>) {
          t.data<T>()[i] = static_cast<T>(digit(rng));
        } else {
          t.data<T>()[i] = static_cast<T>(static_cast<float>(normal(rng)));
        }
      }
    });
    feeds->emplace_back(n->name, std::move(t));
  }
  for (const auto& [name, dims] : shapes)
    if (g.FindNode(name) == nullptr) return InvalidArgument("--shape " + name + ": no such placeholder");
  return Status::Ok();
}

// "y" -> "y.npy", "y:1" -> "y_1.npy", "a/b" -> "a_b.npy".
std::string OutputFileName(const std::string& fetch) {
  std::string f = fetch;
  std::replace(f.begin(), f.end(), '/', '_');
  std::replace(f.begin(), f.end(), ':', '_');
  return f + ".npy";
}

}  // namespace

int RunCommand(const RunArgs& a) {
  using Clock = std::chrono::steady_clock;
  // 1. Options: --config, then GRAPHJIT_FLAGS, then the command line.
  auto loaded = LoadSessionOptions(a.config, a.jit);
  if (!loaded.ok()) return Fail(kExitBadInput, loaded.status().message());
  SessionOptions options = *loaded;
  if (a.threads > 0) options.intra_op_threads = options.inter_op_threads = a.threads;
  if (a.optimize || a.no_optimize) options.rewrite_options.set_disable_meta_optimizer(a.no_optimize);


  // 2. The model.
  auto t0 = Clock::now();
  auto graph_def = ReadGraphDefFile(a.model);
  if (!graph_def.ok()) return Fail(kExitBadInput, graph_def.status().message());
  auto session = Session::Create(options, *graph_def);
  if (!session.ok()) return Fail(kExitBadInput, a.model + ": " + session.status().message());
  auto t1 = Clock::now();

  // 3. Feeds.
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (const std::string& f : a.feeds) {
    std::string name, file;
    if (!SplitAssignment(f, &name, &file)) return Fail(kExitBadInput, "--feed expects NAME=FILE.npy, got '" + f + "'");
    auto t = ReadNpy(file);
    if (!t.ok()) return Fail(kExitBadInput, t.status().message());
    feeds.emplace_back(name, std::move(t).value());
  }
  if (a.random_feeds) {
    Status s = AddRandomFeeds(a, **session, &feeds);
    if (!s.ok()) return Fail(kExitBadInput, s.message());
  } else if (!a.shapes.empty()) {
    return Fail(kExitBadInput, "--shape only applies with --random-feeds");
  }

  // 4. Fetches: as given, else every node of the model whose outputs nobody consumes
  //    (decided on the graph as written, before graph passes rewrite it).
  std::vector<std::string> fetches = a.fetches;
  const AnalyzedGraph& ag = (*session)->graph();
  if (fetches.empty()) {
    std::set<std::string> consumed;
    for (const auto& nd : graph_def->node())
      for (const auto& in : nd.input()) {
        ParsedInput p;
        if (ParseInputString(in, &p) && !p.control) consumed.insert(std::string(p.node));
      }
    for (const auto& nd : graph_def->node()) {
      if (consumed.count(nd.name())) continue;
      auto id = (*session)->ResolveTensor(nd.name());
      if (id.ok()) fetches.push_back(nd.name());  // nodes without outputs (NoOp) do not resolve
    }
  }
  for (const std::string& f : fetches) {
    auto id = (*session)->ResolveTensor(f);
    if (!id.ok()) return Fail(kExitBadInput, "--fetch " + f + ": " + id.status().message());
  }
  if (!a.out_dir.empty()) {
    std::map<std::string, std::string> files;
    for (const std::string& f : fetches) {
      auto [it, inserted] = files.emplace(OutputFileName(f), f);
      if (!inserted)
        return Fail(kExitBadInput, "fetches '" + it->second + "' and '" + f + "' would both be written to " + it->first);
    }
    std::error_code ec;
    std::filesystem::create_directories(a.out_dir, ec);
    if (ec) return Fail(kExitBadInput, "cannot create output directory '" + a.out_dir + "': " + ec.message());
  }

  // 5. Run, --repeat times.
  std::vector<Tensor> outputs;
  std::vector<double> run_ms;
  Tracer tracer;
  for (int r = 0; r < a.repeat; ++r) {
    RunOptions ro;
    if (!a.trace.empty() && r == a.repeat - 1) ro.tracer = &tracer;
    auto s0 = Clock::now();
    Status s = (*session)->Run(ro, feeds, fetches, {}, &outputs);
    run_ms.push_back(Millis(Clock::now() - s0));
    if (!s.ok()) return Fail(kExitRunError, s.message());
  }

  // 6. Results.
  for (size_t i = 0; i < fetches.size(); ++i) {
    std::printf("%s\n", Summary(fetches[i], outputs[i]).c_str());
    if (!a.out_dir.empty()) {
      Status s = WriteNpy((std::filesystem::path(a.out_dir) / OutputFileName(fetches[i])).string(), outputs[i]);
      if (!s.ok()) return Fail(kExitBadInput, s.message());
    }
  }
  if (!a.trace.empty()) {
    Status s = tracer.WriteChromeTrace(a.trace);
    if (!s.ok()) return Fail(kExitBadInput, s.message());
  }
  std::sort(run_ms.begin(), run_ms.end());
  std::fprintf(stderr, "graphjit: load %.2f ms, run %.3f ms (median of %d, min %.3f ms), %d nodes, jit %s\n",
               Millis(t1 - t0), run_ms[run_ms.size() / 2], a.repeat, run_ms.front(), ag.graph.num_nodes(),
               JitLevelName(options.jit_level));
  if (a.stats) std::printf("%s\n", JitStatsLine().c_str());
  return 0;
}

}  // namespace graphjit
