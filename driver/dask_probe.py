"""`python -m driver.dask_probe ADDRESS SECONDS`: does a dask scheduler answer at ADDRESS?

`tune --scheduler` asks this in a child process before it connects (driver/tune_exec.py),
when it cannot fork itself for the question (it runs other threads):
dask's own timeout covers the connection only, and a port that accepts it and never answers
holds a `Client` for good. A child can be killed at a deadline; a thread could not, and a
`Client` left connecting in an abandoned thread shares dask's event-loop runner with every
later client of the process (seen: the next `Client` waited on it for ever). Exits 0 once
the scheduler has answered (its count of worker threads), or prints why not on stderr and exits 1.
"""

from __future__ import annotations

import sys

from typing import Any

from ir.errors import exception_text


def ask_scheduler(client_class: Any, address: str, seconds: float) -> str | None:
    """Ask the dask scheduler at `address` for its workers' threads with `client_class`
    (dask.distributed.Client): None once it answered (an answer, not only an accepted
    connection), else why not, in one line."""
    try:
        client = client_class(address, timeout=seconds, set_as_default=False)
        client.nthreads()
        client.close()
    except Exception as e:  # noqa: BLE001 - a malformed address, an unknown scheme, no scheduler there
        return exception_text(e)
    return None


def main(argv: list[str]) -> int:
    from dask.distributed import Client  # optional; this child runs only after tune imported dask itself

    why = ask_scheduler(Client, argv[0], float(argv[1]))
    if why is not None:
        print(why, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
