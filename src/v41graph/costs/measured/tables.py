"""Table specs per op family and the resolver that turns a query into a time and a tier.

A :class:`TableSpec` names a table in the layout (family folder, file, backend, preferred
version), its exact *key* columns (dtype, tp, …) and its *curve* axes, each with the transform
interpolation works in (``log2`` for sizes, ``log1p`` for a prefix that may be 0). A table's
rows, grouped by key, are *sites*; :meth:`Table.resolve` answers a query:

* ``measured`` — a site at exactly the query;
* ``interpolated`` — the query lies inside the sites' grid on every axis and all 2^d corners
  around it are measured: multilinear interpolation (in the transformed axes) of the
  *utilisation* u = SOL / measured, then time = SOL(query) / u. Interpolating utilisation rather
  than time carries a measurement to a nearby shape the way the kernel's efficiency moves;
* ``held`` — beyond the measured range on some axis (or a corner missing: scattered sites), the
  utilisation of the nearest edge is held, with the distance per axis;
* ``None`` — no site has the key (a miss; the caller decides between transfer, SOL and error).

``sol`` is v41graph's own SOL time for the table's boundary at any coordinates
(:mod:`v41graph.costs.measured.boundaries`), so utilisation is defined everywhere.

>>> import numpy as np
>>> from v41graph.costs.measured.layout import MeasuredTable
>>> spec = TableSpec("toy", "gemm", "gemm_perf", ("dtype",), (Axis("m", "log2"),))
>>> t = Table(spec, MeasuredTable("toy", "0", {"dtype": np.array(["bf16"] * 2, dtype=object),
...                                              "m": np.array([2.0, 8.0]), "latency": np.array([1.0, 2.0])}))
>>> sol = lambda c: c["m"] * 1e-4  # seconds: utilisation 0.2 at m=2 and 0.4 at m=8
>>> r = t.resolve({"dtype": "bf16"}, {"m": 4}, sol)   # halfway in log2: u = 0.3
>>> r.tier, round(r.time * 1e3, 6)
('interpolated', 1.333333)
>>> r = t.resolve({"dtype": "bf16"}, {"m": 32}, sol)  # u held at 0.4, two doublings beyond
>>> r.tier, round(r.time * 1e3, 6), r.distance
('held', 8.0, (('m', 8, 32),))
>>> t.resolve({"dtype": "fp8"}, {"m": 4}, sol) is None
True
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from ...errors import CostError
from ...ir.shapes import Memo, caching
from .layout import MeasuredTable

_TRANSFORMS = {"log2": lambda x: math.log2(x), "log1p": lambda x: math.log1p(x), "linear": float}


@dataclass(frozen=True)
class Axis:
    """A curve axis: a table column and the transform interpolation works in."""

    column: str
    transform: str = "log2"

    def map(self, x: float) -> float:
        return _TRANSFORMS[self.transform](x)


@dataclass(frozen=True)
class TableSpec:
    """Where a table is and how it is keyed: exact ``keys``, interpolated ``curve`` axes."""

    name: str
    family: str
    file: str
    keys: tuple[str, ...]
    curve: tuple[Axis, ...]
    backend: str = "sglang"
    version: str | None = "0.5.14"
    value: str = "latency"
    seconds: float = 1e-3  # upstream latencies are milliseconds
    per: str | None = None  # a column the value is divided by (mHC rows time ``num_sites`` sites)

    @property
    def path(self) -> str:
        return f"{self.family}/{self.backend}/{self.file}"


@dataclass(frozen=True)
class Lookup:
    """What a table said about one query."""

    tier: str  # measured | interpolated | held
    time: float  # seconds
    sol: float  # seconds: v41graph's SOL of the table boundary at the query
    distance: tuple[tuple[str, float, float], ...] = ()  # (axis, nearest measured, query) beyond range

    @property
    def utilisation(self) -> float:
        return self.sol / self.time if self.time else 0.0


def _num(v):
    return int(v) if float(v).is_integer() else float(v)


def _nums(col: np.ndarray) -> list:
    """``[_num(v) for v in col]`` for a float column (ints where whole), in numpy's loops; other columns as they are."""
    if col.dtype == object:
        return col.tolist()
    out = col.astype(object)  # Python floats
    whole = np.isfinite(col) & (col == np.floor(col))
    out[whole] = col[whole].astype(np.int64).astype(object)  # Python ints
    return out.tolist()


class _Sites:
    """The measured sites of one key: raw coordinates → seconds, and the grid values per axis."""

    def __init__(self, axes: tuple[Axis, ...], points: list[tuple], values: list[float]):
        self.axes = axes
        self.at = dict(zip(points, values))
        self.grid = [sorted({c[i] for c in self.at}) for i in range(len(axes))]


class Table:
    """A loaded table: sites grouped by key, resolved against a SOL function."""

    def __init__(self, spec: TableSpec, data: MeasuredTable):
        self.spec, self.data = spec, data
        cols = data.columns
        for c in (*spec.keys, *(a.column for a in spec.curve), spec.value):
            if c not in cols:
                raise CostError(f"measured table {data.path}: no column {c!r} (has {', '.join(sorted(cols))})")
        values = cols[spec.value] * spec.seconds / (cols[spec.per] if spec.per else 1)
        keep = values > 0  # a zero latency is a failed sample, not a free kernel
        keys = list(zip(*(_nums(cols[k][keep]) for k in spec.keys))) if spec.keys else [()] * int(keep.sum())
        coords = np.stack([cols[a.column][keep] for a in spec.curve], axis=1)
        groups: dict[tuple, list[int]] = {}
        for i, k in enumerate(keys):
            groups.setdefault(k, []).append(i)
        # every site's coordinates and seconds as Python numbers once, then split by key (not a numpy
        # conversion per key: a table has hundreds of small keys)
        points = list(zip(*(_nums(coords[:, i]) for i in range(len(spec.curve)))))
        kept = values[keep].tolist()
        self.sites = {k: _Sites(spec.curve, [points[i] for i in idx], [kept[i] for i in idx])
                      for k, idx in groups.items()}

    def keys(self) -> list[dict]:
        if not hasattr(self, "_keys"):  # a table never changes after loading: sort its keys once
            self._keys = [dict(zip(self.spec.keys, k)) for k in sorted(self.sites, key=str)]
        return [dict(k) for k in self._keys]

    def nearest(self, key: dict, shape: tuple[str, ...]) -> dict | None:
        """The measured key nearest ``key`` in the ``shape`` columns (log2 distance), the others equal;
        remembered per (key, shape): the answer depends on nothing but this table's keys."""
        memo = self.__dict__.setdefault("_nearest", {})
        q = (tuple(sorted(key.items(), key=lambda kv: kv[0])), shape)
        if q not in memo or not caching():
            fixed = [k for k in self.spec.keys if k not in shape]
            cands = [k for k in self.keys() if all(k[f] == key[f] for f in fixed)]
            dist = lambda k: sum(abs(math.log2(k[a] / key[a])) for a in shape)  # noqa: E731
            memo[q] = min(cands, key=lambda k: (dist(k), str(k))) if cands else None
        return None if memo[q] is None else dict(memo[q])

    def resolve(self, key: Mapping, point: Mapping, sol: Callable[[dict], float]) -> Lookup | None:
        """Time of ``point`` under ``key``; None when no site has the key."""
        sites = self.sites.get(tuple(key[k] for k in self.spec.keys))
        if sites is None:
            return None
        q = tuple(_num(point[a.column]) for a in self.spec.curve)
        full = lambda c: {**key, **dict(zip((a.column for a in self.spec.curve), c))}  # noqa: E731
        target = sol(full(q))
        if q in sites.at:
            return Lookup("measured", sites.at[q], target)
        brackets, distance = [], []
        for axis, grid, x in zip(self.spec.curve, sites.grid, q):
            if x < grid[0] or x > grid[-1]:
                edge = grid[0] if x < grid[0] else grid[-1]
                brackets.append(((edge, 1.0),))
                distance.append((axis.column, edge, x))
                continue
            hi = next(g for g in grid if g >= x)
            lo = max(g for g in grid if g <= x)
            if lo == hi:
                brackets.append(((lo, 1.0),))
                continue
            w = (axis.map(x) - axis.map(lo)) / (axis.map(hi) - axis.map(lo))
            brackets.append(((lo, 1.0 - w), (hi, w)))
        corners = list(itertools.product(*brackets))
        if all(tuple(c for c, _ in corner) in sites.at for corner in corners):
            u = sum(math.prod(w for _, w in corner) * self._util(sites, tuple(c for c, _ in corner), full, sol)
                    for corner in corners)
            return Lookup("held" if distance else "interpolated", target / u, target, tuple(distance))
        near = self._nearest(sites, q)  # scattered sites: hold the nearest one's utilisation
        held = tuple((a.column, n, x) for a, n, x in zip(self.spec.curve, near, q) if n != x)
        return Lookup("held", target / self._util(sites, near, full, sol), target, held)

    @staticmethod
    def _util(sites: _Sites, c: tuple, full, sol) -> float:
        s = sol(full(c))
        if s <= 0:
            raise CostError(f"measured: SOL of a table site is {s} at {full(c)}; utilisation is undefined")
        return s / sites.at[c]

    def _nearest(self, sites: _Sites, q: tuple) -> tuple:
        def dist(c):
            return sum(((a.map(x) - a.map(y)) / max(1e-9, a.map(g[-1]) - a.map(g[0]) or 1.0)) ** 2
                       for a, x, y, g in zip(self.spec.curve, c, q, sites.grid))
        return min(sites.at, key=lambda c: (dist(c), c))


#: loaded tables, by spec and file content: building one groups ~10^5 rows by key (seconds), and every
#: compile of a hybrid plan reads the same few files (docs/architecture.md, "Shapes": V41GRAPH_NO_CACHE
#: switches it off like every memo there)
_TABLES = Memo("measured-tables", 64)


def table_of(spec: "TableSpec", data: MeasuredTable) -> Table:
    """The :class:`Table` of ``data`` under ``spec``, built once per (spec, path, SHA-256)."""
    key = (spec, data.path, data.sha256)
    return _TABLES.get(key) or _TABLES.put(key, Table(spec, data))


#: AIConfigurator's default routing skew for its MoE tables (its collector's ``power_law`` 1.01)
MOE_DISTRIBUTION = "power_law_1.01"


def moe_distribution(routing) -> str:
    """The MoE table rows a plan's routing reads: ``balanced`` (the collector's even spread) for
    uniform routing, ``power_law_<alpha>`` for the power-law generator, AIConfigurator's default skew
    for explicit loads (no table holds them); the rows read show in the coverage's coordinates.

    >>> from v41graph.ir.routing import UNIFORM, parse_routing
    >>> [moe_distribution(r) for r in (UNIFORM, parse_routing("power-law"), parse_routing("power-law:1.2"))]
    ['balanced', 'power_law_1.01', 'power_law_1.2']
    """
    if routing.model == "uniform":
        return "balanced"
    return f"power_law_{routing.alpha:g}" if routing.model == "power-law" else MOE_DISTRIBUTION


#: the tables OP mode reads (aiconfigurator-core 0.12.0 names and columns)
GEMM = TableSpec("gemm", "gemm", "gemm_perf", ("gemm_dtype",),
                 (Axis("m"), Axis("n"), Axis("k")))
MOE = TableSpec("moe", "moe", "moe_perf", ("moe_dtype", "hidden_size", "inter_size", "topk", "num_experts",
                                           "moe_tp_size", "moe_ep_size", "distribution"), (Axis("num_tokens"),))
MHC = TableSpec("mhc", "mhc", "mhc_module_perf", ("op_name", "hidden_size", "hc_mult", "sinkhorn_iters"),
                (Axis("num_tokens"),), per="num_sites")
_ATTN_KEYS = ("model", "gemm_type", "num_heads", "tp_size", "compress_ratio")
_ATTN_CURVE = (Axis("batch_size"), Axis("isl"), Axis("step", "log1p"))
ATTENTION = {(phase, kind): TableSpec(f"dsv4_{kind}_{phase}", "sparse_attention",
                                      f"dsv4_{kind}_{phase}_module_perf", _ATTN_KEYS, _ATTN_CURVE)
             for phase in ("context", "generation") for kind in ("csa", "hca")}
ALL_REDUCE = TableSpec("all_reduce", "comm", "custom_allreduce_perf", ("allreduce_dtype", "num_gpus", "backend"),
                       (Axis("message_size"),))
NCCL = TableSpec("nccl", "comm", "nccl_perf", ("op_name", "nccl_dtype", "num_gpus"), (Axis("message_size"),),
                 backend="nccl", version=None)
#: DeepEP dispatch / combine on one node (aiconfigurator's SGLang wide-EP collector, microseconds): normal
#: mode per SM budget, low-latency; the h200_sxm tables ship with the SGLang 0.5.12 data
_DEEPEP_KEYS = ("hidden_size", "num_topk", "num_experts", "node_num")
DEEPEP = {("normal", phase): TableSpec(f"deepep_normal_{phase}", "comm", "wideep_deepep_normal_perf",
                                       _DEEPEP_KEYS + (f"{phase}_sms",), (Axis("num_token"),), version="0.5.12",
                                       value=f"{phase}_transmit_us", seconds=1e-6)
          for phase in ("dispatch", "combine")} | {
          ("ll", phase): TableSpec(f"deepep_ll_{phase}", "comm", "wideep_deepep_ll_perf", _DEEPEP_KEYS,
                                   (Axis("num_token"),), version="0.5.12", value=f"{phase}_avg_t_us", seconds=1e-6)
          for phase in ("dispatch", "combine")}
