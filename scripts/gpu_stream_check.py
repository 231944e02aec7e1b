#!/usr/bin/env python3
"""What a GPU does that an emulator might let pass, checked on a device (scripts/gpu_check.sh
step "streams"): graphjit's Python package against producers and consumers of device memory
that queue their work asynchronously, as PyTorch, JAX and CuPy do.

  1. a producer on the CUDA driver itself (ctypes: no framework needed) whose values are
     still being written when it hands them over through DLPack, on the legacy default
     stream and on a stream of its own (which first runs a few milliseconds of other work):
     graphjit's result must be that of the same values fed from NumPy;
  2. the same through the C API with the producer's stream passed to the run;
  3. a feed 4 bytes past a 16-byte boundary (a slice), copied to aligned memory;
  4. with PyTorch for CUDA (where installed): torch.randn on the GPU fed in place, a slice of
     it, and graphjit's output taken by torch.from_dlpack;
  5. a convolution model with launch graphs on and --gpu_autotune=off, twice from one disk
     cache (the second process loads the kernels and runs them before capturing them),
     against TensorFlow's outputs;
  6. with two or more GPUs: a session on gpu:1, and a feed of gpu:1's memory to a session on
     gpu:0 refused.

  gpu_stream_check.py --device gpu|gpu-emu --graphjit BIN --data tests/data
Exits non-zero if any check fails; prints one line per check.
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

import graphjit
from graphjit import _dlpack

TANH = b"""
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "z" op: "Tanh" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
"""
NON_BLOCKING, DISABLE_TIMING = 1, 2


class Driver:
    """The CUDA driver a session of `device` uses: a GPU's libcuda, or graphjit's emulator."""

    def __init__(self, device, ordinal=0):
        here = os.path.dirname(graphjit._capi.lib._name)
        path = os.path.join(here, "cuda_emulator", "libcuda.so.1") if device.startswith("gpu-emu") else "libcuda.so.1"
        self.lib = ctypes.CDLL(path)
        self.emulated = device.startswith("gpu-emu")
        dev, context, count = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_int()
        self.check(self.lib.cuInit(0))
        self.check(self.lib.cuDeviceGetCount(ctypes.byref(count)))
        self.count = count.value
        self.check(self.lib.cuDeviceGet(ctypes.byref(dev), ordinal))
        self.check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(context), dev))
        self.check(self.lib.cuCtxSetCurrent(context))

    @staticmethod
    def check(result):
        if result != 0:
            raise RuntimeError("CUDA error %d" % result)

    def alloc(self, nbytes):
        address = ctypes.c_uint64()
        self.check(self.lib.cuMemAlloc_v2(ctypes.byref(address), ctypes.c_size_t(nbytes)))
        return address.value

    def pinned(self, array):
        """A copy of `array` in page-locked memory (an asynchronous copy's source)."""
        p = ctypes.c_void_p()
        self.check(self.lib.cuMemHostAlloc(ctypes.byref(p), ctypes.c_size_t(array.nbytes), 0))
        out = np.ctypeslib.as_array((ctypes.c_float * array.size).from_address(p.value)).reshape(array.shape)
        out[...] = array
        return out

    def stream(self):
        s = ctypes.c_void_p()
        self.check(self.lib.cuStreamCreate(ctypes.byref(s), NON_BLOCKING))
        return s

    def busy(self, stream, milliseconds_of_memsets=20):
        """Queues work that keeps `stream` busy for a while on a GPU (memsets of 256 MiB). (The
        emulator runs a stream's work only when something waits for it: nothing to add.)"""
        if self.emulated:
            return
        scratch = self.alloc(256 << 20)
        for i in range(milliseconds_of_memsets * 10):
            self.check(self.lib.cuMemsetD32Async(ctypes.c_uint64(scratch), i, ctypes.c_size_t(64 << 20), stream))
        return scratch

    def download(self, address, shape):
        out = np.empty(shape, np.float32)
        self.check(self.lib.cuMemcpyDtoH_v2(out.ctypes.data_as(ctypes.c_void_p), ctypes.c_uint64(address),
                                            ctypes.c_size_t(out.nbytes)))
        return out


class Producer:
    """Device memory filled with NaN, then the values queued on `stream` (0: the legacy
    default stream) behind a few milliseconds of other work, handed over through DLPack as
    the protocol says: ready on the stream the consumer names."""

    def __init__(self, cuda, values, stream, offset=0):
        self.cuda, self.shape, self.stream = cuda, values.shape, stream
        self.base = cuda.alloc(values.nbytes + 64)
        self.address = self.base + offset
        nan = np.full(values.shape, np.nan, np.float32)
        cuda.check(cuda.lib.cuMemcpyHtoD_v2(ctypes.c_uint64(self.address), nan.ctypes.data_as(ctypes.c_void_p),
                                            ctypes.c_size_t(nan.nbytes)))
        cuda.busy(stream)
        self.host = cuda.pinned(values)
        cuda.check(cuda.lib.cuMemcpyHtoDAsync_v2(ctypes.c_uint64(self.address), self.host.ctypes.data_as(ctypes.c_void_p),
                                                 ctypes.c_size_t(self.host.nbytes), stream))

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None, **kwargs):
        if self.stream.value and stream not in (None, -1):
            self.event = ctypes.c_void_p()
            self.cuda.check(self.cuda.lib.cuEventCreate(ctypes.byref(self.event), DISABLE_TIMING))
            self.cuda.check(self.cuda.lib.cuEventRecord(self.event, self.stream))
            self.cuda.check(self.cuda.lib.cuStreamWaitEvent(ctypes.c_void_p(stream), self.event, 0))
        managed = _dlpack._Managed()
        shape = (ctypes.c_int64 * len(self.shape))(*self.shape)
        t = managed.dl_tensor
        t.data, t.device, t.ndim, t.shape = self.address, _dlpack._Device(2, 0), len(self.shape), shape
        t.dtype = _dlpack._DataType(2, 32, 1)
        self._kept = (managed, shape)
        return _dlpack._api.PyCapsule_New(ctypes.addressof(managed), b"dltensor", None)


failures = []


def check(name, fn):
    try:
        fn()
        print("ok: %s" % name, flush=True)
    except Exception as e:  # one line per check, and the rest still run
        failures.append(name)
        print("FAILED: %s: %s: %s" % (name, type(e).__name__, e), flush=True)


def expect(got, want, what, rtol=2e-6, atol=1e-6):
    got = np.asarray(got)
    nans = int(np.isnan(got).sum())
    if nans:
        raise AssertionError("%s: %d NaNs of %d: read before the producer wrote them" % (what, nans, got.size))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="gpu", choices=["gpu", "gpu-emu"])
    parser.add_argument("--graphjit", required=True)
    parser.add_argument("--data", required=True)
    args = parser.parse_args()
    device = args.device
    cuda = Driver(device)
    x = np.random.default_rng(7).standard_normal((256, 1024)).astype(np.float32)
    session = graphjit.Session(TANH, jit="on_1", device=device)
    want = np.tanh(x)
    expect(session.run("z", {"x": x}, fetch_on_device=False), want, "NumPy feed")

    def producer(stream_of_its_own):
        def run():
            p = Producer(cuda, x, cuda.stream() if stream_of_its_own else ctypes.c_void_p(0))
            z = session.run("z", {"x": p})
            expect(cuda.download(z._address, x.shape), want, "DLPack feed")
        return run

    check("DLPack producer on the legacy default stream", producer(False))
    check("DLPack producer on a stream of its own", producer(True))

    def c_api_stream():
        stream = cuda.stream()
        p = Producer(cuda, x, stream)
        feed = graphjit._wrap(session._session(), 1, x.shape, p.address, 1, None)
        out = (ctypes.c_void_p * 1)()
        try:
            graphjit._check(graphjit.lib.gj_session_run(session._session(), 1, graphjit._capi.strings(["x"]),
                                                        (ctypes.c_void_p * 1)(feed), 1, graphjit._capi.strings(["z"]), 0,
                                                        stream, None, out))
        finally:
            graphjit.lib.gj_tensor_free(feed)
        expect(graphjit._fetched(out[0]), want, "C API run with the producer's stream")

    check("C API: the run waits for the caller's stream", c_api_stream)

    def sliced():
        p = Producer(cuda, x, ctypes.c_void_p(0), offset=4)
        before = session.stats()["aligned_copies"]
        z = session.run("z", {"x": p})
        expect(cuda.download(z._address, x.shape), want, "a feed 4 bytes past a 16-byte boundary")
        assert session.stats()["aligned_copies"] == before + 1, "not copied to aligned memory"

    check("a misaligned (sliced) feed", sliced)

    try:
        import torch
        has_torch = device == "gpu" and torch.cuda.is_available()
    except ImportError:
        has_torch = False
    if has_torch:
        def torch_in_and_out():
            big = torch.empty(64 << 20, device="cuda")
            for _ in range(10):
                big.normal_()  # keeps PyTorch's stream busy
            t = torch.randn(256, 1024, device="cuda")
            z = session.run("z", {"x": t})
            expect(session.run("z", {"x": t.cpu().numpy()}, fetch_on_device=False), torch.from_dlpack(z).cpu().numpy(),
                   "torch.randn fed in place, against its values from NumPy")
            flat = torch.randn(1 + 256 * 1024, device="cuda")
            z = session.run("z", {"x": flat[1:].view(256, 1024)})
            expect(torch.from_dlpack(z).cpu().numpy(), np.tanh(flat[1:].view(256, 1024).cpu().numpy()), "a torch slice")
            y = torch.from_dlpack(session.run("z", {"x": x})) * 2
            del z
            expect(y.cpu().numpy(), 2 * want, "graphjit's output in PyTorch")

        check("PyTorch producer and consumer", torch_in_and_out)
    else:
        print("skipped: PyTorch for CUDA (not installed, or not on a GPU)")

    def conv_from_disk_cache():
        model = os.path.join(args.data, "small_cnn")
        manifest = json.load(open(os.path.join(model, "manifest.json")))
        feeds = [a for name, f in manifest["feeds"].items() for a in ("--feed", "%s=%s/%s" % (name, model, f))]
        feeds += [a for name in manifest["fetches"] for a in ("--fetch", name)]
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, GRAPHJIT_FLAGS="--cache_dir=%s/cache --gpu_autotune=off --gpu_tf32=off" % d)
            for process in ("first", "second"):
                r = subprocess.run([args.graphjit, "run", os.path.join(model, "model.pb"), *feeds, "--device", device,
                                    "--jit", "on_2", "--repeat", "3", "--stats", "--out", os.path.join(d, process)],
                                   env=env, capture_output=True, text=True)
                assert r.returncode == 0, r.stderr[-2000:]
                assert "captures_failed=0" in r.stdout + r.stderr, "a capture failed: " + r.stderr[-2000:]
                for name, f in manifest["fetches"].items():
                    got = np.load(os.path.join(d, process, name.replace(":", "_").replace("/", "_") + ".npy"))
                    expect(got, np.load(os.path.join(model, f)), "%s process, %s" % (process, name), rtol=1e-3, atol=1e-4)
            assert "disk_hits=0" not in r.stdout + r.stderr, "the second process compiled again"

    check("a convolution with launch graphs, untuned, from a warm disk cache", conv_from_disk_cache)

    if cuda.count >= 2:
        def second_gpu():
            other = graphjit.Session(TANH, jit="on_1", device=device + ":1")
            z = other.run("z", {"x": x})
            assert z.__dlpack_device__() == (2, 1)
            expect(other.run("z", {"x": x}, fetch_on_device=False), want, "gpu:1")
            try:
                session.run("z", {"x": z})
            except graphjit.InvalidArgumentError as e:
                assert "gpu:1" in str(e) and "gpu:0" in str(e), str(e)
            else:
                raise AssertionError("gpu:1's memory fed to a session on gpu:0 was not refused")

        check("a session on gpu:1; its memory refused by gpu:0's", second_gpu)
    else:
        print("skipped: a second GPU (this machine has %d)" % cuda.count)
    print("%d checks failed" % len(failures) if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
