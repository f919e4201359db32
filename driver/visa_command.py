"""`npu-opt visa FILE [--verify] [--exec --input NAME=FILE.npy ... -o DIR]` (docs/reference/cli.md, visa/visa.lark).

Parses a `.visa` file and prints a summary (kernel, target, signature, programs, ops per
kind, cost). `--verify` also runs every op verifier and re-derives every derived field
(`visa.verify_artifact`). `--exec` runs the artifact in the VISA interpreter on `.npy`
inputs bound by parameter name and writes `out.npy` (or `out0.npy`, `out1.npy`, ... for
several results) into DIR, exactly like `npu-opt run` (bf16/f8/f4 as bit patterns).

Exit status: 0 ok; 2 a bad invocation, an unreadable input, or a corrupt artifact (a
`VisaFormatError`, printed with its line and column); 3 an internal error.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any, TextIO

from ir.errors import NpuOptError, VisaFormatError
from tu_ops.printing import type_text
from visa import VisaTextError
from driver.run_command import EXIT_ICE, EXIT_OK, EXIT_USAGE, _out_dir, _Usage, bind_inputs, \
    _write_results, print_written
import stat
from driver.check_command import load_target_spec
from tu_ops.target import BUILTIN_TARGETS

__all__ = ["visa_command", "summary"]


def visa_command(path: str, verify: bool = False, exec_: bool = False, inputs: list[str] | None = None,
                 out_dir: str = ".", *, out: TextIO | None = None, err: TextIO | None = None,
                 target_spec: str | None = None) -> int:
    """Parse (and verify, and execute) the artifact at `path` on its built-in target or
    `target_spec` (`--target NAME|FILE`); return the exit status. `--exec` always verifies
    first: the interpreter allocates what the artifact declares, which only the verifier
    checks against what its records back."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    inputs = list(inputs or [])
    try:
        if inputs and not exec_:
            raise _Usage("--input needs --exec")
        text = _read(path)
        given = user_target(target_spec)
        from visa import parse_visa
        from visa.verify import verify_artifact

        artifact = parse_visa(text)
        target = _target(artifact, given)
        if verify or exec_:
            verify_artifact(artifact, target, source=text)
        print(summary(artifact, verified=verify), file=out)
        return _execute(artifact, target, inputs, out_dir, out, err) if exec_ else EXIT_OK
    except _Usage as e:  # a bad invocation or input, before or after the summary
        print(f"error[USAGE]: {e}", file=err)
        return EXIT_USAGE
    except VisaFormatError as e:
        _format_error(e, path, err)
        return EXIT_USAGE


_MAX_TEXT = 1 << 30  # a VISA artifact or a target description larger than this is not one


def _read(path: str) -> str:

    p = Path(path)
    if p.is_dir():
        raise _Usage(f"{path} is a directory; `npu-opt visa` takes one .visa file")
    try:
        info = p.stat()
        if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_TEXT:
            raise _Usage(f"{path} is not a regular file of at most 1 GiB; `npu-opt visa` reads .visa files")
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _Usage(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise _Usage(f"cannot read {path}: {e}") from None


def user_target(spec: str | None) -> Any:
    """The target of `--target NAME|FILE` (None when not given); _Usage when it cannot be loaded."""
    if spec is None:
        return None

    try:
        return load_target_spec(spec)
    except Exception as e:  # noqa: BLE001 - a bad target name or file is a usage error
        raise _Usage(f"cannot load target {spec!r}: {e}") from None


def _target(artifact: Any, given: Any = None) -> Any:
    """The target to read `artifact` on: `given` (`--target`), else the built-in target its
    `target` line names. That line is data: it is never opened as a path (it could name
    /dev/zero or a FIFO)."""
    if given is not None:
        return given
    builtin = BUILTIN_TARGETS.get(artifact.target)
    if builtin is None:
        raise VisaTextError(f"unknown target `{artifact.target}`: not a built-in target (`npu-opt targets`); "
                            f"pass its description with --target FILE", line=artifact.lines.get("target", 3),
                            column=8)
    return builtin()


def _format_error(e: VisaFormatError, path: str, err: TextIO) -> None:
    """`error[CODE]: PATH:LINE:COL: detail`, then the quoted line and caret when known."""
    line, col = getattr(e, "line", None), getattr(e, "column", None)
    detail = getattr(e, "detail", None) or str(e).splitlines()[0]
    where = f"{path}:{line}:{col}" if line is not None else path
    print(f"error[{e.code}]: {where}: {detail}", file=err)
    for extra in str(e).splitlines()[1:]:
        print(extra, file=err)


def summary(artifact: Any, verified: bool = False) -> str:
    """The human summary of an artifact: kernel, target, signature, programs, ops, cost."""
    k = artifact.kernel
    lines = [f"kernel {k.name}: target {artifact.target} (sha256 {artifact.target_sha256[:12]}...), chip {k.chip}"]
    for p in k.params:
        lines.append(f"  param {p.name}{' (inout)' if p.inout else ''}: {type_text(p.type)}")
    types = {op.result.id: op.output_type for op in k.ops()}
    for r in k.results:
        lines.append(f"  result {r}: {type_text(types[r.id]) if r.id in types else '?'}")
    programs = k.programs()
    listed = ", ".join(f"{p.index} {p.context.name} ({len(p.ops)} ops)" for p in programs)
    lines.append(f"  programs: {len(programs)}" + (f" [{listed}]" if programs else ""))
    counts = Counter(op.MNEMONIC for op in k.ops())
    lines.append("  ops: " + (" ".join(f"{name}={n}" for name, n in counts.items()) or "none"))
    lines.append("  cost: " + " ".join(f"{key}={value}" for key, value in artifact.cost.items()))
    if verified:
        lines.append("  verified: every record passes its verifier and matches its types")
    return "\n".join(lines)


def _execute(artifact: Any, target: Any, inputs: list[str], out_dir: str, out: TextIO, err: TextIO) -> int:
    from visa.interp import execute_inout

    arrays = bind_inputs(artifact.kernel.name, [(p.name, p.type.dtype) for p in artifact.kernel.params], inputs)
    dest = _out_dir(out_dir)
    try:
        results, finals = execute_inout(artifact, arrays, target)
    except NpuOptError as e:
        first = e.message.splitlines()[0] if e.message else type(e).__name__
        print(f"error[{e.code}]: {first}", file=err)
        return EXIT_ICE if e.code == "ICE" else EXIT_USAGE
    except Exception as e:  # noqa: BLE001 - a crash of the interpreter is an internal error
        print(f"error[ICE]: the VISA interpreter raised {type(e).__name__}: {e}; please report this npu-opt bug",
              file=err)
        return EXIT_ICE
    written = _write_results(tuple(results) + tuple(finals), dest, artifact.kernel.name,  # in-out finals: NAME.npy
                             [p.name for p in artifact.kernel.params if p.inout], len(results) > 1)
    print_written(artifact.kernel.name, written, out)
    return EXIT_OK
