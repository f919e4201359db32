"""`synth.contraction`: a contraction in einsum form, its dtypes and sizes, checked
and turned into the `npu_opt.tune.Space` of kernels `npu-opt synth` searches (docs/synth.md).

    spec = contraction("out[m,n] = a[m,k] * w[n,k]", dtype="i8:i32", sizes=dict(m=512, n=512, k=64))
    spec.space()        # every candidate kernel: an ordinary tune Space (`npu-opt tune` runs it too)

An optional epilogue (synth/epilogue.py) adds a bias vector over the result's last
index, ReLU and a requantization of i32 sums to i8:
`q[m,n] = requant(relu(a[m,k] * w[n,k] + b[n]), 0.01)`.

The forms: GEMM `out[m,n] = a[m,k] * w[n,k]` (either operand first, either index order in
an operand), batched GEMM `out[b,m,n] = a[b,m,k] * w[b,n,k]` and GEMV `out[m] = a[m,k] * x[k]`. The dtype pairs are those the contraction
engine has: i8 -> i32, bf16 -> f32 and bf16 -> bf16. A size that is not a multiple of 32
is padded with zeros, a GEMM's result columns to rows of whole 256-byte HBM accesses (the
kernel's axis is the padded size; `Contraction.pad` and `unpad` convert host arrays). Bad specs raise `NpuOptError` with code USAGE.
"""

from __future__ import annotations

import keyword
import re
from pathlib import Path
from typing import Any

import attrs
import lark
import ml_dtypes
import numpy as np

import npu_opt
from ir.dtypes import DType
from ir.lark_cache import lalr_parser
from synth import epilogue as synth_epilogue, target as synth_target
from synth.epilogue import Epilogue
from synth.space import MODULE_NAMES, space_of
from synth.target import usage as _usage
from synth.tiling import ALIGN_BYTES

__all__ = ["Contraction", "DTYPES", "contraction", "parse_sizes"]

# (operand dtype, result dtype) -> numpy dtypes of the host arrays: the pairs the engine has.
DTYPES = {("i8", "i32"): ("int8", "int32"), ("bf16", "f32"): ("bfloat16", "float32"),
          ("bf16", "bf16"): ("bfloat16", "bfloat16")}
PAD = 32  # every axis is padded to a multiple of one 32-element slice tile / flit


_PARSER: list[Any] = []
GRAMMAR_FILE = Path(__file__).with_name("synth.lark")  # its tables beside it: synth.lalr
OPTIONS: dict[str, Any] = {}


Access = tuple[str, tuple[str, ...]]


def _parse(text: str) -> tuple[list[Access], Access | None, Epilogue | None]:
    """The accesses of `text`'s contraction, the result first: (tensor name, its indices);
    the bias access and the epilogue, or None (synth/epilogue.py)."""
    if not _PARSER:
        _PARSER.append(lalr_parser(GRAMMAR_FILE, **OPTIONS))
    try:
        tree = _PARSER[0].parse(text)
    except lark.exceptions.UnexpectedInput as e:
        raise _usage(f"cannot read the contraction {text!r} at column {getattr(e, 'column', '?')}: write it as "
                     "`out[m,n] = a[m,k] * w[n,k]`, with an epilogue `out[m,n] = relu(a[m,k] * w[n,k] + b[n])`"
                     ) from None
    result = tree.children[0]
    operands, bias, epilogue = synth_epilogue.read(text, tree.children[1])
    return [(str(result.children[0]), tuple(str(t) for t in result.children[1:])), *operands], bias, epilogue


def parse_sizes(text: str) -> dict[str, int]:
    """`m=512,n=512,k=64` -> {"m": 512, ...} (USAGE when malformed)."""
    sizes: dict[str, int] = {}
    for part in (p.strip() for p in text.split(",")):
        name, eq, value = (s.strip() for s in part.partition("="))
        if eq and name and re.fullmatch(r"-[0-9]+", value):
            raise _usage(f"the size of index {name!r} must be a positive integer, not {int(value)}")
        if not eq or not name or not re.fullmatch(r"[0-9]+", value):  # plain decimal digits: not 1_0, +64, ６４
            raise _usage(f"--sizes takes name=integer pairs separated by commas (m=512,n=512,k=64), not {part!r}")
        if name in sizes:
            raise _usage(f"--sizes names index {name!r} twice")
        sizes[name] = int(value)
    return sizes


def _pad(n: int) -> int:
    return -(-n // PAD) * PAD


@attrs.frozen
class Contraction:
    """A checked contraction: `form` is "gemm", "batched" or "gemv"; `operands` in the einsum's order."""

    text: str
    form: str
    result: tuple[str, tuple[str, ...]]
    operands: tuple[tuple[str, tuple[str, ...]], ...]
    contracted: str
    dtype_in: str
    dtype_out: str
    sizes: dict[str, int] = attrs.field(eq=False)
    name: str = "synth_kernel"
    batch: str | None = None  # the batched form's batch index (never padded)
    epilogue: Epilogue | None = None  # bias, ReLU, requantization after the contraction
    pe: int = 8  # processing elements of each chip (synth/target.py)
    chips: int = 1
    split: str | None = None  # the result index split over the chips
    # host-side views (docs/synth.md): the user's result indices merged into the kernel's
    # row index (named by joining them), and the operands stored with the contracted index
    # first, transposed by `pad`; `given` holds the user's accesses (result first) when either is set
    merged: tuple[str, ...] = ()
    transposed: tuple[str, ...] = ()
    given: tuple[Access, ...] = ()
    # where an operand stored transposed is transposed: "host" (by `pad`, a copy on the host) or
    # "device" (the kernel reads it as stored and the Transpose Engine transposes it, docs/synth.md)
    transpose: str = "host"

    @property
    def device_transposed(self) -> tuple[str, ...]:
        """The operands the kernel reads as stored, k first, and transposes on the device."""
        return self.transposed if self.transpose == "device" else ()

    def stored(self, name: str) -> tuple[str, ...]:
        """Operand `name`'s indices as the kernel's HBM tensor holds them: the user's order for an
        operand transposed on the device, else the kernel's (k innermost)."""
        return dict(self.given[1:])[name] if name in self.device_transposed else dict(self.operands)[name]

    @property
    def kernel_sizes(self) -> dict[str, int]:
        """Each kernel index's given size: the merged row index's is the product of its parts'."""
        if not self.merged:
            return self.sizes
        sizes = {i: n for i, n in self.sizes.items() if i not in self.merged}
        sizes["".join(self.merged)] = int(np.prod([self.sizes[i] for i in self.merged]))
        return sizes

    @property
    def result_dtype(self) -> str:
        """The kernel result's dtype: i8 after a requantization, else `dtype_out`."""
        return synth_epilogue.result_dtype(self.epilogue, self.dtype_out)

    @property
    def padded(self) -> dict[str, int]:
        """Each index's size in the kernel: the given size rounded up to a multiple of 32 (the
        batch's is not), a GEMV's rows beyond one pass to whole passes (a multiple of the
        slices); a chip's share of the split index on a multi-chip target. A GEMM's result
        columns, when they need padding at all, are padded further to rows of whole aligned
        HBM accesses (ALIGN_BYTES: 64 i32 or f32, 128 bf16, 256 i8 results), so that no row of
        results ends in a partial write (docs/synth.md "Supported contractions")."""
        sizes = {k: synth_target.per_chip(v, self.chips, k == self.batch, _pad) if k == self.split
                 else v if k == self.batch else _pad(v) for k, v in self.kernel_sizes.items()}
        if self.form == "gemv":  # a GEMV's passes of one row per slice: rows beyond one pass fill whole passes
            (row,), slices = self.result[1], synth_target.slices(self)
            sizes[row] = sizes[row] if sizes[row] <= slices else -(-sizes[row] // slices) * slices
        else:  # a column count that needs padding anyway: to rows of whole aligned HBM accesses
            col, given = self.result[1][-1], self.kernel_sizes[self.result[1][-1]]
            if col != self.split and col != self.batch and given % PAD:
                row = ALIGN_BYTES // (DType(self.result_dtype).bits // 8)
                sizes[col] = -(-given // row) * row
        return sizes

    def shape(self, indices: tuple[str, ...], padded: bool = True) -> tuple[int, ...]:
        """The host shape of the kernel's tensor indexed `indices` (a leading dimension of
        chips on a multi-chip target), or with `padded=False` the given sizes."""
        if not padded:
            return tuple({**self.sizes, **self.kernel_sizes}[i] for i in indices)
        return (self.chips,) * (self.chips > 1) + tuple(self.padded[i] for i in indices)

    def pad(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        """The operands (einsum order, given sizes), then the bias if the epilogue adds one,
        zero-padded to the kernel's host arrays (split over the chips of a multi-chip target).
        An operand stored transposed is transposed and merged indices are reshaped into one here,
        on the host: the kernel reads the array in its own layout."""
        bias = [(self.epilogue.bias[0], (self.epilogue.bias[1],))] if self.epilogue and self.epilogue.bias else []
        arrays = tuple(self.kernel_layout(name, a) for (name, _), a in zip(self.operands, arrays)) + arrays[2:]
        tensors = [(name, self.stored(name)) for name, _ in self.operands] + bias
        return tuple(self.host(a, idx) for (_, idx), a in zip(tensors, arrays))

    def kernel_layout(self, name: str, a: np.ndarray) -> np.ndarray:
        """The user's array of operand `name` in the kernel's layout: transposed when it is
        stored with the contracted index first, its merged indices reshaped into one."""
        if name in self.transposed and name not in self.device_transposed:
            a = np.ascontiguousarray(np.moveaxis(a, 0, -1))
        if self.merged and a.ndim == 3:
            a = a.reshape(self.shape(dict(self.operands)[name], padded=False))
        return a

    def host(self, a: np.ndarray, idx: tuple[str, ...]) -> np.ndarray:
        """The host array of one tensor indexed `idx` from its array of the given sizes."""
        full = np.zeros(tuple(self.padded[i] * (self.chips if i == self.split else 1) for i in idx), a.dtype)
        full[tuple(slice(0, n) for n in a.shape)] = a
        return synth_target.to_host(self, full, idx)

    def unpad(self, result: np.ndarray) -> np.ndarray:
        """The kernel's (padded) result host array as one array cut to the given sizes."""
        whole = synth_target.from_host(self, result, self.result[1])
        whole = whole[tuple(slice(0, n) for n in self.shape(self.result[1], padded=False))]
        return whole.reshape(self.shape(self.given[0][1], padded=False)) if self.merged else whole

    def host_dtypes(self) -> tuple[np.dtype, np.dtype]:
        a, b = DTYPES[(self.dtype_in, self.dtype_out)]
        b = "int8" if self.result_dtype == "i8" else b
        return np.dtype(a if a != "bfloat16" else ml_dtypes.bfloat16), np.dtype(b if b != "bfloat16" else ml_dtypes.bfloat16)

    def space(self, filename: str | None = None) -> Any:
        """Every candidate kernel of this contraction, as a tune Space (synth/space.py);
        `filename` is the path the candidates' source locations name."""
        return space_of(self, filename)


def contraction(text: str, dtype: str = "i8:i32", sizes: dict[str, int] | None = None,
                name: str = "synth_kernel", *, pe: int = 8, chips: int = 1, split: str | None = None,
                transpose: str = "host") -> Contraction:
    """Parse and check a contraction (the module docstring); USAGE for a spec npu-opt cannot build.
    `pe`, `chips` and `split` say where the kernel runs (synth/target.py); `transpose`
    where an operand stored with the contracted index first is transposed: "host" (`pad`) or
    "device" (the kernel reads it as stored, the Transpose Engine transposes it)."""
    spec = _contraction(text, dtype, sizes, name)
    split = synth_target.check(pe, chips, split, spec)
    if transpose not in ("host", "device"):
        raise _usage(f"--transpose takes host or device, not {transpose!r}")
    if transpose == "device" and not spec.transposed:
        raise _usage(f"--transpose device: no operand of {text!r} is stored with the contracted index first "
                     "(as b[k,n] in out[m,n] = a[m,k] * b[k,n]); there is nothing to transpose")
    return attrs.evolve(spec, pe=pe, chips=chips, split=split, transpose=transpose)


def _check_names(text: str, name: str, accesses: list[Access], bias: Access | None) -> None:
    """USAGE for a kernel name that is no identifier, a tensor named twice, or other than two operands."""
    if not name.isidentifier():
        raise _usage(f"the kernel name {name!r} is not a Python identifier")
    if keyword.iskeyword(name):
        raise _usage(f"the kernel name {name!r} is a Python keyword")
    if name in npu_opt.__all__ or name in MODULE_NAMES:  # the kernel would shadow it in its own file
        raise _usage(f"the kernel name {name!r} is a name the generated file imports from npu-opt or binds "
                     "itself; pick another (the default is synth_kernel)")
    names = [a[0] for a in accesses] + ([bias[0]] if bias else [])
    if len(set(names)) != len(names):
        raise _usage(f"{text!r} names a tensor twice: each operand and the result need their own name")
    if len(accesses) != 3:
        raise _usage(f"{text!r} has {len(accesses) - 1} operand(s); a contraction multiplies two")


def _contraction(text: str, dtype: str, sizes: dict[str, int] | None, name: str) -> Contraction:
    accesses, bias, epilogue = _parse(text)
    (rname, ridx), operands = accesses[0], accesses[1:]
    _check_names(text, name, accesses, bias)
    synth_epilogue.check(text, epilogue, bias, (rname, ridx), _dtypes(dtype)[1])
    for tname, idx in accesses:
        if len(set(idx)) != len(idx):
            raise _usage(f"{tname}[{', '.join(idx)}] repeats an index: a diagonal is not a contraction")
    used = set(ridx) | {i for _, idx in operands for i in idx}
    upper = [i.upper() for i in used]
    if len(set(upper)) != len(upper):
        raise _usage(f"{text!r} has indices that differ only in case; the kernel's axes are their upper case")
    for i in ridx:
        if not any(i in idx for _, idx in operands):
            raise _usage(f"index {i!r} of the result appears in no operand")
    contracted = [i for i in dict.fromkeys(i for _, idx in operands for i in idx) if i not in ridx]
    for i in contracted:
        if not all(i in idx for _, idx in operands):
            raise _usage(f"index {i!r} is on one operand only and not in the result: it is neither kept nor "
                         "contracted (sum it over first, or add it to the result)")
    if len(contracted) != 1:
        raise _usage(f"{text!r} contracts {len(contracted)} indices ({', '.join(contracted) or 'none'}); "
                     "synth contracts exactly one")
    k = contracted[0]
    batch = [i for i in ridx if all(i in idx for _, idx in operands)]
    if len(ridx) == 3 and len(batch) == 1 and all(len(idx) == 3 for _, idx in operands):
        rest = tuple(i for i in ridx if i != batch[0])
        kept = [tuple(i for i in idx if i not in batch) for _, idx in operands]
        if sorted(kept[0] + kept[1]) == sorted(rest + (k, k)) and all(sum(i in x for i in rest) == 1 for x in kept):
            return Contraction(text=text, form="batched", result=(rname, ridx), operands=tuple(operands),
                               contracted=k, dtype_in=_dtypes(dtype)[0], dtype_out=_dtypes(dtype)[1],
                               sizes=_sizes(text, used, sizes), name=name, batch=batch[0],
                               epilogue=epilogue)
    ridx, operands, merged, transposed = _host_views(ridx, operands, k, used)
    if len(ridx) == 2 and all(len(idx) == 2 for _, idx in operands) and \
            {i for _, idx in operands for i in idx if i != k} == set(ridx) and \
            all(sum(i in idx for i in ridx) == 1 for _, idx in operands):
        form = "gemm"
    elif len(ridx) == 1 and sorted(len(idx) for _, idx in operands) == [1, 2]:
        form = "gemv"
    else:
        raise _usage(f"{text!r} is not a form synth builds: a GEMM `out[m,n] = a[m,k] * w[n,k]` (an operand "
                     "may be stored `b[k,n]`), a batched GEMM `out[b,m,n] = a[b,m,k] * w[b,n,k]`, a weight shared "
                     "over a batch `out[b,m,n] = a[b,m,k] * w[n,k]` or a GEMV `out[m] = a[m,k] * x[k]`")
    din, dout = _dtypes(dtype)
    given = tuple(accesses) if merged or transposed else ()
    return Contraction(text=text, form=form, result=(rname, ridx), operands=tuple(operands), contracted=k,
                       dtype_in=din, dtype_out=dout, sizes=_sizes(text, used, sizes), name=name,
                       epilogue=epilogue, merged=merged, transposed=transposed, given=given)


def _host_views(ridx: tuple[str, ...], operands: list[Access], k: str, used: set[str]
                ) -> tuple[tuple[str, ...], list[Access], tuple[str, ...], tuple[str, ...]]:
    """The kernel's GEMM accesses of a spelling `Contraction.pad` views on the host: a
    three-index operand whose two kept indices stand side by side, in the same order, in it
    and in a three-index result (`out[b,m,n] = a[b,m,k] * w[n,k]`) has them merged into one
    row index; a two-index operand with the contracted index first (`b[k,n]`) is transposed.
    Returns the kernel's result indices and operands, the merged indices and the transposed
    operands' names (the spelling unchanged when neither applies)."""
    merged: tuple[str, ...] = ()
    if len(ridx) == 3 and sorted(len(idx) for _, idx in operands) == [2, 3] and all(k in i for _, i in operands):
        (aname, aidx), = [o for o in operands if len(o[1]) == 3]
        kept = tuple(i for i in aidx if i != k)
        at = [ridx.index(i) if i in ridx else -9 for i in kept]
        if aidx.index(k) in (0, 2) and at[1] == at[0] + 1:
            merged, row = kept, "".join(kept)
            while row in used or row.upper() in {i.upper() for i in used}:
                row += "_"
            ridx = ridx[:at[0]] + (row,) + ridx[at[0] + 2:]
            operands = [(n, (row, k) if aidx[-1] == k else (k, row)) if n == aname else (n, idx)
                        for n, idx in operands]
    transposed: tuple[str, ...] = ()
    if len(ridx) == 2 and all(len(idx) == 2 for _, idx in operands):
        transposed = tuple(n for n, idx in operands if idx[0] == k)
        operands = [(n, idx[::-1]) if n in transposed else (n, idx) for n, idx in operands]
    return ridx, operands, merged, transposed


def _dtypes(dtype: str) -> tuple[str, str]:
    din, _, dout = dtype.partition(":")
    if (din, dout) not in DTYPES:
        pairs = ", ".join(f"{a}:{b}" for a, b in DTYPES)
        raise _usage(f"the contraction engine has no {dtype!r} product: it has {pairs}")
    return din, dout


def _sizes(text: str, used: set[str], given: dict[str, int] | None) -> dict[str, int]:
    sizes = dict(given or {})
    missing = [i for i in sorted(used) if i not in sizes]
    if missing:
        raise _usage(f"no size for index {', '.join(missing)}: give --sizes {','.join(f'{i}=...' for i in missing)}")
    extra = [i for i in sizes if i not in used]
    if extra:
        raise _usage(f"--sizes names index {', '.join(extra)}, which {text!r} does not use")
    for i, n in sizes.items():
        if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
            raise _usage(f"the size of index {i!r} must be a positive integer, not {n!r}")
    return {i: sizes[i] for i in sorted(used)}
