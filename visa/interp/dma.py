"""`dma` records: paired byte walks between HBM and DM (visa/visa.lark "DMA commands").

A command `{part=(chip, cluster, dmn), src_base, dst_base, packet_bytes, entries}` copies
byte `src_base + sum(i_k * src_stride_k)` of its source to byte `dst_base + sum(i_k *
dst_stride_k)` of its destination for every point `i` of its entries (outer to inner, the
innermost the packet `packet_bytes:1:1`; a 1-byte packet is a size-1 entry, dropped, so
`entries=[]` is an empty nest, run once: one byte from src_base to dst_base). HBM
addresses count from the start of the HBM tensor, all its chips' copies (chip `c`'s copy at
`c * bytes(element)`, included in the command's HBM base);
DM addresses are `slice * DM_SLICE_BYTES + offset` in the DM of the command's
`(chip, cluster)`.

The tensor a DMA creates starts all zero: HBM bytes, or its DM range in every slice (at
the address visa/visa.lark allocates it, `alloc`), so the padding it does not
transfer is zero (docs/machine/index.md); the commands then write where they say. A
window at a runtime start (`src_start=%k`, `dst_start=%k`) moves every address of its
side by `start * start_bytes` bytes (RUNTIME-10 past the side's `start_limit`).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ir.runtime_types import checked_start
from tu_ops.enums import DmaKind
from visa.facts import tensor_bytes
from visa.interp.errors import check
from visa.interp.shortcuts import per_record, shortcut
from visa.interp.memory import Memory, copy_bytes
from visa.interp.strided import flat_walk, injective, runs_as_items, view
from visa.interp.values import pad_mask
from ir.words import a_an

__all__ = ["DmTensor", "copy_strided", "copy_walk", "tensor_bytes", "live_parts", "run_dma", "walk", "start_bytes"]


class DmTensor:
    """A DM tensor: its byte address in every slice of its (chip, cluster)s, and its type."""

    def __init__(self, base: int, type_: Any) -> None:
        self.base = base
        self.type = type_

    def __repr__(self) -> str:
        return f"DmTensor(base={self.base})"


def live_parts(t: Any) -> tuple[tuple[int, int], ...]:
    """The live (chip, cluster) positions of a DM-side type."""
    return _live_parts(t.chip, t.cluster)


@functools.lru_cache(maxsize=256)
def _live_parts(chip: Any, cluster: Any) -> tuple[tuple[int, int], ...]:
    """`live_parts` of the (frozen) chip and cluster mappings, worked out once per pair (every
    DMA, commit and new tensor asks)."""
    mask = pad_mask(chip, cluster)
    return tuple((int(c), int(k)) for c, k in zip(*np.nonzero(~mask)))


def walk(base: int, sizes: list[int], strides: list[int]) -> np.ndarray:
    """Every address `base + sum(i_k * stride_k)` of a loop nest, outer to inner, as an
    array of shape `sizes` (broadcast aranges times strides)."""
    addr = np.asarray(base, np.int64)
    for n, s in zip(sizes, strides):
        addr = addr[..., None] + np.arange(n, dtype=np.int64) * s
    return addr


def copy_walk(src: Any, src_base: int, dst: Any, dst_base: int, outer: Any, packet: int, op: Any, i: int) -> None:
    """Copy command `i`'s bytes by index: the `packet` bytes at every point of the walks of
    its `outer` entries, from `src_base` of `src` to `dst_base` of `dst`."""
    sizes, span = [e.size for e in outer], np.arange(packet, dtype=np.int64)
    src_addr = (walk(src_base, sizes, [e.src_stride for e in outer])[..., None], span)
    dst_addr = (walk(dst_base, sizes, [e.dst_stride for e in outer])[..., None], span)
    copy_bytes(src, src_addr, dst, dst_addr, op, what=f"command {i}'s")


def copy_strided(src: Any, src_base: int, src_strides: list[int], dst: Any, dst_base: int,
                 dst_strides: list[int], sizes: list[int]) -> bool:
    """Copy a command through strided views when both walks are in-bounds affine walks and
    the destination is written once per byte; False leaves it to the index path."""
    sw = flat_walk(src, src_base, sizes, src_strides, 1)
    dw = flat_walk(dst, dst_base, sizes, dst_strides, 1) if sw is not None else None
    if dw is None or not injective(sizes, dw[2], 1):
        return False
    np.copyto(*runs_as_items(*reversed(_word_views(sw, dw, sizes))))   # a packet of words as one item
    return True


def _word_views(sw: Any, dw: Any, sizes: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The (source, destination) views of two flat walks, each packet (the innermost loop,
    stride 1 on both sides) moved as 8-, 4- or 2-byte words when it and every address of
    both walks are whole words (the same bytes as fewer elements: a 4-byte packet is one
    element, not four); else byte by byte."""
    if sizes and sw[2][-1] == dw[2][-1] == 1:
        for w in (8, 4, 2):
            if sizes[-1] % w == 0:
                wide = [*sizes[:-1], sizes[-1] // w]
                sv = view((sw[0], sw[1], [*sw[2][:-1], w]), wide, np.dtype(f"u{w}"))
                dv = view((dw[0], dw[1], [*dw[2][:-1], w]), wide, np.dtype(f"u{w}")) if sv is not None else None
                if dv is not None:
                    return sv, dv
    return view(sw, sizes, np.dtype(np.uint8)), view(dw, sizes, np.dtype(np.uint8))


def start_bytes(op: Any, env: dict[int, Any], side: str) -> int:
    """The bytes a runtime tile start moves the addresses of `side` ("src" / "dst") by (0
    without one); RUNTIME-10 for a start past its limit (ir.runtime_types.checked_start)."""
    start = getattr(op, f"{side}_start", None)
    if start is None:
        return 0
    check(start.id in env, f"{side}_start {start} has no value", op)
    limit, step = getattr(op, f"{side}_start_limit"), getattr(op, f"{side}_start_bytes")
    return checked_start(env[start.id], limit, f"{op.result} = {op.MNEMONIC} ({side}_start)") * step


@per_record
def _written(op: Any, base: int, size: int, slice_bytes: int) -> dict[tuple[int, int], np.ndarray] | None:
    """Which slices' windows (`size` bytes from `base`) of the DM tensor a DMA creates its
    commands write whole, per (chip, cluster) a command writes: a boolean per slice of its
    type, when every command writes only inside the windows, each byte once; None otherwise.
    Worked out on the commands' packets (a few thousand at most; more, or a runtime start,
    and None)."""
    t = op.output_type
    if getattr(op, "dst_start", None) is not None or not size:
        return None
    found: dict[tuple[int, int], list[tuple[np.ndarray, int]]] = {}
    for cmd in op.commands:
        inner = cmd.entries[-1] if cmd.entries else None
        if inner is None or (inner.size, inner.dst_stride) != (cmd.packet_bytes, 1) or len(cmd.entries) > 8:
            return None
        outer = cmd.entries[:-1]
        if math.prod(e.size for e in outer) > 1 << 16:
            return None
        starts = walk(cmd.dst_base, [e.size for e in outer], [e.dst_stride for e in outer]).reshape(-1)
        found.setdefault((int(cmd.part.chip), int(cmd.part.cluster)), []).append((starts, cmd.packet_bytes))
    whole = {}
    for part, packets in found.items():
        starts = np.concatenate([s for s, _ in packets])
        lengths = np.concatenate([np.full(s.size, n, np.int64) for s, n in packets])
        order = np.argsort(starts, kind="stable")
        starts, lengths = starts[order], lengths[order]
        sl, off = np.divmod(starts, slice_bytes)
        if (bool((starts[1:] < starts[:-1] + lengths[:-1]).any()) or bool((off < base).any())
                or bool((off + lengths > base + size).any()) or int(sl.min()) < 0 or int(sl.max()) >= t.slice.size):
            return None
        whole[part] = np.bincount(sl, lengths, t.slice.size) == size   # no byte twice, all in the windows
    return whole


def _covers(op: Any, base: int, size: int, slice_bytes: int) -> bool:
    """Do a DMA's commands write every byte of the DM tensor it creates (`size` bytes from
    `base` in each slice its type has, in each live (chip, cluster)), each byte once? Then
    zeroing the tensor first is wasted (`_written`)."""
    whole = _written(op, base, size, slice_bytes)
    return whole is not None and set(whole) == set(live_parts(op.output_type)) and all(w.all() for w in whole.values())


def _hbm_result(op: Any, env: dict[int, Any], size: int, in_place: bool) -> np.ndarray:
    """The HBM bytes a DMA writes into: zeros, or a `dma_into`'s tensor (whose bytes it does
    not write keep their value), copied unless `in_place`."""
    into = getattr(op, "into", None)
    if into is None:
        return np.zeros(size, np.uint8)
    check(isinstance(env.get(into.id), np.ndarray) and env[into.id].shape == (size,),
          f"{into} is not an HBM tensor of {size} bytes", op)
    if in_place:
        return env[into.id]
    return np.empty(size, np.uint8) if _fills_hbm(op, size) else env[into.id].copy()


@per_record
def _fills_hbm(op: Any, size: int) -> bool:
    """Do a DMA's commands write every byte of its `size`-byte HBM result, each once? Then
    the tensor a `dma_into` writes into need not be copied first: none of its bytes is kept
    (a drawn kernel's 2 MiB result was copied a run, then written over whole)."""
    if getattr(op, "dst_start", None) is not None:
        return False
    total, walks = 0, []
    for cmd in op.commands:
        sizes, strides = [e.size for e in cmd.entries], [e.dst_stride for e in cmd.entries]
        if cmd.dst_base < 0 or any(n < 1 or d < 0 for n, d in zip(sizes, strides)):
            return False
        if cmd.dst_base + sum((n - 1) * d for n, d in zip(sizes, strides)) >= size or not injective(sizes, strides, 1):
            return False
        total += math.prod(sizes)
        walks.append((cmd.dst_base, sizes, strides))
    if total != size:           # an injective walk of `size` bytes inside `size` bytes writes each once
        return False
    if len(walks) == 1:
        return True
    if size > 1 << 22:          # several commands: each byte written by exactly one of them
        return False
    # (each walk injective, `size` writes in all: every byte written at all is every byte once)
    covered = np.zeros(size, np.bool_)
    for base, sizes, strides in walks:
        covered[walk(base, sizes, strides).reshape(-1)] = True
    return bool(covered.all())


def _dm_result(op: Any, mem: Memory, size: int) -> DmTensor:
    """The DM tensor a DMA creates: zeroed first, except the slices its commands write whole
    (`_written`: every slice when they cover the tensor), unless it writes into a tensor
    (whose bytes it does not write keep their value)."""
    base = mem.dm_address[op.result.id]
    if getattr(op, "into", None) is None:
        parts, slices = live_parts(op.output_type), op.output_type.slice.size
        if _covers(op, base, size, mem.dm_slice):
            mem.overwrite_dm(parts, slices, base, size)
        else:
            mem.zero_dm(parts, slices, base, size, op, _written(op, base, size, mem.dm_slice),
                        shortcut("dm_zero_lazy"))   # visa/interp/fast/lazy.py: padding slices held as zeros
            for chip, cluster in parts:
                mem.copies.forget((int(chip), int(cluster)), base, base + size)
    return DmTensor(base, op.output_type)


@per_record
def _command_walks(op: Any) -> tuple[tuple[list[int], list[int], list[int]], ...]:
    """Each command's (loop sizes, source strides, destination strides), its packet and
    loops checked: what the record alone fixes, once per record (a rolled loop runs the
    same DMA record again and again)."""
    walks = []
    for i, cmd in enumerate(op.commands):
        sizes = [e.size for e in cmd.entries]
        if cmd.packet_bytes < 1:
            check(False, f"command {i} has {a_an(cmd.packet_bytes)}-byte packet", op)
        check(all(n >= 1 for n in sizes), f"command {i} has an empty loop", op)
        # The loop nest is the entries; an empty nest runs once. The packet entry is dropped
        # only when it is the size-1 entry 1:1:1 (visa/visa.lark), so `entries=[]` is one
        # 1-byte packet from src_base to dst_base.
        if cmd.entries:
            last = cmd.entries[-1]
            check((last.size, last.src_stride, last.dst_stride) == (cmd.packet_bytes, 1, 1) or cmd.packet_bytes == 1,
                  f"command {i}: the innermost entry is not the {cmd.packet_bytes}-byte packet", op)
        else:
            check(cmd.packet_bytes == 1, f"command {i}: no entry for its {cmd.packet_bytes}-byte packet", op)
        walks.append((sizes, [e.src_stride for e in cmd.entries], [e.dst_stride for e in cmd.entries]))
    return tuple(walks)


def run_dma(op: Any, mem: Memory, env: dict[int, Any], in_place: bool = False) -> Any:
    """Execute one DmaOp; return the value it creates (a DmTensor, or an HBM byte array).
    `in_place`: a `dma_into` HBM tensor may be written over, nothing reads its old bytes
    again (the caller's knowledge: the walker's `_last_reads`)."""
    target = mem.target
    check(bool(op.commands), "no command", op)
    src_kind, dst_kind = op.kind.value
    if (op.input_type.kind, op.output_type.kind) != (src_kind, dst_kind):   # (the message built only then)
        check(False, f"{op.kind} between {a_an(op.input_type.kind)} and {a_an(op.output_type.kind)} tensor", op)
    if op.kind is DmaKind.DM_TO_DM:   # both sides in the DM of the command's (chip, cluster)
        check(op.output_type.cluster.size == op.input_type.cluster.size, "DM -> DM across clusters", op)
    src_val = env.get(op.src.id)
    if src_val is None:
        check(False, f"source {op.src} has no value", op)
    dst_bytes = tensor_bytes(op.output_type, target)
    if not isinstance(src_val, np.ndarray if src_kind == "hbm" else DmTensor):
        check(False, f"source {op.src} is not {'an HBM' if src_kind == 'hbm' else 'a DM'} tensor", op)
    if dst_kind == "hbm":
        result: Any = _hbm_result(op, env, op.output_type.chip.size * dst_bytes, in_place)
    else:
        result = _dm_result(op, mem, dst_bytes)
    walks = _command_walks(op)
    noted = shortcut("dma_written")
    lazy = shortcut("dma_lazy") if (src_kind, dst_kind) == ("hbm", "dm") else None   # visa/interp/fast/lazy.py
    src_off, dst_off = start_bytes(op, env, "src"), start_bytes(op, env, "dst")
    for i, (cmd, (sizes, src_strides, dst_strides)) in enumerate(zip(op.commands, walks)):
        dm = mem.dm(cmd.part.chip, cmd.part.cluster) if "dm" in (src_kind, dst_kind) else None
        src, dst = dm if src_kind == "dm" else src_val, dm if dst_kind == "dm" else result  # an HBM side's
        # addresses already count chip c's copy (DMAOP-5)
        copied = ((lazy is not None and lazy(mem, cmd, src, cmd.src_base + src_off, cmd.dst_base + dst_off))
                  or copy_strided(src, cmd.src_base + src_off, src_strides, dst, cmd.dst_base + dst_off, dst_strides,
                                  sizes))
        if dst_kind == "dm":
            if noted is not None:  # visa/interp/fast/copies.py: which slices the command filled alike
                noted(mem, cmd.part, src_kind == "hbm" and copied, cmd.dst_base + dst_off, cmd)
        if copied:
            continue
        inner = cmd.entries[-1] if cmd.entries else None
        packed = inner is not None and inner.src_stride == inner.dst_stride == 1   # the packet read in order
        copy_walk(src, cmd.src_base + src_off, dst, cmd.dst_base + dst_off, cmd.entries[:-1] if packed else cmd.entries,
                  inner.size if packed else 1, op, i)
    return result
