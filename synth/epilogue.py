"""The elementwise epilogue of a `npu-opt synth` contraction (docs/synth.md): a bias vector
added to the sums, ReLU, and a requantization of i32 sums to i8, spelled in the einsum:

    out[m,n] = relu(a[m,k] * w[n,k] + b[n])
    q[m,n]   = requant(relu(a[m,k] * w[n,k] + b[n]), 0.0009765625)

The Vector Engine does them in one pass after the contraction, in its stage order: the bias
(read from each slice's Vector Register File, one value per result column) on the Fxp
cluster (`ADD_FXP`, wrapping, i32) or the Clip cluster (`ADD`, f32); the requantization's
scale on the Fxp cluster (`MUL_FXP` by the Q31 multiplier round(scale * 2**31), rounded
half up; a scale of 1 multiplies by nothing); ReLU and the i8 range on the Clip cluster
(`MAX` with 0 or -128, `MIN` with 127); the Cast Engine narrows the clipped i32 to i8
(exact: it is in range). So `requant(x, s)` is clip(round(x * s), -128, 127) with the
bias added before it, and ReLU and requant commute. Bad epilogues raise USAGE.

This module reads the epilogue from the parsed einsum (`read`), checks it (`check`),
writes its lines of the emitted kernel (`param`, `bias_lines`, `vector_lines`,
`cast_lines`) and gives the search's inputs and oracle their part (`with_bias`, `apply`).
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from synth.target import usage as _usage

__all__ = ["Epilogue", "FUNCTIONS", "read", "check", "param", "bias_lines", "vector_lines", "cast_lines",
           "with_bias", "apply"]

FUNCTIONS = {"relu": "relu(x): max(x, 0), the Clip cluster's MAX",
             "requant": "requant(x, scale): i32 -> i8, clip(round(x * scale), -128, 127) with 0 < scale <= 1"}
_BIAS_DTYPE = {"i32": "i32", "f32": "f32", "bf16": "f32"}  # the accumulator the bias is added to


@attrs.frozen
class Epilogue:
    """bias: (tensor name, its index) or None; relu: whether ReLU applies; scale: requant's
    scale (the result is then i8) or None."""

    bias: tuple[str, str] | None = None
    relu: bool = False
    scale: float | None = None


def _access(tree: Any) -> tuple[str, tuple[str, ...]]:
    return str(tree.children[0]), tuple(str(t) for t in tree.children[1:])


def read(text: str, tree: Any) -> tuple[list[tuple[str, tuple[str, ...]]], tuple[str, tuple[str, ...]] | None,
                                        Epilogue | None]:
    """(the product's operands, the bias access or None, the functions as an Epilogue or None)
    of the right-hand side `tree` of the einsum `text` (synth/synth.lark)."""
    relu, scale = False, None
    while tree.data == "call":
        name, inner, args = str(tree.children[0]), tree.children[1], [str(a) for a in tree.children[2:]]
        if name not in FUNCTIONS:
            raise _usage(f"{text!r}: no epilogue function {name!r}; synth has " + "; ".join(FUNCTIONS.values()))
        if (name == "relu" and relu) or (name == "requant" and scale is not None):
            raise _usage(f"{text!r} applies {name} twice")
        if name == "relu":
            if args:
                raise _usage(f"{text!r}: relu takes one argument, the expression, not {len(args) + 1}")
            relu = True
        else:
            if len(args) != 1:
                raise _usage(f"{text!r}: requant takes the expression and a scale, requant(x, 0.01)")
            scale = _scale(text, args[0])
        tree = inner
    product, *added = tree.children  # sum: the product's accesses, then the added bias, if any
    accesses = [_access(a) for a in product.children]
    bias = _access(added[0]) if added else None
    if bias is None and not relu and scale is None:
        return accesses, None, None
    return accesses, bias, Epilogue(bias=None if bias is None else (bias[0], bias[1][0] if bias[1] else ""),
                                    relu=relu, scale=scale)


def _scale(text: str, arg: str) -> float:
    """requant's scale: in (0, 1], and a Q31 constant other than 0 and 2**31 unless it is 1."""
    scale = float(arg)
    if not 0 < scale <= 1:
        raise _usage(f"{text!r}: requant's scale must be in (0, 1]: the Vector Engine multiplies by a Q31 "
                     f"fixed-point constant (1.0 is 2**31), not {arg}")
    if scale != 1 and not 0 < round(scale * 2**31) < 2**31:
        raise _usage(f"{text!r}: requant's scale {arg} rounds to the Q31 constant {round(scale * 2**31)}, "
                     "outside 1 ... 2**31 - 1 (write 1 for no scaling, or a scale of at least 2**-31)")
    return scale


def check(text: str, epilogue: Epilogue | None, bias: tuple[str, tuple[str, ...]] | None,
          result: tuple[str, tuple[str, ...]], dtype_out: str) -> None:
    """USAGE for an epilogue synth cannot build: a bias that is not a vector over the result's
    last index, a requantization of sums that are not i32."""
    if epilogue is None:
        return
    if bias is not None:
        name, idx = bias
        if len(result[1]) == 1:
            raise _usage(f"{text!r}: a GEMV takes no bias in synth: each slice computes one row, and one "
                         "4-byte bias value per slice is under the DMA's 8-byte burst into DM (DMA-5); "
                         "relu and requant apply")
        if len(idx) != 1:
            raise _usage(f"{text!r}: a bias is a vector over the result's last index, {name}[{result[1][-1]}], "
                         f"not {name}[{', '.join(idx)}]")
        if idx[0] != result[1][-1]:
            raise _usage(f"the bias {name}[{idx[0]}] runs over {idx[0]}; synth adds a bias over the result's last "
                         f"index, {name}[{result[1][-1]}] (each slice keeps the values of its result columns in its "
                         "Vector Register File)")
    if epilogue.scale is not None and dtype_out != "i32":
        raise _usage(f"{text!r}: requant narrows the i32 sums of an i8:i32 contraction to i8; the Vector Engine "
                     f"gets {dtype_out} sums here (use --dtype i8:i32, or drop requant)")


def result_dtype(epilogue: Epilogue | None, dtype_out: str) -> str:
    """The dtype of the kernel's result: i8 after a requantization, else the contraction's."""
    return "i8" if epilogue is not None and epilogue.scale is not None else dtype_out


def param(spec: Any) -> list[str]:
    """The kernel parameter line of the bias (after the operands), or none."""
    ep = spec.epilogue
    if ep is None or ep.bias is None:
        return []
    name, index = ep.bias
    return [f'        {name}: HbmTensor[{_BIAS_DTYPE[spec.dtype_out]}, Chip, m("{index.upper()}")],']


def bias_lines(spec: Any, indent: str, tiles: str, cols: int, axis: str | None = None,
               split: bool = False, ring: int = 0, span: int = 0) -> tuple[list[str], list[str]]:
    """(the lines before the tile function that load the bias values of column block `j`
    into every slice's VRF, the tile function's lines that take them: loaded at the block's
    first tile, kept for the others), or two empty lists. `tiles` picks the block's columns
    from the bias's HBM view, `cols` the columns one slice computes, `axis` the column axis
    as the kernel's mappings write it (`N # 128` when padded inside the kernel). `split`:
    the DMA into DM (`{name}_dm_block(j)`) and the VRF load (`{name}_vrf_load(held)`) are
    functions of their own besides `{name}_block(j)`, so a kernel may move the bias before the
    TRF load and load the VRF after it (synth/overlap.py). The VRF load runs on the main
    context, whose contraction reads the VRF next, not on sub beside the TRF load: on sub it
    waited for the TRF load and the contraction for it (bench_synth.py's epilogue: 8,032
    cycles, on main 7,908). `ring`: the block moves once, a flit a slice on `BSlice`, and the
    VRF load's switch broadcasts the flits over `ring` slices, or over `span` when only `ring`
    of them hold one (synth/bias_switch.py)."""
    if spec.epilogue is None or spec.epilogue.bias is None:
        return [], []
    name, index = spec.epilogue.bias
    N, dt = axis or index.upper(), _BIAS_DTYPE[spec.dtype_out]
    element = f"{N} % {cols}"
    fetch = f'm("{N} / 8 % {cols // 8}"), m("{N} % 8")'  # 8 values of 4 bytes a flit
    move = [f"        {name}_dm = ({name}.view(){tiles}",
            f'                .to_dm(ctx.tdma, DmTensor[{dt}, Chip, Cluster, {"BSlice" if ring else "Slice"}, '
            f'm("{f"{N} % 8" if ring else element}")]))']
    config = f"CUSTOM_BROADCAST(ring_size={span})" if span > ring else f"BROADCAST1(slice1={ring}, slice0=1)"
    switch = [f'                .fetch(m("1"), m("{N} % 8"))',
              f"                # each slice's flit goes around their sub-ring of {max(ring, span)} slices into each of them",
              f'                .switch(Slice, m("{N} / 8 % {ring}"), SwitchConfig.{config})']
    vrf = [f"        return (ctx.main.begin({name}_dm.view())",
           *(switch if ring else [f"                .fetch({fetch})"]),
           f"                .collect({fetch})",
           f'                .to_vrf(m("{element}")))']
    if split:
        load = [f"    {name}_blocks = {{}}  # the bias of each column block j, loaded at its first tile",
                "",
                f"    def {name}_dm_block(j):",
                f"        # the bias: the {dt} values of {name} for block j's columns, "
                + (f"a flit of them on each of {ring} slices" if ring else f"each slice's {cols}") + " into its DM",
                *move,
                f"        return {name}_dm",
                "",
                f"    def {name}_vrf_load({name}_dm):",
                "        # ... and from there into its Vector Register File",
                *vrf,
                "",
                f"    def {name}_block(j):",
                f"        return {name}_vrf_load({name}_dm_block(j))",
                ""]
    else:
        load = [f"    {name}_blocks = {{}}  # the bias of each column block j, loaded at its first tile",
                "",
                f"    def {name}_block(j):",
                f"        # the bias: the {dt} values of {name} for block j's columns, each slice's {cols} "
                "into its Vector Register File" + (f" (a flit of them on each of {ring} slices in DM)" if ring else ""),
                *move, *vrf, ""]
    take = [f"{indent}if j not in {name}_blocks:",
            f"{indent}    {name}_blocks[j] = {name}_block(j)",
            f"{indent}{name}_vrf = {name}_blocks[j]"]
    return load, take


def vector_lines(spec: Any, indent: str) -> list[str]:
    """The chain's Vector Engine pass of the epilogue (after contract_lane), or none."""
    ep = spec.epilogue
    if ep is None:
        return []
    i32 = spec.dtype_out == "i32"
    L = [f"{indent}.vector_init()  # the epilogue, one Vector Engine pass over the {spec.dtype_out if i32 else 'f32'} "
         "sums",
         f"{indent}.vector_intra_slice_tag(TagMode.ZERO)"]
    if ep.bias is not None:
        name = ep.bias[0]
        L.append(f"{indent}.vector_fxp(FxpBinaryOp.ADD_FXP, {name}_vrf)  # + {name}, read from the VRF (wrapping)"
                 if i32 else f"{indent}.vector_clip(ClipBinaryOpF32.ADD, {name}_vrf)  # + {name}, read from the VRF")
    if ep.scale is not None and ep.scale != 1:
        q31 = round(ep.scale * 2**31)
        L.append(f"{indent}.vector_fxp(FxpBinaryOp.MUL_FXP, {q31})  # x * {ep.scale!r}: Q31 {q31} / 2**31, "
                 "rounded half up")
    if ep.scale is not None:
        low = 0 if ep.relu else -128
        L += [f"{indent}.vector_clip(ClipBinaryOpI32.MAX, {low})  # "
              + ("ReLU, and the i8 range's floor" if ep.relu else "the i8 range: at least -128"),
              f"{indent}.vector_clip(ClipBinaryOpI32.MIN, 127)  # ... and at most 127"]
    elif ep.relu:
        L.append(f"{indent}.vector_clip(ClipBinaryOpI32.MAX, 0)  # ReLU" if i32
                 else f"{indent}.vector_clip(ClipBinaryOpF32.MAX, 0.0)  # ReLU")
    return L + [f"{indent}.vector_final()"]


def cast_lines(spec: Any, indent: str, lanes: str) -> list[str]:
    """The Cast Engine's narrowing to i8 after a requantization (the stream's `lanes` padded to
    a 32-byte flit), or none."""
    ep = spec.epilogue
    if ep is None or ep.scale is None:
        return []
    return [f'{indent}.cast(i8, m("{lanes} # 32"))  # i32 -> i8, exact: the clip kept the values in range']


def with_bias(spec: Any, inputs: Any) -> Any:
    """The search's inputs with a random bias (padded with zeros) before the result."""
    ep = spec.epilogue
    if ep is None or ep.bias is None:
        return inputs

    def biased(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        arrays = inputs(rng)
        n = spec.sizes[ep.bias[1]]
        b = (rng.integers(-2**20, 2**20, n, dtype=np.int32) if spec.dtype_out == "i32"
             else rng.integers(-64, 65, n).astype(np.float32))
        return (*arrays[:-1], spec.host(b, (ep.bias[1],)), arrays[-1])
    return biased


def apply(spec: Any, acc: np.ndarray, arrays: tuple[np.ndarray, ...]) -> np.ndarray:
    """The epilogue on the exact sums `acc` (int64 or float64), as the search's oracle: `arrays`
    are the kernel's arguments (the bias, if any, just before the result)."""
    ep = spec.epilogue
    out = spec.host_dtypes()[1]
    if spec.dtype_out == "i32":
        x = acc.astype(np.int32).astype(np.int64)              # the engine's sums wrap at 32 bits
        if ep.bias is not None:
            x = (x + arrays[-2].astype(np.int64)).astype(np.int32).astype(np.int64)
        if ep.scale is not None:
            if ep.scale != 1:
                x = (x * round(ep.scale * 2**31) + 2**30) >> 31
            x = np.clip(x, 0 if ep.relu else -128, 127)
        elif ep.relu:
            x = np.maximum(x, 0)
        return x.astype(out)
    y = acc.astype(np.float32)
    if ep.bias is not None:
        y = y + arrays[-2].astype(np.float32)
    if ep.relu:
        y = np.maximum(y, np.float32(0))
    return y.astype(out)
