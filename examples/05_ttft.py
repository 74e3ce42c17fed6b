"""Time to first token of one uncached prompt at 4K, 32K, 128K and 1M tokens, replay off and bounded.

Each plan is one forward; `system_figures` turns its schedule into client-facing figures (TTFT is
the forward time when the forward produces a request's first token; served under SGLang's overlap
scheduler, the first token also waits for the step after it: `v41graph simulate`). Compiling costs the same at
every length: the graph has one node per op, whatever the token count.

    python examples/05_ttft.py [HARDWARE]      # default HARDWARE: h200_sxm
"""

import sys
import time

import v41graph
from v41graph import Plan, Request, load_model
from v41graph.ir.ledger import ledger
from v41graph.costs.requests.system import system_figures

hardware = sys.argv[1] if len(sys.argv) > 1 else "h200_sxm"
model = load_model()
print(f"{model.name} on {hardware}: SOL TTFT of one uncached prompt")
print(f"{'prompt':>9}  {'replay off':>12}  {'replay bounded':>14}  {'speed-up':>8}  {'token×layers (bounded)':>22}")
slowest_compile = 0.0
for n in (4096, 32768, 131072, 1048576):
    ttft = {}
    for replay in ("off", "bounded"):
        plan = Plan([Request.prefill(n)], decoder_replay=replay)
        start = time.perf_counter()
        report = v41graph.compile(model, plan, hardware).report("schedule")
        slowest_compile = max(slowest_compile, time.perf_counter() - start)
        ttft[replay] = system_figures(plan, report).ttft_s
    token_layers = ledger(model, Plan([Request.prefill(n)], decoder_replay="bounded")).token_layers()
    print(f"{n:>9,}  {ttft['off'] * 1e3:>9,.1f} ms  {ttft['bounded'] * 1e3:>11,.1f} ms  "
          f"{ttft['off'] / ttft['bounded']:>7.2f}×  {token_layers:>22,}")
print(f"slowest compile: {slowest_compile:.2f} s")
