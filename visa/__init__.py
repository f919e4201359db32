"""The VISA artifact: text format, parser, interpreter (artifacts.md section 1). Filled by the VISA work."""

__all__: list[str] = []
