"""Sweep a grid of mappings, batches and prompt lengths; write CSV; mark the Pareto frontier.

Run: ``python examples/06_sweep_pareto.py [OUT_DIR]``. Tokens/s per GPU needs the parallel
mapping's GPU count; where the build lacks it the rows say why and the frontier stays empty.
"""

import sys
import tempfile
from pathlib import Path

from v41graph import sweep

out = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
result = sweep(prompt=[1024, 8192], batch=[1, 16], tp=[1, 8], replay=["bounded"], executor="serial")
result = result.with_pareto(itl_max=0.05)
print(result)
print(result.write(out / "sweep.csv"))
best = min((r for r in result.rows if r["valid"]), key=lambda r: r["ttft_s"])
print(f"fastest TTFT: {best['ttft_s'] * 1e3:.1f} ms at tp{best['tp']} batch {best['batch']} prompt {best['prompt']} "
      f"replay {best['replay']}")
print(f"on the frontier: {sum(bool(r['pareto']) for r in result.rows)}; note: {result.note or '-'}")
