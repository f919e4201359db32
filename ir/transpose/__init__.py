"""The Transpose Engine, independent of the op framework (its data movement is
`ir.switch.semantics.transpose_data`, shared with the Switch Engine).

`rules` holds the rules TRANSPOSE-1..18 and the inference of a transpose; `params` the
engine parameters and their verifier, free of the trace rules so the lowered op and the
VISA interpreter load it alone. Import the modules themselves: this package imports nothing.
"""
