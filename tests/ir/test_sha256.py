"""`ir.sha256.sha256` (CPython's own SHA-256, no OpenSSL) gives hashlib's digests."""

from __future__ import annotations

import hashlib

from ir.sha256 import sha256


def test_digests_are_hashlibs() -> None:
    for data in (b"", b"abc", bytes(range(256)) * 300, "gemm_kernel\0visa".encode()):
        assert sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    grown = sha256()
    grown.update(b"ab")
    grown.update(b"c")
    assert grown.digest() == hashlib.sha256(b"abc").digest()
