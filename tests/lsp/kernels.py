"""Kernel files the language-server tests open (each written for these tests)."""

from __future__ import annotations

# An i8 copy whose collect packet is half a flit (COLLECT-2 at line 12, `collect` at column 11).
HALF_FLIT = '''from npu_opt import *

axes(N=2048)
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")

@device(chip=1)
def half(ctx: Context, src: HbmTensor[i8, Chip, m("N")]) -> HbmTensor[i8, Chip, m("N")]:
    d = src.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("N")])
    out = (ctx.main.begin(d.view())
           .fetch(m("N / 16"), m("N % 16"))
           .collect(m("N / 16"), m("N % 16"))  # COLLECT-2: one flit is 32 bytes
           .commit_trim(m("N % 16"))
           .commit(m("N")))
    return out.to_hbm(ctx.tdma)
'''

# The same kernel with whole flits: nothing to report.
WHOLE_FLIT = HALF_FLIT.replace('m("N / 16"), m("N % 16"))  # COLLECT-2', 'm("N / 32"), m("N % 32"))  # ok') \
    .replace('.fetch(m("N / 16"), m("N % 16"))', '.fetch(m("N / 32"), m("N % 32"))') \
    .replace('.commit_trim(m("N % 16"))', '.commit_trim(m("N % 32"))')


def with_axes(size: int) -> str:
    """A clean kernel over axis N of `size` elements (two files declaring N differently)."""
    return WHOLE_FLIT.replace("axes(N=2048)", f"axes(N={size})")


# A kernel that writes into a parameter it did not mark in-out (PARAM-1, help: Mut[...]).
WRITES_INPUT = '''from npu_opt import *

axes(N=256)
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")

@device(chip=1)
def overwrite(ctx: Context, a: HbmTensor[i8, Chip, m("N")], b: HbmTensor[i8, Chip, m("N")]) -> None:
    d = a.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("N")])
    d.to_hbm(ctx.tdma, b)
'''

HANGS = '''from npu_opt import *

axes(N=256)

@device(chip=1)
def spin(ctx: Context, a: HbmTensor[i8, m("1"), m("N")]) -> None:
    while True:
        pass
'''

SLEEPS_AT_IMPORT = '''import time
from npu_opt import *

time.sleep(60)
'''

EXITS = '''import os
from npu_opt import *

os._exit(7)
'''

EXITS_HARD = '''import posix
from npu_opt import *

axes(N=256)

@device(chip=1)
def leave(ctx: Context, a: HbmTensor[i8, m("1"), m("N")]) -> None:
    posix._exit(5)
'''

SYS_EXIT_IN_KERNEL = '''import sys
from npu_opt import *

axes(N=256)

@device(chip=1)
def leave(ctx: Context, a: HbmTensor[i8, m("1"), m("N")]) -> None:
    sys.exit(1)
'''

PRINTS = WHOLE_FLIT + '\nprint("hello from the kernel file")\n'

SYNTAX_ERROR = '''from npu_opt import *

def broken(:
    pass
'''

RAISES = '''from npu_opt import *

axes(N=256)
table = {}
value = table["missing"]
'''

# A kernel chain to complete after: `LaneMode.` and a stream method.
ENUMS = WHOLE_FLIT + '\nmode = LaneMode.INTERLEAVED\nop = FpBinaryOp.ADD_F\n'

# A tuning file: no module-level kernel, a factory whose default point (packet=16) is refused.
FACTORY = '''from npu_opt import *
from npu_opt.tune import Space

axes(N=2048)
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")


def make(packet):
    @device(chip=1)
    def tiled(ctx: Context, src: HbmTensor[i8, Chip, m("N")]) -> HbmTensor[i8, Chip, m("N")]:
        d = src.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("N")])
        out = (ctx.main.begin(d.view())
               .fetch(m(f"N / {packet}"), m(f"N % {packet}"))
               .collect(m(f"N / {packet}"), m(f"N % {packet}"))
               .commit_trim(m(f"N % {packet}"))
               .commit(m("N")))
        return out.to_hbm(ctx.tdma)
    return tiled


SPACE = Space(make, {"packet": [16, 32]})
'''

# A file that asks for more memory than the worker may have.
GREEDY = '''from npu_opt import *

hoard = bytearray(3 * 1024 ** 3)  # 3 GiB: more than the tests' 2048 MiB limit
'''

# A loop inside C code, which the worker's own alarm cannot interrupt: the server kills it.
LOOPS_IN_C = '''from npu_opt import *

total = sum(range(10 ** 13))
'''

# A file that patches npu-opt's namespace while it is imported: every later `i8` would be i32.
PATCHES_NPU_OPT = '''import npu_opt
from npu_opt import *

npu_opt.i8 = npu_opt.i32
'''

# A file whose code tries to end the process that started it, and the whole process group.
KILLS_PARENT = '''import os
import signal
from npu_opt import *

os.kill(os.getppid(), signal.SIGKILL)
'''

KILLS_GROUP = '''import os
import signal
from npu_opt import *

os.killpg(0, signal.SIGKILL)
'''


def after_long_line(length: int) -> str:
    """A file with a string `length` characters long, then a line being typed: `LaneMode.`."""
    return ENUMS.replace("\nmode = LaneMode.INTERLEAVED", f'\nblob = "{"a" * length}"\nmode = LaneMode.')

# A helper module whose chain is refused (COLLECT-2 at line 9, `collect` at column 14), and a
# kernel file that calls it (line 10).
HELPER_MODULE = '''from npu_opt import *

axes(N=2048)


def half_flits(stream):
    """Fetch and collect in half-flit packets (refused)."""
    return (stream.fetch(m("N / 16"), m("N % 16"))
            .collect(m("N / 16"), m("N % 16")))
'''

USES_HELPER = '''from npu_opt import *
from helpers_mod import half_flits

axes(N=2048)
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")

@device(chip=1)
def via_helper(ctx: Context, src: HbmTensor[i8, Chip, m("N")]) -> HbmTensor[i8, Chip, m("N")]:
    d = src.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("N")])
    s = half_flits(ctx.main.begin(d.view()))
    out = s.commit_trim(m("N % 16")).commit(m("N"))
    return out.to_hbm(ctx.tdma)
'''
