"""graphjit's Python package (python/graphjit) against TensorFlow's fixtures, DLPack, errors
and threads. Needs only NumPy and pytest: GRAPHJIT_LIBRARY names the built libgraphjit_c.so
unless the package holds one (an installed wheel)."""

import ctypes
import glob
import json
import os
import threading

import numpy as np
import pytest

import graphjit

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(ROOT, "tests", "data")


def fixture_dirs():
    models = sorted(os.path.dirname(m) for m in glob.glob(os.path.join(DATA, "*", "manifest.json")))
    layers = sorted(os.path.dirname(m) for m in glob.glob(os.path.join(DATA, "keras_layers", "*", "manifest.json")))
    ops = sorted(os.path.dirname(m) for m in glob.glob(os.path.join(DATA, "ops", "*", "manifest.json")))
    return models + layers + ops


def load(d):
    with open(os.path.join(d, "manifest.json")) as f:
        m = json.load(f)
    feeds = {k: np.load(os.path.join(d, v)) for k, v in m["feeds"].items()}
    fetches = list(m["fetches"])
    want = [np.load(os.path.join(d, m["fetches"][k])) for k in fetches]
    return m, feeds, fetches, want


def expect_close(got, want, tol, what):
    got = np.asarray(got)
    if got.dtype == np.float16:
        got = got.astype(np.float32)
    assert got.shape == want.shape, what
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol["rtol"], atol=tol["atol"],
                                   equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


@pytest.mark.parametrize("d", fixture_dirs(), ids=lambda d: os.path.relpath(d, DATA))
def test_fixture_matches_tensorflow(d):
    m, feeds, fetches, want = load(d)
    with graphjit.Session(os.path.join(d, m["model"]), jit="on_2", device="cpu") as s:
        got = s.run(fetches, feeds)
    for name, g, w in zip(fetches, got, want):
        expect_close(g, w, m["tolerance"], name)


IDENTITY = b"""
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "y" op: "Identity" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
node { name: "z" op: "Tanh" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
"""


def test_numpy_in_and_out_without_copies():
    x = np.linspace(-4, 4, 1 << 20, dtype=np.float32).reshape(1024, 1024)
    with graphjit.Session(IDENTITY, jit="off") as s:
        z = s.run("z", {"x": x})
        assert not graphjit._kept  # the feed was handed back once the run was done with it
        # The run read the feed's buffer: the session's memory held the output alone.
        stats = s.stats()
        assert x.nbytes <= stats["host_peak_bytes"] < 1.25 * x.nbytes, stats
        # The result is a view of graphjit's buffer, which stays while the array does.
        assert z.base is not None and not z.flags.owndata
        np.testing.assert_allclose(z, np.tanh(x), rtol=2e-6, atol=1e-7)
        # An identity of a feed is handed out as a copy (writing into a fetch must not change
        # the session's tensors); a strided feed is made dense first.
        y = s.run("y", {"x": x[:, 1:]})
        assert y.tolist() == x[:, 1:].tolist() and y.ctypes.data != x.ctypes.data


def test_dlpack_round_trip_on_the_cpu():
    class Producer:  # a CPU DLPack tensor that is not a NumPy array
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kwargs):
            return self.a.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    x = np.linspace(-2, 2, 10, dtype=np.float32)
    with graphjit.Session(IDENTITY) as s:
        y = s.run("y", {"x": Producer(x)})
        assert y.tolist() == x.tolist()
        z = np.from_dlpack(s.run("z", {"x": x}))
    np.testing.assert_allclose(z, np.tanh(x), rtol=1e-6)


def test_errors_name_the_node_and_op():
    with pytest.raises(graphjit.InvalidArgumentError, match="the model is neither a binary tensorflow.GraphDef nor a text one"):
        graphjit.Session(b"not a graph \x00\x01")
    with pytest.raises(graphjit.InvalidArgumentError, match="jit must be"):
        graphjit.Session(IDENTITY, jit="sometimes")
    model = b"""
node { name: "a" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "b" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "m" op: "MatMul" input: "a" input: "b" attr { key: "T" value { type: DT_FLOAT } } }
"""
    with graphjit.Session(model) as s:
        with pytest.raises(graphjit.Error, match=r"node 'm' \(MatMul\).*inner dimensions"):
            s.run("m", {"a": np.ones((2, 3), np.float32), "b": np.ones((4, 5), np.float32)})
        with pytest.raises(graphjit.Error, match="nope"):
            s.run("nope", {"a": np.ones((2, 3), np.float32)})
        with pytest.raises(graphjit.InvalidArgumentError, match="feed 'a': graphjit takes no <U1 tensors"):
            s.run("m", {"a": np.array(["x"]), "b": np.ones((1, 1), np.float32)})


def test_concurrent_runs_from_threads():
    d = os.path.join(DATA, "bert_encoder_small")
    m, feeds, fetches, want = load(d)
    with graphjit.Session(os.path.join(d, m["model"]), jit="on_1") as s:
        errors = []

        def work():
            try:
                for _ in range(5):
                    for name, g, w in zip(fetches, s.run(fetches, feeds), want):
                        expect_close(g, w, m["tolerance"], name)
            except Exception as e:  # noqa: BLE001 (reported below)
                errors.append(e)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors


def test_stats_clusters_trace_and_dump(tmp_path):
    d = os.path.join(DATA, "keras_mlp")
    m, feeds, fetches, want = load(d)
    with graphjit.Session(os.path.join(d, m["model"]), jit="on_1") as s:
        before = s.stats()
        s.trace(tmp_path / "trace.json")
        s.run(fetches, feeds)
        after = s.stats()
        assert after["gpu_launches"] == before["gpu_launches"] and after["clusters"] >= before["clusters"]
        with open(tmp_path / "trace.json") as f:
            assert json.load(f)["traceEvents"]
        assert "cluster_0" in s.clusters()
        s.dump(tmp_path / "dump", fetches, feeds)
    assert glob.glob(str(tmp_path / "dump" / "*" / "01_fusion_plan.txt"))


class EmulatedCuda:
    """The CUDA emulator's driver, as the session loads it (beside graphjit's libraries): device
    memory for a DLPack producer written for this test (no PyTorch or JAX for CUDA here)."""

    def __init__(self):
        lib_dir = os.path.dirname(graphjit._capi.lib._name)
        self.cuda = ctypes.CDLL(os.path.join(lib_dir, "cuda_emulator", "libcuda.so.1"))
        device, context = ctypes.c_int(), ctypes.c_void_p()
        self.check(self.cuda.cuInit(0))
        self.check(self.cuda.cuDeviceGet(ctypes.byref(device), 0))
        self.check(self.cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device))
        self.check(self.cuda.cuCtxSetCurrent(context))

    @staticmethod
    def check(result):
        assert result == 0, "CUDA error %d" % result

    def upload(self, array):
        address = ctypes.c_uint64()
        self.check(self.cuda.cuMemAlloc_v2(ctypes.byref(address), ctypes.c_size_t(array.nbytes)))
        self.check(self.cuda.cuMemcpyHtoD_v2(address, array.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(array.nbytes)))
        return address.value

    def download(self, address, shape, dtype):
        out = np.empty(shape, dtype)
        self.check(self.cuda.cuMemcpyDtoH_v2(out.ctypes.data_as(ctypes.c_void_p), ctypes.c_uint64(address),
                                             ctypes.c_size_t(out.nbytes)))
        return out

    def free(self, address):
        self.check(self.cuda.cuMemFree_v2(ctypes.c_uint64(address)))


class CudaProducer:
    """A CUDA tensor with __dlpack__, as PyTorch's or CuPy's: a capsule over device memory whose
    deleter (the consumer calls it when done) frees it."""

    def __init__(self, cuda, array):
        self.cuda, self.shape, self.dtype = cuda, array.shape, array.dtype
        self.address = cuda.upload(array)
        self.freed = False
        self.streams = []

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None, **kwargs):
        from graphjit import _dlpack
        self.streams.append(stream)
        managed = _dlpack._Managed()
        shape = (ctypes.c_int64 * len(self.shape))(*self.shape)
        t = managed.dl_tensor
        t.data, t.device, t.ndim, t.shape = self.address, _dlpack._Device(2, 0), len(self.shape), shape
        t.dtype = _dlpack._DataType(2, 32, 1)

        @_dlpack._DELETER
        def deleter(_):
            self.cuda.free(self.address)
            self.freed = True

        managed.deleter = deleter
        self._kept = (managed, shape, deleter)
        return _dlpack._api.PyCapsule_New(ctypes.addressof(managed), b"dltensor", None)


def test_dlpack_on_the_gpu_emulator_without_copies():
    cuda = EmulatedCuda()
    x = np.linspace(-3, 3, 4096, dtype=np.float32).reshape(64, 64)
    with graphjit.Session(IDENTITY, jit="on_1", device="gpu-emu") as s:
        producer = CudaProducer(cuda, x)
        z = s.run("z", {"x": producer})
        # The kernel read the producer's memory: nothing was copied to the device.
        stats = s.stats()
        assert stats["h2d_copies"] == 0 and stats["h2d_bytes"] == 0, stats
        assert producer.streams == [1]  # the legacy default stream, which the run waited for
        assert producer.freed  # handed back once the run was done with it
        assert isinstance(z, graphjit.DeviceArray) and z.shape == (64, 64)
        # Its DLPack capsule is the device memory itself.
        from graphjit import _dlpack
        capsule = z.__dlpack__()
        pointer = _dlpack._api.PyCapsule_GetPointer(capsule, b"dltensor")
        managed = _dlpack._Managed.from_address(pointer)
        assert managed.dl_tensor.data == z._address and managed.dl_tensor.device.device_type == 2
        np.testing.assert_allclose(cuda.download(z._address, (64, 64), np.float32), np.tanh(x), rtol=2e-6, atol=1e-7)
        del capsule  # unconsumed: its destructor hands the tensor back
        # A DeviceArray fed back is read in place too.
        w = s.run("z", {"x": z})
        assert s.stats()["h2d_copies"] == 0
        np.testing.assert_allclose(cuda.download(w._address, (64, 64), np.float32), np.tanh(np.tanh(x)), rtol=2e-6,
                                   atol=1e-7)
        host = s.run("z", {"x": x}, fetch_on_device=False)
        assert isinstance(host, np.ndarray)


def test_bench_returns_the_json_table():
    table = graphjit.bench(os.path.join(ROOT, "bench", "graphs", "bias_relu_tanh.pb"), jit="off,on", iters=2)
    assert [c["jit"] for c in table["configs"]] == ["off", "on"]
    assert all(c["median_ms"] > 0 for c in table["configs"]), table
    with pytest.raises(graphjit.InvalidArgumentError, match="graphjit bench failed"):
        graphjit.bench(b"not a graph", iters=1)


def test_empty_half_and_bfloat16_fetches():
    model = b"""
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "h" op: "Cast" input: "x" attr { key: "SrcT" value { type: DT_FLOAT } } attr { key: "DstT" value { type: DT_HALF } } }
node { name: "b" op: "Cast" input: "x" attr { key: "SrcT" value { type: DT_FLOAT } } attr { key: "DstT" value { type: DT_BFLOAT16 } } }
"""
    x = np.array([1.5, -2.25, 3e4], np.float32)
    with graphjit.Session(model) as s:
        h, b = s.run(["h", "b"], {"x": x})
        assert h.dtype == np.float16 and h.tolist() == [1.5, -2.25, 30000.0]
        assert b.dtype == np.float32 and b.tolist() == [1.5, -2.25, 29952.0]  # bfloat16's 8 bits
        empty = s.run("h", {"x": np.zeros((0, 3), np.float32)})
        assert empty.shape == (0, 3) and empty.dtype == np.float16


def test_process_wide_options_take_effect_at_the_first_session():
    import subprocess
    import sys
    script = """
import graphjit
model = b'node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }'
graphjit.Session(model, options="--jit_cache_mb=64")
graphjit.Session(model, options="--jit_cache_mb=64")
graphjit.Session(model, options="--jit_cache_mb=32")
"""
    env = dict(os.environ)
    env.pop("GRAPHJIT_FLAGS", None)
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("process-wide") == 1, result.stderr
    assert "--jit_cache_mb=32 is process-wide: the first session's (64) took effect" in result.stderr


# ---- streams, alignment, devices and faults on the GPU (the emulator) ----

CU_STREAM_NON_BLOCKING = 1
CU_EVENT_DISABLE_TIMING = 2
HOST_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def new_stream(cuda):
    stream = ctypes.c_void_p()
    cuda.check(cuda.cuda.cuStreamCreate(ctypes.byref(stream), CU_STREAM_NON_BLOCKING))
    return stream


class AsyncCudaProducer(CudaProducer):
    """A producer whose values are still on their way when it hands the tensor over, as after
    PyTorch's `torch.randn(..., device="cuda")`: its memory is filled with NaN at once, then the
    values are queued with cuMemcpyHtoDAsync on `stream` (None: the legacy default stream, 0;
    else a stream of its own). Its __dlpack__ follows the protocol: the data is ready on the
    stream its consumer names (an event of its stream that the consumer's waits for)."""

    def __init__(self, cuda, array, stream=None):
        super().__init__(cuda, np.full(array.shape, np.nan, np.float32))
        self.values = np.ascontiguousarray(array, np.float32)  # read when the copy runs
        self.stream = stream if stream is not None else ctypes.c_void_p(0)
        cuda.check(cuda.cuda.cuMemcpyHtoDAsync_v2(ctypes.c_uint64(self.address), self.values.ctypes.data_as(ctypes.c_void_p),
                                                  ctypes.c_size_t(self.values.nbytes), self.stream))

    def __dlpack__(self, stream=None, **kwargs):
        if self.stream.value and stream not in (None, -1):
            event = ctypes.c_void_p()  # (kept: the wait takes its state when queued)
            self.cuda.check(self.cuda.cuda.cuEventCreate(ctypes.byref(event), CU_EVENT_DISABLE_TIMING))
            self.cuda.check(self.cuda.cuda.cuEventRecord(event, self.stream))
            self.cuda.check(self.cuda.cuda.cuStreamWaitEvent(ctypes.c_void_p(stream), event, 0))
            self._event = event
        return super().__dlpack__(stream, **kwargs)


@pytest.mark.parametrize("own_stream", [False, True], ids=["legacy_stream", "own_stream"])
def test_a_dlpack_feed_is_read_after_its_producer_wrote_it(own_stream):
    cuda = EmulatedCuda()
    x = np.linspace(-3, 3, 4096, dtype=np.float32).reshape(64, 64)
    with graphjit.Session(IDENTITY, jit="on_1", device="gpu-emu") as s:
        producer = AsyncCudaProducer(cuda, x, new_stream(cuda) if own_stream else None)
        z = s.run("z", {"x": producer})
        got = cuda.download(z._address, (64, 64), np.float32)
        assert not np.isnan(got).any(), "%d NaNs: read before the producer's values were written" % np.isnan(got).sum()
        np.testing.assert_allclose(got, np.tanh(x), rtol=2e-6, atol=1e-7)
        assert producer.streams == [1]


def test_a_run_waits_for_the_callers_stream_on_the_device():
    # Through the C API as a C program calls it: a device tensor of the caller's memory, whose
    # values a copy queued on the caller's stream writes, and that stream's handle.
    cuda = EmulatedCuda()
    lib = graphjit.lib
    x = np.linspace(-2, 2, 1024, dtype=np.float32).reshape(32, 32)
    with graphjit.Session(IDENTITY, jit="on_1", device="gpu-emu", options="--gpu_graphs=off") as s:
        s.run("z", {"x": x})  # compiled beforehand
        address = cuda.upload(np.full(x.shape, np.nan, np.float32))
        stream = new_stream(cuda)
        cuda.check(cuda.cuda.cuMemcpyHtoDAsync_v2(ctypes.c_uint64(address), x.ctypes.data_as(ctypes.c_void_p),
                                                  ctypes.c_size_t(x.nbytes), stream))
        # When the stream's work runs (the emulator runs it when something waits for it), has
        # graphjit already queued its kernels? Only if the host did not wait for the stream first.
        # (Launches one by one, --gpu_graphs=off: the process's gpu_launches counts each as queued.)
        launched = []

        def launches():
            return s.stats()["gpu_launches"]

        probe = HOST_FN(lambda _: launched.append(launches()))
        cuda.check(cuda.cuda.cuLaunchHostFunc(stream, probe, None))
        before = launches()
        feed = graphjit._wrap(s._session(), 1, x.shape, address, 1, None)
        out = (ctypes.c_void_p * 1)()
        try:
            graphjit._check(lib.gj_session_run(s._session(), 1, graphjit._capi.strings(["x"]), (ctypes.c_void_p * 1)(feed), 1,
                                               graphjit._capi.strings(["z"]), 1, stream, None, out))
        finally:
            lib.gj_tensor_free(feed)
        z = graphjit._fetched(out[0])
        assert launched == [before + 1], "the host waited for the caller's stream before queuing the run's kernels"
        np.testing.assert_allclose(cuda.download(z._address, x.shape, np.float32), np.tanh(x), rtol=2e-6, atol=1e-7)
        cuda.free(address)


def test_a_released_dlpack_output_outlives_its_consumers_queued_work():
    cuda = EmulatedCuda()
    x1 = np.linspace(-1, 1, 4096, dtype=np.float32).reshape(64, 64)
    x2 = -x1
    from graphjit import _dlpack
    with graphjit.Session(IDENTITY, jit="on_1", device="gpu-emu") as s:
        s.run("z", {"x": x2})
        z = s.run("z", {"x": x1})
        consumer = new_stream(cuda)
        # A consumer takes it on its stream, queues a copy of it there, and lets it go at once
        # (as a PyTorch tensor freed while its kernels are queued).
        capsule = z.__dlpack__(stream=consumer.value)
        pointer = _dlpack._api.PyCapsule_GetPointer(capsule, b"dltensor")
        _dlpack._api.PyCapsule_SetName(capsule, b"used_dltensor")
        managed = _dlpack._Managed.from_address(pointer)
        copied = np.empty_like(x1)
        cuda.check(cuda.cuda.cuMemcpyDtoHAsync_v2(copied.ctypes.data_as(ctypes.c_void_p), ctypes.c_uint64(z._address),
                                                  ctypes.c_size_t(copied.nbytes), consumer))
        managed.deleter(pointer)
        del z, capsule, managed
        w = s.run("z", {"x": x2})  # its output must not be the memory the copy still reads
        cuda.check(cuda.cuda.cuStreamSynchronize(consumer))
        np.testing.assert_allclose(copied, np.tanh(x1), rtol=2e-6, atol=1e-7)
        np.testing.assert_allclose(cuda.download(w._address, x2.shape, np.float32), np.tanh(x2), rtol=2e-6, atol=1e-7)


def test_a_misaligned_device_feed_is_copied_and_gives_the_right_answer():
    cuda = EmulatedCuda()
    m, feeds, fetches, want = load(os.path.join(DATA, "keras_mlp"))
    name, value = next(iter(feeds.items()))
    value = np.ascontiguousarray(value, np.float32)
    with graphjit.Session(os.path.join(DATA, "keras_mlp", "model.pb"), jit="on_2", device="gpu-emu",
                          options="--gpu_tf32=off") as s:
        # The feed 4 bytes past a 16-byte boundary: a slice's address (x[1:] of a row of one).
        base = cuda.upload(np.concatenate([np.zeros(1, np.float32), value.ravel()]))
        before = s.stats()["aligned_copies"]
        feed = graphjit._wrap(s._session(), 1, value.shape, base + 4, 1, None)
        out = (ctypes.c_void_p * len(fetches))()
        try:
            graphjit._check(graphjit.lib.gj_session_run(
                s._session(), 1, graphjit._capi.strings([name]), (ctypes.c_void_p * 1)(feed), len(fetches),
                graphjit._capi.strings(fetches), 0, None, None, out))
        finally:
            graphjit.lib.gj_tensor_free(feed)
        got = [graphjit._fetched(out[i]) for i in range(len(fetches))]
        assert s.stats()["aligned_copies"] == before + 1
        assert s.stats()["fallback"] == 0
        for g, w, f in zip(got, want, fetches):
            expect_close(g, w, m.get("tolerance", {"rtol": 1e-4, "atol": 1e-5}), f)
        cuda.free(base)


def run_python(script, **env):
    import subprocess
    import sys
    environment = dict(os.environ)
    environment.pop("GRAPHJIT_FLAGS", None)
    environment.update(env)
    return subprocess.run([sys.executable, "-c", script], env=environment, capture_output=True, text=True, timeout=300)


def test_every_gpu_of_the_machine():
    script = """
import os, numpy as np, graphjit, json
d = %r
m = json.load(open(os.path.join(d, "manifest.json")))
feeds = {k: np.load(os.path.join(d, v)) for k, v in m["feeds"].items()}
fetch = list(m["fetches"])[0]
want = np.load(os.path.join(d, m["fetches"][fetch]))
sessions = [graphjit.Session(os.path.join(d, "model.pb"), jit="on_2", device="gpu-emu:%%d" %% i,
                            options="--gpu_tf32=off") for i in (1, 0)]
outs = [s.run(fetch, feeds) for s in sessions]  # a GEMM on each: cuBLASLt's handle of each device
for s, z in zip(sessions, outs):
    np.testing.assert_allclose(s.run(fetch, feeds, fetch_on_device=False), want, rtol=1e-4, atol=1e-5)
    assert s.stats()["fallback"] == 0
print("devices", outs[0].__dlpack_device__(), outs[1].__dlpack_device__())
try:
    sessions[1].run(fetch, {list(feeds)[0]: outs[0]})
except graphjit.InvalidArgumentError as e:
    print("refused:", e)
""" % os.path.join(DATA, "keras_mlp")
    r = run_python(script, CUEMU_DEVICE_COUNT="2")
    assert r.returncode == 0, r.stderr
    assert "devices (2, 1) (2, 0)" in r.stdout, r.stdout
    assert "refused: " in r.stdout and "is on gpu:1" in r.stdout and "not on the session's gpu:0" in r.stdout, r.stdout


def test_after_a_fault_every_call_says_so():
    # A kernel of the host program's that stores to address 0 breaks the context (as on a
    # GPU): graphjit's later calls, and a new session, say what happened and what to do.
    script = """
import ctypes, numpy as np, graphjit
model = %r
s = graphjit.Session(model, jit="on_1", device="gpu-emu")
s.run("z", {"x": np.ones(4, np.float32)})
cuda = ctypes.CDLL(graphjit._capi.lib._name.rsplit("/", 1)[0] + "/cuda_emulator/libcuda.so.1")
ptx = b'''.version 8.0
.target sm_90
.address_size 64
.visible .entry bad() { .reg .b64 %%rd<2>; mov.u64 %%rd1, 0; st.global.u32 [%%rd1], 1; ret; }
'''
module, function = ctypes.c_void_p(), ctypes.c_void_p()
assert cuda.cuModuleLoadData(ctypes.byref(module), ptx) == 0
assert cuda.cuModuleGetFunction(ctypes.byref(function), module, b"bad") == 0
assert cuda.cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, None, None, None) == 0
print("sync", cuda.cuCtxSynchronize())
for attempt in range(2):
    try:
        s.run("z", {"x": np.ones(4, np.float32)})
    except graphjit.Error as e:
        print("run:", e)
try:
    graphjit.Session(model, jit="on_1", device="gpu-emu")
except graphjit.Error as e:
    print("new session:", e)
""" % IDENTITY
    r = run_python(script, CUEMU_QUIET="1")
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stdout.splitlines() if l.startswith(("run:", "new session:"))]
    assert len(lines) == 3, r.stdout
    for line in lines:
        assert "had a fault CUDA cannot recover from: CUDA_ERROR_ILLEGAL_ADDRESS" in line, r.stdout
        assert "restart the process" in line, r.stdout
    assert len({l.split(":", 1)[1] for l in lines}) == 1, "not the one message: " + r.stdout


def test_a_session_in_a_forked_child_is_a_clear_error():
    script = """
import os, numpy as np, graphjit
model = %r
graphjit.Session(model, jit="on_1", device="gpu-emu").run("z", {"x": np.ones(4, np.float32)})
pid = os.fork()
if pid == 0:
    try:
        graphjit.Session(model, jit="on_1", device="gpu-emu")
        os._exit(3)
    except graphjit.FailedPreconditionError as e:
        print("child:", e, flush=True)
        os._exit(0)
    os._exit(4)
_, status = os.waitpid(pid, 0)
print("child exit", os.waitstatus_to_exitcode(status))
""" % IDENTITY
    r = run_python(script)
    assert r.returncode == 0, r.stderr
    assert "child exit 0" in r.stdout, r.stdout + r.stderr
    assert "made by fork() from process" in r.stdout and "spawn" in r.stdout, r.stdout
