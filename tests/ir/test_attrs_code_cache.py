"""`ir.attrs_code_cache`: each method attrs generates for a class of ours is compiled at its
first call (a method nothing calls is never compiled), kept in the cache directory's `attrs`
bundle and loaded by later definitions (another process loads the same bundle); what runs is
exactly what attrs compiles itself, the per-process number inside `__hash__` included; a
user's classes, a damaged or foreign bundle and an unwritable directory change nothing but
the speed."""

from __future__ import annotations

import functools
import marshal
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import attr._make
import attrs
import pytest

import ir  # noqa: F401 - installs the cache (ir/__init__.py)
from ir import attrs_code_cache, kept_bundle

ROOT = Path(__file__).resolve().parents[2]


_METHODS = ("__init__", "__repr__", "__eq__", "__hash__")


def _define(module: str, used: bool = True) -> type:
    """A frozen class with an eq, a hash, a repr, a default, a converter and a validator,
    defined as if in `module` (attrs names its generated file after the class's module);
    `used`: each of its four methods called once."""

    ns: dict[str, Any] = {"__name__": module, "attrs": attrs, "Any": Any}
    exec(  # noqa: S102 - the class statement, run with `module` as its module
        "@attrs.frozen\nclass Probe:\n"
        "    a: int = attrs.field(converter=int)\n"
        "    b: tuple = attrs.field(default=(), validator=attrs.validators.instance_of(tuple))\n"
        "    c: Any = attrs.field(default=None, eq=False)\n", ns)
    cls = ns["Probe"]
    if used:
        x = cls(1)
        assert x == cls(1) and hash(x) == hash(cls(1)) and repr(x) == "Probe(a=1, b=(), c=None)"
    return cls


def _uncached(module: str, monkeypatch: pytest.MonkeyPatch) -> type:
    """The same class compiled by attrs alone."""
    with monkeypatch.context() as m:
        m.setattr(attr._make, "_compile_and_eval", attrs_code_cache._INSTALLED[0])
        return _define(module, used=False)


def _bundle_files(root: Path) -> list[Path]:
    kept_bundle.flush()
    return sorted(root.glob("attrs-*")) if root.is_dir() else []


def _entries(path: Path) -> dict[str, Any]:
    return marshal.loads(marshal.loads(path.read_bytes())[-1])  # (layout, salt, CRC-32, entries)


def _new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget the bundles read so far, as a new process would not have them."""
    kept_bundle.flush()
    monkeypatch.setattr(kept_bundle, "_BUNDLES", {})


def _methods(cls: type) -> dict[str, Any]:
    """What each method runs: bytecode, constants, names and line numbers (the columns of the
    `__hash__` number's line may differ: ir/attrs_code_cache.STAND_IN)."""
    return {name: (code.co_code, code.co_consts, code.co_names, code.co_varnames, code.co_firstlineno,
                   [line for _, _, line in code.co_lines()])
            for name in _METHODS for code in [cls.__dict__[name].__code__]}


def _no_compile(*args: Any, **kwargs: Any) -> None:
    raise AssertionError("a kept method was compiled again")


def test_cached_methods_are_attrs_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert attrs_code_cache._INSTALLED, "importing ir installs the cache"
    monkeypatch.setenv("NPU_OPT_CACHE_DIR", str(tmp_path))
    cold = _define("ir.probe_module")
    files = _bundle_files(tmp_path)
    assert len(files) == 1 and len(_entries(files[0])) == len(_METHODS)  # one entry per method
    stamp = files[0].stat().st_mtime_ns
    _new_process(monkeypatch)
    with monkeypatch.context() as m:
        m.setattr(attrs_code_cache, "compile", _no_compile, raising=False)
        warm = _define("ir.probe_module", used=False)
        assert all(warm.__dict__[name].__code__.co_filename.startswith("<attrs generated") for name in _METHODS)
        _define("ir.probe_module")
    assert _bundle_files(tmp_path) == files and files[0].stat().st_mtime_ns == stamp  # nothing new to write
    plain = _uncached("ir.probe_module", monkeypatch)
    for cls in (cold, warm):
        for name, code in _methods(cls).items():
            assert code == _methods(plain)[name], name  # bytecode, constants, names, positions
            mine, attrs_own = cls.__dict__[name], plain.__dict__[name]
            assert (mine.__qualname__, mine.__module__, mine.__doc__, mine.__annotations__) == (
                attrs_own.__qualname__, attrs_own.__module__, attrs_own.__doc__, attrs_own.__annotations__), name
        x, y = cls("3", (1,), c="ignored"), plain("3", (1,), c="other")
        assert hash(x) == hash(y) and repr(x).replace("ignored", "other") == repr(y)
        assert x == cls(3, (1,)) and x != cls(4, (1,))
        with pytest.raises(TypeError):
            cls(1, [1])


def test_a_method_is_compiled_at_its_first_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Defining a class compiles none of its methods; each call of a method not yet compiled
    compiles that one, puts it in the class it was defined in (a subclass's instance reaching
    it too) and returns what attrs' own method returns; one never called stays uncompiled."""
    monkeypatch.setenv("NPU_OPT_CACHE_DIR", str(tmp_path))
    compiled: list[str] = []

    def counting(text: str, filename: str, mode: str) -> Any:
        compiled.append(text.split("def ", 1)[1].split("(", 1)[0])
        return compile(text, filename, mode)

    monkeypatch.setattr(attrs_code_cache, "compile", counting, raising=False)
    cls = _define("ir.probe_lazy", used=False)
    stand_ins = {name: cls.__dict__[name] for name in _METHODS}
    assert compiled == [] and _bundle_files(tmp_path) == []
    assert stand_ins["__init__"].__qualname__ == "Probe.__init__"  # what attrs set on it
    sub = type("Sub", (cls,), {"__slots__": ()})  # not an attrs class: inherits the four methods
    x = sub("2")
    assert compiled == ["__init__"] and cls.__dict__["__init__"] is not stand_ins["__init__"]
    assert x.a == 2 and "__init__" not in sub.__dict__
    assert x == sub(2) and compiled == ["__init__", "__eq__"]
    assert stand_ins["__eq__"](x, sub(3)) is False  # a kept reference to the stand-in still works
    assert compiled == ["__init__", "__eq__"] and cls.__dict__["__repr__"] is stand_ins["__repr__"]
    assert cls.__dict__["__hash__"] is stand_ins["__hash__"]
    assert len(_entries(_bundle_files(tmp_path)[0])) == 2  # the two methods that ran


@pytest.mark.parametrize("module", ["lsprotocol.probe_types", "pygls.probe_protocol"])
def test_the_language_servers_protocol_classes_are_cached(module: str, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """lsprotocol's and pygls' classes (some 570 defined when `npu-opt lsp` starts, a few
    dozen of their methods ever run) go through the cache as ours do: none compiled when
    defined, each kept at its first call."""
    monkeypatch.setenv("NPU_OPT_CACHE_DIR", str(tmp_path))
    cls = _define(module, used=False)
    assert all(cls.__dict__[name].__code__.co_filename == attrs_code_cache.__file__ for name in _METHODS)  # stand-ins
    assert cls(1).a == 1 and cls.__dict__["__init__"].__code__.co_filename.startswith("<attrs generated")
    assert len(_entries(_bundle_files(tmp_path)[0])) == 1  # the one method that ran


def test_a_script_not_only_of_defs_is_compiled_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """attrs' `__getattr__` for a cached property is a script that calls a function at its top
    level: it is compiled whole when the class is defined (kept like a method), and works."""
    monkeypatch.setenv("NPU_OPT_CACHE_DIR", str(tmp_path))
    src = ("@attrs.frozen\nclass P:\n    a: int\n"
           "    @functools.cached_property\n    def double(self) -> int:\n        return 2 * self.a\n")
    ns: dict[str, Any] = {"__name__": "ir.probe_cached", "attrs": attrs, "functools": functools}
    exec(src, ns)  # noqa: S102
    getter = ns["P"].__dict__["__getattr__"]
    assert getter.__code__.co_filename == "<attrs generated getattr ir.probe_cached.P>"  # attrs' own, not a stand-in
    assert ns["P"](2).double == 4
    (path,) = _bundle_files(tmp_path)
    assert len(_entries(path)) == 2  # the whole `__getattr__` script and the `__init__` that ran


def test_a_users_class_is_not_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NPU_OPT_CACHE_DIR", str(tmp_path))
    cls = _define("my_kernels.helpers")
    assert _bundle_files(tmp_path) == []
    assert cls(1) == cls(1)


def test_a_damaged_or_foreign_bundle_is_compiled_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NPU_OPT_CACHE_DIR", str(tmp_path))
    _define("ir.probe_module")
    (path,) = _bundle_files(tmp_path)
    whole = path.read_bytes()
    path.write_bytes(whole[:20])  # truncated
    _new_process(monkeypatch)
    cls = _define("ir.probe_module")
    assert _methods(cls) == _methods(_uncached("ir.probe_module", monkeypatch))
    assert _bundle_files(tmp_path) == [path] and path.read_bytes() == whole  # written whole again
    form, salt, checksum, payload = marshal.loads(whole)
    path.write_bytes(marshal.dumps((form, salt + " ", checksum, payload)))  # another attrs' or Python's bundle
    _new_process(monkeypatch)
    cls = _define("ir.probe_module")
    assert _methods(cls) == _methods(_uncached("ir.probe_module", monkeypatch))
    assert _bundle_files(tmp_path) == [path] and marshal.loads(path.read_bytes())[1] == salt


def test_an_unwritable_cache_still_compiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("NPU_OPT_CACHE_DIR", str(blocker / "cache"))
    cls = _define("ir.probe_module")
    kept_bundle.flush()  # cannot write: says nothing
    assert hash(cls(1)) == hash(_uncached("ir.probe_module", monkeypatch)(1))


def test_processes_with_other_hash_seeds_share_the_files(tmp_path: Path) -> None:
    """A str's hash, which attrs writes into `__hash__`, differs between these processes
    (in sign and length too); each hashes as attrs alone would, with attrs' own bytecode and
    constants, and all of them share the one entry the first process kept."""
    script = (
        "import attr._make, attrs\n"
        "import ir\n"
        "from ir import attrs_code_cache as c\n"
        "src = '@attrs.frozen\\nclass P:\\n    a: int\\n    b: str = \"x\"\\n'\n"
        "def make():\n"
        "    ns = {'__name__': 'ir.probe_seeded', 'attrs': attrs}\n"
        "    exec(src, ns)\n"
        "    return ns['P']\n"
        "cached = make()\n"
        "attr._make._compile_and_eval = c._INSTALLED[0]\n"
        "plain = make()\n"
        "assert hash(cached(1)) == hash(plain(1)), 'hash'\n"
        "k, q = cached.__hash__.__code__, plain.__hash__.__code__\n"
        "assert (k.co_code, k.co_consts, k.co_names) == (q.co_code, q.co_consts, q.co_names), 'code'\n"
        "h = hash('<attrs generated hash ir.probe_seeded.P>')\n"
        "print(h < 0, len(str(abs(h))), h)\n"
    )
    runs = []
    for seed in range(1, 7):
        env = os.environ | {"NPU_OPT_CACHE_DIR": str(tmp_path), "PYTHONHASHSEED": str(seed),
                            "PYTHONPATH": str(ROOT)}
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False)
        assert out.returncode == 0, out.stderr
        runs.append(out.stdout.split())
    (path,) = _bundle_files(tmp_path)
    assert len(_entries(path)) == 2  # every process loaded the first one's `__init__` and `__hash__`
    assert len({r[2] for r in runs}) == len(runs)  # every seed gave another number
    assert len({tuple(r[:2]) for r in runs}) > 1  # of more than one sign or length


def test_a_builtin_converters_signature_is_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    """attrs asks a converter's signature for `__init__`'s annotations; a builtin's
    (`tuple`) is not parsed (it has none to give), a Python function's still is."""
    calls: list[Any] = []
    real = attr._compat.inspect.signature

    def spy(obj: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(obj)
        return real(obj, *args, **kwargs)

    def to_tuple(value: list) -> tuple:
        return tuple(value)

    monkeypatch.setattr(attr._compat.inspect, "signature", spy)
    ns: dict[str, Any] = {"__name__": "my_kernels.helpers", "attrs": attrs, "to_tuple": to_tuple}
    exec(  # noqa: S102
        "@attrs.frozen\nclass P:\n"
        "    a: tuple = attrs.field(converter=tuple)\n"
        "    b: tuple = attrs.field(converter=to_tuple)\n"
        "    c: int = attrs.field(converter=int, default=0)\n", ns)
    assert calls == [to_tuple]
    assert ns["P"].__init__.__annotations__ == {"b": "list", "return": None}  # as attrs annotates
    assert ns["P"]([1], [2], "3") == ns["P"]((1,), (2,), 3)


def test_a_call_of_another_shape_goes_to_attrs_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    """An attrs that passes its arguments otherwise (keywords, fewer of them) is handed them
    as they came, so a changed private signature costs speed, never a failed import."""
    seen: list[tuple[Any, Any]] = []
    monkeypatch.setattr(attrs_code_cache, "_INSTALLED", [])
    monkeypatch.setattr(attr._make, "_compile_and_eval", lambda *a, **k: seen.append((a, k)))
    attrs_code_cache.install()
    wrapped = attr._make._compile_and_eval
    wrapped("x = 1", {}, filename="<attrs generated methods ir.ops.Foo>")
    wrapped("x = 1", {})
    assert seen == [(("x = 1", {}), {"filename": "<attrs generated methods ir.ops.Foo>"}), (("x = 1", {}), {})]
