"""`npu-opt synth` refuses malformed values with a USAGE error before searching (issue 55,
item 6): a negative `--seed` (numpy's traceback before), `--sizes` naming an index twice
or with a size that is not plain decimal digits (`1_0`, `+64`, full-width digits: Python's
`int` took them), and a `--name` the generated file cannot bind its kernel to (a Python
keyword, or a name the file imports from npu-opt or binds itself: `m`, `Chip`), each of
which was accepted and then refused every candidate or wrote a kernel nobody asked for."""

from __future__ import annotations

import pytest

from driver.cli import main

EINSUM = "out[m,n] = a[m,k] * w[n,k]"
SIZES = "m=64,n=64,k=64"


@pytest.mark.parametrize("extra, said", [
    (["--seed", "-1"], "--seed takes a non-negative integer"),
    (["--sizes", "m=64,n=64,k=64,m=32"], "names index 'm' twice"),
    (["--sizes", "m=1_0,n=64,k=64"], "not 'm=1_0'"),
    (["--sizes", "m=+64,n=64,k=64"], "not 'm=+64'"),
    (["--sizes", "m=\uff16\uff14,n=64,k=64"], "name=integer pairs"),
    (["--name", "class"], "is a Python keyword"),
    (["--name", "m"], "the generated file"),
    (["--name", "Chip"], "the generated file"),
])
def test_a_malformed_value_is_a_usage_error(tmp_path, capsys, extra, said):
    argv = ["synth", EINSUM, "--sizes", SIZES, "-o", str(tmp_path / "out"), *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "error[USAGE]" in err and said in err, err
    assert "ICE" not in err and "Traceback" not in err
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())
