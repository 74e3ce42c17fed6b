"""``deploy --scheduler ADDRESS``: a search's step-shape compiles spread over a Dask cluster (extra
``v41graph[distributed]``).

The engines that fit are grouped by the step coster they need (one per engine mapping and V4.1 knobs).
Each group is one task, :func:`compile_group`, a top-level function over the search's own model,
hardware, cost mode and lengths: it prices its instances with fresh :class:`~.deploy_price.Costers`
(compiling every shape an aggregated, prefill or decode instance of that engine reads) and sends back
the shapes. The search adopts them (:meth:`~.deploy_price.Costers.adopt`: keyed by the whole shape under
the same policies, so a shape's value is the one a local compile gives), then walks, prunes, prices,
ranks and checks by simulation locally — so the answer, the JSON included, is the local search's,
whatever ran where and in which order (tests/test_deploy_dask.py asserts it).
"""

from __future__ import annotations

from itertools import product
from typing import Any

from .deploy_price import Costers, price_aggregated
from ..sweep.sweep_dask import client_for


def _needs(mode: str, parts) -> tuple:
    """The coster keys a candidate's price compiles shapes under."""
    if mode == "aggregated":
        return (Costers.mapping_key(parts[0]),)
    return (Costers.mapping_key(parts[0]), Costers.mapping_key(parts[2]))


def group(items: list[tuple[int, str, Any]]) -> list[list[tuple[int, str, Any]]]:
    """The candidates ``(index, mode, parts)`` grouped by the costers they need, in first-seen order."""
    out: dict[tuple, list] = {}
    for item in items:
        out.setdefault(_needs(item[1], item[2]), []).append(item)
    return list(out.values())


def compile_group(model, hardware, cost, acceptance, isl: int, osl: int, instances, routing) -> dict:
    """The step shapes pricing ``instances`` compiles — each as an aggregated replica (its decode grid,
    its prefill steps of 1 … k prompts, mixed or not), which are also the shapes a prefill or decode
    instance of the same engine reads — by coster key, under the search's ``routing`` (runs on a worker)."""
    costers = Costers(model, hardware, cost, acceptance, routing=routing)
    for inst in instances:
        price_aggregated(costers, inst, 1, isl, osl)
    return costers.entries()


def compile_on_dask(target, costers: Costers, q, caps, chunks, axes, overlap, memo, below_tp: bool = False) -> None:
    """Compile, on the cluster at ``target``, the step shapes of every instance that fits (grouped by
    coster), and adopt them into ``costers``: the search that follows prices and prunes locally on the
    same shapes, so its answer is the local one."""
    from dask.distributed import as_completed
    from .deploy_walk import _fit
    from .deploy_space import SCHEDULES, Instance, instance_mappings
    groups: dict[tuple, list] = {}
    for e in instance_mappings(costers.model, q.gpus, below_tp):
        # the same nesting as the walk's (last axis fastest), so each group lists its instances in walk order
        for rp, en, v, ch, mixed, cap in product(axes["replay"], axes["engram"], axes["verify"], chunks, SCHEDULES,
                                                 caps):
            inst = Instance(e, cap, ch, rp, en, v, overlap, mixed)
            if _fit(costers.model, costers.hardware, inst, q, "both", memo) is None:
                groups.setdefault(costers.key(inst), []).append(inst)
    client, owned = client_for(target, command="deploy")
    try:
        futures = [client.submit(compile_group, costers.model, costers.hardware, costers.cost, costers.acceptance,
                                 q.isl, q.osl, g, costers.routing, pure=False) for g in groups.values()]
        shapes = [future.result() for future in as_completed(futures)]
        for entries in sorted(shapes, key=lambda e: sorted(e)):  # a fixed order: the adopted set is a union
            costers.adopt(entries)
    finally:
        if owned:
            client.close()
