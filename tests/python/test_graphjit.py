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
