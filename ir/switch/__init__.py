"""The Switch Engine and the Transpose Engine, independent of the op framework.

`config` holds `SwitchConfig`; `rules` and `custom` the switch rules SWITCH-1..18 and the
inference of a switch's output; `transpose` the rules TRANSPOSE-1..16 and the engine
parameters; `semantics` the data movement both engines perform on numpy arrays.
"""

from ir.switch.config import SwitchConfig, SwitchVariant, as_switch_config
from ir.switch.rules import check_switch, ring_size, switch_frames
from ir.switch.transpose import TransposeParams, check_transpose

__all__ = [
    "SwitchConfig", "SwitchVariant", "as_switch_config", "check_switch", "ring_size", "switch_frames",
    "TransposeParams", "check_transpose",
]
