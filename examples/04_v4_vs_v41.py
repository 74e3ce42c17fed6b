"""V4-Flash and V4.1-Flash side by side for the same plan.

The same requests and policies run on both built-in configs: a 32K-token prompt, then a decode
step for 64 requests at 32K context. Fusion is two-pass for both, because single-pass mHC needs
V4.1's lagged coefficients and a V4 plan with it is rejected; decoder bounded replay needs V4.1's
encoder–decoder split, so it is off here and shown for V4.1 on its own line.

    python examples/04_v4_vs_v41.py
"""

import sympy

import v41graph
from v41graph import Plan, Request, load_model
from v41graph.model.memory import cache_memory
from v41graph.model.inventory import inventory
from v41graph.ir.ledger import ledger
from v41graph.symbols import N

CONTEXT = 32768
models = {name: load_model(name) for name in ("deepseek-v4-flash", "deepseek-v4.1-flash")}
prefill = Plan([Request.prefill(CONTEXT)], fusion="two-pass")
decode = Plan([Request.decode(CONTEXT, copies=64)], fusion="two-pass")


def row(label, values, fmt="{:,}"):
    print(f"{label:<34}" + "".join(f"{fmt.format(v):>22}" for v in values))


row("", list(models), "{}")
row("backbone layers", [len(m.layers) for m in models.values()])
row("resident weights (B)", [inventory(m).total_bytes for m in models.values()])
row("global KV per token, N → ∞ (B)",
    [sympy.limit(cache_memory(m, N).global_bytes / N, N, sympy.oo) for m in models.values()], "{}")
row(f"global KV at {CONTEXT:,} tokens (B)", [cache_memory(m, CONTEXT).global_bytes for m in models.values()])
row(f"token×layers, {CONTEXT:,}-token prefill", [ledger(m, prefill).token_layers() for m in models.values()])
times = [v41graph.compile(m, prefill).report("schedule").total_time_s for m in models.values()]
row(f"prefill {CONTEXT:,} SOL on H200 (ms)", [t * 1e3 for t in times], "{:,.2f}")
steps = [v41graph.compile(m, decode).report("schedule").total_time_s for m in models.values()]
row(f"decode step, 64 @ {CONTEXT:,} (ms)", [t * 1e3 for t in steps], "{:,.2f}")

v41 = models["deepseek-v4.1-flash"]
best = Plan([Request.prefill(CONTEXT)], decoder_replay="bounded", fusion="single-pass")
t = v41graph.compile(v41, best).report("schedule").total_time_s
print(f"V4.1-Flash with replay bounded and single-pass mHC: {ledger(v41, best).token_layers():,} token×layers, "
      f"prefill SOL {t * 1e3:,.2f} ms")
