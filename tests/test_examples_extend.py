"""Examples 16–18 (issue 28: building graphs for new ops) run as a user runs them; their figures
are checked here by hand arithmetic. Example 16's closed forms are compared with its compiles in
a fresh interpreter (the example registers op kinds, which a process can register once)."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys

from test_examples import EXAMPLES, run_example

D, HEADS, HEAD_DIM, FFN = 2048, 16, 128, 5632  # example 16's block


def dense_flops(n: int, tp: int) -> int:
    """Per-GPU flops of example 16's block over an n-token prompt: norms whole, the rest split."""
    norms = 2 * 4 * D * n
    gemms = 2 * n * (D * 3 * D + D * D + D * 2 * FFN + FFN * D)
    attention = 4 * HEADS * HEAD_DIM * n * (n + 1) // 2  # query i sees i + 1 keys
    swiglu = 3 * FFN * n
    return norms + (gemms + attention + swiglu) // tp


def test_dense_block(tmp_path):
    out = run_example("16_dense_block.py", tmp_path)
    n = 4096
    assert f"tp 1: 9 nodes, flops per GPU {dense_flops(n, 1):,}, comm bytes per GPU 0," in out
    # TP2: two all-reduces of n × 2048 bf16 values, each GPU sending 2(p − 1)/p = 1 times the tensor
    assert f"tp 2: 11 nodes, flops per GPU {dense_flops(n, 2):,}, comm bytes per GPU {2 * n * D * 2:,}," in out
    split = {"wqkv": 2 * n * D * 3 * D, "attention": 4 * HEADS * HEAD_DIM * n * (n + 1) // 2, "wo": 2 * n * D * D,
             "w13": 2 * n * D * 2 * FFN, "w2": 2 * n * FFN * D}
    for tp in (1, 2):
        line = ", ".join(f"{k} {v // tp:,}" for k, v in split.items())  # the split GEMMs: half at TP2
        assert f"  per-GPU flops: {line}\n" in out
    per_token = 8 * D + 2 * D * (3 * D + D + 2 * FFN + FFN) + 3 * FFN
    assert f"flops(N) at tp 1 = 4096*N*(N + 1) + {per_token}*N\n" in out
    assert f"flops(N) at tp 2 = 2048*N*(N + 1) + {8 * D + (per_token - 8 * D) // 2}*N\n" in out
    assert "comm_bytes(N) at tp 1 = 0\n" in out and f"comm_bytes(N) at tp 2 = {2 * D * 2}*N\n" in out


CHECK = """
import json, runpy, sys
from fractions import Fraction
ns = runpy.run_path(sys.argv[1])
from v41graph.passes.scheduling import exact_path_time
out = []
for tp in (1, 2):
    forms = {m: ns["built_closed_form"](ns["block"](ns["N"], tp), m, mapping=ns["Mapping"](tp=tp), domain=(1, 65536))
             for m in ("flops", "comm_bytes", "sol_time")}
    for n in json.loads(sys.argv[2]):
        c = ns["compile_built_graph"](ns["block"](n, tp), mapping=ns["Mapping"](tp=tp))
        path = exact_path_time(c.graph, c.report("schedule").critical_path)
        out.append([tp, n, str(forms["flops"](N=n)), str(ns["flops"](c)), str(forms["comm_bytes"](N=n)),
                    str(ns["comm"](c)), str(Fraction(forms["sol_time"](N=n))), str(path)])
print(json.dumps(out))
"""


def test_dense_block_closed_form_equals_the_compile_at_random_lengths(tmp_path):
    points = sorted(random.Random(28).sample(range(1, 65537), 5))
    proc = subprocess.run([sys.executable, "-c", CHECK, str(EXAMPLES / "16_dense_block.py"), json.dumps(points)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(rows) == 10
    for tp, n, cf_flops, flops, cf_comm, comm, cf_time, time in rows:
        assert cf_flops == flops == str(dense_flops(n, tp))
        assert cf_comm == comm == str(0 if tp == 1 else 2 * n * D * 2)
        assert cf_time == time  # the SOL time along the critical path, exactly


def test_insert_after_q_norm(tmp_path):
    out = run_example("17_insert_after_q_norm.py", tmp_path)
    assert out.startswith("without a sharding rule: sharding: no rule for node 'L0.q_scale' (op kind QScale): "
                          "register one with v41graph.extend.register_sharding(QScale, split=...)")
    assert "q_scale pass inserted 40 nodes\n" in out
    # replicated on the q-latent path: each GPU scales all 1280 values of its rank's tokens, 40 layers
    assert f"QScale flops(N) per GPU = {40 * 1280}*N\n" in out
    # memory-bound: read and write 8192 × 1280 bf16 values per layer at the H200's 4.8 TB/s
    us = float(re.search(r"QScale time, all layers: ([\d.]+) us", out).group(1))
    assert abs(us - 40 * 8192 * 1280 * 2 * 2 / 4.8e12 * 1e6) < 1e-3
    share = float(re.search(r"QScale share of flops at N = 8192: (\S+)", out).group(1))
    assert 0 < share < 1e-4


def test_user_sharding_rule(tmp_path):
    out = run_example("18_user_sharding_rule.py", tmp_path)
    assert out.startswith("no rule yet: sharding: no rule for node 'L0.lora' (op kind Lora): register one with "
                          "v41graph.extend.register_sharding(Lora, split=...)")
    assert "L0.lora: rule 'user:Lora', split column, collective after it: all_gather\n" in out
    assert "L0.lora_pinned: rule 'user:lora_pinned', split replicated" in out
    assert "L0.lora_own: rule 'replicated lora', split replicated" in out
    flops, weights = 2 * 1000 * 2 * 4096 * 64, 2 * 4096 * 64 * 2  # down and up projections, bf16
    for tp in (1, 2, 4):
        assert (f"tp {tp}: lora flops {flops // tp:,} weights {weights // tp:,} B; lora_pinned flops {flops:,} "
                f"weights {weights:,} B; lora_own flops {flops:,} weights {weights:,} B\n") in out
