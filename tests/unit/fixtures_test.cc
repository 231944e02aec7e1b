// Every fixture written by TensorFlow (tests/data/**/manifest.json) runs in graphjit
// and matches TensorFlow's own outputs within the tolerance its manifest states.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "ir/graphdef.h"
#include "runtime/npy.h"
#include "tests/support/test_util.h"

namespace graphjit {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> Manifests() {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(GRAPHJIT_TEST_DATA))
    if (e.path().filename() == "manifest.json") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string CaseName(const ::testing::TestParamInfo<std::string>& info) {
  std::string rel = fs::relative(fs::path(info.param).parent_path(), GRAPHJIT_TEST_DATA).string();
  for (char& c : rel)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return rel;
}

class Fixture : public ::testing::TestWithParam<std::string> {};

void Check(const std::string& manifest_path, int threads) {
  fs::path dir = fs::path(manifest_path).parent_path();
  nlohmann::json m = nlohmann::json::parse(std::ifstream(manifest_path));
  auto gd = ReadGraphDefFile((dir / m["model"].get<std::string>()).string());
  ASSERT_TRUE(gd.ok()) << gd.status().ToString();
  SessionOptions options;
  options.intra_op_threads = options.inter_op_threads = threads;
  auto session = Session::Create(options, *gd);
  ASSERT_TRUE(session.ok()) << session.status().ToString();

  std::vector<std::pair<std::string, Tensor>> feeds;
  for (auto& [name, file] : m["feeds"].items()) {
    auto t = ReadNpy((dir / file.get<std::string>()).string());
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    feeds.emplace_back(name, *t);
  }
  std::vector<std::string> fetches;
  std::vector<Tensor> expected;
  for (auto& [name, file] : m["fetches"].items()) {
    fetches.push_back(name);
    auto t = ReadNpy((dir / file.get<std::string>()).string());
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    expected.push_back(*t);
  }
  const double rtol = m["tolerance"]["rtol"], atol = m["tolerance"]["atol"];
  std::vector<Tensor> outputs;
  Status s = (*session)->Run(feeds, fetches, {}, &outputs);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (size_t i = 0; i < fetches.size(); ++i) {
    SCOPED_TRACE("fetch " + fetches[i]);
    Tensor got = outputs[i];
    // .npy has no bfloat16: compare such outputs as float32, as written by --out.
    if (got.dtype() == DType::kBFloat16 || (got.dtype() == DType::kHalf && expected[i].dtype() == DType::kFloat))
      got = *CastTensor(got, DType::kFloat);
    ASSERT_EQ(DTypeName(got.dtype()), DTypeName(expected[i].dtype()));
    ASSERT_EQ(got.shape(), expected[i].shape());
    int reported = 0;
    for (int64_t j = 0; j < got.num_elements(); ++j) {
      double a = got.ValueAsDouble(j), e = expected[i].ValueAsDouble(j);
      bool ok = (std::isnan(a) && std::isnan(e)) || a == e || std::fabs(a - e) <= atol + rtol * std::fabs(e);
      if (!ok && reported++ < 5) ADD_FAILURE() << "element " << j << ": graphjit " << a << ", TensorFlow " << e;
    }
  }
}

TEST_P(Fixture, MatchesTensorFlow) { Check(GetParam(), 0); }
TEST_P(Fixture, MatchesTensorFlowOnOneThread) { Check(GetParam(), 1); }

INSTANTIATE_TEST_SUITE_P(TensorFlow, Fixture, ::testing::ValuesIn(Manifests()), CaseName);

TEST(Fixtures, ArePresent) {
  auto m = Manifests();
  EXPECT_GE(m.size(), 2u);
  bool mnist = false, mlp = false;
  for (const auto& p : m) {
    mnist |= p.find("mnist_softmax") != std::string::npos;
    mlp |= p.find("keras_mlp") != std::string::npos;
  }
  EXPECT_TRUE(mnist && mlp);
}

}  // namespace
}  // namespace graphjit
