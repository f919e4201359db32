"""The `npu-opt` command line (docs/reference/cli.md): finding kernels in files, the
`check`, `compile`, `run`, `visa`, `schedule`, `targets` and `explain` commands, the
compile cache and its warm replay, and the text / JSON reports.

The kernel-writing DSL and its Python entry points (`npu_opt.check`, `npu_opt.compile`,
`npu_opt.run`) live in `npu_opt`; this package drives them and is imported by nothing in
`npu_opt` except the start-up shim `npu_opt/__main__.py` (`python -m npu_opt`). Importing
the package loads nothing; each command loads its own modules (a warm `compile` reads its
run record with `driver.cli` and `driver.replay`, docs/ci.md "The cache").
"""
