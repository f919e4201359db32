"""Two threads tracing kernels of files loaded in their own import scope take turns
(npu_opt/per_file_imports.py): a scope swaps the process's `sys.modules`, `sys.path` and
`os._exit`, and interleaved swaps lost modules (`npu-opt tune` on a dask worker with two
threads reported `KeyError: '__main__'` as an internal compiler error)."""

from __future__ import annotations

import sys
import threading

from npu_opt import per_file_imports


def test_a_second_thread_waits_for_the_first_scope_to_close(tmp_path):
    (tmp_path / "scoped_kernels.py").write_text("VALUE = 1\n")
    with per_file_imports.loading("scoped_kernels", str(tmp_path)):
        __import__("scoped_kernels")
    entered, release, order = threading.Event(), threading.Event(), []

    def first():
        with per_file_imports.in_scope("scoped_kernels"):
            order.append("first in")
            entered.set()
            release.wait(10)
            order.append("first out")

    def second():
        entered.wait(10)
        with per_file_imports.in_scope("scoped_kernels"):
            order.append("second in")
            assert sys.modules["scoped_kernels"].VALUE == 1

    a, b = threading.Thread(target=first), threading.Thread(target=second)
    a.start(), b.start()
    entered.wait(10)
    b.join(0.3)  # the second thread is blocked while the first holds the scope
    assert order == ["first in"]
    release.set()
    a.join(10), b.join(10)
    assert order == ["first in", "first out", "second in"]
    assert "scoped_kernels" not in sys.modules  # taken out again after each scope


def test_one_thread_may_nest_scopes(tmp_path):
    (tmp_path / "nested_kernels.py").write_text("VALUE = 2\n")
    with per_file_imports.loading("nested_kernels", str(tmp_path)):
        __import__("nested_kernels")
    done = []

    def nested():
        with per_file_imports.in_scope("nested_kernels"), per_file_imports.in_scope("nested_kernels"):
            done.append(sys.modules["nested_kernels"].VALUE)

    t = threading.Thread(target=nested)
    t.start()
    t.join(10)
    assert done == [2]
