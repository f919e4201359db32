"""Backends behind one interface: typecheck, cpu, npu (api.md section 3). Filled by the backend work."""

__all__: list[str] = []
