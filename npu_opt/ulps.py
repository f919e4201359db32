"""The ulp check of the Vector Engine's transcendental functions, for `npu_opt.testing`.

`assert_within_ulps(actual, exact, ulps)`: every f32 output `y` is within `ulps` units in
the last place of the exact value `e` (float64): `|y - e| <= ulps * spacing(f32(|e|))`,
the spacing of f32 values at |e|. `ulps` is a number, or an `FpUnaryOp` value or its name
(`"EXP"`), meaning that op's bound in `ir.vector.numerics.ULP_TOLERANCE`, which holds for
inputs in the op's documented range [lo, hi]. NaN must meet NaN, an infinity the same
infinity.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.vector.numerics.transcendental import ULP_TOLERANCE

__all__ = ["assert_within_ulps", "ulp_bound", "ulp_errors"]

_SHOWN = 5


def ulp_bound(ulps: Any) -> float:
    """The bound in ulps: a number as it is, an FpUnaryOp (or its name) from ULP_TOLERANCE."""
    if isinstance(ulps, (int, float)) and not isinstance(ulps, bool):
        return float(ulps)
    name = getattr(ulps, "name", ulps)
    if name not in ULP_TOLERANCE:
        raise ValueError(f"no ulp tolerance for {ulps!r}; known: {', '.join(ULP_TOLERANCE)}")
    return ULP_TOLERANCE[name].ulps


def ulp_errors(actual: Any, exact: Any) -> np.ndarray:
    """|actual - exact| in f32 ulps of `exact` (0 where both are the same NaN / infinity,
    inf where only one is)."""
    got = np.asarray(actual)
    got = got.view(np.float32) if got.dtype == np.uint32 else got.astype(np.float32, copy=False)
    got64, e = got.astype(np.float64), np.asarray(exact, np.float64)
    with np.errstate(all="ignore"):
        spacing = np.spacing(np.abs(e).astype(np.float32)).astype(np.float64)
        err = np.abs(got64 - e) / spacing
    special = ~np.isfinite(e) | ~np.isfinite(got64)
    same = (np.isnan(e) & np.isnan(got64)) | (got64 == e)
    return np.where(special, np.where(same, 0.0, np.inf), err)


def assert_within_ulps(actual: Any, exact: Any, ulps: Any, err_msg: str = "") -> None:
    """AssertionError listing the worst elements unless every output is within `ulps`."""
    bound = ulp_bound(ulps)
    err = ulp_errors(actual, exact)
    if err.shape != np.shape(exact):
        raise AssertionError(f"shape mismatch: actual {err.shape}, exact {np.shape(exact)}")
    bad = np.flatnonzero(err.reshape(-1) > bound)
    if not bad.size:
        return
    worst = bad[np.argsort(-err.reshape(-1)[bad], kind="stable")][:_SHOWN]
    got = np.asarray(actual).reshape(-1)
    got = got.view(np.float32) if got.dtype == np.uint32 else got
    lines = [f"Not within {bound} ulp of the exact values" + (f"\n{err_msg}" if err_msg else ""),
             f"Mismatched elements: {bad.size} / {err.size}", f"Worst {len(worst)}:"]
    for flat in worst:
        index = tuple(int(i) for i in np.unravel_index(flat, err.shape))
        lines.append(f"  at {index}: actual {float(got[flat])!r}, exact {float(np.asarray(exact).reshape(-1)[flat])!r}, "
                     f"{float(err.reshape(-1)[flat]):.3g} ulp")
    raise AssertionError("\n".join(lines))
