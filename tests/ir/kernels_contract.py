"""Kernels for the Contraction Engine rule tests (pipeline.md 9), kept as module sources.

Every source is an importable kernel module with its own `axes()` declaration (the
examples of examples.md use different sizes for the same axis names, and a module holds
one registry). `load(name)` compiles a source under the file name `<contract:NAME>` and
registers it with linecache, so diagnostics render their source line; `marker_line`
finds the line of a kernel marked `# <--`, where the fixture's diagnostic must point.

EX1..EX6 and EX4B are examples.md 1-6 and 4b verbatim; REFUSED holds R5a, R5b, R5c, R8,
R11 and R12 under the header of refused.py, R07 is refused_r07.py; RULES has one kernel
per rule that examples.md has no fixture for.
"""

from __future__ import annotations

import functools
import linecache
import sys
import types

__all__ = ["SOURCES", "load", "module_from_source", "marker_line"]


def load(name: str) -> types.ModuleType:
    """The kernel module of source `name` (compiled once per test session)."""
    return _load(name)


@functools.lru_cache(maxsize=None)
def _load(name: str) -> types.ModuleType:
    return module_from_source(name, SOURCES[name])


def module_from_source(name: str, source: str) -> types.ModuleType:
    """Compile `source` as the module of kernels `name`, file name `<contract:NAME>`."""
    filename = f"<contract:{name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    module = types.ModuleType(f"contract_kernels_{name.lower()}")
    module.__file__ = filename
    sys.modules[module.__name__] = module
    exec(compile(source, filename, "exec"), module.__dict__)  # noqa: S102 - our own test kernels
    return module


def marker_line(name: str, kernel: str) -> int:
    """1-based line of the first `# <--` marker inside `def kernel(` of source `name`."""
    lines = SOURCES[name].splitlines()
    start = next(i for i, text in enumerate(lines) if text.startswith(f"def {kernel}("))
    for i in range(start + 1, len(lines)):
        if lines[i].startswith("def ") or lines[i].startswith("@device"):
            break
        if "# <--" in lines[i]:
            return i + 1
    raise KeyError(f"no `# <--` marker in {kernel} of {name}")


# --- examples.md 1-6 and 4b, verbatim -------------------------------------------

EX1 = '''\
from npu_opt import *

axes(A=2048)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")          # one active slice

@device(chip=1)
def dot_product_kernel(ctx: Context,
                       lhs: HbmTensor[bf16, Chip, m("A")],
                       rhs: HbmTensor[bf16, Chip, m("A")]) -> HbmTensor[bf16, Chip, m("1")]:
    lhs = lhs.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("A")])
    rhs = rhs.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("A")])
    rhs_trf = (ctx.sub.begin(rhs.view())
               .fetch(m("1"), m("A"))
               .collect(m("A / 16"), m("A % 16"))
               .to_trf(m("1"), m("A")))
    out = (ctx.main.begin(lhs.view())
           .fetch(m("1"), m("A"))
           .collect(m("A / 16"), m("A % 16"))
           .contract_outer(rhs_trf, m("A / 32"), m("A % 32"))   # pairs flits: 64-byte packets
           .contract_packet(m("1"))                              # tree over 32 products
           .contract_time(m("1"))                                # 64 time steps summed
           .contract_lane(m("1"), m("1 # 8"), LaneMode.INTERLEAVED)
           .cast(bf16, m("1 # 16"))
           .commit_trim(m("1 # 8"))
           .commit(m("1 # 8")))
    return out.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("1")])
'''


EX2 = '''\
from npu_opt import *

axes(I=256, J=2048)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("I")                 # one row per slice

@device(chip=1)
def gemv_kernel(ctx: Context,
                matrix: HbmTensor[bf16, Chip, m("I, J")],
                vector: HbmTensor[bf16, Chip, m("J")]) -> HbmTensor[bf16, Chip, m("I")]:
    matrix = matrix.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("J")])
    vector = vector.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("J")])  # broadcast to every slice
    vector_trf = (ctx.sub.begin(vector.view())
                  .fetch(m("1"), m("J"))
                  .collect(m("J / 16"), m("J % 16"))
                  .to_trf(m("1"), m("J")))
    out = (ctx.main.begin(matrix.view())
           .fetch(m("J / 16"), m("J % 16"))
           .collect(m("J / 16"), m("J % 16"))
           .contract_outer(vector_trf, m("J / 32"), m("J % 32"))
           .contract_packet(m("1"))
           .contract_time(m("1"))
           .contract_lane(m("1"), m("1 # 8"), LaneMode.INTERLEAVED)
           .cast(bf16, m("1 # 16"))
           .commit_trim(m("1 # 4"))                    # 8 bytes: the smallest commit
           .commit(m("1 # 4")))
    return out.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("I")])
'''


EX3 = '''\
from npu_opt import *

axes(I=512, J=512, K=64)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("I / 32, J / 32")
Lane = m("J % 8")

@device(chip=1)
def gemm_kernel(ctx: Context,
                a: HbmTensor[bf16, Chip, m("I, K")],
                b: HbmTensor[bf16, Chip, m("J, K")]) -> HbmTensor[bf16, Chip, m("I, J")]:
    a = a.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("I % 32, K")])
    b = b.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("J % 32, K")])
    b_trf = (ctx.sub.begin(b.view())
             .fetch(m("J % 8, J / 8 % 4"), m("K"))
             .collect(m("J % 8, J / 8 % 4, K / 16"), m("K % 16"))
             .to_trf())
    out = (ctx.main.begin(a.view())
           .fetch(m("I % 32, J / 8 % 4"), m("K"))
           .collect(m("I % 32, J / 8 % 4, K / 16"), m("K % 16"))
           .contract_outer(b_trf, m("I % 32, J / 8 % 4, K / 32"), m("K % 32"))
           .contract_packet(m("1"))
           .contract_time(m("I % 32, J / 8 % 4"))
           .contract_lane(m("I % 32, J / 8 % 4"), m("J % 8"), LaneMode.INTERLEAVED)
           .cast(bf16, m("J % 8 # 16"))
           .commit_trim(m("J % 8"))
           .commit())
    return out.to_hbm(ctx.tdma)
'''


EX4 = '''\
from npu_opt import *

axes(M=512, N=512, K=128)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("M / 32, N / 32")

@device(chip=1)
def gemm_i8_kernel(ctx: Context,
                   a: HbmTensor[i8, Chip, m("M, K")],
                   w: HbmTensor[i8, Chip, m("N, K")]) -> HbmTensor[i32, Chip, m("M, N")]:
    a = a.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("M % 32, K")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("N % 32, K")])
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("N % 8, N / 8 % 4"), m("K"))
             .fetch_cast(i8)                                   # identity: accepted, no conversion
             .collect(m("N % 8, N / 8 % 4, K / 32"), m("K % 32"))
             .to_trf(m("N % 8"), m("N / 8 % 4, K")))
    out = (ctx.main.begin(a.view())
           .fetch(m("M % 32, N / 8 % 4"), m("K"))
           .fetch_cast(i8)
           .collect(m("M % 32, N / 8 % 4, K / 32"), m("K % 32"))
           .contract_outer(w_trf, m("M % 32, N / 8 % 4, K / 64"), m("K % 64"))
           .contract_packet(m("1"))
           .contract_time(m("M % 32, N / 8 % 4"))
           .contract_lane(m("M % 32, N / 8 % 4"), m("N % 8"), LaneMode.INTERLEAVED)
           .commit_trim(m("N % 8"))                            # 8 x i32 = 32 bytes, no trim
           .commit(m("M % 32, N % 32")))
    return out.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("M, N")])
'''


EX4B = '''\
from npu_opt import *

axes(M=512, N=512, K=128)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("M / 32, N / 32")

@device(chip=1)
def gemm_bf16_kernel(ctx: Context,
                     a: HbmTensor[bf16, Chip, m("M, K")],
                     w: HbmTensor[bf16, Chip, m("N, K")]) -> HbmTensor[f32, Chip, m("M, N")]:
    a = a.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("M % 32, K")])
    w = w.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("N % 32, K")])
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("N % 8, N / 8 % 4"), m("K"))
             .fetch_cast(bf16)                                 # identity: accepted, no conversion
             .collect(m("N % 8, N / 8 % 4, K / 16"), m("K % 16"))
             .to_trf(m("N % 8"), m("N / 8 % 4, K")))
    out = (ctx.main.begin(a.view())
           .fetch(m("M % 32, N / 8 % 4"), m("K"))
           .fetch_cast(bf16)
           .collect(m("M % 32, N / 8 % 4, K / 16"), m("K % 16"))
           .contract_outer(w_trf, m("M % 32, N / 8 % 4, K / 32"), m("K % 32"))
           .contract_packet(m("1"))
           .contract_time(m("M % 32, N / 8 % 4"))
           .contract_lane(m("M % 32, N / 8 % 4"), m("N % 8"), LaneMode.INTERLEAVED)
           .commit_trim(m("N % 8"))                            # 8 x f32 = 32 bytes, no trim
           .commit(m("M % 32, N % 32")))
    return out.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("M, N")])
'''


EX5 = '''\
from npu_opt import *

axes(I=2048, J=128)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("I / 8")

@device(chip=1)
def row_sum_kernel(ctx: Context,
                   x: HbmTensor[i8, Chip, m("I, J")],
                   ones: HbmTensor[i8, Chip, m("J")]) -> HbmTensor[i32, Chip, m("I")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("I % 8, J")])
    ones = ones.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("J")])   # broadcast to every slice
    ones_trf = (ctx.sub.begin(ones.view())
                .fetch(m("1"), m("J"))
                .collect(m("J / 32"), m("J % 32"))
                .to_trf(m("1"), m("J")))                # default inference would give the same
    out = (ctx.main.begin(x.view())
           .fetch(m("J / 64, I % 8"), m("J % 64"))
           .collect(m("J / 64, I % 8, J / 32 % 2"), m("J % 32"))
           .contract_outer(ones_trf, m("J / 64, I % 8"), m("J % 64"))
           .contract_packet(m("1"))                     # depth 6: 64 products
           .contract_time(m("I % 8"))                   # J / 64 (outermost) summed: IT = 8
           .contract_lane(m("I % 8"), m("1 # 8"), LaneMode.SEQUENTIAL)
           .commit_trim(m("1 # 2"))                     # 2 x i32 = 8 bytes
           .commit(m("I % 8, 1 # 2")))
    return out.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("I")])
'''


EX6 = '''\
from npu_opt import *

axes(A=4096, B=8)

Chip = m("1")
Cluster = m("1 # 2")

@device(chip=1)
def fetch_commit_simple(ctx: Context,
                        x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i32, Chip, m("B, A")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("A / 16"), m("A / 8 % 2, A % 8, B")])
    y = (ctx.main.begin(x.view())
         .fetch(m("A / 8 % 2"), m("A % 8, B"))        # 64-byte i8 packets
         .fetch_cast(i32)                             # 256-byte packets
         .collect(m("A / 8 % 2, A % 8"), m("B"))      # 8 flits each
         .commit_trim(m("B"))
         .commit(m("A / 8 % 2, A % 8, B")))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("B, A")])   # transposing DMA into HBM
'''


R07 = '''\
from npu_opt import *

axes(I=512, J=512, K=64)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("I / 32, J / 32")
Lane = m("J % 8")

@device(chip=1)
def r07_time_order(ctx: Context,
                   a: HbmTensor[bf16, Chip, m("I, K")],
                   b: HbmTensor[bf16, Chip, m("J, K")]) -> HbmTensor[bf16, Chip, m("I, J")]:
    a = a.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("I % 32, K")])
    b = b.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("J % 32, K")])
    b_trf = (ctx.sub.begin(b.view())
             .fetch(m("J % 8, J / 8 % 4"), m("K"))
             .collect(m("J % 8, J / 8 % 4, K / 16"), m("K % 16"))
             .to_trf())
    out = (ctx.main.begin(a.view())
           .fetch(m("I % 32, J / 8 % 4"), m("K"))
           .collect(m("I % 32, J / 8 % 4, K / 16"), m("K % 16"))
           .contract_outer(b_trf, m("I % 32, J / 8 % 4, K / 32"), m("K % 32"))
           .contract_packet(m("1"))
           .contract_time(m("J / 8 % 4, I % 32"))                       # <-- order differs from Time
           .contract_lane(m("J / 8 % 4, I % 32"), m("J % 8"), LaneMode.INTERLEAVED)
           .cast(bf16, m("J % 8 # 16"))
           .commit_trim(m("J % 8"))
           .commit())
    return out.to_hbm(ctx.tdma)
'''


REFUSED = '''\
from npu_opt import *

axes(A=8, B=64, E=32, F=6, R=8, K=128, P=32, T=64, W=8192, X=81920, N=16, C=2)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")

@device(chip=1)
def r05a_time_mismatch(ctx: Context,
                       x: HbmTensor[i8, Chip, m("A, E")],
                       w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("F, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, E")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("R, E")])
    w_trf = (ctx.sub.begin(w.view()).fetch(m("R"), m("E")).fetch_cast(i8)
             .collect(m("R"), m("E")).to_trf(m("R"), m("E")))
    y = (ctx.main.begin(x.view()).fetch(m("A"), m("E")).fetch_cast(i8)
         .collect(m("A"), m("E"))
         .contract_outer(w_trf, m("F"), m("E"))         # <-- Time is A (8 steps), out_time F has 6
         .contract_packet(m("1"))
         .contract_time(m("F"))
         .contract_lane(m("F"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("F, R")])


@device(chip=1)
def r05b_flit_mismatch(ctx: Context,
                       x: HbmTensor[i8, Chip, m("A, B")],
                       w: HbmTensor[i8, Chip, m("R, B")]) -> HbmTensor[i32, Chip, m("A, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, B")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("R, B")])
    w_trf = (ctx.sub.begin(w.view()).fetch(m("R"), m("B")).fetch_cast(i8)
             .collect(m("R, B / 32"), m("B % 32")).to_trf(m("R"), m("B")))
    y = (ctx.main.begin(x.view()).fetch(m("A"), m("B")).fetch_cast(i8)
         .collect(m("A, B / 32"), m("B % 32"))
         .contract_outer(w_trf, m("A"), m("K % 64"))    # <-- inner flit K % 32 is not B % 32
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def r05c_packed_time(ctx: Context,
                     x: HbmTensor[i8, Chip, m("A, B")],
                     w: HbmTensor[i8, Chip, m("R, B")]) -> HbmTensor[i32, Chip, m("A, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, B")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("R, B")])
    w_trf = (ctx.sub.begin(w.view()).fetch(m("R"), m("B")).fetch_cast(i8)
             .collect(m("R, B / 32"), m("B % 32")).to_trf(m("R"), m("B")))
    y = (ctx.main.begin(x.view()).fetch(m("A"), m("B")).fetch_cast(i8)
         .collect(m("A, B / 32"), m("B % 32"))
         .contract_outer(w_trf, m("A"), m("A / 4, B % 32"))   # <-- packed half is B / 32, not A / 4
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def r08_mixed_operands(ctx: Context,
                       x: HbmTensor[i8, Chip, m("A, E")],
                       w: HbmTensor[bf16, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, E")])
    w = w.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("R, E")])
    w_trf = (ctx.sub.begin(w.view()).fetch(m("R"), m("E"))
             .collect(m("R, E / 16"), m("E % 16")).to_trf(m("R"), m("E")))
    y = (ctx.main.begin(x.view()).fetch(m("A"), m("E")).collect(m("A"), m("E"))
         .contract_outer(w_trf, m("A"), m("E"))         # <-- i8 x bf16 is not a MAC pair
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def r11_accumulator(ctx: Context,
                    x: HbmTensor[bf16, Chip, m("T, A, P")],
                    w: HbmTensor[bf16, Chip, m("R, T")]) -> HbmTensor[f32, Chip, m("A, R, P")]:
    x = x.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("T, A, P")])
    w = w.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("R, T")])
    w_trf = (ctx.sub.begin(w.view()).fetch(m("R"), m("T"))
             .collect(m("R, T / 16"), m("T % 16")).to_trf(m("R"), m("T")))
    y = (ctx.main.begin(x.view()).fetch(m("T, A"), m("P"))
         .collect(m("T, A, P / 16"), m("P % 16"))
         .contract_outer(w_trf, m("T, A"), m("P"))      # R = 1: P is a TRF broadcast
         .contract_packet(m("P"))                       # depth 0: nothing summed in the packet
         .contract_time(m("A"))                         # T (outermost) summed: IT = 8
         .contract_lane(m("A, R, P / 8"), m("P % 8"), LaneMode.SEQUENTIAL)   # <-- 8 x 8 x 32 = 2048 > 1024
         .commit_trim(m("P % 8"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("A, R, P")])


@device(chip=1)
def r12_sub_contraction(ctx: Context,
                        x: HbmTensor[i8, Chip, m("A, E")],
                        w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, E")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("R, E")])
    w_trf = (ctx.sub.begin(w.view()).fetch(m("R"), m("E"))
             .collect(m("R"), m("E")).to_trf(m("R"), m("E")))
    y = (ctx.sub.begin(x.view()).fetch(m("A"), m("E")).collect(m("A"), m("E"))
         .contract_outer(w_trf, m("A"), m("E"))         # <-- the sub context has no Contraction Engine
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])
'''


# --- one kernel per rule without an examples.md fixture ------------------------------

RULES = '''\
from npu_opt import *

axes(A=8, E=32, R=8, O=2, G=4, H=8, F=6, N=16, S=256, T=64, P=32)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")


def weights(ctx, w, slice_=Slice):
    """The TRF operand of most kernels: lane R, element E (i8, 32 bytes per lane)."""
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, slice_, m("R, E")])
    return ctx.sub.begin(w.view()).fetch(m("R"), m("E")).collect(m("R"), m("E")).to_trf(m("R"), m("E"))


def stream(ctx, x):
    """The streamed operand of most kernels: time A, one i8 flit of E."""
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, E")])
    return ctx.main.begin(x.view()).fetch(m("A"), m("E")).collect(m("A"), m("E"))


@device(chip=1)
def base(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
         w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    y = (stream(ctx, x)
         .contract_outer(weights(ctx, w), m("A"), m("E"))
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def space4_slices(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                  w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    w_trf = weights(ctx, w, m("1 # 128"))
    y = (stream(ctx, x)
         .contract_outer(w_trf, m("A"), m("E"))                 # <-- SPACE-4
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def outer3_half_flit(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                     w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    w_trf = weights(ctx, w)
    y = (stream(ctx, x)
         .contract_outer(w_trf, m("A"), m("E % 16"))            # <-- OUTER-3
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def outer7_bcast_outermost(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                           w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    w_trf = weights(ctx, w)
    y = (stream(ctx, x)
         .contract_outer(w_trf, m("2, A"), m("E"))              # <-- OUTER-7
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def outer8_spread_trf(ctx: Context, x: HbmTensor[i8, Chip, m("A, G, H")],
                      w: HbmTensor[i8, Chip, m("H, G")]) -> HbmTensor[i32, Chip, m("A")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, G, H")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("H, G")])
    w_trf = ctx.sub.begin(w.view()).fetch(m("1"), m("H, G")).collect(m("1"), m("H, G")).to_trf(m("1"), m("H, G"))
    y = (ctx.main.begin(x.view()).fetch(m("A"), m("G, H")).collect(m("A"), m("G, H"))
         .contract_outer(w_trf, m("A"), m("G, H"))              # <-- OUTER-8
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("1 # 8"), LaneMode.INTERLEAVED)
         .commit_trim(m("1 # 2"))
         .commit(m("A, 1 # 2")))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A")])


@device(chip=1)
def outer9_rows_not_walked(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                           w: HbmTensor[i8, Chip, m("O, E")]) -> HbmTensor[i32, Chip, m("A")]:
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("O, E")])
    w_trf = ctx.sub.begin(w.view()).fetch(m("O"), m("E")).collect(m("O"), m("E")).to_trf(m("1"), m("O, E"))
    y = (stream(ctx, x)
         .contract_outer(w_trf, m("A"), m("E"))                 # <-- OUTER-9
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("1 # 8"), LaneMode.INTERLEAVED)
         .commit_trim(m("1 # 2"))
         .commit(m("A, 1 # 2")))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A")])


@device(chip=1)
def outer9_lane_in_time(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                        w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    w_trf = weights(ctx, w)
    y = (stream(ctx, x)
         .contract_outer(w_trf, m("A, R"), m("E"))              # <-- OUTER-9
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def outer10_slice_digit(ctx: Context, x: HbmTensor[i8, Chip, m("S, A, E")],
                        w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("S, A, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("S"), m("A, E")])
    w_trf = weights(ctx, w, m("S"))
    y = (ctx.main.begin(x.view()).fetch(m("A"), m("E")).collect(m("A"), m("E"))
         .contract_outer(w_trf, m("A, S % 2"), m("E"))          # <-- OUTER-10
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("S, A, R")])


@device(chip=1)
def outer11_long_walk(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                      w: HbmTensor[i8, Chip, m("N, E")]) -> HbmTensor[i32, Chip, m("A")]:
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("N, E")])
    w_trf = ctx.sub.begin(w.view()).fetch(m("N"), m("E")).collect(m("N"), m("E")).to_trf(m("1"), m("N, E"))
    y = (stream(ctx, x)
         .contract_outer(w_trf, m("A, N / 8, 2, N / 4 % 2, 2, N / 2 % 2, 2, N % 2, 2"), m("E"))   # <-- OUTER-11
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("1 # 8"), LaneMode.INTERLEAVED)
         .commit_trim(m("1 # 2"))
         .commit(m("A, 1 # 2")))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A")])


@device(chip=1)
def packet2_wide(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                 w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    y = (stream(ctx, x)
         .contract_outer(weights(ctx, w), m("A"), m("E"))
         .contract_packet(m("1 # 64"))                          # <-- PACKET-2
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def packet3_three(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                  w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    y = (stream(ctx, x)
         .contract_outer(weights(ctx, w), m("A"), m("E"))
         .contract_packet(m("1 # 3"))                           # <-- PACKET-3
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def packet4_no_tree(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                    w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    y = (stream(ctx, x)
         .contract_outer(weights(ctx, w), m("A"), m("E"))
         .contract_packet(m("E / 2 % 4"))                       # <-- PACKET-4
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def time1_foreign(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                  w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    y = (stream(ctx, x)
         .contract_outer(weights(ctx, w), m("A"), m("E"))
         .contract_packet(m("1"))
         .contract_time(m("R"))                                 # <-- TIME-1
         .contract_lane(m("R"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def time3_broadcast(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                    w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    y = (stream(ctx, x)
         .contract_outer(weights(ctx, w), m("A"), m("E"))
         .contract_packet(m("1"))
         .contract_time(m("A, 2"))                              # <-- TIME-3
         .contract_lane(m("A, 2"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def time3_padding(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                  w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    y = (stream(ctx, x)
         .contract_outer(weights(ctx, w), m("A"), m("E"))
         .contract_packet(m("1"))
         .contract_time(m("A # 16"))                            # <-- TIME-3
         .contract_lane(m("A # 16"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def time3_padded_own(ctx: Context, x: HbmTensor[i8, Chip, m("F, E")],
                     w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("F, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("F, E")])
    y = (ctx.main.begin(x.view()).fetch(m("F"), m("E")).collect(m("F"), m("E"))
         .contract_outer(weights(ctx, w), m("F"), m("E"))
         .contract_packet(m("1"))
         .contract_time(m("F # 8"))                             # <-- TIME-3
         .contract_lane(m("F # 8"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit(m("F # 8, R")))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("F, R")])


@device(chip=1)
def time4_unpadded(ctx: Context, x: HbmTensor[i8, Chip, m("F, E")],
                   w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("F, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("F, E")])
    y = (ctx.main.begin(x.view()).fetch(m("F # 8"), m("E")).collect(m("F # 8"), m("E"))
         .contract_outer(weights(ctx, w), m("F # 8"), m("E"))
         .contract_packet(m("1"))
         .contract_time(m("F"))                                 # <-- TIME-4
         .contract_lane(m("F"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("F, R")])


@device(chip=1)
def time_padded_kept(ctx: Context, x: HbmTensor[i8, Chip, m("F, E")],
                     w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("F, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("F, E")])
    y = (ctx.main.begin(x.view()).fetch(m("F # 8"), m("E")).collect(m("F # 8"), m("E"))
         .contract_outer(weights(ctx, w), m("F # 8"), m("E"))
         .contract_packet(m("1"))
         .contract_time(m("F # 8"))                             # accepted: the padded extent is kept
         .contract_lane(m("F # 8"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit(m("F # 8, R")))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("F, R")])


@device(chip=1)
def lane2_wide(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
               w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    y = (stream(ctx, x)
         .contract_outer(weights(ctx, w), m("A"), m("E"))
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R # 16"), LaneMode.INTERLEAVED)   # <-- LANE-2
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def lane3_packet(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                 w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    y = (stream(ctx, x)
         .contract_outer(weights(ctx, w), m("A"), m("E"))
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("1 # 8"), LaneMode.INTERLEAVED)    # <-- LANE-3
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def lane4_columns(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                  w: HbmTensor[i8, Chip, m("R, E")]) -> None:
    y = (stream(ctx, x)
         .contract_outer(weights(ctx, w), m("A"), m("E"))
         .contract_packet(m("E / 8"))                           # d = 3: four columns
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)   # <-- LANE-4
         .commit_trim(m("R"))
         .commit(m("A, E / 8, R")))


@device(chip=1)
def lane5_time(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
               w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    y = (stream(ctx, x)
         .contract_outer(weights(ctx, w), m("A"), m("E"))
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A / 2, 2"), m("R"), LaneMode.INTERLEAVED)   # <-- LANE-5
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def lane6_interleaved(ctx: Context,
                      x: HbmTensor[bf16, Chip, m("T, A, P")],
                      w: HbmTensor[bf16, Chip, m("R, T")]) -> HbmTensor[f32, Chip, m("A, P, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("T, A, P")])
    w = w.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("R, T")])
    w_trf = (ctx.sub.begin(w.view()).fetch(m("R"), m("T"))
             .collect(m("R, T / 16"), m("T % 16")).to_trf(m("R"), m("T")))
    y = (ctx.main.begin(x.view()).fetch(m("T, A"), m("P"))
         .collect(m("T, A, P / 16"), m("P % 16"))
         .contract_outer(w_trf, m("T, A"), m("P"))
         .contract_packet(m("P"))
         .contract_time(m("A"))
         .contract_lane(m("A, P"), m("R"), LaneMode.INTERLEAVED)    # <-- LANE-6
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma)
'''

SOURCES = {"EX1": EX1, "EX2": EX2, "EX3": EX3, "EX4": EX4, "EX4B": EX4B, "EX5": EX5, "EX6": EX6,
           "REFUSED": REFUSED, "R07": R07, "RULES": RULES}
