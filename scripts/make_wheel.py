#!/usr/bin/env python3
"""Writes the wheel of the Python package `graphjit` (scripts/release.sh calls it): the
package's modules (python/graphjit), and beside them the release's libraries (lib/ of the
staged release: libgraphjit_c.so, libgraphjit.so, what they load, the CUDA emulator), so it
needs only glibc, libstdc++ and NumPy. One wheel serves every CPython 3 (ctypes, no
extension module): py3-none-linux_x86_64.

    scripts/make_wheel.py STAGED_RELEASE VERSION OUT_DIR
"""

import base64
import hashlib
import os
import sys
import zipfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
TAG = "py3-none-linux_x86_64"


def main(stage, version, out_dir):
    name = "graphjit-%s" % version
    dist_info = "graphjit-%s.dist-info" % version
    files = []  # (path in the wheel, bytes, executable)
    package = os.path.join(ROOT, "python", "graphjit")
    for f in sorted(os.listdir(package)):
        if f.endswith(".py"):
            files.append(("graphjit/" + f, open(os.path.join(package, f), "rb").read(), False))
    lib = os.path.join(stage, "lib")
    for folder, _, names in sorted(os.walk(lib)):
        for f in sorted(names):
            path = os.path.join(folder, f)
            files.append(("graphjit/" + os.path.relpath(path, lib), open(path, "rb").read(), True))
    for f in sorted(os.listdir(os.path.join(stage, "licenses"))):
        files.append(("%s/licenses/%s" % (dist_info, f), open(os.path.join(stage, "licenses", f), "rb").read(), False))
    metadata = "\n".join([
        "Metadata-Version: 2.1", "Name: graphjit", "Version: " + version,
        "Summary: graphjit's graph-cluster JIT for TensorFlow graphs, from Python (NumPy and DLPack in and out)",
        "Requires-Python: >=3.9", "Requires-Dist: numpy", ""])
    wheel = "\n".join(["Wheel-Version: 1.0", "Generator: graphjit scripts/make_wheel.py", "Root-Is-Purelib: false",
                       "Tag: " + TAG, ""])
    files.append((dist_info + "/METADATA", metadata.encode(), False))
    files.append((dist_info + "/WHEEL", wheel.encode(), False))
    record = []
    for path, data, _ in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (path, digest, len(data)))
    record.append(dist_info + "/RECORD,,")
    files.append((dist_info + "/RECORD", ("\n".join(record) + "\n").encode(), False))
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, "%s-%s.whl" % (name, TAG))
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data, executable in files:
            info = zipfile.ZipInfo(path, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if executable else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    print(out)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
