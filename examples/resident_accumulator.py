"""An accumulator kept in SRAM across launches (examples/resident_accumulator.py).

`Acc` is a resident DM tensor: the host allocates it once, `acc = Acc.alloc(device)`
(the reference's `DmTensor::alloc(&device)?`), and passes it to every launch. Each launch
of `resident_accumulate` adds one batch `x` (S = 2048 rows of H = 64 i32 values, 8 rows a
slice on 256 slices) into it in place: `begin_interleaved` streams the batch and the
accumulator as alternating flits, `vector_clip_zip(ADD_FXP)` adds each pair (i32, wrapping)
and `commit_view` writes the sums back over the accumulator (`Mut[Acc]`, Rust's
`&mut DmTensor`). No DMA moves the accumulator in or out between launches.
`resident_readout` reads it in place (`Acc`, Rust's `&DmTensor`) and returns it plus an
offset, leaving it as it was.

    device = npu_opt.Device("rngd")
    acc = Acc.alloc(device)                               # zeros (acc.write(array) to start elsewhere)
    for x in batches:
        npu_opt.run(resident_accumulate, x, acc)          # acc += x, in SRAM
    total = npu_opt.run(resident_readout, offset, acc)    # sum(batches) + offset
"""

from npu_opt import *

axes(S=2048, H=64, I=2)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("S / 8")
Acc = DmTensor[i32, Chip, Cluster, Slice, m("S % 8, H")]


def _sum(ctx, a, b):
    """a + b, element by element: the two tensors' flits alternate in one stream."""
    return (ctx.main.begin_interleaved(a.view(), b.view(), m("I"))
            .fetch(m("S % 8, H / 8, I"), m("H % 8"))
            .collect(m("S % 8, H / 8, I"), m("H % 8"))
            .vector_init()
            .vector_intra_slice_unzip(m("I"), m("S % 8, H / 8"))
            .vector_clip_zip(ClipBinaryOpI32.ADD_FXP)
            .vector_final()
            .commit_trim(m("H % 8")))


@device(chip=1)
def resident_accumulate(ctx: Context, x: HbmTensor[i32, Chip, m("S, H")], acc: Mut[Acc]) -> None:
    _sum(ctx, x.to_dm(ctx.tdma, Acc), acc).commit_view(acc.view_mut())   # acc += x, in place


@device(chip=1)
def resident_readout(ctx: Context, offset: HbmTensor[i32, Chip, m("S, H")],
                     acc: Acc) -> HbmTensor[i32, Chip, m("S, H")]:
    total = _sum(ctx, offset.to_dm(ctx.tdma, Acc), acc).commit(m("S % 8, H"))
    return total.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("S, H")])
