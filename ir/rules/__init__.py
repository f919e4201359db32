"""The [T] rules of docs/machine/index.md, one module per family; each op's `check()` calls in here."""
