// libFuzzer target: bytes -> a session's configuration, as `graphjit run --config F` and
// GRAPHJIT_FLAGS give it: the bytes up to the first NUL are a text-format ConfigProto, the
// rest GRAPHJIT_FLAGS. Options that parse are checked (the JIT's target) and used: a session
// of a small graph is created and run with them. Bad configuration must end in an error
// status: any crash, hang or sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/text_format.h>

#include "jit/jit.h"
#include "passes/passes.h"
#include "runtime/session.h"

namespace {

class Quiet : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
};

// x [2, 3] -> softmax(relu(x) * 2): a cluster at every JIT level.
tensorflow::GraphDef SmallGraph() {
  tensorflow::GraphDef gd;
  google::protobuf::TextFormat::ParseFromString(R"(
    node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim { size: 2 } dim { size: 3 } } } } }
    node { name: "two" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 2 } } } }
    node { name: "r" op: "Relu" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "m" op: "Mul" input: "r" input: "two" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "y" op: "Softmax" input: "m" attr { key: "T" value { type: DT_FLOAT } } })",
                                                &gd);
  return gd;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  graphjit::RegisterGraphOptimizer();
  graphjit::RegisterJit();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const size_t nul = bytes.find('\0');
  tensorflow::ConfigProto config;
  google::protobuf::TextFormat::Parser parser;
  Quiet quiet;
  parser.RecordErrorsTo(&quiet);
  if (!parser.ParseFromString(bytes.substr(0, nul), &config)) return 0;
  graphjit::SessionOptions options = graphjit::SessionOptions::FromConfigProto(config);
  if (nul != std::string::npos && !graphjit::ApplyFlags(bytes.substr(nul + 1), &options).ok()) return 0;
  if (!graphjit::CheckJitTarget(options).ok()) return 0;
  options.dump_to.clear();  // no files from fuzz inputs
  options.cache_dir.clear();
  options.device = graphjit::DeviceKind::kCpu;  // the CPU: a GPU's driver is not the configuration's parser
  options.cuda_driver.clear();
  auto session = graphjit::Session::Create(options, SmallGraph());
  if (!session.ok()) return 0;
  graphjit::Tensor x = graphjit::Tensor::Allocate(graphjit::DType::kFloat, graphjit::Shape{2, 3}).value();
  for (int i = 0; i < 6; ++i) x.data<float>()[i] = static_cast<float>(i) - 2.5f;
  std::vector<graphjit::Tensor> out;
  (void)(*session)->Run({{"x", x}}, {"y"}, {}, &out);
  return 0;
}
