"""`dma_redistribute` and `dma_relayout` records (tu_ops/redistribute.py): every command
copies from the DM of its source part (`command_source`) into its own part."""

from __future__ import annotations

from typing import Any

from visa.interp.dma import DmTensor, copy_strided, copy_walk, live_parts, tensor_bytes
from visa.interp.errors import check
from visa.interp.fast.memo import per_record
from visa.interp.memory import Memory
from visa.interp.fast import speed

__all__ = ["run_redistribute"]


@per_record
def _walks(op: Any) -> list[tuple[tuple[int, int], list[int], list[int], list[int]]]:
    """Per command: its source (chip, cluster), and the loop sizes, source strides and
    destination strides of its walk when its innermost entry is a packet read and written
    in order (the strided shortcut's input); empty loops for one that is not."""
    out = []
    for i, cmd in enumerate(op.commands):
        packed = bool(cmd.entries) and (cmd.entries[-1].src_stride, cmd.entries[-1].dst_stride) == (1, 1)
        entries = cmd.entries if packed else ()
        out.append((tuple(op.command_source(i, cmd)), [e.size for e in entries], [e.src_stride for e in entries],
                    [e.dst_stride for e in entries]))
    return out


def run_redistribute(op: Any, mem: Memory, env: dict[int, Any]) -> DmTensor:
    """Execute one RedistributeOp or DmaRelayoutOp; return the DM tensor it creates (zero where no command writes)."""
    check(isinstance(env.get(op.src.id), DmTensor), f"source {op.src} is not a DM tensor", op)
    t = op.output_type
    base = mem.dm_address[op.result.id]
    if getattr(op, "into", None) is None:    # a write into a view keeps the tensor's other bytes
        mem.zero_dm(live_parts(t), t.slice.size, base, tensor_bytes(t, mem.target), op)
    fast = speed.on()
    for i, (cmd, (source, sizes_, src_strides, dst_strides)) in enumerate(zip(op.commands, _walks(op))):
        src, dst = mem.dm(*source), mem.dm(cmd.part.chip, cmd.part.cluster)
        if fast and sizes_ and copy_strided(src, cmd.src_base, src_strides, dst, cmd.dst_base, dst_strides, sizes_):
            continue   # an in-bounds affine walk writing each byte once: copied through views (a shortcut)
        copy_walk(src, cmd.src_base, dst, cmd.dst_base, cmd.entries[:-1], cmd.entries[-1].size if cmd.entries else 1,
                  op, i)
    return DmTensor(base, t)
