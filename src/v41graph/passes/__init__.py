"""Compiler passes: pure ``Graph -> PassResult`` functions run as a visible pipeline.

Each pass is a frozen dataclass with a ``name``; calling it returns a new graph, how many
edits it made and a small typed report (docs/architecture.md, decision 5). :func:`run_pipeline` runs
``verify()`` between passes when asked and, if a pass breaks the graph, names that pass and
the ones that ran before it.

>>> from v41graph import load_model, Plan, Request
>>> from v41graph.passes import compile_graph
>>> result = compile_graph(load_model(), Plan([Request.prefill(1000)], decoder_replay="bounded"))
>>> [p.name for p in result.passes]
['precision', 'replay', 'kv_dedup', 'fusion']
>>> result.passes[1].report.token_layers_after
23432
"""

from __future__ import annotations

from ..costs.hardware import Hardware, load_hardware
from ..costs.measured.tiers import CostMode
from ..ir.verify import verify
from ..ir.lower import lower
from ..errors import PlanError, expect
from ..ir.plan import Plan
from ..model.config import ModelSpec
from ..collector import settle
from .base import Compiled, PassContext, Pass, PassResult, run_pipeline
from .fusion import Fusion
from .kv_dedup import KVDedup
from .measured_modules import MeasuredModules
from .plugins import load_plugins
from .precision import PrecisionAnnotation
from .registry import arrange
from .replay import ReplayPruning
from .scheduling import Scheduling

__all__ = ["Compiled", "Pass", "PassContext", "PassResult", "compile", "compile_graph", "default_pipeline",
           "run_pipeline"]


def default_pipeline() -> tuple[Pass, ...]:
    # Precision first (everything after it reads bytes), then replay (it changes the token sets
    # the later passes count), then de-duplication (storage before fusion merges any readers),
    # then fusion (it recomputes traffic from the annotated edges). Registered passes
    # (passes/registry.py, entry points loaded on first use) sit where they asked to.
    load_plugins(rescan=False)
    return arrange((PrecisionAnnotation(), ReplayPruning(), KVDedup(), Fusion()))


def compile(model: ModelSpec, plan: Plan, hardware="h200_sxm", *, check: bool = False,  # noqa: A001
            cost: CostMode | None = None) -> Compiled:
    """Compile: lower ``plan`` on ``model``, run the passes, then the scheduling pass on ``hardware``.

    The one meaning of "compile" (``v41graph.compile`` is this function): the result carries the
    schedule; ``.report("schedule")`` is the critical-path schedule and ``.graph`` carries the
    ``cost`` and ``schedule`` side tables. :func:`compile_graph` is its graph half (no hardware).

    >>> from v41graph import Plan, Request, load_model
    >>> r = compile(load_model(), Plan([Request.prefill(8192)], decoder_replay="bounded")).report("schedule")
    >>> r.hardware, r.total_time_s == max(r.critical_path_s, r.resource_bound_s)
    ('h200_sxm', True)

    ``cost`` (default SOL) selects OP or hybrid times: measured modules are grouped first (so a
    module replaces exactly the nodes it times), then every node is priced from the tables.
    """
    hw = hardware if isinstance(hardware, Hardware) else load_hardware(hardware)
    load_plugins(rescan=False)
    base = (PrecisionAnnotation(), ReplayPruning(), KVDedup(), Fusion())
    if cost is None or cost.mode == "sol":
        return compile_graph(model, plan, check=check, passes=arrange(base + (Scheduling(hw),)))
    from ..costs.measured.op_cost import OpPricer  # the measured-table readers: OP / hybrid only
    pricer = OpPricer(cost, hw, model, plan)
    passes = base + (MeasuredModules(transfers_op=cost.allows("op")), Scheduling(hw, pricer=pricer))
    return compile_graph(model, plan, check=check, passes=arrange(passes))


def compile_graph(model: ModelSpec, plan: Plan, *, check: bool = True,
                  passes: tuple[Pass, ...] | None = None, at: dict[str, int] | None = None) -> Compiled:
    """The graph half of :func:`compile`: lower ``plan`` on ``model`` and run the pass pipeline, no
    schedule (``at``: see :class:`PassContext`). ``v41graph compile`` prints this half's passes."""
    expect(plan, Plan, "compile plan", PlanError, " (v41graph.Plan([...]))")  # lower checks it on the model
    ctx = PassContext(model, plan, tuple(sorted((at or {}).items())))
    graph = lower(model, plan)  # reads the reuse switches (v41graph/reuse.py)
    run: dict = {}  # the token flow of a rows tuple is compared once per compile (ir/verify.py)
    if check:
        verify(graph, run)
    compiled = run_pipeline(graph, ctx, default_pipeline() if passes is None else passes, check=check, run=run)
    settle()  # only inside collector.frozen_shapes(), which a program owning its process opts into
    return compiled

