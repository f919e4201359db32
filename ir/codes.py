"""The rule index: every diagnostic code npu-opt can raise (docs/reference/diagnostics.md, docs/reference/diagnostics.md).

Each entry says which phase raises it:
- `trace`: [T] rules, checked while tracing by every backend;
- `lower`: what the npu backend's lowering reports for a kernel: the [L] refusals a kernel
  can reach (MEM-3, MEM-4, FEED-11), DTYPE-EMU and the warnings W-FETCH-1 and W-DTYPE-EMU;
- `verify`: the op verifiers of docs/reference/diagnostics.md. A kernel that passes every [T] rule never
  fails one, so a user meets them inside an ICE note or from `npu-opt visa --verify` on a
  damaged artifact. The [L] rules TRFLD-6, CMT-5 and DMAOP-5 are here too: the lowering
  and the allocator already guarantee them;
- `mapping` (MAP-*), `cli` (USAGE) and `internal` (ICE).
A code is listed here once npu-opt implements its check; `npu-opt explain` has a page
for every listed code, and a test checks that each page's example triggers its code. A
few checks are shadowed by an earlier rule with the same limit (e.g. SPACE-2 on a DM
type is first reported by DMA-3 at the DMA that creates it); their pages say which.
"""

from __future__ import annotations

import attrs

from ir.switch.rule_titles import SWITCH_RULES, TRANSPOSE_RULES

__all__ = ["CodeInfo", "CODES", "MAPPING_CATEGORIES"]

MAPPING_CATEGORIES = (
    "syntax", "unknown_axis", "unknown_escape", "escape_type", "zero_divisor",
    "stride_not_divisible", "modulo_not_divisible", "resize_too_large", "padding_too_small",
    "zero_size", "invalid_axis_decl", "overshoot", "limit", "factor_not_count",
)


@attrs.frozen
class CodeInfo:
    """Index entry of one code."""

    code: str
    title: str
    phase: str
    section: str


def _rules(family: str, count: int, section: str, titles: list[str], phase: str = "trace",
           phases: dict[int, str] | None = None) -> list[CodeInfo]:
    """`family`-1 ... `family`-`count`; `phases` overrides the phase of single rules."""
    assert len(titles) == count
    phases = phases or {}
    return [CodeInfo(f"{family}-{n}", titles[n - 1], phases.get(n, phase), section) for n in range(1, count + 1)]


_ENTRIES: list[CodeInfo] = [
    *_rules("TYPE", 8, "docs/machine/index.md", [
        "method not offered at this stage", "i5/i9 stream used outside collect/contract_outer",
        "i5/i9 in a stored tensor", "contract_outer on a non-MAC dtype", "cast on a non-32-bit stream",
        "argument of the wrong kind", "stream object used twice", "stream never reaches a sink"]),
    *_rules("CTX", 4, "docs/machine/index.md", [
        "wrong engine for the call", "contraction outside the main context",
        "table lookup outside the main context", "commit conversion outside the main context"]),
    *_rules("SPACE", 4, "docs/machine/index.md", [
        "chip count mismatch", "illegal cluster count", "illegal slice count",
        "Tensor Unit stage changes Chip/Cluster/Slice"]),
    CodeInfo("MEM-1", "DM tensor larger than a slice's DM", "trace", "docs/machine/index.md"),
    CodeInfo("MEM-3", "live DM tensors exceed a slice's DM", "lower", "docs/machine/index.md"),
    CodeInfo("MEM-4", "live TRF tensors exceed a slice's TRF", "lower", "docs/machine/index.md"),
    CodeInfo("ADDR-1", "explicit on-chip address misaligned or past its memory", "trace", "docs/machine/index.md"),
    *_rules("DMA", 6, "docs/machine/dma.md", [
        "DMA changes the dtype", "DMA changes the chip mapping", "illegal DM destination",
        "DMA move is not well defined", "DMA burst into DM not 8-byte aligned",
        "DMA destination stride not 8-byte aligned"]),
    *_rules("FETCH", 11, "docs/machine/fetch.md", [
        "ill-formed fetch", "fetch cannot be placed", "fetch leaves part of the source unread",
        "too many sequencer entries", "sequencer loop too long", "packet not a whole number of bytes",
        "fetch places a digit twice", "sub-context packet does not fill an 8-byte read",
        "sub-context widening above 4x", "strided 4-bit packet", "no legal fetch size"]),
    CodeInfo("W-FETCH-1", "a DM bank run that may starve DMA", "lower", "docs/machine/fetch.md"),
    CodeInfo("FLUT-1", "no such table lookup", "trace", "docs/machine/fetch-adapter.md"),
    CodeInfo("FCAST-1", "not a Fetch Adapter cast", "trace", "docs/machine/fetch-adapter.md"),
    *_rules("FZPS", 2, "docs/machine/fetch-adapter.md", ["not a zero-point pair", "zero point out of range"]),
    *_rules("COLLECT", 5, "docs/machine/collect.md", [
        "packet not a multiple of 8 bytes", "collect packet is not one flit",
        "collect packet is not the padded flit", "collect time is not (time, flits)",
        "collect places a digit twice"]),
    *_rules("TRF", 7, "docs/machine/collect.md", [
        "illegal lane count", "TRF capacity exceeded", "lane count does not divide time",
        "lane is not the outer time", "element is not (inner time, packet)",
        "dtype cannot be stored in the TRF", "element given without lane"]),
    *_rules("OUTER", 11, "docs/machine/contraction.md", [
        "not a MAC operand pair", "illegal lane count", "outer packet not 32 or 64 bytes",
        "inner flit is not the stream packet", "packed time factor mismatch",
        "out_time size not a multiple of the stream time", "out_time reorders the stream time",
        "TRF data spread over the packet", "TRF element not walked by time",
        "contraction places a digit twice", "TRF read walk exceeds the sequencer"]),
    *_rules("PACKET", 5, "docs/machine/contraction.md", [
        "reduce input not 32 or 64 bytes", "more than 32 output columns",
        "output columns not a power of two", "output packet is not a reduction of the input",
        "the adder tree sums padding of unknown contents"]),
    *_rules("TIME", 4, "docs/machine/contraction.md", [
        "out_time is not part of the time", "kept time factors reordered",
        "padding or broadcast of its own in out_time", "padded kept factor changes extent"]),
    *_rules("LANE", 6, "docs/machine/contraction.md", [
        "more than 32 accumulator columns", "lane fold output is not 8 values",
        "lane fold packet does not match the mode", "lane fold time does not end in the fold",
        "lane fold time does not start with the time", "accumulator capacity exceeded"]),
    *_rules("CAST", 4, "docs/machine/cast.md", [
        "not a Cast Engine pair", "cast input is not one flit", "cast output is not one flit",
        "cast packet is not the padded input"]),
    *_rules("TRIM", 2, "docs/machine/commit.md", ["commit width not 8/16/24/32 bytes",
                                          "trim is not a prefix of the packet"]),
    *_rules("CCAST", 2, "docs/machine/commit-adapter.md", ["not a commit conversion", "commit conversion width"]),
    *_rules("COMMIT", 7, "docs/machine/commit.md", [
        "commit width not 8/16/24/32 bytes", "commit cannot be placed", "commit does not write every cell once",
        "too many commit entries", "commit loop too long", "commit stride not 8-byte aligned",
        "commit places a digit twice"]),
    *_rules("TRANSPOSE", 18, "ir/switch/README.md", [TRANSPOSE_RULES[f"TRANSPOSE-{n}"] for n in range(1, 19)],
            phases={n: "verify" for n in (*range(6, 12), 18)}),
    # the Vector Engine (ir.vector.ops, npu_opt.vector_stages)
    *[CodeInfo(code, title, "trace", "Vector Engine") for code, title in (
        ("VE-INIT-1", "Vector Engine input is not i32 or f32"),
        ("VE-TAG-1", "tag mode not available yet"),
        ("VE-DTYPE-1", "Vector Engine op of the wrong scalar"),
        ("VE-CONST-1", "constant out of i32 range"),
        ("VE-CONST-2", "f32 constant overflows"),
        ("VE-CONST-3", "constant of the wrong kind"),
        ("VE-SHIFT-1", "shift amount out of range"),
        ("VE-CONV-1", "conversion width out of range"),
        ("VE-TRIM-2", "narrow trim would drop data"),
        ("VE-TRIM-4", "narrow trim packet is not the front four cells"),
        ("VE-PAD-3", "widen pad packet is not the padded input"),
        ("VE-ALU-1", "two ops on one ALU"),
        ("VE-ENUM-1", "enum constructor used as a value"),
        ("VE-ENUM-2", "variant given the wrong values"),
        ("VE-ENUM-4", "value of another enum"),
        ("VE-ENUM-5", "variant without data called"))],
    # the rest of the element-wise chain (ir.vector.chain_ops, npu_opt.vector_chain_methods)
    *[CodeInfo(code, title, "trace", "Vector Engine") for code, title in (
        ("VE-SPLIT-1", "narrow split of a packet that is not one flit"),
        ("VE-SPLIT-2", "narrow split time does not fold in the back half"),
        ("VE-SPLIT-3", "narrow split packet is not four cells"),
        ("VE-SPLIT-4", "narrow split packet is not the front half"),
        ("VE-CONCAT-1", "widen concat of a packet that is not four cells"),
        ("VE-CONCAT-2", "widen concat packet is not eight cells"),
        ("VE-CONCAT-3", "widen concat time does not unfold the halves"),
        ("VE-CONCAT-4", "widen concat packet is not the halves rejoined"),
        ("VE-REINT-1", "reinterpret target is not i32 or f32"),
        ("VE-FILTER-1", "vector filter not available"))],
    *_rules("FEED", 13, "docs/reference/diagnostics.md", [
        "feed conversions do not chain", "feed destination refuses the element type",
        "feed flit delivery is inconsistent", "interleaved read shapes differ",
        "feed read loops exceed the sequencer", "feed DM access size not legal",
        "innermost read not in whole accesses", "widened read exceeds a flit",
        "feed packet not whole 8-byte units", "table lookup in the sub context",
        "feed reads past the slice's DM", "feed destination or context mismatch",
        "feed switch is not the traced switch of its fetch stream"],
        phase="verify", phases={11: "lower"}),
    *_rules("TRFLD", 6, "docs/reference/diagnostics.md", [
        "illegal TRF load lane count", "TRF element type or cell format",
        "TRF load does not fit its region", "TRF load flit mode or row alignment",
        "feed does not deliver the TRF tensor", "TRF load overlaps a live TRF tensor"], phase="verify"),
    *_rules("COP", 7, "docs/reference/diagnostics.md", [
        "contract_outer operands not a MAC pair", "contract_outer outside the main context",
        "contract_outer pack size", "contract_outer lane count", "TRF read width",
        "TRF read walk exceeds the sequencer", "contract_outer sizes inconsistent"], phase="verify"),
    *_rules("PRED", 3, "docs/reference/diagnostics.md", [
        "packet reduce input not 32 or 64 bytes", "packet reduce depth",
        "packet reduce output columns"], phase="verify"),
    *_rules("TRED", 3, "docs/reference/diagnostics.md", [
        "time reducer loops do not form the time", "accumulator slots do not match the loops",
        "accumulator slots exceed the accumulator"], phase="verify"),
    *_rules("LFOLD", 3, "docs/reference/diagnostics.md", [
        "lane fold has more than 32 columns", "lane fold output is not 8 x 32-bit",
        "lane fold cycle count"], phase="verify"),
    *_rules("VEOP", 3, "Vector Engine", [
        "vector steps do not type the stream", "vector steps out of order or sharing an ALU",
        "vector step argument out of range"], phase="verify"),
    *_rules("CASTOP", 2, "docs/reference/diagnostics.md", ["cast op not a Cast Engine pair", "cast op is not one flit"],
            phase="verify"),
    *_rules("CMT", 5, "docs/reference/diagnostics.md", [
        "commit op width", "commit op conversion", "commit write plan exceeds the sequencer",
        "commit write not 8-byte aligned", "commit writes outside its allocation"], phase="verify"),
    *_rules("DMAOP", 5, "docs/reference/diagnostics.md", [
        "DMA element type or direction", "DMA command exceeds the sequencer",
        "DMA packet larger than 4096 bytes", "DMA into DM not 8-byte aligned",
        "DMA command leaves its allocation"], phase="verify"),
    CodeInfo("DTYPE-EMU", "dtype not native on the target", "lower", "docs/numerics.md"),
    CodeInfo("DTYPE-CONST", "constant its dtype cannot hold", "trace", "docs/numerics.md"),
    CodeInfo("W-DTYPE-EMU", "compat mode inserted an emulation stage", "lower", "docs/numerics.md"),
    *[CodeInfo(f"MAP-{c}", f"mapping error: {c.replace('_', ' ')}", "mapping", "docs/mapping-language.md")
      for c in MAPPING_CATEGORIES if c != "overshoot"],
    CodeInfo("USAGE", "bad invocation or input file", "cli", "docs/reference/cli.md"),
    CodeInfo("ICE", "internal compiler error", "internal", "docs/ci.md"),
    # the Switch Engine (ir.switch.rules, ir.switch.custom)
    *_rules("SWITCH", 19, "docs/machine/switch.md", [SWITCH_RULES[f"SWITCH-{n}"] for n in range(1, 20)]),
    # Vector Engine pair mode, tags, stash, valid counts (ir.vector.pair_ops, tu_ops.vector_pair)
    *[CodeInfo(code, title, "trace", "Vector Engine") for code, title in (
        ("PAIR-UNZIP-1", "unzip axis is not one axis of size 2"),
        ("PAIR-UNZIP-2", "unzip axis is not in the stream's time"),
        ("PAIR-UNZIP-3", "unzip times do not match the stream"),
        ("PAIR-UNZIP-4", "unzip group larger than the register-file cache"),
        ("PAIR-REDUCE-1", "intra-slice reduce in pair mode"),
        ("PAIR-SPLIT-1", "pair way change does not regroup the flit"),
        ("PAIR-VRF-1", "pair groups read two VRF tensors"),
        ("INTERLEAVE-1", "interleaved views differ"),
        ("INTERLEAVE-2", "interleave axis is not a fresh size-2 axis"),
        ("VE-TAG-2", "comparison boundary of the other scalar"),
        ("VE-TAG-3", "branched operand on a stream without tags"),
        ("VE-ENUM-3", "enum field of the wrong kind"),
        ("VE-SLOT-1", "branched operand fills no slot"),
        ("VE-SLOT-2", "tag guard admits nothing"),
        ("VE-SLOT-3", "slot after the register-file slot"),
        ("VE-SLOT-4", "a fourth immediate slot"),
        ("VE-SLOT-5", "slot after an unconditional slot"),
        ("VE-SLOT-6", "stash slot guarded on the group bit alone"),
        ("VE-STASH-1", "stash read before it is written"),
        ("VE-STASH-2", "stash read twice"),
        ("VE-STASH-3", "stash written twice"),
        ("VE-STASH-4", "stash read at another scalar or way"),
        ("VE-STASH-5", "stash in pair mode"))],
    *_rules("VPAIR", 4, "Vector Engine", [
        "pair steps do not type the stream", "pair steps out of order, merged twice or sharing an ALU",
        "pair step argument out of range", "merged reduce step does not fit its stream"], phase="verify"),
    # kernel parameters and in-place writes (npu_opt.params)
    *_rules("PARAM", 2, "docs/parameters.md", ["write into a read-only parameter",
                                               "parameter type that holds no tensor"]),
    # resident DM parameters (ir/resident.py, npu_opt/resident.py)
    *_rules("RESIDENT", 4, "docs/parameters.md", [
        "argument does not fit a resident DM parameter", "one resident buffer bound twice where one binding writes",
        "resident buffer on another device", "resident DM parameters exceed a slice's DM"], phase="run",
        phases={4: "trace"}),
    *_rules("VIEW", 12, "docs/views.md", [
        "tile index is not a digit of the view", "tile mapping is not the split", "tile runs past its tensor",
        "write through a read-only view", "reshape changes a level's size", "pad narrower than its view",
        "pad is not one outermost padding", "tile start not known while tracing",
        "view method on the wrong kind of tensor", "view not placed by the lowering yet",
        "fill value not a value of the dtype", "read of a cell nothing wrote"], phases={10: "lower", 12: "run"}),
    CodeInfo("DMAOP-6", "DMA view outside its tensor", "verify", "docs/views.md"),
    # topology and data movement (ir.topology, npu_opt.gather; docs/machine/topology.md)
    CodeInfo("SPACE-5", "Cluster or Slice larger than the kernel's PEs", "trace", "docs/machine/topology.md"),
    *_rules("GATHER", 6, "docs/machine/dma.md", [
        "gather index is not i32", "gather across chips", "index selects no consecutive region of table axes",
        "gathered rows break the DMA layout rules", "unscaled index over one PE's SPM",
        "index value selects no row"], phases={6: "run"}),
    CodeInfo("GATHEROP-1", "gather record fields inconsistent", "verify", "docs/machine/dma.md"),
    CodeInfo("GATHEROP-2", "gather count is not a scalar[i32] record", "verify", "docs/machine/spm.md"),
    *_rules("SCATTER", 6, "docs/machine/dma.md", [
        "scatter index is not an i32 HBM tensor", "scatter across chips", "scatter key is not the index's axes",
        "scatter output is not one consecutive row region and the payload", "unscaled scatter is not available",
        "index value selects no output row"], phases={6: "run"}),
    CodeInfo("SCATTEROP-1", "scatter record fields inconsistent", "verify", "docs/machine/dma.md"),
    *_rules("SHUFFLE", 3, "docs/machine/topology.md", [
        "shuffle pattern does not fit the level", "shuffled level has padding", "HBM cluster shuffle"]),
    CodeInfo("SHUFFLEOP-1", "shuffle record fields inconsistent", "verify", "docs/machine/topology.md"),
    *_rules("REDIST", 9, "docs/machine/topology.md", [
        "chip shuffle is not a permutation of the chips", "slice axis, positions or output Element do not fit",
        "sliced axis stride not 8-byte aligned", "asymmetric slice axis not outermost in Element",
        "redistribution index not known while tracing", "redistribution reads a padded or missing part",
        "redistribution plan used as a tensor", "redistribution changes Chip, Cluster or the slices",
        "asymmetric slice leaves must-not-write padding below its axis"]),
    CodeInfo("REDISTOP-1", "redistribution record fields inconsistent", "verify", "docs/machine/topology.md"),
    *_rules("COLL", 2, "docs/collectives.md", [
        "collective sum of an element type the Vector Engine does not add",
        "collective operand does not fit the call"]),
    *_rules("VBR", 4, "Vector Engine", [
        "tagged pass steps do not form a vector pass", "comparison tag malformed", "branched slots malformed",
        "stash written or read out of order"],
            phase="verify"),
    # the Vector Register File (ir.vrf_ops, npu_opt.vrf, tu_ops.vrf)
    *[CodeInfo(code, title, phase, "Vector Engine") for code, title, phase in (
        ("VRF-1", "VRF tensor exceeds a slice's register file", "trace"),
        ("VRF-2", "VRF operand does not match the stream", "trace"),
        ("VRF-4", "VRF tensor is not i32 or f32", "trace"),
        ("VRF-5", "VRF element is not a layout of the stream", "trace"),
        ("VRF-6", "live VRF tensors exceed a slice's register file", "lower"),
        ("VRF-7", "VRF operand where no register-file read is compiled", "trace"),
        ("VRFLD-1", "VRF load of the wrong scalar", "verify"),
        ("VRFLD-2", "VRF load size or walk wrong", "verify"),
        ("VEOP-4", "register-file step in a plain vector record", "verify"),
        ("VEOP-5", "VRF read walk does not cover the stream", "verify"),
        ("VEOP-6", "VRF read outside its tensor", "verify"),
        ("RFRESHAPE-1", "register-file reshape names slices that hold no data", "trace"),
        ("RFRESHAPE-2", "register-file reshape record is not a relabel", "verify"))],
    # the intra-slice reduce (ir.vector.intra_reduce, ir.vector.reduce_ops)
    *[CodeInfo(code, title, phase, "Vector Engine") for code, title, phase in (
        ("VE-REDUCE-1", "the reduce output does not divide its input", "trace"),
        ("VE-REDUCE-2", "the reduce removes another axis", "trace"),
        ("VE-REDUCE-3", "the reduce axis survives in the output", "trace"),
        ("VE-REDUCE-4", "the reduced packet is neither kept nor one cell", "trace"),
        ("VE-REDUCE-5", "too many time accumulator slots", "trace"),
        ("VEOP-7", "vector reduce step does not match the record's types", "verify"))],
    # the inter-slice reducer (ir.vector.inter_reduce, ir.vector.inter_ops, tu_ops.vector_inter)
    *[CodeInfo(code, title, phase, "Vector Engine") for code, title, phase in (
        ("VE-INTER-1", "the inter-slice reduce's out_slice spans another number of slices", "trace"),
        ("VE-INTER-2", "the inter-slice reduce removes a time factor", "trace"),
        ("VE-INTER-3", "the reduced slice factors are not the innermost ones", "trace"),
        ("VE-INTER-4", "the kept slice factors do not stay outermost", "trace"),
        ("VE-INTER-5", "a reduced slot holds a factor of the stream", "trace"),
        ("VE-INTER-6", "out_time is not the time without its promoted factors", "trace"),
        ("INTEROP-1", "inter-slice reduce record op wrong for its stream", "verify"),
        ("INTEROP-2", "inter-slice reduce record shapes break the reducer's rules", "verify"),
        ("VE-REDUCE-6", "VRF operand read after the intra-slice reduce of its pass", "trace"))],
    # the valid count generator and the sub context's packed commit (ir.valid_count, tu_ops.valid_count)
    *[CodeInfo(code, title, phase, "docs/machine/valid-count.md") for code, title, phase in (
        ("VCG-1", "valid-count packing outside the sub context", "trace"),
        ("VCG-2", "padding the valid count generator cannot count", "trace"),
        ("VCG-3", "more padded axes than time filters", "trace"),
        ("VCG-4", "counting Time needs more than 8 sequencer entries", "trace"),
        ("VCG-5", "packed element is not the packed cells in order", "trace"),
        ("VCG-6", "a padded axis's Slice parts out of stride order", "trace"),
        ("VCG-8", "a padded axis interleaves Slice and Time", "trace"),
        ("VCG-9", "Time-major counting over-padded", "trace"),
        ("VCG-10", "a padded axis split between Slice and Packet with a partial packet", "trace"),
        ("CMT-6", "packed commit configuration wrong", "verify"),
        ("FMASK-1", "fetch mask changes more than padding kinds", "trace"),
        ("FMASK-2", "padding the fetch mask cannot describe", "trace"),
        ("FMASK-3", "fetch mask count varies along a loop of more than 8 iterations", "trace"),
        ("FEED-14", "feed mask configuration wrong", "verify"))],
    # writes into DM views and feeds of views (ir.rules.view_writes)
    *[CodeInfo(code, title, "trace", "docs/views.md") for code, title in (
        ("VIEW-13", "DMA write into DM off an 8-byte boundary"),
        ("VIEW-14", "memset of 4-bit cells writes half a byte"),
        ("VIEW-15", "begin over a view shifted outside its Element level"))],
    CodeInfo("FEED-15", "feed relabels its tensor other than its reshape says", "verify", "docs/views.md"),
    # the fetch lifts (ir.fetch_lift, npu_opt.fetch_lift)
    *_rules("LIFT", 6, "docs/machine/fetch-lift.md", [
        "lift changes the placement's size", "lift brings no axis into the placement",
        "lift changes more than a broadcast of the placement",
        "lift fills a broadcast with padding", "lift time is not the time without the lifted axes",
        "lifted fetch base not 8-byte aligned"]),
    CodeInfo("FEED-16", "feed lifts inconsistent", "verify", "docs/machine/fetch-lift.md"),
    # scratchpad memory and the staged gather / scatter (ir.spm, npu_opt.spm, npu_opt.gather_plan)
    *[CodeInfo(code, title, "trace", "docs/machine/spm.md") for code, title in (
        ("GATHER-7", "staged gather's indexed axis or payload does not describe the table"),
        ("GATHER-8", "gather index given where the staged gather cannot read it"),
        ("GATHER-9", "sparse prefix misplaced, or neither an int nor a runtime i32"),
        ("SCATTER-7", "staged scatter's indexed axis or payload does not describe the destination"),
        ("SCATTER-8", "scatter index or destination the staged scatter cannot use"),
        ("SPM-1", "SPM tensor does not fit the scratchpad"),
        ("SPM-2", "SPM move changes the chips, clusters or PE count"),
        ("SPM-3", "SPM move breaks the DMA layout rules"))],
    CodeInfo("SPMOP-1", "dma_spm sides disagree", "verify", "docs/machine/spm.md"),
    *_rules("RUNTIME", 10, "docs/runtime.md", [
        "runtime scalar used as a Python truth value", "runtime scalar where a trace-time number is needed",
        "ctx.when condition is not a runtime bool", "scalar operands of different types or a bad literal",
        "runtime scalar cast to a non-integer type", "value used across a ctx.when block's edge",
        "scalar parameter of a bad type or read without to_spm", "runtime record malformed",
        "runtime tile start not a usize or not whole bytes", "runtime tile start past its tile's range"],
        phases={8: "verify", 10: "run"}),
    *_rules("LOOP", 7, "docs/loops.md", [
        "tile start out of range for some iteration of a rolled loop",
        "tile start built from a loop index in a way no check covers",
        "value used across a ctx.loop body's edge", "loop bound that is not a count, or a body left early",
        "loop record malformed", "loop body unsafe for some iteration (start range or reused buffer)",
        "a view at two runtime starts that the trace cannot prove in range"],
        phases={5: "verify", 6: "verify"}),
]

CODES: dict[str, CodeInfo] = {e.code: e for e in _ENTRIES}
