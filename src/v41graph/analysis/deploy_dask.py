"""``deploy --scheduler ADDRESS``: a search's pricing spread over a Dask cluster (extra ``v41graph[distributed]``).

The candidates that fit are grouped by the step costers they need (one per engine mapping and V4.1
knobs; a disaggregated candidate needs its prefill and its decode coster). Each group is one task,
:func:`price_group`, a top-level function over the search's own model, hardware, cost mode and
lengths: it prices its candidates with fresh :class:`~.deploy_price.Costers` and sends back the prices
and the step shapes it compiled. The search merges the prices by candidate index and adopts the
shapes (:meth:`~.deploy_price.Costers.adopt`: keyed by the whole shape under the same policies, so a
shape's value is the one a local compile gives), then filters, ranks and checks by simulation
locally — so the answer, the JSON included, is the local search's, whatever ran where and in which
order (tests/test_deploy_dask.py asserts it).
"""

from __future__ import annotations

from typing import Any

from .deploy_price import Costers, price_aggregated, price_disaggregated
from .sweep_dask import client_for


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


def price_group(model, hardware, cost, acceptance, isl: int, osl: int, rate, items, routing=None) -> tuple[list, dict]:
    """``([(index, Price)], compiled shapes by coster key)`` for one group (runs on a worker)."""
    costers = Costers(model, hardware, cost, acceptance, **({"routing": routing} if routing is not None else {}))
    prices = []
    for i, mode, parts in items:
        price = price_aggregated if mode == "aggregated" else price_disaggregated
        prices.append((i, price(costers, *parts, isl, osl, rate)))
    return prices, costers.entries()


def price_on_dask(target, costers: Costers, isl: int, osl: int, rate, items, progress=None) -> dict[int, Any]:
    """Every candidate's price, computed on the cluster at ``target``; the shapes land in ``costers``."""
    from dask.distributed import as_completed
    client, owned = client_for(target, command="deploy")
    try:
        futures = [client.submit(price_group, costers.model, costers.hardware, costers.cost, costers.acceptance,
                                 isl, osl, rate, g, costers.routing, pure=False) for g in group(items)]
        prices: dict[int, Any] = {}
        shapes: list[dict] = []
        for future in as_completed(futures):
            got, entries = future.result()
            prices.update(got)
            shapes.append(entries)
            if progress:
                progress(len(got))
        for entries in sorted(shapes, key=lambda e: sorted(e)):  # a fixed order: the adopted set is a union
            costers.adopt(entries)
        return prices
    finally:
        if owned:
            client.close()
