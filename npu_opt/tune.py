"""`npu_opt.tune.Space`: a kernel factory and the values of its tiling parameters, for
`npu-opt tune` (docs/tuning.md "Tuning automatically").

A tune file declares one `Space` (or several) at module level:

    SPACE = Space(make_gemm, {"order": ["ij", "ji"], "packet": [32, 64]},
                  inputs=inputs, oracle=oracle)

`factory(**point)` must return a `@device` kernel for every point of the cartesian product
of `params` (in the order the dict lists them, the last parameter varying fastest).
`inputs(rng)` makes the host arrays of one run and `oracle(*arrays)` the expected results
(numpy, sharing no code with the kernel); with both given, the best candidates are run on
the cpu backend and the VISA interpreter and compared with the oracle before one wins.
Integer results must match exactly; float results within `rtol` / `atol` (numpy's
`allclose`), which default to exact.

Candidates that tie on makespan may still fold floats in another order and give other
bits; the tuner reports which. `exact=True` pins the bits: only a candidate whose results
on the cpu backend equal, bit for bit, those of the `golden` candidate (a point: parameter
name -> value; default the space's first point) can win. An exact space needs `inputs`
(`oracle` is then optional).

`distinct(point)`, when given, names the kernel a point builds (for instance its source):
points that name the same kernel are one candidate, the first in order; a point it names
None is left out (it builds nothing worth trying).

`bound(point, rates)`, when given, is a lower bound of the makespan of the candidate at
`point` from its parameters alone (`rates`: the schedule model's, `rates(group, key)` as in
`tu_ops/targets/rngd.schedule.toml`; None: no bound for this point). Once some makespan is
known, a candidate whose bound exceeds it is pruned before its kernel is built or traced.
It must never exceed the candidate's bound after lowering (the launch and the work of its
busiest context, docs/tuning.md "Prune"), so it prunes only what that bound would: the
tuner checks it on every candidate it lowers, and a bound above that stops the run. `npu-opt synth`'s spaces give one (synth/bound.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

__all__ = ["Space"]


def _params(value: Mapping[str, Sequence[Any]]) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    for name, values in dict(value).items():
        if isinstance(values, (str, bytes)):  # tuple("ab") would be the choices "a" and "b"
            raise ValueError(f"tune parameter {name!r} lists its choices as the string {values!r}: write "
                             f"[{values!r}] for that one choice, or a list of the choices")
    items = tuple((str(k), tuple(v)) for k, v in dict(value).items())
    for name, values in items:
        if not values:
            raise ValueError(f"tune parameter {name!r} has no values")
    return items


def _golden(value: Mapping[str, Any] | None) -> tuple[tuple[str, Any], ...] | None:
    return None if value is None else tuple((str(k), v) for k, v in dict(value).items())


@attrs.frozen
class Space:
    """The candidates of one tuning run: `factory(**point)` for every point of `params`."""

    factory: Callable[..., Any]
    params: tuple[tuple[str, tuple[Any, ...]], ...] = attrs.field(converter=_params)
    inputs: Callable[[Any], tuple[Any, ...]] | None = None
    oracle: Callable[..., Any] | None = None
    rtol: float = 0.0
    atol: float = 0.0
    exact: bool = False
    golden: tuple[tuple[str, Any], ...] | None = attrs.field(default=None, converter=_golden)
    distinct: Callable[[dict[str, Any]], Any] | None = None
    bound: Callable[[dict[str, Any], Any], int | None] | None = None
    # the points, once listed: `npu-opt tune` counts them, then the sweep lists them again, and
    # a synth space's `distinct` builds and budgets every point of the product (0.02-0.1 s)
    _listed: list[dict[str, Any]] = attrs.field(factory=list, init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.golden is not None:
            names, given = [name for name, _ in self.params], [name for name, _ in self.golden]
            if sorted(given) != sorted(names):
                raise ValueError(f"the golden candidate names {sorted(given)}, the space's parameters are "
                                 f"{sorted(names)}")
        if self.exact and self.inputs is None:
            raise ValueError("an exact space needs `inputs`: the golden candidate's bits come from a run")

    def points(self) -> list[dict[str, Any]]:
        """Every parameter choice, in candidate order; with `distinct`, only the first of the
        points whose `distinct(point)` is equal (they build the same kernel), and none whose
        `distinct(point)` is None. Listed once per space (`distinct` must name a point's kernel
        the same way every time); each call returns fresh dicts. Two threads listing a fresh
        space at once each list it (neither listing is added to the other)."""
        if not self._listed:
            # set whole, not extended: a thread that listed them meanwhile set the same points
            self._listed[:] = self._list()
        return [dict(point) for point in self._listed]

    def _list(self) -> list[dict[str, Any]]:
        names = [name for name, _ in self.params]
        every = [dict(zip(names, values)) for values in itertools.product(*(v for _, v in self.params))]
        if self.distinct is None:
            return every
        seen: set[Any] = set()
        kept = []
        for point in every:
            key = self.distinct(point)
            if key is not None and key not in seen:
                seen.add(key)
                kept.append(point)
        return kept

    def golden_point(self) -> dict[str, Any]:
        """The golden candidate's parameters, in the space's order."""
        if self.golden is None:
            return self.points()[0]
        given = dict(self.golden)
        return {name: given[name] for name, _ in self.params}

    @property
    def checks(self) -> bool:
        """Whether the best candidates are run and compared with the oracle (or the golden bits)."""
        return self.inputs is not None and (self.oracle is not None or self.exact)
