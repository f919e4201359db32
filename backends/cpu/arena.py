"""Large scratch buffers of one `CpuBackend.run`, reused within the run and (up to
`KEEP_BYTES`) kept for the backend's next run.

A 512^3 GEMM moves about 100 MiB through DMA and placement buffers per run. Fresh from
the allocator, such a buffer costs a page fault per few pages the first time it is
written (about as long as the copy itself); a buffer kept from the previous run costs
none. An `Arena` hands out buffers (`empty`, `zeros`) while it is the calling thread's
current arena (`scope`), every one distinct within the run, and takes them all back when
the scope ends; the next scope of the same arena hands the same memory out again (buffers a run does
not ask for are let go at its end). Within a run, the executor gives a buffer back
(`give_back`) once the value it holds is read for the last time and nothing still held
shares its memory, so a kernel of many tiles reuses one tile's scratch instead of holding
every tile's at once. Before a tile is written into memory not the arena's, the free
buffers this run allocated give up their pages (`make_room`), so a first run's peak does
not hold them beside that memory. At the end of a run at most `KEEP_BYTES` are kept; the
rest goes back to the allocator (a big kernel's memory is returned after its run).

Safe because: the executor never writes a buffer after the handler that made it
returned (but for a handler it hands the buffer over to, which writes it in place: the
buffer's note is dropped then, `forget_note`); the caller never sees one (`CpuBackend.run` copies every result out with
`host.from_buffer` before the scope ends); a run on another thread, or a nested run,
gets its own arena (`CpuBackend` keeps a pool); a handed-out buffer is a fresh view
object, and any row classes recorded for its memory are dropped (backends/cpu/row_classes.py).
Small buffers (< `MIN_BYTES`) and calls outside a scope use `np.empty` / `np.zeros`.

Each run counts, per memory owner, how often it hands that memory out again or the executor
has it written in place (`Arena.writes`, `written`): backends/cpu/run_memo.py keeps a result
computed from a buffer's contents while that count stands still, in the arena (`Arena.memo`),
so it ends with the run.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import mmap
import threading
from collections.abc import Callable, Iterator

import numpy as np

from backends.cpu.lru import ByObject

try:  # numpy's switch for its huge page advice (numpy 1.20+; private, hence the fallback)
    from numpy._core.multiarray import _set_madvise_hugepage as _set_huge_pages
except ImportError:  # pragma: no cover - a numpy without the switch: its default advice stays
    def _set_huge_pages(enabled: bool) -> bool:
        return enabled

__all__ = ["Arena", "scope", "current", "empty", "empty_noted", "forget_note", "zeros", "memory_owner", "written",
           "owned_root", "give_back", "give_back_raw", "sparse_zeros", "make_room", "MIN_BYTES", "KEEP_BYTES"]

MIN_BYTES = 1 << 20
KEEP_BYTES = 256 << 20

_HUGE_LOCK = threading.Lock()
_MAP_BELOW = 4 << 20
"""`sparse_zeros` maps memory of its own for sizes from `MIN_BYTES` up to this (below,
a mapping's system calls and faults each run cost more than heap memory cleared:
drawn_s1_2 makes 24 of 128-512 KiB a run, 24 % slower steady runs mapped; from it,
the heap memory malloc reuses, resident already, costs fewer faults each run: drawn_s2_2's
8 and 16 MiB, 6-11 % slower mapped)."""


def sparse_zeros(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """`np.zeros(shape, dtype)` whose untouched pages are not made resident. Two ways plain
    `np.zeros` made them resident (issue 61, first-run memory): numpy asks for huge pages
    from 4 MiB (`madvise(MADV_HUGEPAGE)`: one 32 KiB row written every 128 KiB made every
    2 MiB page resident, drawn_s2_2 8 MiB for 2 MiB of rows), so that advice is turned off
    around the allocation; and below the allocator's mmap threshold (which rises to the size
    of each large block freed) the memory comes from the heap, where `calloc` clears every
    byte of memory used before (drawn_s2_6: a 1 MiB DM tensor of 8 live rows made whole,
    0.8 MiB resident), so from `MIN_BYTES` to `_MAP_BELOW` it is a private anonymous
    mapping of its own (small pages, unmapped when the array goes)."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if MIN_BYTES <= nbytes < _MAP_BELOW:
        return np.frombuffer(mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE), dtype).reshape(shape)
    with _HUGE_LOCK:  # numpy's switch is process-wide: set and restored around this allocation alone
        before = _set_huge_pages(False)
        try:
            return np.zeros(shape, dtype)
        finally:
            _set_huge_pages(before)


_LOCAL = threading.local()
# The row classes recorded for a buffer's memory (backends/cpu/row_classes.py): kept here, beside
# the buffers, because handing a buffer out again must drop them.
ROW_CLASSES: ByObject[np.ndarray] = ByObject()


class Arena:
    """Buffers by byte size: those free for this run's next request, and those handed out."""

    def __init__(self) -> None:
        self.free: dict[int, list[np.ndarray]] = {}
        self.used: list[np.ndarray] = []
        self.returned: list[np.ndarray] = []  # given back in this run: kept at its end like `used`
        self.notes: dict[int, object] = {}  # by id of a held buffer: what its last maker left in it (`take`)
        # by id of a memory owner (`memory_owner`): how often this run has handed it out again or
        # written it in place (`written`); backends/cpu/run_memo.py keeps results while it stands still
        self.writes: dict[int, int] = {}
        self.memo: dict[object, object] = {}  # backends/cpu/run_memo.py's entries, for this run only
        self.fresh: set[int] = set()  # by id: the buffers this run allocated (none an earlier run kept)

    def take(self, shape: tuple[int, ...], dtype: np.dtype, note: object = None) -> tuple[np.ndarray, bool]:
        """(a buffer of `shape`, whether it still holds what `note` promises): with a `note`,
        a free buffer its last maker left with the same note is preferred; otherwise one
        with no note (a noted one is kept for its own maker's next request). The buffer's
        note becomes `note`: the caller promises that, once written, it holds what the
        note says (the executor never writes a buffer after its maker returned)."""
        dtype = np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        pool = self.free.get(nbytes) or (self._larger(nbytes) if note is None else [])
        kept = [i for i, r in enumerate(pool) if note is not None and self.notes.get(id(r)) == note]
        plain = [i for i, r in enumerate(pool) if id(r) not in self.notes]  # else one whose note no one needs now
        if pool:
            raw = pool.pop((kept or plain or [-1])[-1])
        else:
            raw = np.empty(nbytes, np.uint8)
            self.fresh.add(id(raw))
        self.used.append(raw)
        self.writes[id(raw)] = self.writes.get(id(raw), 0) + 1  # new contents from here on
        _forget(raw)
        if note is None:
            self.notes.pop(id(raw), None)
        else:
            self.notes[id(raw)] = note
        return raw[:nbytes].view(dtype).reshape(shape), bool(kept)

    def _larger(self, nbytes: int) -> list[np.ndarray]:
        """The free buffers of the smallest size above `nbytes`, up to twice it, that holds one
        with no note: a request of a size none is free of takes the first bytes of one (a
        first run's scratch given back is used again by the run's next requests of another
        size instead of staying idle beside new memory: issue 61, first-run memory; the
        runs after take the same buffers, in the same order)."""
        sizes = sorted(n for n, pool in self.free.items()
                       if nbytes < n <= 2 * nbytes and any(id(r) not in self.notes for r in pool))
        return self.free[sizes[0]] if sizes else []

    def give_back(self, raw: np.ndarray) -> bool:
        """Make `raw`, handed out in this run and no longer read, free for this run's next
        request; False when it is not one of this run's buffers."""
        for i, r in enumerate(self.used):
            if r is raw:
                del self.used[i]
                self.returned.append(raw)
                _forget(raw)
                self.free.setdefault(raw.nbytes, []).append(raw)
                return True
        return False

    def make_room(self, nbytes: int) -> int:
        """Let the system take back the pages of up to `nbytes` of free buffers this run
        allocated and holds no note for (their contents are dead: given back, never read
        again), before the run first writes `nbytes` of memory not its own (a tile written
        into the caller's result): the run's peak then does not hold both (issue 61,
        first-run memory). Only a run's fresh buffers, whose pages this run faulted in
        anyway: a later run takes them from the pool and faults them once more, then
        keeps them (no buffer an earlier run kept is dropped, so steady runs pay nothing).
        The bytes dropped; 0 where the system has no `madvise`."""
        dropped = 0
        for size in sorted(self.free, reverse=True):
            for raw in self.free[size]:
                if dropped >= nbytes:
                    return dropped
                if id(raw) in self.fresh and id(raw) not in self.notes and _drop_pages(raw):
                    self.fresh.discard(id(raw))  # its pages are gone: not dropped twice
                    self.writes[id(raw)] = self.writes.get(id(raw), 0) + 1  # its contents changed (now zero)
                    dropped += raw.nbytes
        return dropped

    def release(self) -> None:
        """Take back this run's buffers, at most `KEEP_BYTES` of them (the largest requests
        first go back to the allocator); those it did not ask for are let go."""
        # those handed out and given back in this run too, each once (one may be handed out again)
        held = list({id(raw): raw for raw in self.used + self.returned}.values())
        self.free = {}
        self.returned = []
        kept = 0
        for raw in sorted(held, key=lambda r: r.nbytes):
            _forget(raw)
            if kept + raw.nbytes <= KEEP_BYTES:
                kept += raw.nbytes
                self.free.setdefault(raw.nbytes, []).append(raw)
        self.used = []
        self.memo, self.writes, self.fresh = {}, {}, set()
        alive = {id(raw) for pool in self.free.values() for raw in pool}
        self.notes = {k: v for k, v in self.notes.items() if k in alive}


_MADV_DONTNEED = getattr(mmap, "MADV_DONTNEED", None)


def _madvise() -> Callable[[int, int, int], int] | None:
    """libc's `madvise`, or None where the system has none (then nothing is dropped)."""
    try:
        found = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):  # pragma: no cover - a system without madvise
        return None
    found.argtypes, found.restype = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int], ctypes.c_int
    return found


_MADVISE = _madvise()


def _drop_pages(raw: np.ndarray) -> bool:
    """`madvise(MADV_DONTNEED)` on the whole pages inside `raw`'s memory (private anonymous
    memory: the system frees them and maps zero pages on the next touch; the partial pages
    at either end, which may hold the allocator's own data, are kept). Whether it did."""
    if _MADVISE is None or _MADV_DONTNEED is None:
        return False
    page = mmap.PAGESIZE
    start = raw.__array_interface__["data"][0]
    lo, hi = -(-start // page) * page, (start + raw.nbytes) // page * page
    return hi > lo and _MADVISE(lo, hi - lo, _MADV_DONTNEED) == 0


def make_room(into: np.ndarray, nbytes: int) -> int:
    """`Arena.make_room(nbytes)` of the current arena before `nbytes` of `into` are written,
    when `into`'s memory is not one of the arena's buffers (those it reuses are resident
    already); 0 otherwise."""
    arena = getattr(_LOCAL, "arena", None)
    if arena is None:
        return 0
    owner = memory_owner(into)
    if any(owner is raw for raw in arena.used) or any(owner is raw for pool in arena.free.values() for raw in pool):
        return 0
    return arena.make_room(nbytes)


def _forget(raw: np.ndarray) -> None:
    ROW_CLASSES.drop(raw)


def forget_note(raw: np.ndarray) -> None:
    """Drop what `raw`'s maker promised it holds (`Arena.take`'s note): a handler is about to
    write it in place (the executor hands it over: backends/cpu/executor.py `_owned`)."""
    arena = getattr(_LOCAL, "arena", None)
    if arena is not None:
        arena.notes.pop(id(raw), None)


def current() -> Arena | None:
    """The calling thread's current arena (`scope`), or None."""
    return getattr(_LOCAL, "arena", None)


def memory_owner(buf: np.ndarray) -> np.ndarray:
    """The array owning `buf`'s memory (through views, and the holder `as_strided` puts between)."""
    while True:
        base = buf.base
        if base is not None and not isinstance(base, np.ndarray):
            base = getattr(base, "base", None)
        if not isinstance(base, np.ndarray):
            return buf
        buf = base


def written(buf: np.ndarray) -> None:
    """`buf`'s memory is about to be written in place (the executor hands a buffer over to a
    handler: backends/cpu/executor.py `_owned`): results the run kept from its contents are
    no longer valid (`Arena.writes`)."""
    arena = current()
    if arena is not None:
        key = id(memory_owner(buf))
        arena.writes[key] = arena.writes.get(key, 0) + 1


def owned_root(out: np.ndarray) -> np.ndarray | None:
    """The arena buffer `out` is the whole of (a buffer the current arena handed out in
    this run, viewed as `take` made it); None otherwise."""
    arena = getattr(_LOCAL, "arena", None)
    raw = out.base
    if arena is None or not isinstance(raw, np.ndarray) or raw.base is not None:
        return None
    if not out.flags.c_contiguous or out.nbytes != raw.nbytes or not any(raw is r for r in arena.used):
        return None
    return raw if out.__array_interface__["data"][0] == raw.__array_interface__["data"][0] else None


def give_back(value: np.ndarray) -> bool:
    """Return the current arena's buffer `value` is the whole of (or a view of all of) to
    its free pool; the caller guarantees nothing reads that memory again in this run."""
    arena = getattr(_LOCAL, "arena", None)
    raw = value.base if isinstance(value.base, np.ndarray) else None
    if arena is None or raw is None or raw.base is not None:
        return False
    return arena.give_back(raw)


def give_back_raw(raw: np.ndarray) -> bool:
    """`give_back` of the buffer `raw` as `Arena.take` allocated it."""
    arena = getattr(_LOCAL, "arena", None)
    return arena is not None and arena.give_back(raw)


@contextlib.contextmanager
def scope(arena: Arena) -> Iterator[Arena]:
    """`arena` is the current thread's arena inside the block; its buffers return to it
    at the end (the caller must have copied out whatever it keeps)."""
    outer = getattr(_LOCAL, "arena", None)
    _LOCAL.arena = arena
    try:
        yield arena
    finally:
        _LOCAL.arena = outer
        arena.release()


def _current(shape: tuple[int, ...], dtype: np.dtype) -> Arena | None:
    arena = getattr(_LOCAL, "arena", None)
    if arena is None or math.prod(shape) * np.dtype(dtype).itemsize < MIN_BYTES:
        return None
    return arena


def empty(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """`np.empty(shape, dtype)`, from the current arena when there is one and it is large."""
    arena = _current(shape, dtype)
    return np.empty(shape, dtype) if arena is None else arena.take(shape, dtype)[0]


def empty_noted(shape: tuple[int, ...], dtype: np.dtype, note: object) -> tuple[np.ndarray, bool]:
    """(`empty(shape, dtype)`, whether it still holds what `note` says, as an earlier run's
    maker left it): see `Arena.take`; False outside an arena."""
    arena = _current(shape, dtype)
    return (np.empty(shape, dtype), False) if arena is None else arena.take(shape, dtype, note)


def zeros(shape: tuple[int, ...], dtype: np.dtype, sparse: bool = False) -> np.ndarray:
    """`np.zeros(shape, dtype)`, from the current arena when there is one and it is large.
    `sparse`: few of its cells will be written (a buffer of mostly padding rows): fresh zero
    memory, whose untouched pages the system neither writes nor keeps resident (`sparse_zeros`)."""
    if sparse:
        return sparse_zeros(shape, dtype)
    arena = _current(shape, dtype)
    if arena is None:
        return np.zeros(shape, dtype)
    out = arena.take(shape, dtype)[0]
    out.fill(0)
    return out
