"""DLPack (dlpack.h's unversioned DLManagedTensor, in capsules named "dltensor") for device
tensors: handing a DeviceArray out, and reading a CUDA feed in place, with the streams of the
array API's protocol: a producer makes its data ready on the stream its consumer names, and
the consumer's memory outlives the work the consumer queued on it."""

import ctypes
import warnings

import graphjit

_CUDA = 2
# The array API's stream numbers for CUDA: the legacy default stream (a CUstream of its own,
# CU_STREAM_LEGACY); None means it too.
LEGACY_STREAM = 1


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int), ("dtype", _DataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _Managed(ctypes.Structure):
    _fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]


# The C API's capsule functions, on handles of their own (ctypes.pythonapi's are shared): by
# object, and by address for a capsule's destructor.
_api = ctypes.PyDLL(None)
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_raw = ctypes.PyDLL(None)
_raw.PyCapsule_IsValid.restype = ctypes.c_int
_raw.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_raw.PyCapsule_GetPointer.restype = ctypes.c_void_p
_raw.PyCapsule_GetPointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]

_NAME, _USED = b"dltensor", b"used_dltensor"


@_DELETER
def _delete(managed):
    # The consumer is done: its memory is not reused before the work it queued on its stream
    # has run (an event recorded there), and what the capsule kept (the DeviceArray, its
    # shape, the stream) goes.
    key = _Managed.from_address(managed).manager_ctx
    with graphjit._kept_lock:
        _, _, array, stream = graphjit._kept[key]
    try:
        if array._tensor:
            graphjit._check(graphjit.lib.gj_tensor_record_stream(array._tensor, stream))
    except graphjit.Error as e:  # (a deleter cannot raise: said, and the memory goes all the same)
        warnings.warn("graphjit: a DLPack consumer's stream could not be recorded: %s" % e)
    graphjit._release(key)


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _destroy_capsule(capsule):
    # A capsule nobody consumed still owns its tensor.
    if _raw.PyCapsule_IsValid(capsule, _NAME):
        _delete(_raw.PyCapsule_GetPointer(capsule, _NAME))


def capsule(array, stream):
    """A DLPack capsule over a DeviceArray's memory, which stays valid until the consumer
    calls the deleter (or the capsule goes unconsumed), and then until the work the consumer
    queued on `stream` (its CUDA stream, as the protocol numbers them) so far has run. The
    values are ready on every stream: the run that made them has finished them."""
    if stream == 0:
        raise graphjit.InvalidArgumentError(3, "__dlpack__(stream=0): the protocol does not allow 0 for CUDA")
    if stream is None or stream == -1:  # (-1: the consumer synchronizes itself; its stream is unknown)
        stream = LEGACY_STREAM
    managed = _Managed()
    shape = (ctypes.c_int64 * max(len(array.shape), 1))(*array.shape)
    code, bits = graphjit._DLPACK[array._dtype]
    t = managed.dl_tensor
    t.data, t.device, t.ndim = array._address, _Device(_CUDA, array._device), len(array.shape)
    t.dtype, t.shape, t.strides, t.byte_offset = _DataType(code, bits, 1), shape, None, 0
    managed.manager_ctx = graphjit._keep((managed, shape, array, stream))
    managed.deleter = _delete
    return _api.PyCapsule_New(ctypes.addressof(managed), _NAME, ctypes.cast(_destroy_capsule, ctypes.c_void_p))


class _Borrowed:
    """A consumed DLPack tensor, handed back to its producer (its deleter) when it goes."""

    def __init__(self, pointer):
        self._pointer = pointer

    def __del__(self):
        managed = _Managed.from_address(self._pointer)
        if managed.deleter:
            managed.deleter(self._pointer)


def cuda_feed(session, value, wrap):
    """A CUDA DLPack feed, read in place: the producer is asked to make its data ready on the
    legacy default stream (the protocol's stream 1), and the run's stream waits for that
    stream's work on the device (the caller passes LEGACY_STREAM to the run)."""
    cap = value.__dlpack__(stream=LEGACY_STREAM)
    pointer = _api.PyCapsule_GetPointer(cap, _NAME)  # raises where it is no DLPack capsule
    t = _Managed.from_address(pointer).dl_tensor
    shape = tuple(t.shape[i] for i in range(t.ndim))
    if t.strides:
        expected = 1
        for i in reversed(range(t.ndim)):
            if shape[i] != 1 and t.strides[i] != expected:
                raise graphjit.InvalidArgumentError(3, "a strided DLPack feed (graphjit reads dense row-major tensors)")
            expected *= shape[i]
    dtype = graphjit._FROM_DLPACK.get((t.dtype.code, t.dtype.bits))
    if dtype is None or t.dtype.lanes != 1:
        raise graphjit.InvalidArgumentError(3, "a DLPack feed of type code %d, %d bits" % (t.dtype.code, t.dtype.bits))
    _api.PyCapsule_SetName(cap, _USED)
    return wrap(session, dtype, shape, t.data + t.byte_offset, 1, _Borrowed(pointer))
