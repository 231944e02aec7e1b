#include "jit/gpu_executable.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <list>
#include <map>
#include <mutex>

#include "ir/logging.h"
#include "runtime/session_options.h"
#include "runtime/trace.h"

namespace graphjit {

namespace {

using Clock = std::chrono::steady_clock;

// The copies and kernels of a call on the stream, for a trace: points recorded around each,
// written to the tracer's row of the stream (timed from the call's start) once the stream
// is done. Without a tracer nothing is recorded.
class StreamTrace {
 public:
  StreamTrace(Tracer* tracer, CudaDevice::Stream& stream) : tracer_(tracer), stream_(stream) {}
  Status Begin() {
    if (!tracer_) return Status::Ok();
    host_start_ = tracer_->NowMicros();
    stream_.ClearPoints();
    GJ_ASSIGN_OR_RETURN(origin_, stream_.Record());
    return Status::Ok();
  }
  // Queues `work`, an event `name` of `op` on the stream's row.
  Status Around(const std::string& name, const std::string& op, int64_t bytes, const std::function<Status()>& work,
                std::string host_memory = "") {
    if (!tracer_) return work();
    GJ_ASSIGN_OR_RETURN(int from, stream_.Record());
    GJ_RETURN_IF_ERROR(work());
    GJ_ASSIGN_OR_RETURN(int to, stream_.Record());
    spans_.push_back({name, op, from, to, bytes, std::move(host_memory)});
    return Status::Ok();
  }
  // Once the stream is synchronized.
  Status Write() {
    for (const Span& span : spans_) {
      GJ_ASSIGN_OR_RETURN(float begin, stream_.ElapsedMillis(origin_, span.from));
      GJ_ASSIGN_OR_RETURN(float end, stream_.ElapsedMillis(origin_, span.to));
      tracer_->Add({span.name, span.op, host_start_ + static_cast<int64_t>(begin * 1000),
                    static_cast<int64_t>((end - begin) * 1000), kGpuStreamRow, span.bytes, span.host_memory});
    }
    return Status::Ok();
  }

 private:
  struct Span {
    std::string name, op;
    int from, to;
    int64_t bytes;
    std::string host_memory;
  };
  Tracer* const tracer_;
  CudaDevice::Stream& stream_;
  int64_t host_start_ = 0;
  int origin_ = -1;
  std::vector<Span> spans_;
};

class GpuExecutable : public ClusterExecutable {
 public:
  // `module`: PTX, or a cubin for the device.
  GpuExecutable(ClusterProgram program, std::shared_ptr<CudaDevice> cuda, std::string module,
                std::shared_ptr<const nvptx::CublasLt> blas, std::shared_ptr<const nvptx::Cudnn> dnn,
                std::vector<LibraryPlan> calls, RunRecorder* recorder)
      : ClusterExecutable(std::move(program)),
        cuda_(std::move(cuda)),
        module_(std::move(module)),
        blas_(std::move(blas)),
        dnn_(std::move(dnn)),
        calls_(std::move(calls)),
        recorder_(recorder) {}

  ~GpuExecutable() override {
    for (uint64_t address : constants_) cuda_->Free(address);
    for (uint64_t address : reordered_constants_)
      if (address) cuda_->Free(address);
  }

  Status Init() {
    for (const EmittedKernel& k : program_.module.kernels) {
      CudaDevice::Kernel kernel;
      if (k.library_node < 0) {
        GJ_ASSIGN_OR_RETURN(kernel, cuda_->LoadKernel(module_, k.function, static_cast<int>(k.shared_bytes)));
      }
      kernels_.push_back(kernel);
    }
    GJ_ASSIGN_OR_RETURN(auto stream, cuda_->NewStream());
    for (const Tensor& c : program_.constants) {
      GJ_ASSIGN_OR_RETURN(uint64_t address, cuda_->Allocate(std::max<size_t>(c.bytes(), 1)));
      constants_.push_back(address);
      GJ_RETURN_IF_ERROR(stream->CopyToDevice(address, c.raw(), c.bytes()));
    }
    // A convolution's filter that is a constant of the program, in cuDNN's layout.
    reordered_constants_.assign(kernels_.size(), 0);
    for (size_t k = 0; k < kernels_.size(); ++k) {
      const FusionPlan::Buffer* filter = ConvFilter(k);
      if (!filter || filter->kind != FusionPlan::Buffer::Kind::kConstant) continue;
      const nvptx::ConvPlan& plan = calls_[k].convolution.plan;
      GJ_ASSIGN_OR_RETURN(reordered_constants_[k], cuda_->Allocate(plan.filter_offset));
      GJ_RETURN_IF_ERROR(cuda_->MakeCurrent());
      GJ_RETURN_IF_ERROR(dnn_->ReorderFilter(plan, constants_[filter->source], reordered_constants_[k], stream->handle()));
    }
    return stream->Synchronize();
  }

  size_t bytes() const override {
    size_t bytes = module_.size();
    for (const Tensor& c : program_.constants) bytes += c.bytes();
    return bytes;
  }

  Status Run(KernelContext& ctx, const std::string& name, Clock::duration* in_kernels) const override {
    if (!ctx.gpu) return ctx.Error("a GPU kernel without a GPU in the session");
    std::lock_guard<std::mutex> lock(ctx.gpu->mu);
    CudaDevice::Stream& stream = *ctx.gpu->stream;
    const auto start = Clock::now();
    std::vector<uint64_t> owned;  // device memory this call allocated, freed at the end
    Status s = Launch(ctx, name, stream, &owned);
    // After a failure, work already queued may still use the memory: let it finish first.
    if (!s.ok()) (void)stream.Synchronize();
    for (uint64_t address : owned) cuda_->Free(address);
    *in_kernels += Clock::now() - start;
    return s;
  }

 private:
  // One call: where its trace goes, its buffers' addresses and its kernels' arguments.
  // `owned` is the device memory it allocated, freed at its end (but what becomes an output).
  struct Call {
    KernelContext& ctx;
    const std::string& name;
    CudaDevice::Stream& stream;
    std::vector<uint64_t>* owned;
    StreamTrace trace;
    std::vector<uint64_t> address;                // per buffer, once resolved (0: not yet)
    std::vector<uint64_t> scratch;                // per scratch area, once allocated
    std::vector<std::vector<uint64_t>> pointers;  // per kernel: its buffers, scratch areas and workspace
    std::vector<char> reordered;                  // per kernel: its filter is in cuDNN's layout
  };

  Status Launch(KernelContext& ctx, const std::string& name, CudaDevice::Stream& stream, std::vector<uint64_t>* owned) const {
    Call call{ctx,
              name,
              stream,
              owned,
              StreamTrace(ctx.tracer, stream),
              std::vector<uint64_t>(program_.buffers.size(), 0),
              std::vector<uint64_t>(program_.module.scratch.size(), 0),
              std::vector<std::vector<uint64_t>>(kernels_.size()),
              std::vector<char>(kernels_.size(), 0)};
    GJ_RETURN_IF_ERROR(call.trace.Begin());
    // 1. Every kernel's arguments, before the first launch (a launch graph's capture may
    // not allocate): its buffers (inputs copied in), scratch areas and workspace.
    for (size_t k = 0; k < kernels_.size(); ++k) GJ_RETURN_IF_ERROR(PrepareArguments(call, k));
    // 2. The kernels, in order.
    GJ_RETURN_IF_ERROR(LaunchKernels(call));
    // 3. The outputs, left on the device.
    GJ_RETURN_IF_ERROR(HandOutOutputs(call));
    GJ_RETURN_IF_ERROR(stream.Synchronize());
    GJ_RETURN_IF_ERROR(call.trace.Write());
    if (ctx.tracer || (ctx.options && ctx.options->gpu_profile)) stream.ClearPoints();
    return Status::Ok();
  }

  // Buffer b's address on the device for this call: a constant's, a view's source's, an
  // input's (copied in from the host where it has no device copy; copied to aligned memory
  // where its is not aligned), or a temporary allocated for the call.
  StatusOr<uint64_t> Resolve(Call& call, int b) const {
    if (call.address[b]) return call.address[b];
    const FusionPlan::Buffer& buffer = program_.buffers[b];
    uint64_t address = 0;
    switch (buffer.kind) {
      case FusionPlan::Buffer::Kind::kConstant: address = constants_[buffer.source]; break;
      case FusionPlan::Buffer::Kind::kView: {
        GJ_ASSIGN_OR_RETURN(address, Resolve(call, buffer.source));
        break;
      }
      case FusionPlan::Buffer::Kind::kArgument: {
        GJ_ASSIGN_OR_RETURN(address, InputAddress(call, buffer.source));
        break;
      }
      case FusionPlan::Buffer::Kind::kTemp: {
        GJ_ASSIGN_OR_RETURN(const int64_t checked,
                            CheckedBytes(buffer.shape.dims(), static_cast<int64_t>(DTypeSize(buffer.dtype))));
        GJ_ASSIGN_OR_RETURN(address, cuda_->Allocate(std::max<size_t>(static_cast<size_t>(checked), 1)));
        call.owned->push_back(address);
        break;
      }
    }
    return call.address[b] = address;
  }

  // Input i on the device: an empty one as a byte of the call's; one on the host copied
  // once and kept with its buffer, for every later reader on this device (a session
  // constant's for the session, a feed's or a CPU op's output's for the run; buffers never
  // change once written); one on the device in place, or aligned.
  StatusOr<uint64_t> InputAddress(Call& call, int i) const {
    const Tensor& input = call.ctx.inputs[i];
    if (input.bytes() == 0) {
      GJ_ASSIGN_OR_RETURN(uint64_t address, cuda_->Allocate(1));
      call.owned->push_back(address);
      return address;
    }
    std::shared_ptr<DeviceMemory> memory = input.buffer()->DeviceCopy(cuda_.get());
    if (memory && memory->address() % kBufferAlignment != 0) {
      GJ_ASSIGN_OR_RETURN(memory, AlignedCopy(call, input, std::move(memory)));
    }
    if (!memory) {
      if (OnDeviceOnly(input)) return Internal("an input on another device than the cluster's");
      const size_t bytes = input.buffer()->size();
      GJ_ASSIGN_OR_RETURN(memory, DeviceMemory::Allocate(cuda_, bytes));
      GJ_RETURN_IF_ERROR(call.trace.Around(
          call.name + "/copy_in_" + std::to_string(i), "HtoD", static_cast<int64_t>(bytes),
          [&] { return call.stream.CopyToDevice(memory->address(), input.raw(), bytes); },
          cuda_->HostMemoryKind(input.raw(), bytes)));
      input.buffer()->AddDeviceCopy(memory);
    }
    return memory->address();
  }

  // Kernel k's arguments: its buffers, its scratch areas (shared by the kernels that use
  // them), a library call's workspace; a convolution's filter in cuDNN's layout where it
  // stays the same from run to run (see ReorderedFilter).
  Status PrepareArguments(Call& call, size_t k) const {
    const EmittedKernel& emitted = program_.module.kernels[k];
    std::vector<uint64_t>& pointers = call.pointers[k];
    for (int b : emitted.buffers) {
      GJ_ASSIGN_OR_RETURN(uint64_t a, Resolve(call, b));
      pointers.push_back(a);
    }
    for (int area : emitted.scratch) {
      if (!call.scratch[area]) {
        GJ_ASSIGN_OR_RETURN(call.scratch[area], cuda_->Allocate(program_.module.scratch[area]));
        call.owned->push_back(call.scratch[area]);
      }
      pointers.push_back(call.scratch[area]);
    }
    if (ConvFilter(k)) {
      uint64_t& filter = pointers[calls_[k].convolution.filter];
      GJ_ASSIGN_OR_RETURN(const uint64_t kept, ReorderedFilter(call, k, filter));
      if (kept) filter = kept, call.reordered[k] = 1;
    }
    if (emitted.library_node >= 0 && calls_[k].workspace_bytes(call.reordered[k])) {  // the library's workspace, this call's
      GJ_ASSIGN_OR_RETURN(uint64_t workspace, cuda_->Allocate(calls_[k].workspace_bytes(call.reordered[k])));
      call.owned->push_back(workspace);
      pointers.push_back(workspace);
    }
    return Status::Ok();
  }

  // Convolution k's filter (at `filter`, in TensorFlow's layout) in cuDNN's layout where it
  // stays the same from run to run: a program constant's (reordered at load), or a session
  // constant's (reordered at its first run here, and kept with its buffer); 0 for another
  // filter, which each call reorders.
  StatusOr<uint64_t> ReorderedFilter(Call& call, size_t k, uint64_t filter) const {
    const FusionPlan::Buffer* buffer = ConvFilter(k);
    const Tensor* input = buffer->kind == FusionPlan::Buffer::Kind::kArgument ? &call.ctx.inputs[buffer->source] : nullptr;
    if (!input || !call.ctx.IsConstantInput(buffer->source) || OnDeviceOnly(*input) || input->bytes() == 0)
      return reordered_constants_[k];
    const nvptx::ConvPlan& plan = calls_[k].convolution.plan;
    const std::string form = FilterForm(plan.conv);
    std::shared_ptr<DeviceMemory> memory = input->buffer()->DeviceCopy(cuda_.get(), form);
    if (!memory) {
      GJ_ASSIGN_OR_RETURN(memory, DeviceMemory::Allocate(cuda_, plan.filter_offset));
      GJ_RETURN_IF_ERROR(cuda_->MakeCurrent());
      GJ_RETURN_IF_ERROR(call.trace.Around(call.name + "/reorder_filter_" + std::to_string(k), "cuDNN", 0, [&] {
        return dnn_->ReorderFilter(plan, filter, memory->address(), call.stream.handle());
      }));
      input->buffer()->AddDeviceCopy(memory, form);
    }
    return memory->address();
  }

  // The kernels, in order: replayed as one launch graph, or launched one by one. The first
  // call launches them one by one (the libraries' first calls of a plan may set things up
  // that a capture cannot take); a capture that fails is said once, and the executable's
  // kernels are launched one by one from then on.
  Status LaunchKernels(Call& call) const {
    const SessionOptions* options = call.ctx.options;
    const bool profile = options && options->gpu_profile;
    const bool graphs = (!options || options->gpu_graphs) && !profile && cuda_->has_graphs() && ran_once_.load() &&
                        !capture_failed_.load() &&
                        std::any_of(program_.module.kernels.begin(), program_.module.kernels.end(), Launches);
    if (graphs) {
      StatusOr<bool> graph = false;
      GJ_RETURN_IF_ERROR(call.trace.Around(call.name + "/graph", "graph launch", 0, [&] {
        graph = LaunchGraph(call.ctx, call.name, call.stream, call.pointers, call.reordered);
        return graph.status();
      }));
      if (*graph) {
        recorder_->CountGraphLaunches(1);
        return Status::Ok();
      }
    }
    for (size_t k = 0; k < kernels_.size(); ++k) {
      const EmittedKernel& emitted = program_.module.kernels[k];
      if (!Launches(emitted)) continue;
      int before = -1, after = -1;
      if (profile) {
        GJ_ASSIGN_OR_RETURN(before, call.stream.Record());
      }
      const char* op = emitted.library_node < 0 ? "gpu kernel" : calls_[k].conv ? "cuDNN" : "cuBLASLt";
      GJ_RETURN_IF_ERROR(call.trace.Around(call.name + "/" + emitted.function, op, 0,
                                           [&] { return LaunchKernel(k, call.pointers[k], call.reordered[k], call.stream); }));
      recorder_->CountGpuLaunches(1);
      if (profile) {
        GJ_ASSIGN_OR_RETURN(after, call.stream.Record());
        GJ_RETURN_IF_ERROR(Profile(call.name, k, call.stream, before, after));
      }
    }
    ran_once_ = true;
    return Status::Ok();
  }

  // The outputs, left on the device: a temporary becomes the output's memory; an input or
  // a constant passed through is the caller's tensor; an empty one is a host tensor.
  Status HandOutOutputs(Call& call) const {
    std::map<uint64_t, std::shared_ptr<DeviceMemory>> kept;  // temporaries handed out, by address
    for (size_t i = 0; i < program_.outputs.size(); ++i) {
      const int b = program_.outputs[i];
      const FusionPlan::Buffer* buffer = &program_.buffers[b];
      while (buffer->kind == FusionPlan::Buffer::Kind::kView &&
             program_.buffers[buffer->source].kind != FusionPlan::Buffer::Kind::kTemp)
        buffer = &program_.buffers[buffer->source];
      if (buffer->kind == FusionPlan::Buffer::Kind::kArgument || buffer->kind == FusionPlan::Buffer::Kind::kConstant) {
        const Tensor& host = buffer->kind == FusionPlan::Buffer::Kind::kArgument ? call.ctx.inputs[buffer->source]
                                                                                 : program_.constants[buffer->source];
        call.ctx.ForwardOutput(static_cast<int>(i), host.Reshaped(program_.buffers[b].shape));
        continue;
      }
      const DType dtype = program_.buffers[b].dtype;
      const Shape& shape = program_.buffers[b].shape;
      if (shape.num_elements() == 0) {
        GJ_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(dtype, shape, call.ctx.allocator));
        call.ctx.ForwardOutput(static_cast<int>(i), std::move(out));
        continue;
      }
      GJ_ASSIGN_OR_RETURN(uint64_t a, Resolve(call, b));
      std::shared_ptr<DeviceMemory>& memory = kept[a];
      if (!memory) {  // this call's temporary, from now on the output's
        call.owned->erase(std::find(call.owned->begin(), call.owned->end(), a));
        memory = std::make_shared<DeviceMemory>(cuda_, a);
      }
      const size_t bytes = static_cast<size_t>(shape.num_elements()) * DTypeSize(dtype);
      call.ctx.ForwardOutput(static_cast<int>(i), Tensor(dtype, shape, Buffer::OnDevice(memory, bytes, cuda_->host_allocator())));
    }
    return Status::Ok();
  }

  // Kernel k's convolution filter, if k is a convolution whose filter is a program constant
  // or an argument (what may stay the same from run to run); else null.
  const FusionPlan::Buffer* ConvFilter(size_t k) const {
    if (program_.module.kernels[k].library_node < 0 || !calls_[k].conv || calls_[k].convolution.empty) return nullptr;
    const FusionPlan::Buffer& b = program_.buffers[program_.module.kernels[k].buffers[calls_[k].convolution.filter]];
    return b.kind == FusionPlan::Buffer::Kind::kConstant || b.kind == FusionPlan::Buffer::Kind::kArgument ? &b : nullptr;
  }

  // Whether a kernel is launched: one with no grid (roots it stores that nothing reads) only
  // has its buffers allocated.
  static bool Launches(const EmittedKernel& k) { return k.library_node >= 0 || k.grid > 0; }

  // Kernel k (a library call: cuBLASLt's or cuDNN's), with its buffers and scratch areas at
  // `pointers` (a library call's workspace after them); a convolution's filter there is in
  // cuDNN's layout if `filter_reordered`.
  Status LaunchKernel(size_t k, std::vector<uint64_t> pointers, bool filter_reordered, CudaDevice::Stream& stream) const {
    const EmittedKernel& emitted = program_.module.kernels[k];
    if (emitted.library_node < 0) {
      std::vector<void*> args;
      for (uint64_t& p : pointers) args.push_back(&p);
      const unsigned grid[3] = {static_cast<unsigned>(emitted.grid), 1, 1};
      const unsigned block[3] = {static_cast<unsigned>(emitted.block), 1, 1};
      return stream.Launch(kernels_[k], grid, block, static_cast<unsigned>(emitted.shared_bytes), args,
                           static_cast<unsigned>(emitted.cluster));
    }
    GJ_RETURN_IF_ERROR(cuda_->MakeCurrent());
    const uint64_t workspace = calls_[k].workspace_bytes(filter_reordered) ? pointers.back() : 0;  // after the output
    if (workspace) pointers.pop_back();
    if (calls_[k].conv) {  // its operands by position, then its output
      const ConvCall& c = calls_[k].convolution;
      if (c.empty) return Status::Ok();
      auto operand = [&](int i) { return i < 0 ? 0 : pointers[i]; };
      return dnn_->Run(c.plan, operand(c.x), operand(c.filter), operand(c.bias), operand(c.residual), pointers.back(), workspace,
                       stream.handle(), filter_reordered);
    }
    // A GEMM: operands a, b (and the bias), then its output.
    const GemmCall& call = calls_[k].gemm;
    const uint64_t bias = call.plan.gemm.epilogue == nvptx::Gemm::Epilogue::kNone ? 0 : pointers[2];
    const uint64_t element = call.plan.gemm.type == nvptx::Gemm::Type::kF32 ? 4 : 2;
    for (const auto& [a, b, d] : call.offsets)
      GJ_RETURN_IF_ERROR(blas_->Matmul(call.plan, pointers[0] + element * a, pointers[1] + element * b, bias,
                                       pointers.back() + element * d, workspace, stream.handle()));
    return Status::Ok();
  }

  // All the kernels as one launch graph: captured for these arguments the first time, then
  // replayed. The last few sets of arguments keep their graphs (a caller that holds one
  // run's outputs while the next runs alternates between buffers); beyond that, the least
  // recently used graph is updated to the new arguments. False where the capture failed
  // (nothing was launched; said once with --jit_verbose): the caller launches the kernels
  // one by one, as every later call of this executable does.
  StatusOr<bool> LaunchGraph(KernelContext& ctx, const std::string& name, CudaDevice::Stream& stream,
                             const std::vector<std::vector<uint64_t>>& pointers, const std::vector<char>& reordered) const {
    std::lock_guard<std::mutex> lock(graphs_mu_);
    auto it = std::find_if(graphs_.begin(), graphs_.end(),
                           [&](const Captured& c) { return c.pointers == pointers && c.reordered == reordered; });
    if (it == graphs_.end()) {
      std::shared_ptr<CudaDevice::Graph> reuse;
      if (graphs_.size() >= kGraphsPerExecutable) {
        reuse = std::move(graphs_.back().graph);
        graphs_.pop_back();
      }
      Status captured = stream.BeginCapture();
      if (captured.ok()) {
        for (size_t k = 0; k < kernels_.size() && captured.ok(); ++k)
          if (Launches(program_.module.kernels[k])) captured = LaunchKernel(k, pointers[k], reordered[k], stream);
        auto graph = stream.EndCapture(std::move(reuse));  // (ends the capture in any case)
        if (captured.ok()) captured = graph.status();
        if (captured.ok()) graphs_.push_front({pointers, reordered, std::move(*graph)});
      }
      if (!captured.ok()) {
        GJ_RETURN_IF_ERROR(cuda_->Fault());  // a broken device is no capture's fault
        capture_failed_ = true;
        graphs_.clear();
        recorder_->CountFailedCaptures(1);
        if ((ctx.options && ctx.options->jit_verbose) || GJ_VLOG_IS_ON(1))
          GJ_LOG(INFO) << name << ": its kernels could not be captured into a CUDA graph (" << captured.message()
                       << "); they are launched one by one from now on";
        return false;
      }
      it = graphs_.begin();
    } else if (it != graphs_.begin()) {
      graphs_.splice(graphs_.begin(), graphs_, it);
      it = graphs_.begin();
    }
    GJ_RETURN_IF_ERROR(stream.Launch(*it->graph));
    return true;
  }

  // A copy of `input` (whose device memory `memory` is not kBufferAlignment-aligned: the
  // caller's, a slice) in aligned memory on the call's stream, kept with its buffer for the
  // run's later readers; counted, and said once with --jit_verbose.
  StatusOr<std::shared_ptr<DeviceMemory>> AlignedCopy(Call& call, const Tensor& input,
                                                      std::shared_ptr<DeviceMemory> memory) const {
    constexpr char kAligned[] = "aligned";
    if (std::shared_ptr<DeviceMemory> kept = input.buffer()->DeviceCopy(cuda_.get(), kAligned)) return kept;
    const size_t bytes = input.buffer()->size();
    GJ_ASSIGN_OR_RETURN(std::shared_ptr<DeviceMemory> aligned, DeviceMemory::Allocate(cuda_, bytes));
    GJ_RETURN_IF_ERROR(call.trace.Around(call.name + "/align_input", "DtoD", static_cast<int64_t>(bytes),
                                         [&] { return call.stream.CopyOnDevice(aligned->address(), memory->address(), bytes); }));
    input.buffer()->AddDeviceCopy(aligned, kAligned);
    recorder_->CountAlignedCopies(1);
    static std::once_flag said;
    if ((call.ctx.options && call.ctx.options->jit_verbose) || GJ_VLOG_IS_ON(1))
      std::call_once(said, [&] {
        GJ_LOG(INFO) << call.name << ": a device tensor at 0x" << std::hex << memory->address() << std::dec << " is not "
                     << kBufferAlignment
                     << "-byte aligned (a slice?): the kernels read 16 bytes at a time, so it is copied to aligned memory "
                        "first (counted as aligned_copies; said once)";
      });
    return aligned;
  }

  // Kernel k, launched last on the stream between points `before` and `after`: what it did.
  Status Profile(const std::string& name, size_t k, CudaDevice::Stream& stream, int before, int after) const {
    const EmittedKernel& emitted = program_.module.kernels[k];
    GpuKernelProfile p;
    p.name = name + "/" + emitted.function;
    p.grid = emitted.grid;
    p.block = emitted.block;
    p.cluster = emitted.cluster;
    for (int b : emitted.buffers)
      p.io_bytes +=
          CheckedBytes(program_.buffers[b].shape.dims(), static_cast<int64_t>(DTypeSize(program_.buffers[b].dtype))).value_or(0);
    for (int area : emitted.scratch) p.io_bytes += program_.module.scratch[area];
    GJ_ASSIGN_OR_RETURN(float ms, stream.ElapsedMillis(before, after));  // synchronizes
    p.measured_us = ms * 1000.0;
    if (emitted.library_node >= 0) {  // a library call: its operands once, 2 flops per multiply-add
      p.library = true;
      p.counted = true;
      p.moved_bytes = p.requested_bytes = p.io_bytes;
      p.request_sectors = (p.io_bytes + 31) / 32;
      if (calls_[k].conv) {
        const nvptx::Conv& v = calls_[k].convolution.plan.conv;
        p.float_ops = 2 * v.batch * v.filters * v.out_h() * v.out_w() * (v.channels / v.groups) * v.filter_h * v.filter_w;
      } else {
        const nvptx::Gemm& g = calls_[k].gemm.plan.gemm;
        p.float_ops = 2 * g.m * g.n * g.k * g.batch * static_cast<int64_t>(calls_[k].gemm.offsets.size());
      }
      recorder_->RecordGpuProfile(std::move(p));
      return Status::Ok();
    }
    auto counters = cuda_->LastLaunchCounters();
    if (counters.ok()) {
      p.counted = true;
      p.moved_bytes = static_cast<int64_t>(counters->footprint_sectors) * 32;
      p.requested_bytes = static_cast<int64_t>(counters->load_bytes + counters->store_bytes);
      p.request_sectors = static_cast<int64_t>(counters->request_sectors);
      p.float_ops = static_cast<int64_t>(counters->float_ops);
      p.registers = counters->registers;
      p.spill_bytes = counters->spill_bytes;
      p.shared_bytes = counters->shared_bytes;
      const KernelWork work = WorkOf(*counters, emitted.grid, emitted.block);
      p.loads_in_flight = work.loads_in_flight;
      p.bytes_per_load = work.bytes_per_load;
    }
    recorder_->RecordGpuProfile(std::move(p));
    return Status::Ok();
  }

  const std::shared_ptr<CudaDevice> cuda_;
  const std::string module_;
  const std::shared_ptr<const nvptx::CublasLt> blas_;  // for GEMMs
  const std::shared_ptr<const nvptx::Cudnn> dnn_;      // for convolutions
  const std::vector<LibraryPlan> calls_;               // per kernel (library calls only)
  RunRecorder* const recorder_;
  std::vector<CudaDevice::Kernel> kernels_;
  std::vector<uint64_t> constants_;            // device memory, per program constant
  std::vector<uint64_t> reordered_constants_;  // per kernel: its convolution's constant filter in cuDNN's layout, or 0
  // Launch graphs by the kernels' arguments they were captured with, most recently used first.
  static constexpr size_t kGraphsPerExecutable = 4;
  struct Captured {
    std::vector<std::vector<uint64_t>> pointers;
    std::vector<char> reordered;
    std::shared_ptr<CudaDevice::Graph> graph;
  };
  mutable std::mutex graphs_mu_;
  mutable std::list<Captured> graphs_;
  mutable std::atomic<bool> ran_once_{false};        // the kernels were launched one by one once
  mutable std::atomic<bool> capture_failed_{false};  // a capture failed: no more graphs
};

}  // namespace

StatusOr<std::unique_ptr<ClusterExecutable>> MakeGpuExecutable(ClusterProgram program, std::shared_ptr<CudaDevice> cuda,
                                                               std::string module, std::shared_ptr<const nvptx::CublasLt> blas,
                                                               std::shared_ptr<const nvptx::Cudnn> dnn,
                                                               std::vector<LibraryPlan> calls, RunRecorder* recorder) {
  auto executable = std::make_unique<GpuExecutable>(std::move(program), std::move(cuda), std::move(module), std::move(blas),
                                                    std::move(dnn), std::move(calls), recorder);
  GJ_RETURN_IF_ERROR(executable->Init());
  return std::unique_ptr<ClusterExecutable>(std::move(executable));
}

}  // namespace graphjit
