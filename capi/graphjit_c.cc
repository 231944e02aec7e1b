// The C API (capi/graphjit.h) over the runtime's Session, with the graph optimizer and the
// JIT registered as the command line registers them.
#include "capi/graphjit.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "clustering/explain.h"
#include "clustering/pass.h"
#include "ir/device.h"
#include "ir/graphdef.h"
#include "ir/logging.h"
#include "jit/jit.h"
#include "passes/passes.h"
#include "runtime/build_info.h"
#include "runtime/session.h"
#include "runtime/trace.h"
#include "tools/command_line.h"

struct gj_status {
  graphjit::Status status;
};

struct gj_session {
  graphjit::SessionOptions options;
  tensorflow::GraphDef model;
  std::unique_ptr<graphjit::Session> session;
};

struct gj_tensor {
  graphjit::Tensor tensor;
  std::vector<int64_t> dims;
  bool on_device = false;
  void* data = nullptr;                            // host pointer or device address
  int device = -1;                                 // on_device: the GPU's number
  std::shared_ptr<graphjit::DeviceMemory> memory;  // a fetch's on the session's GPU
};

namespace graphjit {
namespace {

gj_status* ToC(Status s) { return s.ok() ? nullptr : new gj_status{std::move(s)}; }

// TensorFlow's number for a code (tensorflow/core/protobuf/error_codes.proto).
int TensorFlowCode(Code code) {
  switch (code) {
    case Code::kOk: return 0;
    case Code::kInvalidArgument: return 3;
    case Code::kNotFound: return 5;
    case Code::kResourceExhausted: return 8;
    case Code::kFailedPrecondition: return 9;
    case Code::kUnimplemented: return 12;
    case Code::kInternal: return 13;
  }
  return 2;  // unknown
}

char* CopyString(const std::string& text) {
  char* out = static_cast<char*>(std::malloc(text.size() + 1));
  std::memcpy(out, text.data(), text.size() + 1);
  return out;
}

void RegisterOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    RegisterGraphOptimizer();
    RegisterJit();
  });
}

// What the process shares is sized by the first session: the kernel cache's bound
// (--jit_cache_mb, which the JIT reads from GRAPHJIT_FLAGS when it first compiles) is added to
// GRAPHJIT_FLAGS before that; a later session that asks for another is told so on stderr.
// (The command line in process, gj_command, counts as a first session with GRAPHJIT_FLAGS'.)
void SizeTheProcess(const SessionOptions& options) {
  static std::mutex mu;
  static bool sized = false;
  static int64_t cache_mb = 0;
  std::lock_guard<std::mutex> lock(mu);
  if (!sized) {
    sized = true;
    cache_mb = options.jit_cache_mb;
    if (cache_mb <= 0) return;
    const char* env = std::getenv("GRAPHJIT_FLAGS");
    const std::string flags = std::string(env ? env : "") + " --jit_cache_mb=" + std::to_string(cache_mb);
    setenv("GRAPHJIT_FLAGS", flags.c_str(), 1);
    return;
  }
  if (options.jit_cache_mb > 0 && options.jit_cache_mb != cache_mb)
    GJ_LOG(INFO) << "--jit_cache_mb=" << options.jit_cache_mb << " is process-wide: the first session's ("
                 << (cache_mb > 0 ? std::to_string(cache_mb) : "the default, 1024") << ") took effect; this session's is ignored";
}

StatusOr<std::vector<std::pair<std::string, Tensor>>> Feeds(int n, const char* const* names, gj_tensor* const* feeds) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (int i = 0; i < n; ++i) {
    if (names[i] == nullptr || feeds[i] == nullptr) return InvalidArgument("feed " + std::to_string(i) + " is NULL");
    out.emplace_back(names[i], feeds[i]->tensor);
  }
  return out;
}

std::vector<std::string> Names(int n, const char* const* names) { return std::vector<std::string>(names, names + n); }

}  // namespace
}  // namespace graphjit

using namespace graphjit;  // NOLINT: the C functions below are graphjit's

extern "C" {

int gj_status_code(const gj_status* status) { return status ? TensorFlowCode(status->status.code()) : 0; }
const char* gj_status_message(const gj_status* status) { return status ? status->status.message().c_str() : ""; }
void gj_status_free(gj_status* status) { delete status; }
void gj_string_free(char* text) { std::free(text); }

const char* gj_version(void) {
  static const std::string version =
      std::string("graphjit ") + GRAPHJIT_VERSION + " (reference kernels for " + KernelsIsa() + ")";
  return version.c_str();
}

int gj_command(int argc, const char* const* argv) {
  SessionOptions flags;
  if (const char* env = std::getenv("GRAPHJIT_FLAGS")) (void)ApplyFlags(env, &flags);
  SizeTheProcess(flags);
  return CommandLine(argc, argv);
}

gj_status* gj_session_new(const void* model, size_t model_bytes, const void* config, size_t config_bytes, const char* jit,
                          const char* device, const char* options, gj_session** session) {
  RegisterOnce();
  auto s = std::make_unique<gj_session>();
  const std::string model_text(static_cast<const char*>(model), model_bytes);
  if (Status st = ParseBinaryOrText(model_text, "the model", &s->model); !st.ok()) return ToC(st);
  if (config != nullptr) {
    tensorflow::ConfigProto proto;
    const std::string config_text(static_cast<const char*>(config), config_bytes);
    if (Status st = ParseBinaryOrText(config_text, "the config", &proto, /*allow_unknown_text=*/true); !st.ok()) return ToC(st);
    s->options = SessionOptions::FromConfigProto(proto);
  }
  if (const char* env = std::getenv("GRAPHJIT_FLAGS"))
    if (Status st = ApplyFlags(env, &s->options); !st.ok()) return ToC(st);
  if (options != nullptr)
    if (Status st = ApplyFlags(options, &s->options); !st.ok()) return ToC(InvalidArgument("options: " + st.message()));
  if (jit != nullptr && !ParseJitLevel(jit, &s->options.jit_level))
    return ToC(InvalidArgument("jit must be off, on_1 or on_2, not '" + std::string(jit) + "'"));
  if (device != nullptr) {
    auto parsed = ParseDevice(device);
    if (!parsed.ok()) return ToC(parsed.status());
    s->options.device = parsed->kind;
    s->options.gpu_index = parsed->index;
  }
  SizeTheProcess(s->options);
  auto created = Session::Create(s->options, s->model);
  if (!created.ok()) return ToC(created.status());
  s->session = std::move(*created);
  *session = s.release();
  return nullptr;
}

void gj_session_free(gj_session* session) { delete session; }

gj_status* gj_tensor_wrap(gj_session* session, int dtype, int rank, const int64_t* dims, void* data, int on_device,
                          void (*release)(void*), void* release_arg, gj_tensor** tensor) {
  // Released with the last tensor that views the memory, or at once where this fails.
  std::shared_ptr<void> owner(release_arg, [release](void* arg) {
    if (release) release(arg);
  });
  if (rank < 0 || (rank > 0 && dims == nullptr)) return ToC(InvalidArgument("a tensor of rank " + std::to_string(rank)));
  auto t = std::make_unique<gj_tensor>();
  t->dims.assign(dims, dims + rank);
  const DType type = static_cast<DType>(dtype);
  if (!IsSupportedDType(type)) return ToC(InvalidArgument("no tensor of data type " + std::to_string(dtype)));
  const Shape shape(t->dims);
  auto bytes = CheckedBytes(t->dims, static_cast<int64_t>(DTypeSize(type)));
  if (!bytes.ok()) return ToC(bytes.status());
  if (on_device) {
    auto wrapped = session->session->DeviceTensor(type, shape, reinterpret_cast<uint64_t>(data), std::move(owner));
    if (!wrapped.ok()) return ToC(wrapped.status());
    t->tensor = *wrapped;
  } else {
    t->tensor = Tensor(type, shape, Buffer::External(data, static_cast<size_t>(*bytes), std::move(owner)));
  }
  t->on_device = on_device != 0;
  t->device = on_device ? session->options.gpu_index : -1;
  t->data = data;
  *tensor = t.release();
  return nullptr;
}

int gj_tensor_dtype(const gj_tensor* tensor) { return static_cast<int>(tensor->tensor.dtype()); }
int gj_tensor_rank(const gj_tensor* tensor) { return static_cast<int>(tensor->dims.size()); }
const int64_t* gj_tensor_dims(const gj_tensor* tensor) { return tensor->dims.data(); }
void* gj_tensor_data(const gj_tensor* tensor) { return tensor->data; }
int gj_tensor_on_device(const gj_tensor* tensor) { return tensor->on_device; }
void gj_tensor_free(gj_tensor* tensor) { delete tensor; }

int gj_tensor_device(const gj_tensor* tensor) { return tensor->device; }

gj_status* gj_tensor_record_stream(const gj_tensor* tensor, void* stream) {
  if (!tensor->memory || !stream) return nullptr;
  return ToC(tensor->memory->RecordUse(stream));
}

gj_status* gj_session_run(gj_session* session, int num_feeds, const char* const* feed_names, gj_tensor* const* feeds,
                          int num_fetches, const char* const* fetch_names, int fetch_on_device, void* stream,
                          const char* trace_path, gj_tensor** outputs) {
  auto in = Feeds(num_feeds, feed_names, feeds);
  if (!in.ok()) return ToC(in.status());
  Tracer tracer;
  RunOptions run;
  run.fetch_on_device = fetch_on_device != 0;
  run.stream = stream;
  if (trace_path) run.tracer = &tracer;
  std::vector<Tensor> out;
  if (Status s = session->session->Run(run, *in, Names(num_fetches, fetch_names), {}, &out); !s.ok()) return ToC(s);
  if (trace_path)
    if (Status s = tracer.WriteChromeTrace(trace_path); !s.ok()) return ToC(s);
  for (int i = 0; i < num_fetches; ++i) {
    auto* t = new gj_tensor;
    t->tensor = std::move(out[i]);
    t->dims = t->tensor.shape().dims();
    t->memory = session->session->DeviceMemoryOf(t->tensor);
    t->on_device = t->memory && t->tensor.raw() == nullptr;
    if (!t->on_device) t->memory = nullptr;
    t->device = t->on_device ? session->options.gpu_index : -1;
    t->data = t->on_device ? reinterpret_cast<void*>(t->memory->address()) : t->tensor.raw();
    outputs[i] = t;
  }
  return nullptr;
}

gj_status* gj_session_stats(gj_session* session, char** text) {
  const AllocatorStats host = session->session->allocator()->stats();
  *text = CopyString(JitStatsLine() + " " + session->session->LastRunCounts().ToString() + " host_bytes_in_use=" +
                     std::to_string(host.bytes_in_use) + " host_peak_bytes=" + std::to_string(host.peak_bytes_in_use) +
                     " host_allocations=" + std::to_string(host.num_allocations));
  return nullptr;
}

gj_status* gj_session_clusters(gj_session* session, char** text) {
  auto graph = ImportGraphDef(session->model);
  if (!graph.ok()) return ToC(graph.status());
  PassContext context({}, {}, ModelOutputsAndInputs(*graph));
  auto optimized = DefaultPipeline(session->options).Run(*graph, context);
  if (!optimized.ok()) return ToC(optimized.status());
  auto explained = ExplainClustering(ExportGraphDef(*graph), session->options);
  if (!explained.ok()) return ToC(explained.status());
  *text = CopyString(ClusteringTable(explained->first, explained->second));
  return nullptr;
}

gj_status* gj_session_dump(gj_session* session, const char* dir, int num_feeds, const char* const* feed_names,
                           gj_tensor* const* feeds, int num_fetches, const char* const* fetch_names, void* stream) {
  SessionOptions options = session->options;
  options.dump_to = dir;
  auto dumping = Session::Create(options, session->model);
  if (!dumping.ok()) return ToC(dumping.status());
  auto in = Feeds(num_feeds, feed_names, feeds);
  if (!in.ok()) return ToC(in.status());
  RunOptions run;
  run.stream = stream;
  std::vector<Tensor> out;
  return ToC((*dumping)->Run(run, *in, Names(num_fetches, fetch_names), {}, &out));
}

}  // extern "C"
