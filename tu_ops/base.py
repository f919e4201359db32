"""The common frame of every lowered tensor-unit op: value refs, the printer, the verifier driver.

Fields use the roles of `ir.op_frame` (shared with the traced ops): `result` (its `%n`),
`operand` (a `Ref` to another value), `attr` (a hardware field, printed in declaration
order), `type` (the IR input/output types, printed after `:`), `fact` (an allocation fact
for the [L] rules: not printed, not compared) and `loc`. `verify(target, ctx)` evaluates
the op's `RULES` (its `@rule(code)` methods, in order); the first failure raises
`OpVerifyError` with the rule ID as its code.
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar

import attrs

from ir.declare import Table
from ir.dtypes import DType
from ir.errors import InternalError, VerifyError
from ir.location import Location
from ir.mapping.ops import Entry
from ir.op_frame import OpFrame, attr, fact, loc_field, operand, result_field, rule
from tu_ops.engines import Engine, Rate
from tu_ops.enums import CollectFlits
from tu_ops.printing import type_text, value_text
from ir.words import a_an

__all__ = ["Ref", "Alloc", "OpVerifyError", "VerifyContext", "Derivation", "TuOp", "TU_OPS", "FEED_DESTS", "operand", "attr", "ir_type",
           "fact", "rule", "as_entries", "entries_ok", "Entry", "derived_of_types"]


@attrs.frozen(order=True)
class Ref:
    """A reference to an SSA value: a kernel parameter or an op's result, printed `%n`."""

    id: int

    def __str__(self) -> str:
        return f"%{self.id}"


@attrs.frozen
class Alloc:
    """An allocation fact: bytes `[base, base + size)` of a tensor (in every slice's DM for a
    DM tensor, from the tensor's start for an HBM tensor)."""

    base: int
    size: int

    @property
    def end(self) -> int:
        return self.base + self.size


class OpVerifyError(VerifyError):
    """A lowered op's verifier refused it: `code` is the rule ID, `op` the op, `loc` its
    source location, `notes` extra lines for the diagnostic."""

    def __init__(self, message: str, *, code: str, op: Any = None, loc: Location | None = None,
                 notes: tuple[str, ...] = ()) -> None:
        super().__init__(message, code=code)
        self.op = op
        self.loc = loc
        self.notes = tuple(notes)


@attrs.frozen
class VerifyContext:
    """What an op's verifier may learn about its neighbours: every op of the kernel by the id
    of its result, and the program holding each op (None for a DMA). Rules that need a
    neighbour (FEED-3, FEED-12, TRFLD-5, COP-2...5) check it only when a context is given."""

    ops: dict[int, Any] = attrs.field(factory=dict)
    programs: dict[int, Any] = attrs.field(factory=dict)

    def op(self, ref: Ref) -> Any | None:
        """The op whose result is `ref`, or None."""
        return self.ops.get(ref.id)

    def program_of(self, ref: Ref) -> Any | None:
        """The TU program holding the op whose result is `ref`, or None."""
        return self.programs.get(ref.id)


@attrs.frozen
class Derivation:
    """What a program record's derived fields are computed from besides the record itself:
    the records of its program (`ops`, the record at `index`), the program's context, the
    type of every value id and the target. The lowering fills a record from its types the
    same way (`TuOp.derived`), and the VISA verifier compares a parsed record with it."""

    ops: tuple[Any, ...]
    index: int
    types: dict[int, Any]
    context: Any
    target: Any

    def first(self, mnemonic: str) -> Any | None:
        """The first record of the program with `mnemonic`, or None."""
        return next((op for op in self.ops if op.MNEMONIC == mnemonic), None)


def derived_of_types(op: Any, at: Derivation) -> Any:
    """`TuOp.derived` of a record whose `of_types(result, input, input_type, output_type, loc)`
    fixes every field from its types."""
    return op.of_types(op.result, op.input, op.input_type, op.output_type, op.loc)


TU_OPS = Table("record class")
FEED_DESTS = Table("feed destination")  # the `FEED_DEST` name -> the record class declaring it
"""Every lowered op class by mnemonic, filled as the classes are declared."""


def _type_kind(inst: Any, attribute: Any, value: Any) -> None:
    """Structural check: the IR type has a kind this op class takes (`IN_KINDS` / `OUT_KINDS`)."""
    kinds = inst.IN_KINDS if attribute.name == "input_type" else inst.OUT_KINDS
    if kinds and getattr(value, "kind", None) not in kinds:
        raise TypeError(f"{inst.MNEMONIC}: {attribute.name} must be {a_an(' or '.join(kinds))} type, "
                        f"not {type(value).__name__}")


def ir_type() -> Any:
    """The IR type of the op's input or output (docs/reference/diagnostics.md), checked against the class's kinds."""
    return attrs.field(validator=_type_kind, metadata={"role": "type"})


def as_entries(items: Any) -> tuple[Entry, ...]:
    """A tuple of loop entries from entries or `(size, stride)` pairs."""
    return tuple(e if isinstance(e, Entry) else Entry(*e) for e in items)


def entries_ok(entries: tuple[Entry, ...], max_entries: int, max_iter: int) -> str | None:
    """The sequencer limits shared by FEED-5, COP-6, CMT-3: a problem text, or None."""
    if len(entries) > max_entries:
        return f"{len(entries)} loop entries, at most {max_entries}"
    for e in entries:
        if not 1 <= e.size <= max_iter:
            return f"entry {e} has size {e.size}, not in [1, {max_iter}]"
    return None


@attrs.frozen(kw_only=True)
class TuOp(OpFrame):
    """Base of every lowered op: `%n = <mnemonic> <field>=<value> ... : <in> -> <out>`."""

    NAME: ClassVar[str] = "tu.op"                # a class declaring MNEMONIC gets `tu.<MNEMONIC>`
    MNEMONIC: ClassVar[str] = "op"
    IN_PROGRAM: ClassVar[bool] = True
    IN_KINDS: ClassVar[tuple[str, ...]] = ("stream",)   # the kinds its input / output type may have (`ir_type`)
    OUT_KINDS: ClassVar[tuple[str, ...]] = ("stream",)  # () takes any; most program stages take streams
    PIPELINE_RANK: ClassVar[int] = 0             # its place in pipeline order (`tu_ops.OP_CLASSES`)
    TRACED_STAGE: ClassVar[str | None] = None    # the traced call its records stand for
    FEED_DEST: ClassVar[str | None] = None       # its name as a feed's destination (`DestKind`), if a feed may deliver to it
    FEED_ELEMENTS: ClassVar[frozenset[Any]] = frozenset()  # FEED-2: element types a feed may bring it
    FEED_PACKING: ClassVar[str | None] = None    # the field saying how many flits a feed to it packs (else one)
    ENGINE: ClassVar[Engine | None] = None        # the engine it runs on in the schedule (`tu_ops.engines`)
    SLICE_AFTER: ClassVar[str | None] = None      # the field (dotted path) naming the Slice its program's
                                                  # streams live on after it, when it moves them
    NEW_DM_TENSOR: ClassVar[bool] = False         # a DMA whose DM result is a new tensor at the addresses its
                                                  # commands write (the allocation facts read it there)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "MNEMONIC" in vars(cls):
            cls.NAME = f"tu.{cls.MNEMONIC}"
            TU_OPS[cls.MNEMONIC] = cls  # attrs remakes the class; the final one stays
        if "FEED_DEST" in vars(cls) and cls.FEED_DEST is not None:
            FEED_DESTS[cls.FEED_DEST] = cls

    def traced_stage(self) -> str | None:
        """The traced call this record stands for (the `stage` of its diagnostics)."""
        return self.TRACED_STAGE

    result: Ref = result_field(validator=attrs.validators.instance_of(Ref))
    input_type: Any = ir_type()
    output_type: Any = ir_type()
    loc: Location | None = loc_field()

    # --- declarations read by the schedule and the cost counters (tu_ops.engines) -------

    def busy_cycles(self, rate: Rate, target: Any) -> int:
        """Its busy cycles on `ENGINE`; every record class declares its own."""
        raise InternalError(f"record class {type(self).__name__} declares no busy cycles")

    def cost_counters(self, target: Any) -> dict[str, int]:
        """What it adds to the artifact's cost counters; every record class declares its own."""
        raise InternalError(f"record class {type(self).__name__} declares no cost counters")

    @classmethod
    def slice_after(cls, field: Callable[[str], Any]) -> Any | None:
        """The Slice its program's streams live on after a record of this class whose field
        `name` is `field(name)` (its `SLICE_AFTER`), or None when it leaves them in place."""
        if cls.SLICE_AFTER is None:
            return None
        first, *rest = cls.SLICE_AFTER.split(".")
        value = field(first)
        for name in rest:
            value = None if value is None else getattr(value, name)
        return value

    def derived(self, at: Derivation) -> TuOp | None:
        """This record as its types and its own choices fix it (every derived field
        recomputed from the rules, `ir.rules`); raises when its types have no such record.
        None: the record kind declares no derivation (its fields are all choices)."""
        return None

    def feed_packing(self) -> CollectFlits:
        """How many flits a feed delivering to it packs per time step (its `FEED_PACKING` field's)."""
        return CollectFlits.Flit1 if self.FEED_PACKING is None else CollectFlits(getattr(self, self.FEED_PACKING))

    # --- fields --------------------------------------------------------------------------

    def stream_input(self) -> Ref | None:
        """The value this op streams from: its first operand (None for a FeedBuffer)."""
        ops = self.operands()
        return ops[0] if ops else None

    def fields(self) -> list[tuple[str, Any]]:
        """(printed name, value) of every printed field, operands included, in record order."""
        out = []
        for f in attrs.fields(type(self)):
            if f.metadata.get("role") in ("operand", "attr"):
                value = getattr(self, f.name)
                if value is None and f.metadata.get("optional"):
                    continue
                out.append((f.metadata.get("name") or f.name, value))
        return out

    # --- text ----------------------------------------------------------------------------

    def text(self, *, locs: bool = False) -> str:
        """The one-line record of visa/visa.lark (without the location unless `locs`)."""
        body = " ".join(f"{n}={value_text(v)}" for n, v in self.fields())
        spatial = not self.IN_PROGRAM
        line = (f"{self.result} = {self.MNEMONIC} {body} : "
                f"{type_text(self.input_type, spatial=spatial)} -> {type_text(self.output_type, spatial=spatial)}")
        if locs and self.loc is not None:
            line += f" ; loc {self.loc.file}:{self.loc.line}:{self.loc.col or 1}"
        return line

    def __str__(self) -> str:
        return self.text()

    # --- verification --------------------------------------------------------------------

    def verify(self, target: Any, ctx: VerifyContext | None = None) -> None:
        """Run this op's rules in order; raise OpVerifyError for the first that fails."""
        error = self.first_failure(target, ctx)
        if error is not None:
            raise error

    def first_failure(self, target: Any, ctx: VerifyContext | None = None) -> OpVerifyError | None:
        """The OpVerifyError of the first failing rule, or None when the op verifies."""
        for check in self.RULES:
            problem = check(self, target, ctx)
            if problem:
                return OpVerifyError(f"{self.MNEMONIC}: {problem}", code=check.rule_code, op=self, loc=self.loc,
                                     notes=(f"in op `{self.text()}`",))
        return None

    # --- helpers for rules ---------------------------------------------------------------

    @staticmethod
    def bits(target: Any, dtype: DType) -> int:
        """bits(D) on `target`; an unknown dtype counts as 0 bits, which every size rule refuses."""
        return target.bits_of(dtype) or 0

    @staticmethod
    def neighbour(ctx: VerifyContext | None, ref: Ref, mnemonic: str) -> Any | None:
        """The op `ref` names when the context knows it and its mnemonic is `mnemonic`
        (compared by mnemonic so op modules need not import each other)."""
        if ctx is None:
            return None
        op = ctx.op(ref)
        return op if getattr(op, "MNEMONIC", None) == mnemonic else None
