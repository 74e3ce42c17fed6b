"""The dataflow graph: immutable nodes and tensor edges, a builder, and the verifier's home is ``ir/verify.py``.

Nodes are ops or cache storage; edges are tensors (role, dims per token, storage format).
Annotations (precision, cost, schedule) live in side tables keyed by node id, each written by
exactly one pass. ``Graph.nx`` gives a ``networkx.DiGraph`` view.

>>> from v41graph import load_model, lower
>>> from v41graph.ir.plan import Plan, Request
>>> g = lower(load_model(), Plan([Request.prefill(4096)]))
>>> g.nx.nodes["L29.attn"]["op"], [e.src for e in g.inputs("L29.attn") if e.role in ("main_kv", "topk")]
('SparseAttention', ['L29.kv_unpack', 'L28.idx.topk'])
>>> [e.src for e in g.inputs("L29.kv_unpack")]
['L20.store.main_kv', 'L28.idx.topk']
>>> from v41graph.ir.verify import verify
>>> verify(g) is g
True
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from ..errors import GraphError
from ..model.formats import canonical_format
from ..structural import Keyed
from .display import graph_html, graph_repr
from .ledger import Row
from .lengths import checked_length
from .ops import Op
from .order import lexicographic_order

if TYPE_CHECKING:
    import networkx


def _networkx():  # imported the first time it is needed (~65 ms): by the ``.nx`` view and on a cycle
    import networkx
    return networkx


_new, _set = object.__new__, object.__setattr__  # the frozen dataclass's own constructor, minus its checks


@dataclass(frozen=True)
class Node:
    """An op or a storage, where it sits (layer, stage, path) and the ledger rows it runs over.

    ``count`` names which token count of its rows the node scales with: ``q`` (query tokens),
    ``kv`` (compressor tokens of an owner), ``in`` (both: an owner's attention input),
    ``logits`` (positions the head computes), ``draft``, ``image`` or ``none`` (storage).
    """

    id: str
    op: Op
    layer: int | None
    stage: str
    path: str | None
    rows: tuple[Row, ...] = ()
    count: str = "q"
    sink: bool = False  # a legitimate end of the dataflow (the head's logits)

    def with_fields(self, **changes: Any) -> "Node":
        """``dataclasses.replace(self, **changes)`` without the dataclass machinery: every compile
        makes a thousand nodes of a known shape again (ir/shapes.py), over the plan's own rows."""
        fields = self.__dict__.copy()
        fields.update(changes)
        return node_of(fields)


def node_of(fields: dict[str, Any]) -> Node:
    """The node whose fields are ``fields`` (another node's ``__dict__``, some of them changed),
    built as the frozen dataclass would be, minus its checks. A template's instantiation calls
    it directly over a thousand nodes a compile, where a keyword call per node costs a third more."""
    new = _new(Node)
    _set(new, "__dict__", fields)
    return new


@dataclass(frozen=True)
class Edge:
    """A tensor from ``src`` to ``dst``: ``dims`` values per token in storage ``format``."""

    src: str
    dst: str
    role: str
    dims: int
    format: str


@dataclass(frozen=True)
class Graph:
    """An immutable dataflow graph plus annotation side tables."""

    model: str
    nodes: Mapping[str, Node]
    edges: tuple[Edge, ...]
    annotations: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: MappingProxyType({}))
    #: the structure token (ir/shapes.py): graphs with one token differ in their rows at most; None: unknown
    shape: Any = field(default=None, compare=False, repr=False)
    #: which nodes carry one rows tuple, as the graph's maker states it (ir/shapes.py ``rows_slots``): per
    #: node in order, its tuple's number in order of first sight; None: not stated (read from the rows)
    slots: tuple[int, ...] | None = field(default=None, compare=False, repr=False)

    @cached_property
    def _in(self) -> Mapping[str, tuple[Edge, ...]]:
        return self._adjacency[0]

    @cached_property
    def _out(self) -> Mapping[str, tuple[Edge, ...]]:
        return self._adjacency[1]

    @cached_property
    def _adjacency(self) -> tuple[Mapping[str, tuple[Edge, ...]], Mapping[str, tuple[Edge, ...]]]:
        # Both directions in one sweep over the edges, each in edge order.
        ins: dict[str, list[Edge]] = {n: [] for n in self.nodes}
        outs: dict[str, list[Edge]] = {n: [] for n in self.nodes}
        for e in self.edges:
            ins.setdefault(e.dst, []).append(e)
            outs.setdefault(e.src, []).append(e)
        return ({k: tuple(v) for k, v in ins.items()}, {k: tuple(v) for k, v in outs.items()})

    @property
    def skeleton(self) -> Keyed:
        """The graph as an argument of a structural memo (``structural.memo``): keyed by its shape token
        alone (its rows left out), computed from every time where nobody vouches for a shape (None)."""
        return Keyed(self.shape, self)

    def __repr__(self) -> str:  # short (the dataclass repr prints every node); ir.display
        return graph_repr(self)

    def _repr_html_(self) -> str:
        return graph_html(self)

    def node(self, node_id: str) -> Node:
        try:
            return self.nodes[node_id]
        except KeyError:
            raise GraphError(f"graph: no node {node_id!r}") from None

    def inputs(self, node_id: str) -> tuple[Edge, ...]:
        return self._in.get(node_id, ())

    def outputs(self, node_id: str) -> tuple[Edge, ...]:
        return self._out.get(node_id, ())

    def layer_nodes(self, layer: int) -> tuple[Node, ...]:
        stages = ("encoder", "decoder", "backbone")
        return tuple(n for n in self.nodes.values() if n.layer == layer and n.stage in stages)

    def with_nodes(self, nodes: Iterable[Node], edges: Iterable[Edge] | None = None, *, shape: Any = None,
                   ids: Iterable[str] | None = None, slots: tuple[int, ...] | None = None) -> "Graph":
        """A new graph with ``nodes`` (and ``edges``) replacing the current ones; annotations kept.

        ``shape``: the new graph's structure token, which only the caller can vouch for (None: unknown);
        ``ids``: the nodes' ids in order, where the caller knows them (a pass applying a plan of its
        shape), so the table is built in one C-level sweep; ``slots``: which of ``nodes`` carry one rows
        tuple (as :attr:`slots`), which only the caller can state (None: read from the rows)."""
        table = MappingProxyType({n.id: n for n in nodes} if ids is None else dict(zip(ids, nodes)))
        return replace(self, nodes=table, edges=tuple(self.edges if edges is None else edges), shape=shape,
                       slots=slots)

    def with_shape(self, shape: Any) -> "Graph":
        """The same nodes, edges and annotations under another structure token (a pass that
        changed nothing names its output's shape; ``shape`` as for :meth:`with_nodes`)."""
        return replace(self, shape=shape)

    def annotate(self, name: str, table: Mapping[str, Any], *, shape: Any = None) -> "Graph":
        """A new graph with side table ``name`` set (one pass owns each table); ``shape`` as for :meth:`with_nodes`."""
        tables = dict(self.annotations)
        # a read-only view, or a table that is immutable by construction (``frozen_table``), is kept as it is
        frozen = isinstance(table, MappingProxyType) or getattr(table, "frozen_table", False)
        tables[name] = table if frozen else MappingProxyType(dict(table))
        return replace(self, annotations=MappingProxyType(tables), shape=shape)

    def annotation(self, name: str) -> Mapping[str, Any]:
        try:
            return self.annotations[name]
        except KeyError:
            raise GraphError(f"graph: no {name!r} annotation (run the pass that writes it first)") from None

    @cached_property
    def nx(self) -> networkx.DiGraph:
        """A networkx view: node attributes ``op``, ``layer``, ``stage``, ``path``, ``payload``."""
        g = _networkx().DiGraph()
        for n in self.nodes.values():
            g.add_node(n.id, op=n.op.kind, layer=n.layer, stage=n.stage, path=n.path, payload=n.op,
                       storage=n.op.storage, count=n.count)
        for e in self.edges:
            g.add_edge(e.src, e.dst, role=e.role, dims=e.dims, format=e.format)
        return g

    def topological_order(self) -> tuple[str, ...]:
        """Deterministic (lexicographic) topological order of node ids.

        The order of ``nx.lexicographical_topological_sort(self.nx)``, computed on the edge lists
        without building the networkx view: a ready node leaves in id order, and a node is ready
        once all of its (distinct) predecessors have left. Raises ``nx.NetworkXUnfeasible`` on a cycle.
        """
        return self._topological_order

    @cached_property
    def _topological_order(self) -> tuple[str, ...]:
        try:
            return lexicographic_order(self.nodes, self.edges)
        except ValueError:
            raise _networkx().NetworkXUnfeasible("Graph contains a cycle or graph changed during iteration") from None


class GraphBuilder:
    """Build a graph by hand: add nodes and tensor edges, then :meth:`build` freezes it into a
    :class:`Graph` (lowering uses it too). Ids are ``L<layer>.<name>``: the sharding table reads
    the name after the prefix (``model/sharding.py``). Formats take the friendly aliases
    (``fp8``, ``fp4``, ``bf16`` …; ``v41graph.formats()``). Run it with
    :func:`v41graph.compile_built_graph`.

    >>> from v41graph.ir.ops import Gemm, GraphInput, Norm
    >>> b = GraphBuilder("toy")
    >>> rows = b.rows(128)                                   # 128 query tokens through layer 0
    >>> b.op("L0.input", GraphInput(64), rows)               # where the tensors come from
    'L0.input'
    >>> b.op("L0.attn_norm", Norm(64), rows, reads=[("L0.input", "x", 64, "bf16")])
    'L0.attn_norm'
    >>> b.op("L0.wq_b", Gemm("q", 64, 64, "fp8"), rows, reads=[("L0.attn_norm", "x", 64, "bf16")], sink=True)
    'L0.wq_b'
    >>> g = b.build()
    >>> g.node("L0.wq_b").op.weight_format, [(e.src, e.dst, e.role) for e in g.edges][1:]
    ('fp8_e4m3', [('L0.attn_norm', 'L0.wq_b', 'x')])
    """

    def __init__(self, model: str):
        self.model = model
        self.nodes: dict[str, Node] = {}
        self.edges: list[Edge] = []

    def add(self, node: Node) -> str:
        """Add ``node`` (its id must be new); returns its id."""
        if node.id in self.nodes:
            raise GraphError(f"graph builder: duplicate node id {node.id!r}")
        self.nodes[node.id] = node
        return node.id

    def edge(self, src: str, dst: str, role: str, dims: int, fmt: str) -> None:
        """A tensor of ``dims`` values per token in format ``fmt`` from ``src`` to ``dst`` as input ``role``."""
        if type(dims) is not int or dims < 0:  # lowering adds thousands: the check only off the fast path
            dims = checked_length(f"graph builder edge {src!r} -> {dst!r} dims", dims, minimum=0, error=GraphError)
        self.edges.append(Edge(src, dst, role, dims, canonical_format(fmt)))

    def op(self, node_id: str, op: Op, rows: tuple[Row, ...], *, reads=(), layer: int | None = None,
           stage: str = "backbone", count: str = "q", sink: bool = False) -> str:
        """Add a node running ``op`` over ``rows`` and its input edges ``reads`` — (source id, role,
        dims, format) each; ``layer`` defaults to the rows' layer. Returns the id."""
        if not isinstance(op, Op):
            raise GraphError(f"graph builder op {node_id!r}: expected an op (a v41graph.ir.ops.Op), got {op!r:.80}")
        if not isinstance(node_id, str) or not node_id:
            raise GraphError(f"graph builder op: node id must be a non-empty string, got {node_id!r:.80}")
        layer = (rows[0].layer if rows else None) if layer is None else layer
        self.add(Node(node_id, op, layer, stage, None, tuple(rows), count, sink))
        for src, role, dims, fmt in reads:
            self.edge(src, node_id, role, dims, fmt)
        return node_id

    @staticmethod
    def rows(tokens, *, cached=0, layer: int = 0, request: int = 0) -> tuple[Row, ...]:
        """The ledger rows of one request sending ``tokens`` new tokens (an integer ≥ 1 or a sympy
        symbol) after ``cached`` earlier ones (≥ 0) through ``layer``: what a node's cost counts.
        A count that cannot be (negative, fractional, not a number) is refused by name.

        >>> GraphBuilder.rows(1000.5)
        Traceback (most recent call last):
        ...
        v41graph.errors.GraphError: graph builder rows tokens: must be an integer or sympy expression, got 1000.5
        """
        tokens = checked_length("graph builder rows tokens", tokens, minimum=1, error=GraphError)
        cached = checked_length("graph builder rows cached", cached, minimum=0, error=GraphError)
        layer = checked_length("graph builder rows layer", layer, minimum=0, error=GraphError)
        request = checked_length("graph builder rows request", request, minimum=0, error=GraphError)
        return (Row(request, layer, cached, cached + tokens, 0, 0, 0, cached),)

    def build(self) -> Graph:
        """The immutable :class:`Graph` of what was added (check it with :func:`v41graph.extend.verify`)."""
        return Graph(self.model, MappingProxyType(dict(self.nodes)), tuple(self.edges))
