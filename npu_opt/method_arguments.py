"""TYPE-6 for a tensor or view method called with arguments its signature cannot take.

The stream stages check their arguments in `npu_opt.stagebase.stage_method`; the methods of
the tensor and view classes (`to_dm`, `to_hbm`, `view`, `tile`, `memset`, the redistributions)
are plain methods, so a call with one argument too many (furiosa-opt's pre-v0.9 DM address,
`x.to_dm(ctx.tdma, DmTensor[...], 0)`) or one too few raised Python's TypeError, reported as
USAGE with our class's name and a count that includes `self`. `checked_arguments` wraps each
public method of a class: the arguments are bound first, and a call they do not fit is TYPE-6
at the user's call, with the method's signature as the help (docs: `npu-opt explain TYPE-6`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from npu_opt.stagebase import kind_error, refuse_call, signature_text
from npu_opt.trace import is_tracing

__all__ = ["checked_arguments"]

C = TypeVar("C", bound=type)


def _checked(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    signature = inspect.signature(method)
    text = signature_text(method)

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            signature.bind(*args, **kwargs)
        except TypeError as e:
            if not is_tracing():
                raise
            return refuse_call(kind_error(f"bad arguments to `{name}`: {e}",
                                          help=f"the signature is `{name}{text}`"), name)
        return method(*args, **kwargs)

    call.checked_arguments = True  # type: ignore[attr-defined]
    return call


def checked_arguments(cls: C) -> C:
    """Wrap every public method the class body defines (properties and `_names` are left alone)."""
    for name, member in list(vars(cls).items()):
        if name.startswith("_") or not inspect.isfunction(member) or getattr(member, "checked_arguments", False):
            continue
        setattr(cls, name, _checked(name, member))
    return cls
