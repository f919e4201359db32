"""A feed whose rows span more than one (chip, cluster) (a placement of K over two
clusters): on the plain path each group's read goes straight into its rows of the one
stream (`visa.interp.feed.feed_rows`); with the speed machinery on, a feed whose packets
repeat (or that goes to a TRF load or the contraction) is held as its distinct packets,
each group's copied into its rows (`feed._repeated`). Either way the result equals an
independent numpy oracle bit for bit."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from synth import contraction
from synth.space import build
from visa import parse_visa
from visa.interp import execute_inout
from visa.interp import feed
from visa.interp.fast.repeated import Repeated
from npu_opt.compile_api import compile_kernel

PLACEMENT = "4x8 of 32x32, k over 8 slices, 2 clusters"


def _oracle(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    """out[n, m] = sum_k w[n, k] a[m, k], in float64 (exact for the small integers used)."""
    return np.einsum("nk,mk->nm", w.astype(np.float64), a.astype(np.float64)).astype(np.float32)


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("trf", ["a", "w"])
def test_a_feed_over_two_clusters_equals_the_oracle(monkeypatch: pytest.MonkeyPatch, fast: bool, trf: str) -> None:
    spec = contraction("out[n,m] = w[n,k] * a[m,k]", dtype="bf16:f32", sizes=dict(m=256, n=256, k=512), name="t")
    kernel = build(spec, dict(placement=PLACEMENT, trf=trf, packet=16), "<feed groups>")
    artifact = parse_visa(compile_kernel(kernel).text)
    seen: list[bool] = []
    held: list[object] = []
    read, repeated = feed._read, feed._repeated

    def spy(*args: object) -> np.ndarray:
        into = args[-1]
        assert isinstance(into, np.ndarray)
        seen.append(into.base is not None and into.base.shape[0] > into.shape[0])   # some rows of the stream
        return read(*args)

    monkeypatch.setattr(feed, "_read", spy)
    monkeypatch.setattr(feed, "_repeated", lambda *args: held.append(repeated(*args)) or held[-1])
    rng = np.random.default_rng(7)
    host = {"a": rng.integers(-8, 9, (256, 512)), "w": rng.integers(-8, 9, (256, 512))}
    arrays = [host[name].astype(ml_dtypes.bfloat16) for name, _ in spec.operands]
    arrays.append(np.zeros((256, 256), np.float32))
    results, finals = execute_inout(artifact, arrays, fast=fast)
    got = np.asarray((results + finals)[-1])
    if fast:   # every feed held as its distinct packets, over both clusters' rows
        assert held and all(isinstance(h, Repeated) and h.shape[0] == 512 for h in held)
        assert any(h.factored.strides[2] == 0 for h in held)   # the contraction's feed repeats its packets
    else:
        assert any(seen) and not held   # a stream read group by group, each into its rows
    assert np.array_equal(got.view(np.uint32), _oracle(host["a"], host["w"]).view(np.uint32))
