"""The argument parsers of the two search commands, `npu-opt tune` (a kernel factory's
candidates) and `npu-opt synth` (a contraction's generated candidates); driver.cli_parser
adds them beside the other commands, whose parsers it makes with `command_parser` too."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from driver.exit_codes import exit_sentence

__all__ = ["add_tune", "add_synth", "command_parser"]


def command_parser(sub: Any, name: str, run: Callable[[Any], int], help: str, description: str) -> Any:
    """The parser of command `name` (every command's, those of driver.cli_parser too): its
    description closes with the command's exit statuses, and parsing it sets `run`."""
    parser = sub.add_parser(name, help=help, description=f"{description} {exit_sentence(name)}")
    parser.set_defaults(run=run)
    return parser


def _search_options(parser: argparse.ArgumentParser) -> None:
    """The options tune and synth share, in the order both print them: where the results go,
    the target, and how the search runs (processes, a dask cluster, how many reach the oracle)."""
    parser.add_argument("-o", dest="out_dir", default=".", metavar="DIR", help="output directory (default .)")
    parser.add_argument("--target", default="rngd", metavar="NAME", help="built-in target name (default rngd)")
    parser.add_argument("--jobs", type=int, default=1, metavar="N", help="processes, this one included (default 1)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="a dask.distributed scheduler (tcp://host:8786) to spread the candidates over")
    parser.add_argument("--top", type=int, default=3, metavar="K", help="candidates checked against the oracle")


def add_tune(sub) -> None:
    tu = command_parser(sub, "tune", _tune, help="compile every candidate of a kernel factory and keep the fastest",
                        description="Compile every point of the npu_opt.tune.Space declared in FILE, rank the "
                                    "candidates by the schedule model's makespan (pruning those whose lower bound "
                                    "exceeds the best so far), check the best against the cpu backend, the VISA "
                                    "interpreter and the space's oracle, and write the winner's artifact and "
                                    "tune.txt / tune.json / tune.svg into DIR.")
    tu.add_argument("file", metavar="FILE")
    tu.add_argument("--space", default=None, metavar="NAME",
                    help="the Space to tune (default: the only one the file declares)")
    _search_options(tu)
    tu.add_argument("--no-prune", action="store_true", help="compile and schedule every candidate")
    tu.add_argument("--seed", type=int, default=0, help="seed of the check's inputs")
    tu.add_argument("--max-candidates", type=int, default=10_000, metavar="N",
                    help="refuse a space of more candidates than N before compiling any (default 10000)")
    tu.add_argument("--format", choices=["human", "json"], default="human")


def add_synth(sub) -> None:
    sy = command_parser(sub, "synth", _synth, help="write the fastest verified kernel of a contraction in einsum form",
                        description="Generate every candidate kernel of a contraction (GEMM `out[m,n] = a[m,k] * "
                                    "w[n,k]`, batched `out[b,m,n] = a[b,m,k] * w[b,n,k]` or GEMV `out[m] = "
                                    "a[m,k] * x[k]`), with an optional epilogue (`relu(a[m,k] * w[n,k] + b[n])`, "
                                    "`requant(..., 0.01)` to i8) from the machine's rules, rank "
                                    "them as `tune` does, check the best against the cpu backend, the VISA "
                                    "interpreter and a numpy oracle, and write the winner as Python source "
                                    "(NAME.py), its artifact and synth.txt / synth.json / synth.svg into DIR.")
    sy.add_argument("einsum", metavar="EINSUM", help='the contraction, e.g. "out[m,n] = a[m,k] * w[n,k]"')
    sy.add_argument("--dtype", default="i8:i32", metavar="IN:OUT",
                    help="operand and result dtypes: i8:i32, bf16:f32 or bf16:bf16 (default i8:i32)")
    sy.add_argument("--sizes", required=True, metavar="I=N,...", help="every index's size, e.g. m=512,n=512,k=64")
    sy.add_argument("--name", default="synth_kernel", help="the kernel's name (default synth_kernel)")
    _search_options(sy)
    sy.add_argument("--pe", type=int, default=8, metavar="P",
                    help="processing elements of each chip the kernel runs on: 1, 2, 4 or 8 (default 8)")
    sy.add_argument("--split", default=None, metavar="INDEX",
                    help="on a target of several chips (--target rngd-2chip), the result index split over "
                         "them (default: the batch index, else the result's first)")
    sy.add_argument("--transpose", default="host", metavar="WHERE",
                    help="an operand stored with the contracted index first (b[k,n]): transposed on the host by "
                         "Contraction.pad (default) or read as stored and transposed on the device by the "
                         "Transpose Engine")
    sy.add_argument("--seed", type=int, default=0, help="seed of the check's inputs")


def _synth(args: argparse.Namespace) -> int:
    from driver.synth_command import synth_command

    return synth_command(args)


def _tune(args: argparse.Namespace) -> int:
    from driver.tune_command import tune_command

    return tune_command(args)
