"""Kernels drawn at random over valid layouts, for the benchmarks (issue 61 item 1).

The benchmarks used to measure the layouts someone wrote for them and met their goals there
while missing them elsewhere. `draw(seed, count)` draws `count` kernels from synth's
candidate space (synth/space.py, the machine's own rules): for each draw a form
(GEMM, tiled GEMM with more than one 256-slice tile, batched GEMM), an operand dtype pair
(i8 -> i32, bf16 -> f32, bf16 -> bf16), random sizes (sometimes not a multiple of 32, so
padded), the operands in either order and the result stored transposed (`out[n,m]`) or
not, then one value of every lever synth offers: placement, stationary operand (`trf`),
contraction packet, tile order and block reuse. A draw the compiler refuses (a rule of
the lowering's verifiers) is drawn again, so every kernel returned passes `npu-opt check`.

The same seed gives the same kernels. A quarter of the GEMM and tiled draws store one
operand with `k` first (`a[k,m]` or `w[k,n]`, numpy's own `a @ b` layout) and read it as
stored: the kernel transposes each block on the device (synth's `transpose="device"`,
docs/synth.md). Tile loops are rolled (`ctx.loop`) wherever synth rolls them, so a tiled
draw runs its loops rolled; the `pair` lever draws two tiles a rolled body.

    for d in draw(seed=1, count=4, scale="bench"):
        print(d.name, d.layout)          # the kernel's einsum, dtypes, sizes and levers
        arrays = d.inputs(np.random.default_rng(0))   # padded host arrays, the result last (zeros)
        want = d.oracle(*arrays)                        # numpy oracle of the padded result
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import attrs
import numpy as np

from backends.npu import compile_kernel
from ir.errors import NpuOptError
from synth import contraction
from synth.space import build, points, space_of
from tu_ops.target import get_target

__all__ = ["Drawn", "draw", "draw_space", "pinned"]

DTYPES = ("i8:i32", "bf16:f32", "bf16:bf16")
FORMS = ("gemm", "tiled", "batched")

# sizes per scale: "small" for tests (each kernel runs in milliseconds on both paths),
# "bench" for the benchmarks (sizes of the fixed benchmark kernels: 128..1024)
_SIZES = {
    "small": dict(mn=(32, 64, 96, 128, 256), tiled_mn=(512, 1024), k=(32, 64, 128), b=(2, 3), odd=0.25,
                  bmn=(32, 64, 128)),
    "bench": dict(mn=(256, 384, 512), tiled_mn=(1024, 2048), k=(128, 256, 512), b=(4, 16, 64), odd=0.2,
                  bmn=(32, 64, 128)),
}


@attrs.define
class Drawn:
    """One drawn kernel: its contraction (synth.Contraction) and lever values."""

    name: str
    spec: Any
    point: dict[str, Any]
    form: str

    @property
    def layout(self) -> str:
        """The einsum, dtypes, sizes and levers: enough to write the kernel again."""
        sizes = ",".join(f"{i}={n}" for i, n in self.spec.sizes.items())
        levers = ", ".join(f"{k}={v!r}" for k, v in self.point.items())
        device = " transpose=device" if self.spec.device_transposed else ""
        return f"{self.form}: {self.spec.text} {self.spec.dtype_in}:{self.spec.dtype_out} {sizes}{device}; {levers}"

    @cached_property
    def kernel(self) -> Any:
        return build(self.spec, self.point, f"<drawn {self.name}>")

    @cached_property
    def _space(self) -> Any:
        return space_of(self.spec, run=True)

    def inputs(self, rng: np.random.Generator) -> list[np.ndarray]:
        """The kernel's host arrays (padded operands, then the zeroed in-out result)."""
        return list(self._space.inputs(rng))

    def oracle(self, *arrays: np.ndarray) -> np.ndarray:
        """The padded result an exact machine computes from `inputs`' arrays (numpy einsum in
        int64 / float64: exact for i8 and for the small integers `inputs` puts in bf16)."""
        return np.asarray(self._space.oracle(*arrays))

    def tensor_bytes(self) -> int:
        """Bytes of the kernel's operands and result (host arrays, padded)."""
        din, dout = self.spec.host_dtypes()
        ops = sum(int(np.prod(self.spec.shape(idx))) * din.itemsize for _, idx in self.spec.operands)
        return ops + int(np.prod(self.spec.shape(self.spec.result[1]))) * dout.itemsize


def _einsum(rng: np.random.Generator, batched: bool, kfirst: str = "") -> str:
    """An einsum of the drawn form; `kfirst` names the operand stored with `k` first (`a[k,m]`)."""
    b = "b," if batched else ""
    a = "a[k,m]" if kfirst == "a" else f"a[{b}m,k]"
    w = "w[k,n]" if kfirst == "w" else f"w[{b}n,k]"
    ops = f"{a} * {w}" if rng.random() < 0.5 else f"{w} * {a}"
    out = f"out[{b}m,n]" if rng.random() < 0.6 else f"out[{b}n,m]"   # the result stored transposed
    return f"{out} = {ops}"


def _sizes(rng: np.random.Generator, form: str, scale: str) -> dict[str, int]:
    s = _SIZES[scale]
    pick = lambda xs: int(rng.choice(xs))  # noqa: E731
    if form == "batched":
        sizes = dict(b=pick(s["b"]), m=pick(s["bmn"]), n=pick(s["bmn"]), k=pick(s["k"]))
    else:
        mn = s["tiled_mn"] if form == "tiled" else s["mn"]
        sizes = dict(m=pick(mn), n=pick(s["mn"] if form == "tiled" else mn), k=pick(s["k"]))
        if form == "tiled" and rng.random() < 0.5:
            sizes["m"], sizes["n"] = sizes["n"], sizes["m"]
    if rng.random() < s["odd"]:  # a size that is no multiple of 32: padded by synth
        i = str(rng.choice(["m", "n", "k"]))
        sizes[i] = max(8, sizes[i] - int(rng.integers(1, 31)))
    return sizes


def _point(rng: np.random.Generator, levers: dict[str, list[Any]]) -> dict[str, Any]:
    return {name: values[int(rng.integers(len(values)))] for name, values in levers.items()}


def pinned(name: str, text: str, dtype: str, sizes: dict[str, int], point: dict[str, Any], form: str,
           transpose: str = "host") -> Drawn:
    """A kernel named by its layout rather than by a seed: what a test pins when it needs one
    particular layout (a seed's draws follow synth's space, which every new lever changes).
    `transpose="device"` as a layout with `transpose=device` says."""
    return Drawn(name, contraction(text, dtype=dtype, sizes=sizes, name=name, transpose=transpose), point, form)


def checks(kernel: Any) -> bool:
    """Whether `kernel` passes the compiler's rules (what `npu-opt check` runs)."""
    return compile_kernel(kernel, get_target("rngd")).status == "ok"


def _builds(d: Drawn) -> bool:
    """Whether the drawn point's kernel file traces: a point the space does not offer (synth/offer.py,
    e.g. a thin block with `a` stationary, synth/thin.py) may break a mapping rule as it is written."""
    try:
        d.kernel
    except NpuOptError:
        return False
    return True


def draw(seed: int, count: int, scale: str = "small", forms: tuple[str, ...] = FORMS,
         dtypes: tuple[str, ...] = DTYPES, attempts: int = 20) -> list[Drawn]:
    """`count` kernels drawn with `seed` (the module docstring); each passes the rules."""
    rng = np.random.default_rng(seed)
    # the stored-transposed draws from a stream of their own: a draw that stores no operand
    # k-first uses `rng` as the draws before it did, so adding them moved few kernels
    transposing = np.random.default_rng([seed, 1])
    out: list[Drawn] = []
    while len(out) < count:
        for _ in range(attempts):
            form = str(rng.choice(forms))
            dtype = str(rng.choice(dtypes))
            name = f"drawn_s{seed}_{len(out)}"
            kfirst = str(transposing.choice(["a", "w"])) if form != "batched" and transposing.random() < 0.25 else ""
            spec = contraction(_einsum(rng, form == "batched", kfirst), dtype=dtype,
                               sizes=_sizes(rng, form, scale), name=name, transpose="device" if kfirst else "host")
            d = Drawn(name, spec, _point(rng, points(spec)), form)
            if _builds(d) and checks(d.kernel):
                out.append(d)
                break
        else:
            raise RuntimeError(f"seed {seed}: {attempts} draws in a row refused by the rules")
    return out


# the drawn spaces of bench_tune.py: tiled GEMMs large and shallow enough to have many
# placements of several tiles each (order and reuse then build distinct kernels), and batched
# GEMMs (batch elements side by side on slices multiply the placements)
_SPACE_SIZES = dict(tiled_mn=(2048, 4096, 8192), tiled_k=(64, 128, 256), b=(16, 32, 64), bmn=(64, 128, 256),
                    batched_k=(128, 256))


def draw_space(seed: int, minimum: int = 100) -> Any:
    """A synth contraction drawn with `seed` whose tune space (`space_of`, after its
    deduplication of points that build the same kernel and its budget filter) holds at least
    `minimum` distinct candidates: a tiled GEMM of 2048..8192 rows and columns and a shallow
    k, or a batched GEMM of 16..64 elements (the form drawn first, then sizes until the space
    is large enough), any operand dtype pair, operands in either order,
    the result stored transposed or not. For bench_tune.py. (200 before the space left out the
    64-byte packets' twins, which halved every space: 100 draws the same contractions.)"""
    rng = np.random.default_rng(seed)
    s = _SPACE_SIZES
    pick = lambda xs: int(rng.choice(xs))  # noqa: E731
    batched = bool(rng.random() < 0.5)  # the form first: tiled spaces of 200 are the rarer draw
    for _ in range(200):
        dtype = str(rng.choice(DTYPES))
        if batched:
            sizes = dict(b=pick(s["b"]), m=pick(s["bmn"]), n=pick(s["bmn"]), k=pick(s["batched_k"]))
        else:
            sizes = dict(m=pick(s["tiled_mn"]), n=pick(s["tiled_mn"]), k=pick(s["tiled_k"]))
        spec = contraction(_einsum(rng, batched), dtype=dtype, sizes=sizes, name=f"drawn_space_s{seed}")
        if len(space_of(spec, run=False).points()) >= minimum:
            return spec
    raise RuntimeError(f"seed {seed}: no drawn space of {minimum} distinct candidates")
