"""Kernel sources for the DMA and Cast/Commit rule tests that exist nowhere else.

Small kernels that each break exactly one rule of docs/machine/dma.md and 10 (`RULE_KERNELS`)
and a few that must trace cleanly (`VALID_KERNELS`). Each source is a module of its own,
compiled by `tests.kernel_files.load_source` so that diagnostics render; the line a
refusal must point at carries the marker `# <--`. The examples and the refused fixtures
R9, R10, R13 and R17 of examples/ are loaded from their files through
`tests.kernel_files`; `FIXTURES` names the rule each must break.
"""

from __future__ import annotations

import textwrap

from npu_opt.device import DeviceKernel
from tests.kernel_files import FIXTURES_DIR, load_source

__all__ = ["FIXTURES", "RULE_KERNELS", "VALID_KERNELS", "kernel"]

# --- docs/reference/diagnostics.md fixtures used here: name -> (kernel function, expected code) ----------------

FIXTURES: dict[str, tuple[str, str]] = {
    "R9": ("r09_narrow_commit", "TRIM-1"),
    "R10": ("r10_i32_to_bf16", "CAST-1"),
    "R13": ("r13_transposing_dma", "DMA-5"),
    "R17": ("r17_commit_digit_twice", "COMMIT-7"),
}

# The module header of tests/fixtures/refused.py (its axes, Chip, Cluster and Slice).
REFUSED_HEADER = (FIXTURES_DIR / "refused.py").read_text(encoding="utf-8").split("@device", 1)[0]

# --- kernels that break one rule each ------------------------------------------------------


def _dma(body: str, header: str = REFUSED_HEADER) -> str:
    """A kernel `k` taking x: Hbm[i8; 1; A, E] (unless the body's signature says otherwise)."""
    return header + textwrap.dedent(body)


# An f32 stream (A x R, one 32-byte flit per time step), narrowed or committed as told.
F32_HEAD = REFUSED_HEADER + '''
@device(chip=1)
def k(ctx: Context, x: HbmTensor[f32, Chip, m("A, R")]) -> None:
    x = x.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m("A, R")])
    s = ctx.{ctx}.begin(x.view()).fetch(m("A"), m("R")).collect(m("A"), m("R"))
'''


def _tail(head: str, tail: str) -> str:
    """`head` (a module ending in the body of `k`) continued by the statements `tail`."""
    return head + textwrap.indent(textwrap.dedent(tail).lstrip("\n"), "    ")


def _f32(tail: str, ctx: str = "main") -> str:
    return _tail(F32_HEAD.replace("{ctx}", ctx), tail)


def _module(axes: str, body: str) -> str:
    """A module declaring `axes(...)`, with the Chip, Cluster and Slice of refused.py, then `body`."""
    header = "".join(f"axes({axes})\n" if line.startswith("axes(") else line
                     for line in REFUSED_HEADER.splitlines(True))
    return header + textwrap.dedent(body)


# i8 rows of Z (32 bytes) streamed U x V times (U re-reads each row), committed as told.
UVZ_HEAD = _module("U=512, V=256, Z=32", '''
    @device(chip=1)
    def k(ctx: Context, x: HbmTensor[i8, Chip, m("V, Z")]) -> None:
        x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("V, Z")])
        s = ctx.main.begin(x.view()).fetch(m("U, V"), m("Z")).collect(m("U, V"), m("Z")).commit_trim(m("Z"))
    ''')

# i8 rows of P, 8 bytes of each kept by the trim, committed as told.
AP_HEAD = REFUSED_HEADER + '''
@device(chip=1)
def k(ctx: Context, x: HbmTensor[i8, Chip, m("A, P")]) -> None:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, P")])
    s = ctx.main.begin(x.view()).fetch(m("A"), m("P")).collect(m("A"), m("P")).commit_trim(m("P % 8"))
'''


RULE_KERNELS: dict[str, tuple[str, str]] = {
    # DMA-1: the destination dtype differs
    "DMA-1": ("DMA-1", _dma('''
        @device(chip=1)
        def k(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")]) -> None:
            y = x.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("A, E")])   # <--
        ''')),
    # DMA-2: the destination Chip differs
    "DMA-2": ("DMA-2", _dma('''
        @device(chip=1)
        def k(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")]) -> None:
            y = x.to_dm(ctx.tdma, DmTensor[i8, m("1 # 2"), Cluster, Slice, m("A, E")])   # <--
        ''')),
    # DMA-3: SPACE-2 of the destination (3 clusters)
    "DMA-3/cluster": ("DMA-3", _dma('''
        @device(chip=1)
        def k(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")]) -> None:
            y = x.to_dm(ctx.tdma, DmTensor[i8, Chip, m("1 # 3"), Slice, m("A, E")])   # <--
        ''')),
    # DMA-3: SPACE-3 of the destination (32 slices)
    "DMA-3/slice": ("DMA-3", _dma('''
        @device(chip=1)
        def k(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")]) -> None:
            y = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("1 # 32"), m("A, E")])   # <--
        ''')),
    # DMA-3: MEM-1 of the destination (640 KiB of i32 per slice)
    "DMA-3/capacity": ("DMA-3", _dma('''
        @device(chip=1)
        def k(ctx: Context, x: HbmTensor[i32, Chip, m("C, X")]) -> None:
            y = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("C, X")])   # <--
        ''')),
    # DMA-4: the destination drops the source's A
    "DMA-4/drop": ("DMA-4", _dma('''
        @device(chip=1)
        def k(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")]) -> None:
            y = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("E")])   # <--
        ''')),
    # DMA-4: no common refinement (F split at 3 in DM, at 2 in the destination)
    "DMA-4/refinement": ("DMA-4", _dma('''
        @device(chip=1)
        def k(ctx: Context, x: HbmTensor[i8, Chip, m("F, K")]) -> None:
            y = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("F % 3, F / 3, K")])
            z = y.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("F % 2, F / 2, K")])   # <--
        ''')),
    # DMA-4: the destination places B / 32 twice (Slice = B)
    "DMA-4/twice": ("DMA-4", _dma('''
        @device(chip=1)
        def k(ctx: Context, x: HbmTensor[i8, Chip, m("B, A, E")]) -> None:
            y = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("B"), m("B / 32, A, E")])   # <--
        ''')),
    # DMA-6: the burst is 8 bytes (zero padding is not Top), the Z rows are 12 bytes apart
    "DMA-6": ("DMA-6", _dma('''
        @device(chip=1)
        def k(ctx: Context, x: HbmTensor[i8, Chip, m("W, A")]) -> None:
            y = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("Z, W #{0} 3, A")])   # <--
        ''', header=REFUSED_HEADER.replace("axes(A=8,", "axes(Z=2, A=4,").replace("W=8192", "W=2"))),
    # CAST-1: f32 -> i8 is not a Cast Engine pair
    "CAST-1": ("CAST-1", _f32('''
        s = s.cast(i8, m("R # 32"))   # <--
        s.commit_trim(m("R")).commit()
        ''')),
    # CAST-3: the cast packet is 8 x bf16 = 16 bytes
    "CAST-3": ("CAST-3", _f32('''
        s = s.cast(bf16, m("R"))   # <--
        s.commit_trim(m("R")).commit()
        ''')),
    # CAST-4: 32 bytes, but the padding is not the tail of the packet
    "CAST-4": ("CAST-4", _f32('''
        s = s.cast(bf16, m("R, 1 # 2"))   # <--
        s.commit_trim(m("R")).commit()
        ''')),
    # TRIM-2: 16 bytes, but not a prefix of the packet
    "TRIM-2": ("TRIM-2", _f32('''
        s = s.commit_trim(m("R / 2"))   # <--
        s.commit()
        ''')),
    # CTX-4: commit_cast in the sub context
    "CTX-4": ("CTX-4", _f32('''
        s = s.commit_trim(m("R")).commit_cast(bf16)   # <--
        s.commit()
        ''', ctx="sub")),
    # CCAST-1: the Commit Adapter converts only f32 -> bf16
    "CCAST-1": ("CCAST-1", _f32('''
        s = s.commit_trim(m("R")).commit_cast_relu(f8e4m3)   # <--
        s.commit()
        ''')),
    # CCAST-2: 2 x f32 = 8 bytes cannot be converted
    "CCAST-2": ("CCAST-2", _f32('''
        s = s.commit_trim(m("R % 2")).commit_cast(bf16)   # <--
        s.commit()
        ''')),
    # COMMIT-2: the element lacks the packet's R
    "COMMIT-2": ("COMMIT-2", _f32('''
        s.commit_trim(m("R")).commit(m("A"))   # <--
        ''')),
    # COMMIT-3: T % 2 of the element is never written
    "COMMIT-3/unwritten": ("COMMIT-3", _f32('''
        s.commit_trim(m("R")).commit(m("T % 2, A, R"))   # <--
        ''')),
    # COMMIT-3: a broadcast element factor holds copies no commit writes
    "COMMIT-3/broadcast": ("COMMIT-3", _f32('''
        s.commit_trim(m("R")).commit(m("A, 2, R"))   # <--
        ''')),
    # COMMIT-3: the packet's padding would land on live cells of the element
    "COMMIT-3/padding": ("COMMIT-3", _f32('''
        s = s.cast(bf16, m("R # 16")).commit_trim(m("R # 16"))
        s.commit(m("A, R"))   # <--
        ''')),
    # COMMIT-4: eight time entries and one packet entry
    "COMMIT-4": ("COMMIT-4", _module("Y=256, R=8", '''
        @device(chip=1)
        def k(ctx: Context, x: HbmTensor[f32, Chip, m("Y, R")]) -> None:
            x = x.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m("Y, R")])
            s = ctx.main.begin(x.view()).fetch(m("Y"), m("R")).collect(m("Y"), m("R")).commit_trim(m("R"))
            s.commit(m("Y % 2, Y / 2 % 2, Y / 4 % 2, Y / 8 % 2, Y / 16 % 2, Y / 32 % 2, Y / 64 % 2, Y / 128, R"))   # <--
        ''')),
    # COMMIT-5: U (re-read 512 times) and V coalesce into one 131072-step time entry
    "COMMIT-5": ("COMMIT-5", _tail(UVZ_HEAD, '''
        s.commit(m("U, V, Z"))   # <--
        ''')),
    # MEM-1 of the committed tensor: 4 MiB per slice (the write plan itself fits)
    "MEM-1": ("MEM-1", _tail(UVZ_HEAD, '''
        s.commit(m("V, U, Z"))   # <--
        ''')),
    # COMMIT-6: rows of 8 bytes written 12 bytes apart
    "COMMIT-6/time": ("COMMIT-6", _tail(AP_HEAD, '''
        s.commit(m("A, P % 8 # 12"))   # <--
        ''')),
    # COMMIT-6: the packet splits into 4-byte pieces
    "COMMIT-6/piece": ("COMMIT-6", _tail(AP_HEAD, '''
        s.commit(m("P / 4 % 2, A, P % 4 # 8"))   # <--
        ''')),
    # COMMIT-6: 8-byte pieces of a packet start 12 bytes apart
    "COMMIT-6/start": ("COMMIT-6", _module("A=8, Y=2, Z=4", '''
        @device(chip=1)
        def k(ctx: Context, x: HbmTensor[bf16, Chip, m("A, Y, Z")]) -> None:
            x = x.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("A, Y, Z")])
            s = (ctx.main.begin(x.view()).fetch(m("A"), m("Y, Z")).collect(m("A"), m("(Y, Z) # 16"))
                 .commit_trim(m("Y, Z")))
            s.commit(m("A, Y, Z # 6"))   # <--
        ''')),
}

# The same f32 stream committed legally, and a legal cast (they must trace cleanly).
VALID_KERNELS: dict[str, str] = {
    "f32-commit": _f32('''
        s.commit_trim(m("R")).commit()
        '''),
    "f32-cast": _f32('''
        s.cast(bf16, m("R # 16")).commit_trim(m("R")).commit()
        '''),
    "f32-commit-cast": _f32('''
        s.commit_trim(m("R % 4")).commit_cast_relu(bf16).commit(m("A, R % 4"))
        '''),
    "f32-split-packet": _f32('''
        s.commit_trim(m("R")).commit(m("R / 4, A, R % 4"))
        '''),
    "dm-to-dm": _dma('''
        @device(chip=1)
        def k(ctx: Context, x: HbmTensor[i8, Chip, m("F, K")]) -> None:
            y = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("F % 3, F / 3, K")])
            z = y.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("F, K")])
            w = z.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("F # 256"), m("K")])
            v = w.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("K, F")])
        '''),
    # a DM -> DM copy may change the Cluster mapping (v0.8: `to_dm` relayouts every DM level)
    "dm-cluster-relayout": _dma('''
        @device(chip=1)
        def k(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")]) -> None:
            y = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, E")])
            z = y.to_dm(ctx.tdma, DmTensor[i8, Chip, m("1"), Slice, m("A, E")])
        '''),
    # ... and the number of slices
    "dm-slice-relayout": _dma('''
        @device(chip=1)
        def k(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")]) -> None:
            y = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, E")])
            z = y.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("1 # 128"), m("A, E")])
        '''),
}


# --- loading -------------------------------------------------------------------------------


def kernel(source: str, name: str, function: str = "k") -> DeviceKernel:
    """The DeviceKernel `function` of a kernel source (compiled once, file `<kernel:commit:NAME>`)."""
    return getattr(load_source(source, f"commit:{name}"), function)
