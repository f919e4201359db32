"""Lowered tensor-unit ops and their verifiers (pipeline.md section 11). Filled by the lowering work."""

__all__: list[str] = []
