"""A warm `npu-opt compile`, answered without loading the compiler (docs/ci.md, "The cache").

A compile whose every kernel came out of (or went into) DIR's cache leaves a run record in
DIR/.npu-opt-cache/run.marshal (`marshal`, built into the interpreter: reading it loads no
`json` module, a twentieth of a warm compile): the invocation it answers, what the run
depended on and what it wrote. The next identical invocation checks the record with the
standard library only (no numpy, no parser, no kernel file executed) and, while everything
still holds, prints the recorded report and returns the recorded exit status. It holds while:

- the invocation is the same: paths, `-o`, `--target`, `--filter`, `--no-compat`,
  `--format`, whether the output is coloured, the working directory, the interpreter and
  its module search path (`--jobs` changes no output and is not part of it);
- npu-opt's own sources hash the same (`compiler_fingerprint`, the cache's key too). The
  record also keeps a hash of their names, sizes, modification times and inodes, taken
  before their contents were read: while it matches, the contents are not read again
  (the rule of git's index, with its guard: no stamp when a source is newer than 2 s);
- the walk of the paths finds the same `.py` files, and every directory holding a kernel
  file lists the same names (a new module beside a kernel can change its import);
- every file the discovery, the import and the trace of each kernel read (kernel files,
  user modules, data files, a `--target` file) has the recorded content hash, every
  environment variable they looked up the recorded value, and every link whose target
  they read the recorded target;
- DIR/manifest.json and every artifact it lists are the ones the run wrote (content
  hashes), and no stale artifact of the other kind (`.fail` for `.visa`) is back.

Anything else, a damaged record included, falls back to the ordinary compile, whose
per-kernel cache still answers for each unchanged kernel. A run with an input error or an
internal compiler error writes no record (driver/run_record.py writes it and takes the
compiler's fingerprint: a replay does not even compile that module's source). The manifest
a replay leaves is the one a cache hit writes (every `timings_ms` empty: nothing was
compiled).
"""

from __future__ import annotations

import contextlib
import marshal
import os
import sys
from hashlib import sha256
from pathlib import Path
from typing import Any

from driver.color import use_color
from driver.fingerprint import compiler_fingerprint, stamp_of
import stat as st

__all__ = ["walk_strings", "write_atomic", "invocation_key", "load_record", "replay", "RECORD"]

RECORD = "run.marshal"
_MAGIC = b"npu-opt run record 1\n"
# Directories a directory walk never enters (the discovery rule, `npu-opt check --help`).
SKIPPED_DIRS = frozenset({"__pycache__", "site-packages", "dist-packages", "build", "dist", "node_modules",
                          "venv", "env"})


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write `data` to `path` through a temporary file in the same directory, created
    exclusively under an unpredictable name (a link planted there is never followed) and
    removed again when the write or the rename fails."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for attempt in range(100):
        tmp = os.path.join(path.parent, f".{path.name}.{os.urandom(6).hex()}.tmp")
        try:
            fd = os.open(tmp, flags, 0o666)  # the umask applies, as to any file the user writes
            break
        except FileExistsError:
            if attempt == 99:
                raise
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _same_compiler(record: dict[str, Any]) -> bool:
    """Whether npu-opt's sources are the record's: by their sizes, times and inodes when
    the record's stamp matches, else by their contents."""
    stamp = record.get("sources_stamp")
    if isinstance(stamp, dict) and stamp_of(stamp["paths"])[0] == stamp["stat"]:
        return True  # the same files and directories, unchanged since the record
    return record["fingerprint"] == compiler_fingerprint()


def _skipped_dir(d: str) -> bool:
    """A hidden, build or virtual-environment directory (one holding `pyvenv.cfg`)."""
    name = os.path.basename(d)
    return name.startswith(".") or name in SKIPPED_DIRS or os.path.isfile(os.path.join(d, "pyvenv.cfg"))


def _test_file(name: str) -> bool:
    """`__main__.py` and a test runner's files (`test_*.py`, `*_test.py`, `conftest.py`):
    a directory walk does not import them (importing a test module runs its set-up)."""
    return name in ("__main__.py", "conftest.py") or name.startswith("test_") or name.endswith("_test.py")


def _walk(root: str, inside: frozenset[str] = frozenset()) -> list[str]:
    """The `*.py` files under `root`, sorted by name, except `__main__.py`, test files and skipped
    directories (strings: pathlib's parsing was most of a warm compile's walk). A directory
    link back to a directory being walked (`inside`: their real paths) is not followed
    again, and a directory that cannot be listed holds nothing."""
    found: list[str] = []
    try:
        with os.scandir(root) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return found
    for entry in entries:
        path = os.path.join(root, entry.name)
        if entry.is_dir():
            if _skipped_dir(path):
                continue
            if entry.is_symlink():
                real = os.path.realpath(path)
                if real in inside or real == os.path.realpath(root):
                    continue
            found.extend(_walk(path, (inside or frozenset({os.path.realpath(root)})) | {os.path.realpath(path)}))
        elif os.path.splitext(entry.name)[1] == ".py" and not _test_file(entry.name) and entry.is_file():
            found.append(path)
    return found


def walk_strings(paths: list[str]) -> tuple[list[str], list[str]]:
    """The files the paths name (directories walked), each once, as `str(Path(...))` spells
    them; and the paths that do not exist."""
    files: list[str] = []
    missing: list[str] = []
    for raw in paths:
        root = str(Path(raw))
        if os.path.isdir(root):
            files.extend(_walk(root))
        elif os.path.isfile(root):
            files.append(root)
        else:
            missing.append(raw)
    first: dict[str, str] = {}
    for f in files:  # the same file named twice (or through two paths) is one file
        first.setdefault(os.path.realpath(f), f)
    return list(first.values()), missing


def _listing(paths: list[str]) -> dict[str, Any]:
    """What discovery would find: the files, and the names in each directory holding one."""
    files, missing = walk_strings(paths)
    dirs = {}
    for parent in sorted({os.path.dirname(os.path.realpath(f)) for f in files}):
        try:
            dirs[parent] = sorted(os.listdir(parent))
        except OSError:
            dirs[parent] = None
    return {"files": files, "missing": missing, "dirs": dirs}


def digest(path: str) -> str | None:
    """The sha256 of a file's bytes, None when it cannot be read."""
    try:
        with open(path, "rb") as f:
            return sha256(f.read()).hexdigest()
    except OSError:
        return None


def env_value(name: str) -> str | None:
    """The value of environment variable `name` (`*`: a hash of the whole environment),
    read without telling a recording `os.environ` about it."""
    env = os.environ
    if name == "*":  # dict's own methods: a recording store (driver/deps.py) is not told
        return sha256(repr(sorted(dict.items(env._data))).encode()).hexdigest()  # type: ignore
    raw = dict.get(env._data, env.encodekey(name))  # type: ignore[attr-defined]
    return None if raw is None else env.decodevalue(raw)  # type: ignore[attr-defined]


def stat_of(path: str) -> list[Any] | None:
    """What a stat-only check can see of `path`: its kind and, for a file, its size (None: missing)."""

    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    kind = "file" if st.S_ISREG(info.st_mode) else "dir" if st.S_ISDIR(info.st_mode) else "other"
    return [kind, info.st_size if kind == "file" else 0]


def link_of(path: str) -> str | None:
    """The target a symbolic link names (None: not a link, or missing)."""
    try:
        return os.fsdecode(os.readlink(path))
    except (OSError, ValueError):
        return None


def listing_of(path: str) -> str | None:
    """A hash of the sorted names in directory `path` (None: cannot be listed)."""
    try:
        names = sorted(os.listdir(path))
    except (OSError, ValueError):
        return None
    return sha256("\0".join(names).encode("utf-8", "surrogateescape")).hexdigest()


def resolve(name: str, path: list[str]) -> str | None:
    """The file (or package directories) module `name` resolves to on search path `path`,
    by the import system's own path finder; None when it finds none."""
    finder = next((f for f in sys.meta_path if getattr(f, "__name__", "") == "PathFinder"), None)
    if finder is None:
        return None
    try:
        spec = finder.find_spec(name, path)
    except (ImportError, OSError, ValueError):
        return None
    if spec is None:
        return None
    return spec.origin if spec.origin not in (None, "namespace") else repr(list(spec.submodule_search_locations or []))


def deps_hold(snap: Any) -> bool:
    """Whether every file and variable of a snapshot still has the recorded content (and
    every stat-ed path, listed directory and module resolution is the same)."""
    try:
        return all(digest(f) == h for f, h in snap["files"].items()) and \
            all(env_value(n) == v for n, v in snap["env"].items()) and \
            all(stat_of(p) == v for p, v in snap.get("stats", {}).items()) and \
            all(listing_of(d) == v for d, v in snap.get("dirs", {}).items()) and \
            all(resolve(n, p) == v for n, (p, v) in snap.get("modules", {}).items()) and \
            all(link_of(p) == v for p, v in snap.get("links", {}).items())
    except (TypeError, KeyError, AttributeError, ValueError):
        return False


def invocation_key(paths: list[str], out_dir: str, target: str | None, pattern: str | None, compat: bool,
                   fmt: str, colored: bool, deny_warnings: bool = False) -> str:
    """What a run record answers: everything about the invocation that can change its output."""
    parts = [paths, os.path.abspath(out_dir), target, pattern, compat, fmt, colored, os.getcwd(),
             sys.executable, sys.version, [os.path.abspath(p) for p in sys.path]] + \
        (["deny-warnings"] if deny_warnings else [])
    return sha256(repr(parts).encode()).hexdigest()


def load_record(directory: Path) -> Any:
    """DIR's run record as saved (ValueError: not one)."""
    if (directory / ".npu-opt-cache").is_symlink():  # a record elsewhere answers nothing here
        raise ValueError("the cache directory is a symbolic link")
    data = (directory / ".npu-opt-cache" / RECORD).read_bytes()
    if not data.startswith(_MAGIC):
        raise ValueError("not a run record")
    try:
        return marshal.loads(data[len(_MAGIC):])
    except (EOFError, TypeError) as e:  # truncated, or another interpreter's format
        raise ValueError("damaged run record") from e


def _outputs_hold(directory: Path, record: dict[str, Any]) -> bool:
    """Whether DIR holds the manifest and artifacts of the record (rewriting a manifest that
    differs from a cache hit's only by the first run's timings)."""
    warm = record["warm_manifest"]
    try:
        on_disk = (directory / "manifest.json").read_bytes()
    except OSError:
        return False
    have = sha256(on_disk).hexdigest()
    if have not in (record["manifest_sha256"], sha256(warm.encode()).hexdigest()):
        return False
    for artifact, sha in record["artifacts"]:
        other = artifact[:-len(".visa")] + ".fail" if artifact.endswith(".visa") else artifact[:-5] + ".visa"
        if digest(os.path.join(directory, artifact)) != sha or \
                os.path.exists(os.path.join(directory, other)):
            return False
    if on_disk != warm.encode():
        write_atomic(directory / "manifest.json", warm)
    return True


def replay(paths: list[str], out_dir: str, target: str | None, pattern: str | None, compat: bool, fmt: str,
           color: str | None, deny_warnings: bool = False) -> int | None:
    """Print the recorded report of this invocation and return its status, if its record
    still holds (the module doc); None otherwise: then compile."""
    directory = Path(out_dir)
    key = invocation_key(paths, out_dir, target, pattern, compat, fmt, use_color(color, sys.stdout), deny_warnings)
    try:
        record = load_record(directory)
        if record["key"] != key or not _same_compiler(record):
            return None
        if record["listing"] != _listing(paths) or not deps_hold(record["deps"]):
            return None
        if not _outputs_hold(directory, record):
            return None
        report, status = record["report"], record["status"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # no record, or a damaged one: compile
    sys.stdout.write(report)
    return int(status)
