// What `run`, `bench` and `dump` share: feeds (.npy files or seeded random data for the
// placeholders, with --shape for their unknown dims) and fetches (as given, or every node
// of the model whose outputs nobody consumes).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "runtime/session.h"

namespace graphjit {

struct InputArgs {
  std::vector<std::string> feeds;  // NAME=FILE.npy
  std::vector<std::string> fetches;
  bool random_feeds = false;
  uint64_t seed = 0;
  std::vector<std::string> shapes;  // NAME=d0,d1,...
};

// --feed, --fetch, --seed, --shape, and --random-feeds unless `always_random`.
void AddInputOptions(CLI::App* command, InputArgs* args, bool always_random);

struct Inputs {
  std::vector<std::pair<std::string, Tensor>> feeds;
  std::vector<std::string> fetches;
};

// InvalidArgument (bad input) for an unreadable feed, a bad --shape, a placeholder left
// without a shape, or a fetch that names no tensor.
// "NAME=FILE.npy" as a --feed flag writes it: the name and the file's tensor.
StatusOr<std::pair<std::string, Tensor>> ReadFeedFlag(const std::string& flag);
// "NAME=d0,d1,..." (or NAME=scalar) as a --shape flag writes it.
StatusOr<std::pair<std::string, Shape>> ParseShapeFlag(const std::string& flag);

StatusOr<Inputs> PrepareInputs(const InputArgs& args, const Session& session, const tensorflow::GraphDef& model);

}  // namespace graphjit
