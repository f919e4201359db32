"""Differential tests: generated contraction kernels run on the `cpu` backend and on the
VISA interpreter (after the npu lowering) must agree bit for bit (issue 7, item 3)."""
