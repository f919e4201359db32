"""`ir.kept_bundle`: a table kept in one file across processes, read whole at the first use
and written whole when a process exits; other processes' entries are merged, not lost; a
multiprocessing worker writes what it added; damage and foreign salts read as empty."""

from __future__ import annotations

import marshal
import multiprocessing
import os
import subprocess
import sys
import zlib
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from ir import kept_bundle
from ir.kept_bundle import KeptBundle, bundle, text_key

ROOT = Path(__file__).resolve().parents[2]


def _is_int(value: object) -> bool:
    return type(value) is int


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NPU_OPT_CACHE_DIR", str(tmp_path))
    kept_bundle.flush()
    monkeypatch.setattr(kept_bundle, "_BUNDLES", {})
    return tmp_path


def _file(root: Path, name: str = "probe") -> dict:
    (path,) = root.glob(f"{name}-*")
    return {k: marshal.loads(v) for k, v in marshal.loads(marshal.loads(path.read_bytes())[-1]).items()}


def _bundle_bytes(salt: str, entries: dict, form: str = kept_bundle.FORMAT) -> bytes:
    """A bundle file's bytes: its layout, its salt, the CRC-32 of its entries' marshal, that
    marshal (of each entry's own marshal)."""
    payload = marshal.dumps({k: marshal.dumps(v) for k, v in entries.items()})
    return marshal.dumps((form, salt, zlib.crc32(payload), payload))


def test_entries_of_two_processes_are_merged(cache: Path) -> None:
    mine = bundle("probe", "salt", _is_int)
    mine.add("a", 1)
    other = KeptBundle(mine.path, "salt", _is_int)  # another process, started before this one wrote
    other.add("b", 2)
    other.write()
    kept_bundle.flush()
    assert _file(cache) == {"a": 1, "b": 2}
    assert KeptBundle(mine.path, "salt", _is_int).get("b") == 2


def test_a_full_bundle_keeps_what_this_process_used(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = bundle("probe", "salt", _is_int)
    for i, key in enumerate("xyw"):
        first.add(key, i)
    kept_bundle.flush()
    monkeypatch.setattr(kept_bundle, "_BUNDLES", {})
    monkeypatch.setattr(KeptBundle, "LIMIT", 3)
    again = bundle("probe", "salt", _is_int)
    assert again.get("x") == 0 and again.get("nothing") is None
    again.add("z", 9)
    kept_bundle.flush()
    assert _file(cache) == {"x": 0, "z": 9}  # y and w were not used by this process


def test_damage_a_foreign_salt_and_bad_entries_read_as_empty(cache: Path) -> None:
    path = Path(bundle("probe", "salt", _is_int).path)
    path.write_bytes(b"\x00garbage")
    assert KeptBundle(str(path), "salt", _is_int).raw == {}
    path.write_bytes(_bundle_bytes("other salt", {"a": 1}))
    assert KeptBundle(str(path), "salt", _is_int).raw == {}
    path.write_bytes(_bundle_bytes("salt", {"a": 1}, form="an older layout"))
    assert KeptBundle(str(path), "salt", _is_int).raw == {}
    payload = marshal.dumps({"a": 1})  # the former layout: the entries in one marshal
    path.write_bytes(marshal.dumps(("salt", zlib.crc32(payload), payload)))
    assert KeptBundle(str(path), "salt", _is_int).raw == {}
    path.write_bytes(_bundle_bytes("salt", {"a": "not an int", "b": 2, 3: 4}))
    kept = KeptBundle(str(path), "salt", _is_int)
    kept.raw["c"] = b"\x00not marshal"
    assert kept.get("a") is None and kept.get("b") == 2 and kept.get("c") is None
    assert set(kept.raw) == {"b"} and "b" in kept and "a" not in kept and 3 not in kept


def test_an_entry_is_built_at_its_first_lookup(cache: Path) -> None:
    """Reading a bundle builds none of its entries (a check looks up a few dozen of the
    thousands a warm bundle holds); a lookup builds that one, once."""
    writer = bundle("probe", "salt", _is_int)
    for i in range(5):
        writer.add(f"k{i}", i)
    kept_bundle.flush()
    checked: list[object] = []
    kept = KeptBundle(writer.path, "salt", lambda v: checked.append(v) is None and _is_int(v))
    assert checked == [] and "k3" in kept
    assert kept.get("k3") == 3 and kept.get("k3") == 3 and checked == [3]


def test_an_entry_marshal_cannot_write_costs_nothing_else(cache: Path) -> None:
    kept = bundle("probe", "salt", lambda v: True)
    kept.add("a", object())
    kept_bundle.flush()
    assert list(cache.glob("probe-*")) == [] and not list(cache.glob("*.tmp"))


def _add_in_worker(key: str) -> int:
    bundle("probe", "salt", _is_int).add(key, os.getpid())
    return os.getpid()


def test_a_pool_worker_writes_what_it_added(cache: Path) -> None:
    """A forked multiprocessing worker leaves by os._exit, not atexit: its entries are written
    by its exit finalizer (a compile's `--jobs` workers define classes the parent never did)."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        pid = pool.submit(_add_in_worker, "from-worker").result()
    assert pid != os.getpid()
    assert _file(cache) == {"from-worker": pid}


def test_a_process_writes_at_exit(cache: Path) -> None:
    script = "from ir.kept_bundle import bundle\nbundle('probe', 'salt', lambda v: True).add('k', 'v')\n"
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", script], env=env, check=True)
    assert _file(cache) == {"k": "v"}


def test_text_keys_differ_for_close_texts() -> None:
    texts = ["A / 8", "A % 8", "A / 9", "B / 8", "A / 8 ", ""]
    assert len({text_key(t) for t in texts}) == len(texts)
