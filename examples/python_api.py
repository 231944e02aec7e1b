"""graphjit from Python (the package `graphjit`): the BERT-like encoder fixture run from
NumPy on the CPU and on the CUDA emulator, compared with TensorFlow's output; what was
clustered; on the emulator the result kept on the device, fed back without a copy.

    python3 examples/python_api.py    (the package installed, or PYTHONPATH=python with
                                       GRAPHJIT_LIBRARY=build/lib/libgraphjit_c.so)
"""

import json
import os
import time

import numpy as np

import graphjit

d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "bert_encoder_small")
with open(os.path.join(d, "manifest.json")) as f:
    manifest = json.load(f)
feeds = {k: np.load(os.path.join(d, v)) for k, v in manifest["feeds"].items()}
fetch = next(iter(manifest["fetches"]))
want = np.load(os.path.join(d, manifest["fetches"][fetch]))
model = os.path.join(d, manifest["model"])
print(graphjit.version())

with graphjit.Session(model, jit="on_1", device="cpu") as s:
    y = s.run(fetch, feeds)
    print("cpu: %s %s, max |graphjit - TensorFlow| = %.2g" % (y.dtype, y.shape, np.abs(y - want).max()))
    s.run(fetch, feeds)
    t0 = time.perf_counter()
    for _ in range(20):
        s.run(fetch, feeds)
    print("cpu: %.2f ms a call (NumPy in, NumPy out)" % ((time.perf_counter() - t0) / 20 * 1e3))
    clusters = s.clusters().splitlines()
    print("what it clusters (%d lines):" % len(clusters))
    for line in clusters[:4]:
        print("   " + line)

with graphjit.Session(model, jit="on_1", device="gpu-emu", options="--gpu_tf32=off") as s:
    y = s.run(fetch, feeds)  # the encoder's output stays on the (emulated) GPU
    print("gpu-emu: %s %s on the device (DLPack: %s)" % (type(y).__name__, y.shape, y.__dlpack_device__()))
    host = s.run(fetch, feeds, fetch_on_device=False)
    print("gpu-emu: max |graphjit - TensorFlow| = %.2g" % np.abs(host - want).max())
    stats = s.stats()
    print("gpu-emu: the last run copied %d bytes to the device, %d back" % (stats["h2d_bytes"], stats["d2h_bytes"]))
