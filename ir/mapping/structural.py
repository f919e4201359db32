"""Structural factor form for large mappings (placeholder: falls back to the table)."""

from __future__ import annotations

import numpy as np

from ir.mapping.cells import evaluate
from ir.mapping.nodes import Mapping


def structural_factors(mapping: Mapping) -> list:
    from ir.mapping.factors import _axis_sizes, factors_from_table, table_matrix

    mat, names = table_matrix(evaluate(mapping, np.arange(mapping.size)))
    return factors_from_table(mat, names, _axis_sizes(mapping))
