"""The methods attrs writes for our classes, compiled at their first call and reused across processes.

Defining an attrs class makes attrs write the source of its `__init__`, `__repr__`, `__eq__`
and `__hash__` and compile it; for the few hundred IR and op classes a compile imports, that
compiling was about a quarter of a fresh process's start-up. attrs compiles in one function,
`attr._make._compile_and_eval`; `install` wraps it, called as soon as that module is
imported (ir/attrs_watch.py, which `ir/__init__.py` sets up: this module loads with attrs).

For a class of ours (named in attrs' file name `<attrs generated ... MODULE.CLASS>`), the
script is split into its methods. A method compiled by an earlier process is loaded from the
`attrs` bundle (ir/kept_bundle.py: one file in the user's cache directory, written when the
process exits, of this attrs installation and Python: attrs' `_make.py` path, size and time
and the bytecode magic are the bundle's salt), under a key of its text and file name. Any
other method is a stand-in until its first call, which compiles it, keeps it in the bundle,
puts it in its class in the stand-in's place and runs it: a one-kernel compile calls about a
fifth of the methods its imports define (mostly `__init__`), so an empty cache compiles that
fifth, and the bundle holds only methods some process ran.

What runs is the code object `compile` returns for attrs' own text (each method compiled
after as many empty lines as precede it in attrs' script, so its line numbers are attrs';
marshal keeps every field of a code object; this module and attrs' both compile under
`from __future__ import annotations`), evaluated with attrs' globals after attrs filled
`linecache`, and it carries what attrs set on the method (module, qualified name, doc,
`__init__`'s annotations). A script with a top-level line other than a `def` is compiled
whole, as before. A failure to read or write the cache (no directory, a truncated file, an
attrs without that function, a bundle of another salt) falls back to compiling; a user's own
attrs classes are left alone.
`install` also spares attrs parsing the text signature of a builtin converter
(`_skip_builtin_signatures`).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types
from typing import Any

from ir.kept_bundle import bundle, text_key

__all__ = ["install"]

# Our packages, attrs' own classes defined after attr._make (its validators: the same
# for every process of one attrs installation), and lsprotocol's (`npu-opt lsp`'s protocol
# types: some 570 attrs classes whose compiling was half of the language server's start-up,
# of which the server runs a few dozen methods; and pygls' few).
_PACKAGES = ("ir.", "tu_ops.", "visa.", "npu_opt.", "backends.", "driver.", "attr.", "lsprotocol.", "pygls.")
_INSTALLED: list[Any] = []  # attrs' own compile step, once wrapped


def install() -> None:
    """Route attrs' compile of our classes' methods through the cache, once per process."""
    make = sys.modules.get("attr._make")
    original = getattr(make, "_compile_and_eval", None)
    if _INSTALLED or original is None:  # not loaded, or an attrs that compiles elsewhere
        return
    try:  # which attrs: its file's size and time (`attr.__version__` would import importlib.metadata)
        stat = os.stat(make.__file__)
    except (OSError, TypeError):
        return
    # `functions`: entries are single methods (a bundle of whole scripts reads as another salt's)
    salt = f"{make.__file__}|{stat.st_size}|{stat.st_mtime_ns}|{importlib.util.MAGIC_NUMBER.hex()}|functions|"

    def compile_and_eval(*args: Any, **kwargs: Any) -> None:
        if kwargs or len(args) != 4 or not isinstance(args[0], str) or not isinstance(args[3], str):
            return original(*args, **kwargs)  # another attrs' call shape: left to attrs
        script, globs, locs, filename = args
        if not _ours(filename):
            return original(script, globs, locs, filename)
        type_hash = hash(f"<attrs generated hash {_class_name(filename)}>")  # as attrs' __hash__ source has it
        shared = _with_type_hash(script, type_hash, STAND_IN)
        if shared is None:
            return original(script, globs, locs, filename)
        kept = bundle("attrs", salt, _is_code)
        hashed = type_hash if shared is not script else None
        namespace = locs if locs is not None else globs
        pieces = _functions(shared)
        if pieces is None:  # a statement other than a `def` at the top: the script as attrs wrote it
            _evaluated(kept, (text_key(f"{filename}\n{shared}"), filename, shared), globs, namespace, hashed)
            return None
        for name, text in pieces:
            key = text_key(f"{filename}\n{text}")
            made = _defined if key in kept else _deferred  # compiled by an earlier process, or not yet
            namespace[name] = made(kept, (key, filename, text), globs, name, hashed)
        return None

    make._compile_and_eval = compile_and_eval
    _INSTALLED.append(original)
    _skip_builtin_signatures(sys.modules.get("attr._compat"))


def _functions(script: str) -> list[tuple[str, str]] | None:
    """The top-level functions of an attrs script as (name, text), each text preceded by as
    many empty lines as the script has above it (line numbers stay attrs' own); None when
    the script has a top-level line that does not start a `def`."""
    lines = script.split("\n")
    starts = [n for n, line in enumerate(lines) if line[:1] not in ("", " ", "\t")]
    if not starts or any(not lines[n].startswith("def ") for n in starts):
        return None
    ends = [*starts[1:], len(lines)]
    return [(lines[a][4:].split("(", 1)[0], "\n" * a + "\n".join(lines[a:b])) for a, b in zip(starts, ends)]


Source = tuple[str, str, str]  # a text's key in the bundle, attrs' file name for it, the text


def _code(kept: Any, source: Source) -> types.CodeType:
    """The code of a text (compiled under attrs' file name), from the bundle or compiled into it."""
    key, filename, text = source
    code = kept.get(key)
    if code is None:
        code = compile(text, filename, "exec")
        kept.add(key, code)
    return code


def _evaluated(kept: Any, source: Source, globs: dict[str, Any], made: dict[str, Any],
               hashed: int | None) -> dict[str, Any]:
    """`made`, holding what the source defines, evaluated as attrs evaluates its script (with
    `made` as the locals: attrs' own may hold names the script reads), its `__hash__` given
    this process's number `hashed`."""
    eval(_code(kept, source), globs, made)  # noqa: S307 - attrs' own generated source
    _put_type_hash(made, STAND_IN, hashed)
    return made


def _defined(kept: Any, source: Source, globs: dict[str, Any], name: str, hashed: int | None) -> types.FunctionType:
    """The function `name` that the source defines."""
    return _evaluated(kept, source, globs, {}, hashed)[name]


def _deferred(kept: Any, source: Source, globs: dict[str, Any], name: str, hashed: int | None) -> types.FunctionType:
    """A stand-in for the method `name` that compiles it at its first call, puts it in its
    class in its own place (with what attrs set on the stand-in: module, qualified name, doc,
    `__init__`'s annotations) and runs it; a method no call reaches is never compiled."""
    real: list[types.FunctionType] = []

    def method(*args, **kwargs):  # type: ignore[no-untyped-def] # attrs' own signature is the real one's
        if not real:
            real.append(_defined(kept, source, globs, name, hashed))
            _take_place(method, real[0], args[0] if args else None)
        return real[0](*args, **kwargs)

    method.__name__ = name  # attrs names the method's qualified name after it
    return method


def _take_place(stand_in: types.FunctionType, fn: types.FunctionType, instance: Any) -> None:
    """`fn` gets what attrs set on `stand_in` and replaces it in the class of `instance` that holds it."""
    fn.__module__, fn.__qualname__, fn.__doc__ = stand_in.__module__, stand_in.__qualname__, stand_in.__doc__
    if stand_in.__annotations__:  # attrs gives `__init__` its fields' annotations
        fn.__annotations__ = stand_in.__annotations__
    for owner in type(instance).__mro__:
        if owner.__dict__.get(fn.__name__) is stand_in:
            setattr(owner, fn.__name__, fn)
            break


def _skip_builtin_signatures(compat: Any) -> None:
    """attrs reads each converter's signature for the annotations of `__init__`
    (`attr._compat._AnnotationExtractor`): for a builtin such as `converter=tuple`,
    `inspect.signature` tokenizes its text signature (~0.2 ms a field, and ~5 ms to compile
    tokenize's expressions the first time), to find no annotation, which a builtin never
    has. The extractor of a builtin now holds no signature, which reads as no annotation,
    the answer the parse gave."""
    extractor = getattr(compat, "_AnnotationExtractor", None)
    init = getattr(extractor, "__init__", None)
    if init is None or getattr(init, "_npu_opt_builtins", False):
        return

    def __init__(self: Any, callable: Any) -> None:
        if getattr(callable, "__module__", None) == "builtins" and type(callable) in _BUILTIN_KINDS:
            self.sig = None
        else:
            init(self, callable)

    __init__._npu_opt_builtins = True  # type: ignore[attr-defined]
    extractor.__init__ = __init__


_BUILTIN_KINDS = (type, types.BuiltinFunctionType)


STAND_IN = 9_999_999_999_999_999_999
"""attrs writes the class's `hash("<attrs generated hash MODULE.CLASS>")` into its `__hash__`
as a number, and a str's hash differs from process to process: the cached code holds this
number in its place (greater than any hash, so no other constant equals it), replaced by the
process's own when loaded. One stand-in for every number, whatever its sign and length, so
every process finds the entry the first one kept (a stand-in of the number's own sign and
length missed in about half the processes for each hashed class, compiling some 40 classes'
methods again in every warm start-up); only the columns the position table gives that one
constant's line may then differ from the text, on a line that cannot raise."""


def _class_name(filename: str) -> str:
    """`MODULE.CLASS` of attrs' file name; linecache's `-N` suffix of a reused name dropped."""
    name = filename.split(" ")[3][:-1]
    head, _, count = name.rpartition("-")
    return head if head and count.isdigit() else name


def _with_type_hash(script: str, old: int, new: int) -> str | None:
    """`script` with its line that is only the number `old` (and a comma) holding `new`;
    None when `old` is so short a number that another line could read the same."""
    line = f" {old},\n"  # attrs writes it indented, on a line of its own, never last
    at = script.find(line)
    if at < 0:
        return script
    if len(str(abs(old))) < 12:  # about one hash in ten million: compiled as attrs does, not cached
        return None
    start = script.rfind("\n", 0, at) + 1
    if script[start:at].strip():  # not alone on its line: leave the class to attrs
        return None
    return f"{script[:at]} {new},\n{script[at + len(line):]}"


def _put_type_hash(namespace: Any, old: int, new: int | None) -> None:
    """The `__hash__` function just defined in `namespace`, its int constant `old` replaced
    by `new` (a constant of its own, or inside a folded tuple constant); None: nothing to replace."""
    if new is None:
        return

    def swap(value: Any) -> Any:
        if type(value) is int:
            return new if value == old else value
        if type(value) is tuple:
            return tuple(swap(v) for v in value)
        return value

    fn = namespace.get("__hash__") if namespace is not None else None
    if isinstance(fn, types.FunctionType):
        fn.__code__ = fn.__code__.replace(co_consts=tuple(swap(k) for k in fn.__code__.co_consts))


def _ours(filename: str) -> bool:
    parts = filename.split(" ")  # `<attrs generated methods ir.ops.Foo>`
    return len(parts) == 4 and parts[0] == "<attrs" and parts[3].startswith(_PACKAGES)


def _is_code(value: Any) -> bool:
    return isinstance(value, types.CodeType)
