"""Small kernel files for the hardening tests, written into a temporary directory."""

from __future__ import annotations

from pathlib import Path

RNGD_TOML = (Path(__file__).parents[2] / "tu_ops" / "targets" / "rngd.toml").read_text()

COPY = '''from npu_opt import *

axes(A=4096, B=8)

Chip = m("1")
Cluster = m("1 # 2")

@device(chip=1)
def {name}(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i32, Chip, m("B, A")]:
    {body}
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("A / 16"), m("A / 8 % 2, A % 8, B")])
    y = (ctx.main.begin(x.view())
         .fetch(m("A / 8 % 2"), m("A % 8, B"))
         .fetch_cast(i32)
         .collect(m("A / 8 % 2, A % 8"), m("B"))
         .commit_trim(m("B"))
         .commit(m("A / 8 % 2, A % 8, B")))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("B, A")])
'''


def write(directory: Path, filename: str = "kern.py", *, name: str = "copy_kernel", body: str = "pass",
          head: str = "", replace: tuple[str, str] | None = None) -> Path:
    """A copy kernel file; `body` is put first in the kernel body, `head` before everything."""
    text = head + COPY.replace("{name}", name).replace("{body}", body)
    if replace is not None:
        assert replace[0] in text
        text = text.replace(*replace)
    path = directory / filename
    path.write_text(text)
    return path
