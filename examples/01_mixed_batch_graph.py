"""Build the graph of a mixed batch and walk it with networkx.

One forward holds three requests: an uncached 4K prompt, 512 new tokens after an 8K prefix-cache
hit, and a batch of 8 decodes at context 8K. `lower` turns (model, plan) into typed nodes and
tensor edges; `Graph.nx` is the same graph as a `networkx.DiGraph`.

    python examples/01_mixed_batch_graph.py
"""

from collections import Counter

import networkx as nx

from v41graph import Plan, Request, load_model, lower
from v41graph.ir.ledger import ledger

model = load_model()  # the built-in DeepSeek-V4.1-Flash
plan = Plan([Request.prefill(4096), Request.extend(8192, 512), Request.decode(8192, copies=8)])
graph = lower(model, plan)
g = graph.nx

print(f"nodes: {g.number_of_nodes()}  edges: {g.number_of_edges()}  "
      f"acyclic: {nx.is_directed_acyclic_graph(g)}")
print(f"token×layers: {ledger(model, plan).token_layers()}")  # 40 layers × (4096 + 512 + 8) tokens

print("most common op kinds:")
for kind, count in Counter(kind for _, kind in g.nodes(data="op")).most_common(5):
    print(f"  {kind:<16} {count}")

# Every layer's attention reads its KV owner's storage and its Top-K producer's selection
# through edges, so "who reads what" is a graph question.
print("inputs of L29.attn:")
for src, _, role in sorted(g.in_edges("L29.attn", data="role")):
    print(f"  {role:<8} <- {src}")
owner = [src for src, _, role in g.in_edges("L29.kv_unpack", data="role") if role == "main_kv"]
print(f"  (L29.kv_unpack reads {owner[0]}: layer 29's KV owner is layer 20)")

print("global KV owners and the layers that read them:")
stores = [n for n, storage in g.nodes(data="storage") if storage and n.endswith(".store.main_kv")]
for store in sorted(stores, key=lambda n: g.nodes[n]["layer"]):
    readers = sorted(g.nodes[r]["layer"] for r in g.successors(store))
    print(f"  {store:<18} read by {len(readers)} layers: {readers[0]}–{readers[-1]}")

# A path through the DAG: from the embedding to the output head, in topological order.
path = nx.shortest_path(g, "embed", "head.proj")
print(f"shortest path embed → head.proj: {len(path)} nodes")
