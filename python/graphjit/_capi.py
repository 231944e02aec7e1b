"""The C API (capi/graphjit.h) through ctypes: libgraphjit_c.so beside this file, or the one
GRAPHJIT_LIBRARY names. ctypes releases the GIL around every call, so runs from several
threads proceed together."""

import ctypes
import os

_HERE = os.path.dirname(os.path.abspath(__file__))

c_int64_p = ctypes.POINTER(ctypes.c_int64)
RELEASE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def _load():
    path = os.environ.get("GRAPHJIT_LIBRARY") or os.path.join(_HERE, "libgraphjit_c.so")
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise ImportError("graphjit: cannot load its library %s: %s" % (path, e)) from None
    status, session, tensor = ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p
    strings = ctypes.POINTER(ctypes.c_char_p)
    tensors = ctypes.POINTER(ctypes.c_void_p)
    signatures = {
        "gj_status_code": (ctypes.c_int, [status]),
        "gj_status_message": (ctypes.c_char_p, [status]),
        "gj_status_free": (None, [status]),
        "gj_string_free": (None, [ctypes.c_void_p]),
        "gj_version": (ctypes.c_char_p, []),
        "gj_session_new": (status, [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                                    ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(session)]),
        "gj_session_free": (None, [session]),
        "gj_tensor_wrap": (status, [session, ctypes.c_int, ctypes.c_int, c_int64_p, ctypes.c_void_p, ctypes.c_int,
                                    RELEASE, ctypes.c_void_p, ctypes.POINTER(tensor)]),
        "gj_tensor_dtype": (ctypes.c_int, [tensor]),
        "gj_tensor_rank": (ctypes.c_int, [tensor]),
        "gj_tensor_dims": (c_int64_p, [tensor]),
        "gj_tensor_data": (ctypes.c_void_p, [tensor]),
        "gj_tensor_on_device": (ctypes.c_int, [tensor]),
        "gj_tensor_free": (None, [tensor]),
        "gj_tensor_device": (ctypes.c_int, [tensor]),
        "gj_tensor_record_stream": (status, [tensor, ctypes.c_void_p]),
        "gj_session_run": (status, [session, ctypes.c_int, strings, tensors, ctypes.c_int, strings, ctypes.c_int,
                                    ctypes.c_void_p, ctypes.c_char_p, tensors]),
        "gj_session_stats": (status, [session, ctypes.POINTER(ctypes.c_void_p)]),
        "gj_session_clusters": (status, [session, ctypes.POINTER(ctypes.c_void_p)]),
        "gj_session_dump": (status, [session, ctypes.c_char_p, ctypes.c_int, strings, tensors, ctypes.c_int, strings,
                                     ctypes.c_void_p]),
        "gj_command": (ctypes.c_int, [ctypes.c_int, strings]),
    }
    for name, (restype, argtypes) in signatures.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = restype, argtypes
    return lib


lib = _load()


def strings(values):
    return (ctypes.c_char_p * max(len(values), 1))(*[v.encode() for v in values])


def take_string(pointer):
    """A string the library handed out, freed."""
    try:
        return ctypes.string_at(pointer).decode()
    finally:
        lib.gj_string_free(pointer)
