"""SHA-256 from CPython's own implementation, without loading OpenSSL.

`import hashlib` loads OpenSSL's library, about 3 ms of CPU, paid by every command that
hashes anything (a compile hashes its artifact, its target and its cache key). CPython
ships its own SHA-256 module (`_sha256`, named `_sha2` from 3.12), which gives the same
digests; hashlib's is the fallback on a Python without it.
"""

from __future__ import annotations

import sys

__all__ = ["sha256"]

try:
    if sys.version_info >= (3, 12):  # (no failed search of sys.path for the other name)
        from _sha2 import sha256  # type: ignore[import-not-found]
    else:
        from _sha256 import sha256  # type: ignore[import-not-found,no-redef]
except ImportError:
    from hashlib import sha256  # type: ignore[assignment]
