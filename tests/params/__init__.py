"""Kernel parameters and results: in-out parameters, tuple / struct / view parameters, HBM layouts."""
