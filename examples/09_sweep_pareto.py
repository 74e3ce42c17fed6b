"""Sweep a grid of mappings, batches and prompt lengths; write CSV; mark the Pareto frontier.

Run: ``python examples/09_sweep_pareto.py [OUT_DIR]``; without OUT_DIR the CSV goes to a temporary
folder, removed at the end. A point that does not fit the GPU (TP1: V4.1-Flash's weights alone
exceed one H200) is a row with its reason, not an error.
"""

import sys
import tempfile
from pathlib import Path

from v41graph import sweep

with tempfile.TemporaryDirectory() as scratch:  # removed at the end unless OUT_DIR is given
    out = Path(sys.argv[1] if len(sys.argv) > 1 else scratch)
    result = sweep(prompt=[1024, 8192], batch=[1, 16], tp=[1, 8], ep=[8], replay=["bounded"], executor="serial")
    result = result.with_pareto(itl_max=0.05)
    print(result)
    print(result.write(out / "sweep.csv"))
    best = min((r for r in result.rows if r["valid"]), key=lambda r: r["ttft_s"])
    print(f"fastest TTFT: {best['ttft_s'] * 1e3:.1f} ms at tp{best['tp']} batch {best['batch']} "
          f"prompt {best['prompt']} replay {best['replay']}")
    for r in result.rows:
        if r["pareto"]:
            print(f"frontier: tp{r['tp']} batch {r['batch']} prompt {r['prompt']}: "
                  f"{r['tok_s_per_gpu']:.1f} tok/s/GPU, {r['tok_s_per_user']:.1f} tok/s/user")
    invalid = [r for r in result.rows if not r["valid"]]
    print(f"invalid: {len(invalid)} (first: {invalid[0]['reason'] if invalid else 'none'})")
