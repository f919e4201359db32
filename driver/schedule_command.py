"""`npu-opt schedule FILE.visa [B.visa] [--format json] [--trace OUT.json] [--html OUT.html]`.

Prints the makespan model of an artifact (`visa.schedule`): makespan, lower bounds, the
critical path with why each step waited, per-context utilisation. With two files it
compares the candidates (makespan ratio, changed intervals). `--trace` writes the Chrome
trace-event JSON of the (first) schedule, `--html` a self-contained page of its operators
and tensors (docs/tuning.md, "The timeline").
`schedule_manifest_fields` is what `npu-opt compile` records per kernel (makespan) and
dumps with `--dump-schedule DIR`.

Exit status: 0 ok; 2 a bad invocation, an unreadable input or a corrupt artifact; 3 an internal
error of the schedule model.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, TextIO

from ir.errors import NpuOptError, VisaFormatError
from driver.run_command import EXIT_ICE, EXIT_OK, EXIT_USAGE, _Usage
from driver.visa_command import _format_error, _read, _target, user_target
from visa.schedule import builtin_rates, load_rates, schedule_artifact

__all__ = ["schedule_command", "schedule_of_text", "schedule_manifest_fields"]


def _rates(target_name: str) -> Any:
    return builtin_rates(target_name) or builtin_rates("rngd")


def schedule_of_text(text: str, target: Any = None, rates: Any = None, artifact: Any = None) -> Any:
    """The Schedule of a VISA text (raises VisaFormatError for a corrupt one); `artifact`,
    when given, is that text already parsed (the compile's own, then it is not read again)."""
    if artifact is None:
        from visa import parse_visa  # only then: a compile's schedule loads no parser

        artifact = parse_visa(text, target=target)
    if target is None:
        target = _target(artifact)
    return schedule_artifact(artifact, target=target, rates=rates or _rates(artifact.target))


def schedule_command(files: list[str], fmt: str = "human", trace: str | None = None, html: str | None = None,
                     rates: str | None = None, *, out: TextIO | None = None, err: TextIO | None = None,
                     target_spec: str | None = None, verify: bool = True) -> int:
    """Schedule one artifact (or compare two) on its built-in target or `target_spec`, each
    verified first (a schedule of an artifact the verifier refuses means nothing; `verify`
    False, `--no-verify`: a hand-written one is modelled as it is); return the exit status."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    schedules, kernels = [], []
    try:
        if not 1 <= len(files) <= 2:
            raise _Usage("`npu-opt schedule` takes one .visa file, or two to compare")
        given = user_target(target_spec)
        for path in files:
            text = _read(path)
            try:
                schedule, kernel = _verified_schedule(text, given, load_rates(rates) if rates else None, verify)
                schedules.append(schedule)
                kernels.append(kernel)
            except VisaFormatError as e:
                _format_error(e, path, err)
                return EXIT_USAGE
        _write_views(schedules[0], kernels[0], files[0], trace, html)
    except (_Usage, NpuOptError, OSError) as e:
        print(f"error[USAGE]: {e}", file=err)
        return EXIT_USAGE
    except Exception as e:  # noqa: BLE001 - a bug of the schedule model is ours, not the input's
        print(f"error[ICE]: internal error in the schedule model: {type(e).__name__}: {e}\n"
              f"  = help: this is a bug in npu-opt, not in your artifact; please report it", file=err)
        return EXIT_ICE
    print(_render(schedules, files, fmt), file=out)
    return EXIT_OK


def _verified_schedule(text: str, given: Any, rates: Any, verify: bool) -> tuple[Any, Any]:
    """The schedule of `text` and the kernel it scheduled (the page shows its tensors)."""
    from visa import parse_visa
    from visa.verify import verify_artifact

    artifact = parse_visa(text, target=given)
    target = _target(artifact, given)
    if verify:
        verify_artifact(artifact, target, source=text)
    return schedule_of_text(text, target=target, rates=rates, artifact=artifact), artifact.kernel


def _render(schedules: list[Any], files: list[str], fmt: str) -> str:
    from visa.schedule.compare import compare_json, compare_text
    from visa.schedule.report import schedule_json, schedule_text

    if len(schedules) == 2:
        a, b = schedules
        return json.dumps(compare_json(a, b), indent=2) if fmt == "json" else compare_text(a, b, *files)
    if fmt == "json":
        return json.dumps(schedule_json(schedules[0]), indent=2)
    return schedule_text(schedules[0], files[0])


def _write_views(schedule: Any, kernel: Any, source: str, trace: str | None, html: str | None) -> None:
    if trace is not None:
        from visa.schedule.trace import trace_json

        Path(trace).write_text(json.dumps(trace_json(schedule)) + "\n", encoding="utf-8")
    if html is not None:
        from visa.schedule.page import schedule_page

        Path(html).write_text(schedule_page(schedule, title=Path(source).name, kernel=kernel), encoding="utf-8")


def schedule_manifest_fields(text: str, kernel: str, target: Any, dump_dir: str | None,
                             artifact: Any = None) -> dict[str, Any]:
    """`{"makespan": N}` for a compiled artifact's text (and `schedule`: the file name of its
    dumped schedule when `dump_dir` is given); `artifact`: the text parsed, if at hand."""
    from visa.schedule.report import schedule_json

    try:
        schedule = schedule_of_text(text, target=target, rates=_rates(target.name), artifact=artifact)
    except Exception as e:  # noqa: BLE001 - the artifact is written; only its schedule is missing
        print(f"warning[ICE]: {kernel}: internal error in the schedule model ({type(e).__name__}: {e}); "
              f"its makespan is not recorded", file=sys.stderr)
        return {"makespan": None}
    fields: dict[str, Any] = {"makespan": schedule.makespan}
    if dump_dir is not None:
        directory = Path(dump_dir)
        directory.mkdir(parents=True, exist_ok=True)
        name = f"{kernel}.schedule.json"
        (directory / name).write_text(json.dumps(schedule_json(schedule), indent=2) + "\n", encoding="utf-8")
        fields["schedule"] = str(directory / name)
    return fields
