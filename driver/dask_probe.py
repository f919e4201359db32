"""`python -m driver.dask_probe ADDRESS SECONDS`: does a dask scheduler answer at ADDRESS?

`tune --scheduler` asks this in a child process before it connects (driver/tune_exec.py):
dask's own timeout covers the connection only, and a port that accepts it and never answers
holds a `Client` for good. A child can be killed at a deadline; a thread could not, and a
`Client` left connecting in an abandoned thread shares dask's event-loop runner with every
later client of the process (seen: the next `Client` waited on it for ever). Exits 0 once
the scheduler has answered (its count of worker threads), or prints why not on stderr and exits 1.
"""

from __future__ import annotations

import sys

from dask.distributed import Client  # run by tune only after it imported dask itself (driver/tune_exec.py)

from ir.errors import exception_text


def main(argv: list[str]) -> int:
    address, seconds = argv[0], float(argv[1])
    try:
        client = Client(address, timeout=seconds, set_as_default=False)
        client.nthreads()  # an answer, not only an accepted connection
        client.close()
    except Exception as e:  # noqa: BLE001 - a malformed address, an unknown scheme, no scheduler there
        print(exception_text(e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
