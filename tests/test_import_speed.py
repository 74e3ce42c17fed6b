"""Start-up loads only what a command needs (issue 14): ``import v41graph`` and the numeric
commands never import sympy, networkx, the optional extras or the measured-table readers.

Each check runs in a fresh interpreter, since the test process has imported everything already.
What is asserted is which modules got imported, never a time (benchmarks/bench_import.py
measures those).
"""

from __future__ import annotations

import importlib
import types
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import v41graph

SRC = Path(__file__).resolve().parents[1] / "src"
#: heavy or optional libraries the numeric path has no use for
HEAVY = ("sympy", "networkx", "pandas", "matplotlib", "tqdm", "graphviz", "dask", "pyarrow")
#: the measured-table readers (OP / hybrid mode only)
MEASURED = ("v41graph.costs.measured.layout", "v41graph.costs.measured.tables", "v41graph.costs.measured.op_cost")


def _run(code: str) -> list:
    """Run ``code`` in a fresh interpreter; it prints one JSON value on its last line of stdout."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), *filter(None, [os.environ.get("PYTHONPATH")])]))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def _loaded_after(prelude: str, names=HEAVY + MEASURED) -> list[str]:
    return _run(f"import json, sys\n{prelude}\n"
                f"print(json.dumps(sorted(m for m in {list(names)!r} if m in sys.modules)))")


def test_import_v41graph_loads_no_heavy_library():
    assert _loaded_after("import v41graph") == []
    assert _loaded_after("import v41graph; v41graph.__version__", ("sympy", "networkx", "numpy")) == []


@pytest.mark.parametrize("argv", [
    ["cost", "--prefill", "8192", "--json"],
    ["cost", "--prefill", "8192"],
    ["compile", "--prefill", "8192", "--json"],
])
def test_a_numeric_command_never_imports_sympy_networkx_or_the_tables(argv):
    prelude = ("import contextlib, io\nfrom v41graph.cli.main import main\n"
               f"with contextlib.redirect_stdout(io.StringIO()):\n    assert main({argv!r}) == 0")
    # numpy too: a plan of one request has no table of rows (ir/rows.py) and one critical path
    assert _loaded_after(prelude, HEAVY + MEASURED + ("numpy",)) == []


def test_a_plan_of_many_requests_uses_numpy_tables():
    prelude = ("import contextlib, io\nfrom v41graph.cli.main import main\n"
               "with contextlib.redirect_stdout(io.StringIO()):\n"
               "    assert main(['cost', '--prefill'] + [str(1000 + i) for i in range(16)]) == 0")
    assert _loaded_after(prelude, ("numpy", "sympy")) == ["numpy"]


def test_building_the_parser_loads_no_compiler():
    loaded = _loaded_after("from v41graph.cli.main import build_parser\nbuild_parser()",
                           HEAVY + MEASURED + ("numpy", "v41graph.passes", "v41graph.ir.graph"))
    assert loaded == []


def test_symbolic_work_still_imports_sympy_when_it_needs_it():
    code = ("import json, sys\nfrom v41graph.algebra import is_symbolic, smin\n"
            "before = [is_symbolic(3), 'sympy' in sys.modules]\n"
            "from v41graph.symbols import N\n"
            "print(json.dumps(before + [is_symbolic(3, N), str(smin(N, 128))]))")
    assert _run(code) == [False, False, True, "Min(128, N)"]


def test_networkx_is_imported_for_the_view_and_for_a_cycle_only():
    code = """
import json, sys
from v41graph import GraphError, Plan, Request, load_model, lower
from v41graph.extend import Edge, verify
g = verify(lower(load_model(), Plan([Request.prefill(128)])))
seen = ["networkx" in sys.modules]
broken = g.with_nodes(g.nodes.values(), list(g.edges) + [Edge("L30.wq_a", "L29.attn_norm", "x", 5120, "bf16")])
try:
    broken.topological_order()
except Exception as exc:  # the exact type callers catch
    import networkx
    seen.append(type(exc) is networkx.NetworkXUnfeasible)
try:
    verify(broken)
except GraphError as exc:
    seen.append(str(exc).startswith("verify: cycle "))
seen.append(g.nx.number_of_nodes() == len(g.nodes))
print(json.dumps(seen))
"""
    assert _run(code) == [False, True, True, True]


def test_the_lazy_package_exposes_every_public_name():
    assert set(v41graph.__all__) <= set(dir(v41graph))
    for name in v41graph.__all__:
        obj = getattr(v41graph, name)
        if name != "__version__" and not isinstance(obj, types.ModuleType):  # the very object its module holds
            assert getattr(importlib.import_module(obj.__module__), obj.__name__) is obj, name
    namespace: dict = {}
    exec("from v41graph import *", namespace)
    assert set(v41graph.__all__) <= set(namespace)
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        v41graph.no_such_name  # noqa: B018


def test_a_fresh_import_resolves_names_and_layers_on_first_use():
    code = ("import json, sys, v41graph\n"
            "before = 'v41graph.ir.plan' in sys.modules\n"
            "from v41graph import Plan, Request, compile, load_model\n"
            "ok = compile(load_model(), Plan([Request.prefill(128)])).report('schedule').total_time_s > 0\n"
            "hidden = sorted(set(v41graph.__all__) - set(dir(v41graph)))\n"
            "print(json.dumps([before, ok, v41graph.passes.__name__, hidden]))")
    assert _run(code) == [False, True, "v41graph.passes", []]
