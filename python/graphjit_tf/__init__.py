"""graphjit inside TensorFlow.

Installing this package puts ``tensorflow-plugins/libgraphjit_tf.so`` next to TensorFlow,
which loads it at ``import tensorflow``. The plugin's graph optimizer runs after
TensorFlow's own Grappler passes on every CPU graph (``tf.function`` graphs and
``tf.compat.v1.Session`` graphs alike), clusters what graphjit can compile and replaces
each cluster with one ``GraphjitCluster`` op, compiled on its first run per input
signature by graphjit's JIT.

What is compiled, as with XLA's auto-clustering:

* the JIT level, from ``GRAPHJIT_FLAGS=--jit_level=off|on_1|on_2`` or
  :func:`set_jit_level` (which wins); ``off`` by default. TensorFlow does not hand a
  graph optimizer the session's ``ConfigProto``, so ``global_jit_level`` cannot carry it;
* ``tf.xla.experimental.jit_scope()``: scoped ops compile at every level, with graphjit
  instead of XLA;
* never: ``jit_compile=True`` functions (XLA's), variables, stateful ops and optimizer
  updates (TensorFlow's).

``tf.config.optimizer.set_experimental_options({'use_plugin_optimizers': False})`` turns
every plugin optimizer off.
"""

import ctypes
import json
import os
import warnings

import tensorflow as tf

__all__ = ["set_jit_level", "jit_level", "set_options", "options", "stats", "version", "library_path"]


def library_path():
    """Where the plugin library is (the one TensorFlow loaded)."""
    site = os.path.dirname(os.path.dirname(os.path.abspath(tf.__file__)))
    return os.path.join(site, "tensorflow-plugins", "libgraphjit_tf.so")


_lib = ctypes.CDLL(library_path())
_lib.GraphjitTF_SetJitLevel.argtypes = [ctypes.c_char_p]
_lib.GraphjitTF_SetJitLevel.restype = ctypes.c_int
_lib.GraphjitTF_JitLevel.restype = ctypes.c_char_p
_lib.GraphjitTF_SetOptions.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
_lib.GraphjitTF_SetOptions.restype = ctypes.c_int
_lib.GraphjitTF_Options.restype = ctypes.c_char_p
_lib.GraphjitTF_Stats.restype = ctypes.c_char_p
_lib.GraphjitTF_Version.restype = ctypes.c_char_p


def set_jit_level(level):
    """Sets the JIT level of graphs optimized from now on: "off", "on_1" (or "on") or "on_2"."""
    if _lib.GraphjitTF_SetJitLevel(str(level).lower().encode()) != 0:
        raise ValueError(f"graphjit_tf: the JIT level must be off, on, on_1 or on_2, got {level!r}")


def jit_level():
    """The JIT level graphs are optimized at: "OFF", "ON_1" or "ON_2"."""
    return _lib.GraphjitTF_JitLevel().decode()


def set_options(flags):
    """Applies GRAPHJIT_FLAGS-style flags to graphs optimized and clusters made from now on,
    e.g. "--min_cluster_size=4 --cluster_exclude_ops=Tanh --jit_verbose" (see the README's
    GRAPHJIT_FLAGS). All or nothing: a bad flag raises ValueError and changes nothing."""
    error = ctypes.create_string_buffer(1024)
    if _lib.GraphjitTF_SetOptions(str(flags).encode(), error, len(error)) != 0:
        raise ValueError("graphjit_tf: " + error.value.decode())


def options():
    """The options graphs are optimized with: the JIT level, cluster sizes, excluded ops,
    dump directory, verbosity, asynchronous compilation, the numerics guard."""
    return json.loads(_lib.GraphjitTF_Options().decode())


def stats():
    """The plugin's counters: graphs seen and rewritten, GraphjitCluster ops made, their
    kernels and runs, and the JIT's (compiles, cache hits and misses, compile time)."""
    return json.loads(_lib.GraphjitTF_Stats().decode())


def version():
    """(graphjit's version, the TensorFlow version the plugin was built against)."""
    graphjit, tensorflow = _lib.GraphjitTF_Version().decode().split(" ", 1)
    return graphjit, tensorflow


def _check_version():
    built = version()[1]
    if built.split(".")[:2] != tf.__version__.split(".")[:2]:
        warnings.warn(f"graphjit_tf was built against TensorFlow {built} and runs in {tf.__version__}: "
                      "reinstall it (pip install .) if TensorFlow misbehaves")


_check_version()
