// runtime/op_traits.h against the ops graphjit registers and the ops its compiler takes:
// the traits are the one place that says what is compiled, so every op they, the
// compiler's tables or its sources name is registered, and the JIT compiles exactly the
// ops whose traits say so.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "jit/elemental.h"
#include "jit/fusion_plan.h"
#include "runtime/op_registry.h"
#include "runtime/op_traits.h"
#include "tests/support/test_util.h"

namespace graphjit {
namespace {

namespace fs = std::filesystem;

TEST(OpTraits, EveryOpTheyDescribeIsRegistered) {
  int size = 0;
  const OpTraitsEntry* table = OpTraitsTable(&size);
  ASSERT_GT(size, 50);
  for (int i = 0; i < size; ++i) {
    EXPECT_NE(OpRegistry::Global()->Find(table[i].op), nullptr) << table[i].op << " has traits but is not registered";
    if (i > 0) {
      EXPECT_LT(std::string(table[i - 1].op), table[i].op) << "not sorted, or twice";
    }
  }
}

TEST(OpTraits, AnOpTheyLackIsNeverCompiled) {
  const OpTraits& t = TraitsOf("NoSuchOp");
  EXPECT_EQ(t.pattern, OpPattern::kOther);
  EXPECT_FALSE(t.compiled());
  EXPECT_EQ(TraitsOf("Sum").reducer, OpReducer::kSum);
  EXPECT_EQ(TraitsOf("Reshape").weight, 0);
}

TEST(OpTraits, EveryOpTheElementalEmitterComputesIsRegisteredAndCompiled) {
  const std::vector<std::string> ops = ElementalOps();
  ASSERT_GT(ops.size(), 40u);
  for (const std::string& op : ops) {
    EXPECT_NE(OpRegistry::Global()->Find(op), nullptr) << op;
    const OpTraits& t = TraitsOf(op);
    EXPECT_TRUE(t.compiled()) << op << " has a lowering, but its traits say it is not compiled";
    EXPECT_TRUE(t.pattern == OpPattern::kElementwise || t.pattern == OpPattern::kBroadcast || t.pattern == OpPattern::kView)
        << op << " is " << OpPatternName(t.pattern);
  }
}

// Whether the JIT takes a node of `op` (on the CPU) for some element type: every data
// input of that type (Select's condition bool), the value inputs int32.
bool JitTakes(const std::string& op, std::string* why) {
  const OpDef* def = OpRegistry::Global()->Find(op);
  Node node;
  node.op = op;
  node.name = "n";
  const int inputs = std::max(def->min_inputs, std::min(def->max_inputs < 0 ? 2 : def->max_inputs, 2));
  node.inputs.assign(std::max(inputs, def->min_inputs), TensorId{0, 0});
  for (DType t : {DType::kFloat, DType::kInt32, DType::kInt64, DType::kBool}) {
    for (bool bool_first : {false, true}) {
      std::vector<DType> in;
      for (size_t i = 0; i < node.inputs.size(); ++i)
        in.push_back(!IsDataInput(node, static_cast<int>(i)) ? DType::kInt32 : i == 0 && bool_first ? DType::kBool : t);
      *why = WhyNotCompilable(node, in, {t});
      if (why->empty()) return true;
    }
  }
  return false;
}

TEST(OpTraits, TheJitCompilesExactlyTheOpsTheySayAreCompiled) {
  for (const std::string& op : OpRegistry::Global()->OpNames()) {
    const OpTraits& t = TraitsOf(op);
    if (t.pattern == OpPattern::kSource) continue;  // no computation
    std::string why;
    const bool takes = JitTakes(op, &why);
    if (t.compiled())
      EXPECT_TRUE(takes) << op << ": the traits say it is compiled from " << JitLevelName(t.jit_level)
                         << ", the JIT refuses it: " << why;
    else
      EXPECT_FALSE(takes) << op << ": the JIT compiles it, its traits say it is never clustered";
  }
}

// Every op the compiler's sources compare a node's op with, build, or find in a table keyed
// by op (a line that starts with {"Name", and a lowering, an entry or a node kind).
std::set<std::string> OpsNamedIn(const std::string& folder) {
  static const std::regex named(
      R"re((?:\bop\b|\bop\(\)|->op|\.op|ops\[\d\])\s*[!=]=\s*"(\w+)"|set_op\("(\w+)"\)|AddNode\([^;]*?,\s*"(\w+)"\)|add\("\w+",\s*"(\w+)"|^\s*\{"(\w+)",\s*(?:\{|Lowering\(|NodeKind::))re");
  std::set<std::string> ops;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(testing::SourcePath(folder)))) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".cc" && ext != ".h") continue;
    std::ifstream in(entry.path());
    for (std::string line; std::getline(in, line);)
      for (auto it = std::sregex_iterator(line.begin(), line.end(), named); it != std::sregex_iterator(); ++it)
        for (size_t g = 1; g < it->size(); ++g)
          if ((*it)[g].matched) ops.insert((*it)[g].str());
  }
  return ops;
}

// (python/src/ is left out: the TensorFlow plugin names TensorFlow's own ops, which
// graphjit does not run, to read them as ops it does: BiasAddGrad, _UnaryOpsComposition.)
TEST(OpTraits, EveryOpTheCompilerNamesIsRegistered) {
  std::set<std::string> named;
  for (const char* folder : {"jit", "clustering"}) {
    const std::set<std::string> ops = OpsNamedIn(folder);
    named.insert(ops.begin(), ops.end());
  }
  // The scan finds the comparisons it is meant to find.
  for (const char* op : {"Transpose", "ConcatV2", "LogSoftmax", "Add", "Cast", "_FusedMatMul"})
    EXPECT_TRUE(named.count(op)) << "the scan of jit/ missed " << op;
  for (const std::string& op : named)
    EXPECT_NE(OpRegistry::Global()->Find(op), nullptr)
        << "jit/, clustering/ or python/src/ names " << op << ", which is not a registered op";
}

// Quoted registered op names in a folder's sources (Const, Placeholder, Identity, NoOp and
// graphjit's own _JitCluster, which nodes are built with, aside).
int QuotedOpNames(const std::string& folder, std::string* where) {
  static const std::regex quoted(R"re("(\w+)")re");
  int count = 0;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(testing::SourcePath(folder)))) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".cc" && ext != ".h") continue;
    std::ifstream in(entry.path());
    for (std::string line; std::getline(in, line);)
      for (auto it = std::sregex_iterator(line.begin(), line.end(), quoted); it != std::sregex_iterator(); ++it) {
        const std::string name = (*it)[1].str();
        if (name == "Const" || name == "Placeholder" || name == "Identity" || name == "NoOp" || name == "_JitCluster") continue;
        if (OpRegistry::Global()->Find(name) == nullptr) continue;
        ++count;
        *where += " " + entry.path().filename().string() + ":" + name;
      }
  }
  return count;
}

// Clustering reads its policy from the traits and names no op; the compiler names an op
// only where the op has code of its own (its elemental lowering, the softmax expansion,
// GEMMs and convolutions taken apart, the indexed ops' index arithmetic, the pools and batch
// norms written out for GPUs, the logical reductions written as integer ones), about 210
// names, where there were about 300 (for fewer ops) before the traits.
TEST(OpTraits, OpsAreNamedOnlyWhereTheyHaveCodeOfTheirOwn) {
  std::string where;
  EXPECT_EQ(QuotedOpNames("clustering", &where), 0) << where;
  where.clear();
  const int compiler = QuotedOpNames("jit", &where) + QuotedOpNames("python/src", &where);
  EXPECT_LE(compiler, 215) << where;
}

}  // namespace
}  // namespace graphjit
