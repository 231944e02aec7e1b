import numpy as np
import pytest

import graphjit_tf


@pytest.fixture
def jit_level():
    """Sets graphjit's JIT level for the test (graphjit_tf.set_jit_level), and off after it."""
    yield graphjit_tf.set_jit_level
    graphjit_tf.set_jit_level("off")


class Delta:
    """What graphjit_tf.stats() counted between entering and leaving the block."""

    def __enter__(self):
        self.before = graphjit_tf.stats()
        return self

    def __exit__(self, *exc):
        after = graphjit_tf.stats()
        self.counts = {k: v - self.before[k] for k, v in after.items() if isinstance(v, (int, float))}
        self.ops = {op: n - self.before["clustered_ops"].get(op, 0) for op, n in after["clustered_ops"].items()
                    if n > self.before["clustered_ops"].get(op, 0)}

    def __getitem__(self, key):
        return self.counts[key]


@pytest.fixture
def counted():
    return Delta


def assert_close(got, want):
    """The JIT's differential tolerance for float32: 1e-4 relative, against the output's scale."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * scale)
