"""graphjit from Python: a TensorFlow graph (a frozen GraphDef) run by graphjit, its
fusible parts compiled, with NumPy arrays or DLPack tensors in and NumPy arrays (host) or
DLPack tensors (GPU) out.

    import graphjit
    s = graphjit.Session("model.pb", jit="on_1", device="cpu")
    y = s.run("y", {"x": x})            # one fetch: an array
    y, z = s.run(["y", "z"], {"x": x})  # a list: a list
"""

import ctypes
import threading

import numpy as np

from . import _capi
from ._capi import lib

__all__ = ["Session", "bench", "Error", "InvalidArgumentError", "NotFoundError", "ResourceExhaustedError",
           "FailedPreconditionError", "UnimplementedError", "InternalError", "DeviceArray", "version"]


# ---- errors: TensorFlow's codes, as TensorFlow's Python names them

class Error(RuntimeError):
    """An error graphjit reported; `code` is TensorFlow's error code. A node's error names the
    node and its op: "node 'y' (MatMul): ..."."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code, self.message = code, message


class InvalidArgumentError(Error):
    pass


class NotFoundError(Error):
    pass


class ResourceExhaustedError(Error):
    pass


class FailedPreconditionError(Error):
    pass


class UnimplementedError(Error):
    pass


class InternalError(Error):
    pass


_ERRORS = {3: InvalidArgumentError, 5: NotFoundError, 8: ResourceExhaustedError, 9: FailedPreconditionError,
           12: UnimplementedError, 13: InternalError}


def _check(status):
    if status:
        code, message = lib.gj_status_code(status), lib.gj_status_message(status).decode()
        lib.gj_status_free(status)
        raise _ERRORS.get(code, Error)(code, message)


def version():
    return lib.gj_version().decode()


# ---- data types: TensorFlow's DataType numbers

_DTYPES = {1: np.float32, 2: np.float64, 3: np.int32, 4: np.uint8, 5: np.int16, 6: np.int8, 9: np.int64,
           10: np.bool_, 19: np.float16}
_CODES = {np.dtype(v): k for k, v in _DTYPES.items()}
_BFLOAT16 = 14
# DLPack's (code, bits): 0 int, 1 uint, 2 float, 4 bfloat, 6 bool.
_DLPACK = {1: (2, 32), 2: (2, 64), 3: (0, 32), 4: (1, 8), 5: (0, 16), 6: (0, 8), 9: (0, 64), 10: (6, 8),
           19: (2, 16), 14: (4, 16)}
_FROM_DLPACK = {v: k for k, v in _DLPACK.items()}


# ---- tensors handed to the library: kept alive until it releases them

_kept = {}
_kept_lock = threading.Lock()
_next_key = [0]


@_capi.RELEASE
def _release(key):
    with _kept_lock:
        _kept.pop(key, None)


def _keep(obj):
    with _kept_lock:
        _next_key[0] += 1
        _kept[_next_key[0]] = obj
        return _next_key[0]


def _wrap(session, dtype, shape, address, on_device, owner):
    dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    key = _keep(owner)
    tensor = ctypes.c_void_p()
    _check(lib.gj_tensor_wrap(session, dtype, len(shape), dims, address, on_device, _release, key,
                              ctypes.byref(tensor)))  # (on an error, the library has released `owner`)
    return tensor


def _host_feed(session, name, value):
    array = np.asarray(value)
    if array.dtype not in _CODES:
        raise InvalidArgumentError(3, "feed '%s': graphjit takes no %s tensors" % (name, array.dtype))
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)  # a copy: the library reads dense row-major elements
    return _wrap(session, _CODES[array.dtype], array.shape, array.ctypes.data, 0, array)


def _feed(session, name, value, feeds):
    if isinstance(value, DeviceArray):
        return _wrap(session, value._dtype, value.shape, value._address, 1, value)
    if not isinstance(value, np.ndarray) and hasattr(value, "__dlpack_device__"):
        device_type, _ = value.__dlpack_device__()
        if device_type == 2:  # kDLCUDA: on the GPU, read in place once the producer's work is done
            feeds.stream = _dlpack.LEGACY_STREAM
            return _dlpack.cuda_feed(session, value, _wrap)
        if device_type == 1:  # kDLCPU: NumPy views it
            return _host_feed(session, name, np.from_dlpack(value))
        raise InvalidArgumentError(3, "feed '%s': DLPack device type %d is neither the CPU nor CUDA" % (name, device_type))
    return _host_feed(session, name, value)


class _Feeds:
    """A run's feeds as the library takes them (their names, their wrapped tensors), freed
    when the call returns."""

    def __init__(self, session, feeds):
        self._session, self._feeds, self._tensors = session, feeds or {}, []
        self.stream = None  # the CUstream whose work the run waits for (DLPack feeds' producers')

    def __enter__(self):
        try:
            for name, value in self._feeds.items():
                self._tensors.append(_feed(self._session, name, value, self))
        except BaseException:
            self.__exit__()
            raise
        return (self._session, len(self._tensors), _capi.strings(list(self._feeds)),
                (ctypes.c_void_p * max(len(self._tensors), 1))(*self._tensors), self.stream)

    def __exit__(self, *exc):
        for t in self._tensors:
            lib.gj_tensor_free(t)
        self._tensors = []


class _HostTensor:
    """A fetched host tensor as NumPy sees it (__array_interface__), freed with the last array
    that views it."""

    def __init__(self, tensor, typestr, shape):
        self._tensor = tensor
        self.__array_interface__ = {"data": (lib.gj_tensor_data(tensor) or 0, False), "shape": shape,
                                    "typestr": typestr, "version": 3}

    def __del__(self):
        lib.gj_tensor_free(self._tensor)


def _fetched(tensor):
    dtype = lib.gj_tensor_dtype(tensor)
    rank = lib.gj_tensor_rank(tensor)
    dims = lib.gj_tensor_dims(tensor)
    shape = tuple(dims[i] for i in range(rank))
    if lib.gj_tensor_on_device(tensor):
        return DeviceArray(tensor, dtype, shape)
    if dtype == _BFLOAT16:  # NumPy has no bfloat16: its bits widened to float32 (exact), a copy
        bits = np.asarray(_HostTensor(tensor, "<u2", shape))
        return (bits.astype(np.uint32) << 16).view(np.float32)
    if dtype not in _DTYPES:
        lib.gj_tensor_free(tensor)
        raise InvalidArgumentError(3, "a fetch of data type %d, which NumPy cannot hold" % dtype)
    return np.asarray(_HostTensor(tensor, np.dtype(_DTYPES[dtype]).str, shape))


class DeviceArray:
    """A fetched tensor on the session's GPU, handed out without a copy: DLPack takes it
    (torch.from_dlpack, jax.dlpack.from_dlpack, cupy.from_dlpack) and a run takes it as a feed
    (run(..., fetch_on_device=False) fetches to the host instead). Its values are complete when
    the run returns, so they are ready on any stream. Its memory stays valid while it, or a
    consumer of its DLPack capsule, holds it, and after the consumer lets it go, until the work
    the consumer queued on its stream (the `stream` it gave __dlpack__) by then has finished."""

    def __init__(self, tensor, dtype, shape):
        self._tensor, self._dtype, self.shape = tensor, dtype, shape
        self._address = lib.gj_tensor_data(tensor)
        self._device = lib.gj_tensor_device(tensor)
        self.dtype = np.dtype(_DTYPES[dtype]) if dtype in _DTYPES else "bfloat16"

    def __dlpack_device__(self):
        return (2, self._device)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        return _dlpack.capsule(self, stream)

    def __del__(self):
        if self._tensor:
            lib.gj_tensor_free(self._tensor)
            self._tensor = None


from . import _dlpack  # noqa: E402  (uses the names above)


class Session:
    """A graph run by graphjit.

    model: a path to a GraphDef (.pb binary, .pbtxt text), or its bytes. jit: "off", "on_1" or
    "on_2". device: "cpu", "gpu" or "gpu-emu" (the CUDA emulator), "gpu:N" or "gpu-emu:N" for
    the driver's GPU N (a device tensor fed must be on it). config: a ConfigProto, in
    text (str) or as bytes. options: flags as GRAPHJIT_FLAGS takes them; options that size what
    the process shares take effect at the first session, as in TensorFlow: --jit_cache_mb
    (the kernel cache's bound; a later session's other value is reported on stderr and
    ignored) and the GPU's memory share (the first session to open the GPU sets it).
    """

    def __init__(self, model, jit="on_1", device="cpu", config=None, options=""):
        if isinstance(model, (bytes, bytearray, memoryview)):
            data = bytes(model)
        else:
            with open(model, "rb") as f:
                data = f.read()
        if isinstance(config, str):
            config = config.encode()
        handle = ctypes.c_void_p()
        _check(lib.gj_session_new(data, len(data), config, len(config) if config else 0,
                                  jit.encode() if jit else None, device.encode() if device else None,
                                  options.encode() if options else None, ctypes.byref(handle)))
        self._handle = handle
        self._trace = None

    def close(self):
        if getattr(self, "_handle", None):
            lib.gj_session_free(self._handle)
            self._handle = None

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _session(self):
        if not self._handle:
            raise FailedPreconditionError(9, "the session is closed")
        return self._handle

    def run(self, fetches, feeds=None, fetch_on_device=True):
        """As TensorFlow's Session.run: `fetches` a name ("node" or "node:i") or a list of
        names, `feeds` a dict of name -> NumPy array (or anything np.asarray takes) or any
        object with __dlpack__ (a CUDA one on the session's GPU is read in place, once the
        work its producer queued on its stream is done: the producer is asked for the legacy
        default stream, which the run waits for on the device, not on the host). Host
        results are NumPy arrays; on a GPU, results the GPU made are DeviceArrays
        (fetch_on_device=False copies them to the host)."""
        single = isinstance(fetches, str)
        names = [fetches] if single else list(fetches)
        outputs = (ctypes.c_void_p * max(len(names), 1))()
        trace, self._trace = self._trace, None
        with _Feeds(self._session(), feeds) as (session, count, feed_names, tensors, stream):
            _check(lib.gj_session_run(session, count, feed_names, tensors, len(names), _capi.strings(names),
                                      int(fetch_on_device), stream, trace.encode() if trace else None, outputs))
        results = [_fetched(outputs[i]) for i in range(len(names))]
        return results[0] if single else results

    def stats(self):
        """The JIT's counters (process-wide: compiles, cache hits, kernel launches, ...) and the
        last run's copies between host and GPU, as a dict of numbers."""
        text = ctypes.c_void_p()
        _check(lib.gj_session_stats(self._session(), ctypes.byref(text)))
        out = {}
        for item in _capi.take_string(text).split():
            key, _, value = item.partition("=")
            if key and value:
                out[key] = float(value) if "." in value else int(value)
        return out

    def trace(self, path):
        """The next run writes a Chrome trace (chrome://tracing, Perfetto) of its kernels to path."""
        self._trace = str(path)

    def clusters(self):
        """What clustering does to the model and why each other node is left out: the table
        `graphjit clusters` prints."""
        text = ctypes.c_void_p()
        _check(lib.gj_session_clusters(self._session(), ctypes.byref(text)))
        return _capi.take_string(text)

    def dump(self, directory, fetches, feeds=None):
        """Runs the model once (as run does), writing every compiled cluster's stages to
        directory: DIR/<cluster>/<NN>_<stage>.<ext>, as `graphjit dump`."""
        names = [fetches] if isinstance(fetches, str) else list(fetches)
        with _Feeds(self._session(), feeds) as (session, count, feed_names, tensors, stream):
            _check(lib.gj_session_dump(session, str(directory).encode(), count, feed_names, tensors, len(names),
                                       _capi.strings(names), stream))


def bench(model, feeds=None, jit="off,on", iters=50, threads="1", device=None, config=None):
    """Times a model as `graphjit bench` does: the JIT configurations (`jit`: a list such as
    "off,on,on_2") interleaved, at each thread count (`threads`: "1,2"), with the streaming
    bandwidth measured in the same run beside them; prints its table and returns the one
    `graphjit bench --json` writes (a dict). `feeds`: name -> array (default: seeded random
    data for every placeholder); `device`: cpu, gpu or gpu-emu; `config`: a ConfigProto in
    text."""
    import json
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = model
        if isinstance(model, (bytes, bytearray, memoryview)):
            path = os.path.join(tmp, "model.pb")
            with open(path, "wb") as f:
                f.write(bytes(model))
        out = os.path.join(tmp, "bench.json")
        args = ["graphjit", "bench", str(path), "--jit", jit, "--iters", str(iters), "--threads", str(threads),
                "--json", out]
        for name, value in (feeds or {}).items():
            file = os.path.join(tmp, "feed%d.npy" % len(args))
            np.save(file, np.asarray(value))
            args += ["--feed", "%s=%s" % (name, file)]
        if device:
            args += ["--device", device]
        if config:
            file = os.path.join(tmp, "config.pbtxt")
            with open(file, "w") as f:
                f.write(config)
            args += ["--config", file]
        status = lib.gj_command(len(args), _capi.strings(args))
        if status != 0:
            raise (InvalidArgumentError if status == 2 else Error)(
                3 if status == 2 else 2, "graphjit bench failed (exit status %d): its message is on stderr" % status)
        with open(out) as f:
            return json.load(f)
