"""The Switch Engine, independent of the op framework.

`config` holds `SwitchConfig`; `rules` and `custom` the switch rules SWITCH-1..19 and the
inference of a switch's output; `semantics` the data movement of both data-movement engines
on numpy arrays (the Transpose Engine's rules are `ir.transpose`'s). Import the modules
themselves: this package imports nothing, so the VISA interpreter can load `semantics`
without the trace rules.
"""
