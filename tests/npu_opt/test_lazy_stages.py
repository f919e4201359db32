"""Stage methods whose module loads on first use (npu_opt.stagebase.LazyStageMethod): the
table (each placeholder's name and the function importing its module) is held to the modules, and a fresh process
behaves as if the module had been imported eagerly."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from npu_opt import stages
from npu_opt.stagebase import LAZY_STAGE_LOADERS, LazyStageMethod, StreamStage

ROOT = Path(__file__).resolve().parents[2]


def _placeholders() -> list[LazyStageMethod]:
    found = {id(v): v for cls in vars(stages).values() if isinstance(cls, type) and issubclass(cls, StreamStage)
             for v in vars(cls).values() if isinstance(v, LazyStageMethod)}
    found.update({id(v): v for v in vars(stages).values() if isinstance(v, LazyStageMethod)})
    return list(found.values())


def test_every_placeholder_names_a_stage_method_of_its_module() -> None:
    placeholders = _placeholders()
    assert placeholders, "npu_opt.stages declares no lazy stage method: delete this test and the mechanism"
    for lazy in placeholders:
        assert lazy.load in LAZY_STAGE_LOADERS
        real = lazy.resolve()
        assert getattr(real, "stage_name", None) == lazy.stage_name, (lazy.load.__name__, lazy.stage_name)
        assert real.__module__ == lazy.load().__name__  # the family's own module defines it
        for owner, attr in lazy.owners:
            assert vars(owner)[attr] is real  # the placeholder is gone: the class holds the method itself
            assert lazy.stage_name in owner.OFFERS


def _fresh(code: str) -> str:
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    return run.stdout.strip()


def test_a_fresh_process_loads_the_vector_stages_on_first_read_only() -> None:
    out = _fresh("""
        import sys
        from npu_opt.stages import CollectStream, ContractStream
        print("npu_opt.vector_stages" in sys.modules, "vector_init" in ContractStream.OFFERS)
        method = CollectStream.vector_init
        from npu_opt.vector_engine import vector_init
        print(method is vector_init, vars(ContractStream)["vector_init"] is vector_init)
    """)
    assert out.split() == ["False", "True", "True", "True"]


def test_a_vector_method_a_stage_does_not_offer_is_type_1_before_the_family_loads() -> None:
    """Without `load_lazy_stages` the name would be judged no stage method's: a misspelling."""
    out = _fresh("""
        import sys
        import npu_opt
        from npu_opt import *

        axes(I=512, J=512, K=64)

        @device(chip=1)
        def k(ctx: Context, a: HbmTensor[bf16, m("1"), m("I, K")]) -> HbmTensor[bf16, m("1"), m("I, K")]:
            a = a.to_dm(ctx.tdma, DmTensor[bf16, m("1"), m("1 # 2"), m("I / 32, J / 32"),
                                                  m("I % 32, K")])
            s = ctx.main.begin(a.view()).fetch(m("I % 32"), m("K")).collect(m("I % 32, K / 16"), m("K % 16"))
            print("npu_opt.vector_stages" in sys.modules)
            s.vector_intra_slice_tag()
            return a.to_hbm(ctx.tdma)

        print(next(d.message for d in npu_opt.check(k).diagnostics if d.code == "TYPE-1"))
    """)
    assert out.splitlines() == ["False", "`vector_intra_slice_tag` cannot be called on a CollectStream"]


def test_the_fetch_adapter_modules_import_on_their_own_and_load_on_first_read() -> None:
    """`npu_opt.fetch_lift` (fetch_mask and the lifts) imports `npu_opt.stages`; importing it
    first used to fail on the cycle. A fresh process that reads the stage method gets the
    module's own function on the class."""
    out = _fresh("""
        import npu_opt.fetch_lift
        from npu_opt.stages import FetchStream
        from npu_opt.fetch_lift import fetch_chip_lift, fetch_mask
        print(vars(FetchStream)["fetch_chip_lift"] is fetch_chip_lift, FetchStream.fetch_mask is fetch_mask)
    """)
    assert out.split() == ["False", "True"]   # the lift placeholder resolves on its first read
    out = _fresh("""
        import sys
        from npu_opt.stages import FetchStream
        print("npu_opt.fetch_lift" in sys.modules, "fetch_slice_lift" in FetchStream.OFFERS)
    """)
    assert out.split() == ["False", "True"]
