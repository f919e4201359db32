"""A kernel module of tests/loops loaded afresh with its size globals set (its axes are its
own, so each size is its own module): `sized_module(path, name, TA=1, TC=2)`."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType
from typing import Any

__all__ = ["sized_module"]


def sized_module(path: str, base: str, **sizes: Any) -> ModuleType:
    """The module at `path` executed with `sizes` as its globals' starting values, once per
    sizes (registered as `base_<values>`); the module reads them with `globals().get`."""
    name = "_".join([base, *(f"{k}{v}" for k, v in sizes.items())])
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        for key, value in sizes.items():
            setattr(module, key, value)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
