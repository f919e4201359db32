"""Small hand-written VISA artifacts for the scheduler tests, and round-number rates.

The kernel copies an i8 tensor `x` (A=4096, B=8) through DM: `dma_in` loads 128 bytes
per slice, a MAIN or SUB `program` fetches them and commits 512 bytes, `dma_out` stores
the result. The records parse (the scheduler reads parsed artifacts only); they are
shaped to make cycle counts easy to compute by hand with `RATES`:

- a DMA lasts 100 (startup) + its 256-byte requests (one per cycle); HBM and DM rates
  are so high that they never bind (ceil to 1 cycle);
- `dma_in`: 256 packets of 128 bytes = 256 requests -> 356 cycles;
- `dma_out`: 4 packets of 128 bytes = 4 requests -> 104 cycles;
- `program`: 16 fetch beats of one flit, 16 commit writes -> 16 cycles;
- no command start-up and no launch (both 0), so the arithmetic above is the whole schedule.
"""

from __future__ import annotations

from visa import parse_visa
from visa.schedule import parse_rates

HEAD = '''visa 2

target "rngd" sha256 "9dbe3bc0345cb464de416009c586501dc996c9af59ab48b7822910819da42002"

signature "handmade" chip 1 {
  axes A=4096, B=8
  param %0 "x" : hbm[i8, "1", "A, B"]
  result %RES : hbm[i32, "1", "B, A"]
}
'''

DM_IN = 'dm[i8, "1", "1 # 2", "A / 16", "A / 8 % 2, A % 8, B"]'
DM_OUT = 'dm[i32, "1", "1 # 2", "A / 16", "A / 8 % 2, A % 8, B"]'

COST = '''
cost {
  dma_commands=0
  dma_bytes=0
  feed_flits=0
  dm_read_bytes=0
  dm_write_bytes=0
  trf_load_bytes=0
  mac_ops=0
  dm_peak_bytes=0
  trf_peak_bytes=0
}
'''


def dma_in(n: int, dst: int = 0) -> str:
    """`%n` = 32 KiB from HBM `%0` into DM bytes [dst, dst + 128) of every slice."""
    return (f'%{n} = dma src=%0 kind=HBM_TO_DM element_type=i8 aggregate=HOMOGENEOUS commands=[{{part=(0, 0, 0), '
            f'src_base=0, dst_base={dst}, packet_bytes=128, entries=[256:128:524288, 128:1:1]}}] : '
            f'hbm[i8, "1", "A, B"] -> {DM_IN}')


def dma_out(n: int, src: int) -> str:
    """`%n` = the committed tensor `%src` stored to HBM (4 aligned 128-byte packets)."""
    return (f'%{n} = dma src=%{src} kind=DM_TO_HBM element_type=i32 aggregate=HOMOGENEOUS commands=[{{part=(0, 0, '
            f'0), src_base=128, dst_base=0, packet_bytes=128, entries=[4:128:256, 128:1:1]}}] : {DM_OUT} -> '
            f'hbm[i32, "1", "B, A"]')


def program(index: int, n: int, source: int, *, context: str = "MAIN", dest: int = 128,
            packet: str = "64:1", read_elems: int = 8) -> str:
    """Program `index`: `%n` feeds from `%source`, `%n+1` commits at DM byte `dest`. The feed's
    packet entry (`size:stride` in bytes) and `read_elems` set its DM bank pattern."""
    feed = (f'  %{n} = feed_buffer context={context} source=(%{source}, 0, i8, "A / 8 % 2, A % 8, B") '
            f'conversions=[I8_TO_I32] element_type=I32 shapes=[{{time=[2:64], packet=[{packet}], packet_elems=64, '
            f'read_elems={read_elems}}}] flits_per_packet=8 collect_flits=Flit1 beats=16 dest=(COMMIT, %{n + 1}) : '
            f'stream[i8, "A / 8 % 2", "A % 8, B"] -> stream[i32, "A / 8 % 2, A % 8", "B"]')
    commit = (f'  %{n + 1} = commit in=%{n} valid_bytes=32 conversion=NONE write={{time=[16:8], packet=[8:1]}} '
              f'write_bytes=32 dest={dest} : stream[i32, "A / 8 % 2, A % 8", "B"] -> {DM_OUT}')
    return f'program {index} {context} space "1", "1 # 2", "A / 16" {{\n{feed}\n{commit}\n}}'


def artifact(*steps: str, result: int):
    """Parse a kernel of these body steps returning `%result`."""
    text = HEAD.replace("RES", str(result)) + "\n" + "\n".join(steps) + f"\nreturn %{result}\n" + COST
    return parse_visa(text)


RATES_DATA = {
    "schema": 1, "target": "rngd",
    "clock": {"ghz": 1.0},
    "hbm": {"chip_bytes_per_cycle": 10**9, "align_bytes": 256, "unaligned_read_factor": 2,
            "partial_write_factor": 50},
    "dm": {"chip_bytes_per_cycle": 10**9, "slice_bytes_per_cycle": 128, "bank_hold_run": 16},
    "dma": {"engine_bytes_per_cycle": 256, "request_bytes": 256, "startup_cycles": 100},
    "tensor_unit": {"fetch_flits_per_cycle": 1, "fetch_bytes_per_cycle": 32, "commit_writes_per_cycle": 1,
                    "packets_per_cycle": 1, "contraction_packet_bytes": 64, "contraction_lanes": 8,
                    "command_startup_cycles": 0},
    "kernel": {"launch_cycles": 0},
}
RATES = parse_rates(RATES_DATA)
