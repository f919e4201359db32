"""The Switch Engine and the Transpose Engine, independent of the op framework.

`config` holds `SwitchConfig`; `rules` and `custom` the switch rules SWITCH-1..19 and the
inference of a switch's output; `transpose` the rules TRANSPOSE-1..18 and the inference of
a transpose; `params` the transpose's engine parameters and their verifier; `semantics`
the data movement both engines perform on numpy arrays. Import the modules themselves:
this package imports nothing, so the VISA interpreter can load `semantics` and `params`
without the trace rules.
"""
