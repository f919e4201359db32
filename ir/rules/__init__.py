"""The [T] rules of pipeline.md, one module per family; each op's `check()` calls in here."""
