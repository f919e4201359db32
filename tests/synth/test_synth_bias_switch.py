"""The bias of a `w by switch` candidate moved once a column block and broadcast into the VRFs by
the Switch Engine (synth/bias_switch.py, issue 54's efficiency goal): where it applies, that the
kernels equal numpy on cpu and visa, and that the model finds the bench's epilogue faster."""

from __future__ import annotations

from synth import contraction
from synth.bias_switch import bias_ring
from synth.gemm_text import gemm_names
from synth.space import source
from tests.synth.lever_checks import equals_numpy, makespan  # the numpy check on cpu and visa, the model

EPILOGUE = "q[m,n] = requant(relu(a[m,k] * w[n,k] + b[n]), 0.0009765625)"


def _ring(spec, placement: str) -> int:
    return bias_ring(gemm_names(spec, dict(placement=placement, trf="w", packet=32)))


def test_the_bias_rides_the_switch_only_with_w_by_switch_and_a_flit_a_slice() -> None:
    spec = contraction(EPILOGUE, sizes=dict(m=512, n=512, k=128))
    assert _ring(spec, "64x2 of 8x256, on 1/2 of the slices, w by switch") == 32     # 32 flits of 8 i32 on 64 slices
    assert _ring(spec, "64x2 of 8x256, on 1/2 of the slices") == 0                   # copies: no switch in the tile
    assert _ring(spec, "64x2 of 8x256, on 1/2 of the slices, a and w by switch") == 0  # n innermost on the ring
    assert _ring(spec, "16x4 of 32x128, on 1/4 of the slices, w by switch") == 16
    assert _ring(spec, "8x8 of 64x64, on 1/4 of the slices, w by switch") == 8
    assert _ring(spec, "4x16 of 128x32, on 1/4 of the slices, w by switch") == 4
    # fewer slices along m than flits: a slice would hold several, in packets under a DMA request each
    assert _ring(spec, "4x8 of 128x64, on 1/8 of the slices, w by switch") == 0
    assert _ring(contraction("q[m,n] = a[m,k] * w[n,k]", sizes=dict(m=512, n=512, k=128)),
                 "64x2 of 8x256, on 1/2 of the slices, w by switch") == 0            # no bias
    text = source(spec, dict(placement="64x2 of 8x256, on 1/2 of the slices, w by switch", trf="w", packet=32))
    # 64 slices along m, the first 32 of them holding a flit each: one copy, spread over all 64
    assert 'BSlice = m("1 # 2, N % 512 / 256, 1 # 2, N / 8 % 32")' in text
    assert "SwitchConfig.CUSTOM_BROADCAST(ring_size=64)" in text


def test_a_switched_f32_bias_equals_numpy_on_cpu_and_visa() -> None:
    # the i32 bias on odd rows: tests/synth/test_synth_odd_rows.py
    f32 = contraction("out[m,n] = relu(a[m,k] * w[n,k] + b[n])", dtype="bf16:f32", sizes=dict(m=32, n=64, k=32))
    point = dict(placement="4x2 of 8x32, on 1/32 of the slices, w by switch", trf="w", packet=16)
    assert bias_ring(gemm_names(f32, point)) == 4                    # every slice along m holds one flit
    equals_numpy(f32, point)


def test_the_bench_epilogue_runs_faster_with_its_bias_switched() -> None:
    spec = contraction(EPILOGUE, sizes=dict(m=512, n=512, k=128))
    # 64 copies of each 1 KB block of the bias (512 DMA cycles) become one flit on each of 32 of the
    # block's 64 slices (64 DMA requests; 128 with a flit on all 64, 6,966 cycles)
    winner = dict(placement="64x2 of 8x256, on 1/2 of the slices, w by switch", trf="w", packet=32, pieces=2)
    assert makespan(spec, winner) == 6902      # 7,350 with the copies


def test_a_one_piece_tile_moves_its_bias_between_w_and_a() -> None:
    # loaded at the tile, the bias took the DM of w's block (free once the TRF load was issued)
    # and its DMA waited for the TRF load: 7,474 cycles; moved right after w, 6,850 (synth/overlap.py);
    # its flits on 32 of the 128 slices along m, not on all 128, 6,658 (synth/bias_switch.py)
    spec = contraction(EPILOGUE, sizes=dict(m=512, n=512, k=128))
    point = dict(placement="128x2 of 4x256, w by switch", trf="w", packet=32, pieces=1)
    text = source(spec, point)
    assert text.index("b_dm = b_dm_block(0)") < text.index("a_dm = a_block(0)") < text.index("trf = stationary(w_dm)")
    assert makespan(spec, point) == 6658
    # the same order on a small one-tile kernel, with and without the bias's switch, equals numpy
    small = contraction(EPILOGUE, sizes=dict(m=32, n=64, k=32))
    for placement in ("4x2 of 8x32, on 1/32 of the slices, w by switch", "4x2 of 8x32, on 1/32 of the slices"):
        equals_numpy(small, dict(placement=placement, trf="w", packet=32, pieces=1))
