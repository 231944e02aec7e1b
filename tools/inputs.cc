#include "tools/inputs.h"

#include <cstdlib>
#include <map>
#include <random>
#include <set>

#include "runtime/npy.h"

namespace graphjit {

namespace {

// Splits "NAME=VALUE" at the last '=' (tensor names contain no '=').
bool SplitAssignment(const std::string& s, std::string* name, std::string* value) {
  size_t eq = s.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size()) return false;
  *name = s.substr(0, eq);
  *value = s.substr(eq + 1);
  return true;
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
Status AddRandomFeeds(const InputArgs& a, const Session& session, std::vector<std::pair<std::string, Tensor>>* feeds) {
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
      return InvalidArgument("placeholder '" + n->name + "' has shape " + declared.ToString() + "; give its dims with --shape " +
                             n->name + "=d0,d1,...");
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

}  // namespace

StatusOr<std::pair<std::string, Tensor>> ReadFeedFlag(const std::string& s) {
  std::string name, file;
  if (!SplitAssignment(s, &name, &file)) return InvalidArgument("--feed expects NAME=FILE.npy, got '" + s + "'");
  GJ_ASSIGN_OR_RETURN(Tensor t, ReadNpy(file));
  return std::make_pair(name, std::move(t));
}

StatusOr<std::pair<std::string, Shape>> ParseShapeFlag(const std::string& s) {
  std::string name, dims;
  if (!SplitAssignment(s, &name, &dims)) return InvalidArgument("--shape expects NAME=d0,d1,..., got '" + s + "'");
  GJ_ASSIGN_OR_RETURN(std::vector<int64_t> v, ParseDims(s, dims));
  return std::make_pair(name, Shape(v));
}

void AddInputOptions(CLI::App* command, InputArgs* a, bool always_random) {
  command->add_option("--feed", a->feeds, "NAME=FILE.npy: a value for a placeholder or any tensor")->take_all();
  command->add_option("--fetch", a->fetches, "Tensor to fetch (node or node:i); default: every node without consumers");
  if (always_random) {
    a->random_feeds = true;
  } else {
    command->add_flag("--random-feeds", a->random_feeds, "Fill every placeholder without a feed with seeded random data");
  }
  command->add_option("--seed", a->seed, "Seed for the random feeds");
  command->add_option("--shape", a->shapes, "NAME=d0,d1,...: shape of a random feed whose placeholder has unknown dims");
}

StatusOr<Inputs> PrepareInputs(const InputArgs& a, const Session& session, const tensorflow::GraphDef& model) {
  Inputs inputs;
  for (const std::string& f : a.feeds) {
    GJ_ASSIGN_OR_RETURN(auto feed, ReadFeedFlag(f));
    inputs.feeds.push_back(std::move(feed));
  }
  if (a.random_feeds) {
    GJ_RETURN_IF_ERROR(AddRandomFeeds(a, session, &inputs.feeds));
  } else if (!a.shapes.empty()) {
    return InvalidArgument("--shape only applies with --random-feeds");
  }
  // Fetches: as given, else every node of the model whose outputs nobody consumes
  // (decided on the graph as written, before graph passes rewrite it).
  inputs.fetches = a.fetches;
  if (inputs.fetches.empty()) {
    std::set<std::string> consumed;
    for (const auto& nd : model.node())
      for (const auto& in : nd.input()) {
        ParsedInput p;
        if (ParseInputString(in, &p) && !p.control) consumed.insert(std::string(p.node));
      }
    for (const auto& nd : model.node())
      if (!consumed.count(nd.name()) && session.ResolveTensor(nd.name()).ok())  // NoOps do not resolve
        inputs.fetches.push_back(nd.name());
  }
  for (const std::string& f : inputs.fetches) {
    auto id = session.ResolveTensor(f);
    if (!id.ok()) return InvalidArgument("--fetch " + f + ": " + id.status().message());
  }
  return inputs;
}

}  // namespace graphjit
