"""Every record class declares the engine it runs on and what it costs (tu_ops.engines);
the schedule reads those declarations, so all Vector Engine records share one engine.

The kernel below (written for this test) loads `x` once, then a MAIN program runs a
`vector_branch` pass and a SUB program a `vector` pass over it into two disjoint DM
ranges: no hazard orders them, so only the shared Vector Engine can.
"""

from __future__ import annotations

from visa import parse_visa
from visa.schedule import builtin_rates, schedule_artifact

HEAD = '''visa 2

target "rngd" sha256 "9dbe3bc0345cb464de416009c586501dc996c9af59ab48b7822910819da42002"

signature "two_passes" chip 1 {
  axes S=2048, H=64
  param %0 "x" : hbm[f32, "1", "S, H"]
  result %8 : hbm[f32, "1", "S, H"]
}
'''
LOAD = ('%1 = dma src=%0 kind=HBM_TO_DM element_type=f32 aggregate=HOMOGENEOUS commands=[{part=(0, 0, 0), '
        'src_base=0, dst_base=0, packet_bytes=2048, entries=[256:2048:524288, 2048:1:1]}] : hbm[f32, "1", "S, H"] '
        '-> dm[f32, "1", "1 # 2", "S / 8", "S % 8, H"]')
STREAM = 'stream[f32, "S % 8, H / 4", "H % 4 # 8"]'
DM = 'dm[f32, "1", "1 # 2", "S / 8", "S % 8, H"]'
BRANCH = ('vector_branch in=%{i} tag=[{{cmp=LESS, bound=0}}, {{cmp=FALSE, bound=0}}, {{cmp=FALSE, bound=0}}, '
          '{{cmp=FALSE, bound=0}}] stash_at=-1 steps=[{{unit=NARROW_TRIM, op=NONE, arg=0, slots=[], stash=0}}, '
          '{{unit=FP_BINARY, op=MUL_F_MUL0, arg=0, slots=[{{mask=1, want=1, neg=0, value=1008981770}}], stash=0}}, '
          '{{unit=WIDEN_PAD, op=NONE, arg=0, slots=[], stash=0}}]')
PLAIN = ('vector in=%{i} steps=[{{unit=TAG, op=ZERO, arg=0}}, {{unit=NARROW_TRIM, op=NONE, arg=0}}, '
         '{{unit=FP_UNARY, op=EXP, arg=0}}, {{unit=WIDEN_PAD, op=NONE, arg=0}}]')


def _program(index: int, context: str, n: int, kind: str, pass_: str, dest: int) -> str:
    feed = (f'%{n} = feed_buffer context={context} source=(%1, 0, f32, "S % 8, H") conversions=[] element_type=F32 '
            f'shapes=[{{time=[128:4], packet=[4:1], packet_elems=4, read_elems=4}}] flits_per_packet=1 '
            f'collect_flits=Flit1 beats=128 dest=({kind}, %{n + 1}) : stream[f32, "S % 8, H / 4", "H % 4"] -> {STREAM}')
    ve = f'%{n + 1} = ' + pass_.format(i=n) + f' : {STREAM} -> {STREAM}'
    commit = (f'%{n + 2} = commit in=%{n + 1} valid_bytes=16 conversion=NONE write={{time=[128:4], packet=[4:1]}} '
              f'write_bytes=16 dest={dest} : {STREAM} -> {DM}')
    return f'program {index} {context} space "1", "1 # 2", "S / 8" {{\n  {feed}\n  {ve}\n  {commit}\n}}'


STORE = ('%8 = dma src=%4 kind=DM_TO_HBM element_type=f32 aggregate=HOMOGENEOUS commands=[{part=(0, 0, 0), '
         'src_base=2048, dst_base=0, packet_bytes=2048, entries=[256:524288:2048, 2048:1:1]}] : '
         f'{DM} -> hbm[f32, "1", "S, H"]')
COST = ("cost {\n  dma_commands=0\n  dma_bytes=0\n  feed_flits=0\n  dm_read_bytes=0\n  dm_write_bytes=0\n"
        "  trf_load_bytes=0\n  mac_ops=0\n  dm_peak_bytes=0\n  trf_peak_bytes=0\n}\n")


def two_passes():
    body = [LOAD, _program(0, "MAIN", 2, "VECTOR_BRANCH", BRANCH, 2048), _program(1, "SUB", 5, "VECTOR", PLAIN, 4096),
            STORE]
    return parse_visa(HEAD + "\n" + "\n".join(body) + "\nreturn %8\n\n" + COST)


def test_a_main_and_a_sub_vector_pass_take_turns_on_the_one_vector_engine():
    s = schedule_artifact(two_passes(), rates=builtin_rates("rngd"))
    load, main, sub = s.slots[0], s.slots[1], s.slots[2]
    assert [r.engine for r in main.step.records] == ["fetch", "vector", "commit"]
    assert [r.engine for r in sub.step.records] == ["fetch", "vector", "commit"]
    # the command's start-up, then one packet a cycle: 128 time steps each (both feeds fetch
    # 128 one-flit beats)
    start = builtin_rates("rngd")("tensor_unit", "command_startup_cycles")
    assert main.end - main.start == sub.end - sub.start == start + 128
    assert main.start == load.end
    assert sub.start == main.end, "the SUB pass overlapped the MAIN pass on the Vector Engine"
    assert sub.wait.kind == "resource" and "vector" in sub.wait.what


def test_the_handmade_records_last_what_the_formulas_give_by_hand():
    s = schedule_artifact(two_passes(), rates=builtin_rates("rngd"))
    cycles = [(r.mnemonic, r.cycles) for slot in s.slots for r in slot.step.records]
    # the load: 500 startup + max(engine 256 x 2048 B / 256 = 2048, HBM 524288 B / 1500 -> 350,
    # DM 524288 / 2000 -> 263); a feed: 128 one-flit beats (its 2048 DM bytes take 64 cycles at
    # 32 B); a pass: 8 x 16 = 128 input time steps; a commit: 128 writes
    assert cycles == [("dma", 2548), ("feed_buffer", 128), ("vector_branch", 128), ("commit", 128),
                      ("feed_buffer", 128), ("vector", 128), ("commit", 128), ("dma", 2548)]
