"""The titles of the Switch Engine rules SWITCH-1..19 and the Transpose Engine rules
TRANSPOSE-1..18, kept apart from their checks (`ir.switch.rules`, `ir.transpose.rules`):
the rule index (`ir.codes`, read by `npu-opt explain`) needs the titles only, and this
module imports nothing, so listing the codes loads neither numpy nor the mapping parser."""

__all__ = ["SWITCH_RULES", "TRANSPOSE_RULES"]

SWITCH_RULES: dict[str, str] = {
    "SWITCH-1": "malformed SwitchConfig value",
    "SWITCH-2": "switch changes the number of slices",
    "SWITCH-3": "switch configuration dimension is zero",
    "SWITCH-4": "switch slice dimension is not a power of two",
    "SWITCH-5": "switch slice dimensions do not divide the input Slice",
    "SWITCH-6": "switch time split does not divide the input Time",
    "SWITCH-7": "switch output mapping differs from what the configuration produces",
    "SWITCH-8": "switch ring size is not a power of two",
    "SWITCH-9": "switch ring size differs from the one the mappings need",
    "SWITCH-10": "switch read does not sequence (a slot without source, or live data dropped)",
    "SWITCH-11": "switch broadcast tile is padded or lands on padding that must not be written",
    "SWITCH-12": "switch broadcast tile is an axis the input already carries",
    "SWITCH-13": "switch output Slice slot is sourced from the input Time",
    "SWITCH-14": "switch broadcast tiles claim one axis twice",
    "SWITCH-15": "switch axes moved from Slice to Time are not innermost",
    "SWITCH-16": "switch axes moved from Slice to Time change their order",
    "SWITCH-17": "switch does not carry the input Time through unchanged",
    "SWITCH-18": "switch input packet is not a multiple of 8 bytes",
    "SWITCH-19": "inter-transpose run of consecutive flits exceeds the ring's limit",
}

TRANSPOSE_RULES: dict[str, str] = {
    "TRANSPOSE-1": "transpose element width not 4, 8, 16 or 32 bits",
    "TRANSPOSE-2": "transpose input packet is not one flit",
    "TRANSPOSE-3": "transpose output packet is not one flit",
    "TRANSPOSE-4": "transpose input packet beyond its valid elements is not pure padding",
    "TRANSPOSE-5": "transpose output packet beyond its rows is not pure padding",
    "TRANSPOSE-6": "transpose parameters: valid elements per packet wrong for the dtype",
    "TRANSPOSE-7": "transpose parameters: in_cols is not packets_per_col * valid",
    "TRANSPOSE-8": "transpose parameters: more output rows than input columns",
    "TRANSPOSE-9": "transpose parameters: packet beyond the valid elements is not pure padding",
    "TRANSPOSE-10": "transpose parameters: packets_per_col does not split Time",
    "TRANSPOSE-11": "transpose parameters: in_rows does not split Time",
    "TRANSPOSE-12": "transpose output Time cannot be produced from the input",
    "TRANSPOSE-13": "transpose output rows are not digits of the input Time",
    "TRANSPOSE-14": "transpose output rows sit at an illegal column stride in Time",
    "TRANSPOSE-15": "transpose output row digits are not adjacent in Time",
    "TRANSPOSE-16": "transpose output rows are copies, not live rows",
    "TRANSPOSE-17": "transpose doubled input packing on a 4-bit element",
    "TRANSPOSE-18": "transpose parameters: fetch_in_width_shift not 0 or 1, or doubled on a 4- or 32-bit element",
}
