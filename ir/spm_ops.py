"""Traced ops of the scratchpad (ir.spm, docs/machine/spm.md): `dm.to_spm(ctx.tdma, SpmTensor[...])`
and `spm.to_dm(ctx.tdma, DmTensor[...])`."""

from __future__ import annotations

import attrs

from ir.op_frame import operand
from ir.ops import Op, Value
from ir.rules.spm import check_spm_to_dm, check_to_spm

__all__ = ["ToSpm", "SpmToDm"]


@attrs.frozen(kw_only=True)
class ToSpm(Op):
    """A DM tensor copied into SPM: `%3 = to_spm %2 : spm<...>`."""

    STAGE = "to_spm"
    RULES = (check_to_spm,)
    src: Value = operand()


@attrs.frozen(kw_only=True)
class SpmToDm(Op):
    """An SPM tensor copied into DM: `%4 = spm_to_dm %3 : dm<...>`."""

    STAGE = "spm_to_dm"
    RULES = (check_spm_to_dm,)
    src: Value = operand()
