"""DSpark: how many drafts to verify, at batch 1 and batch 64 on one H200.

For each verify length k = 0..5 the step is compiled (backbone verify of k + 1 tokens per request
plus the three draft blocks), the state commit/rollback is added, and tokens/s =
batch · E[emitted] / step time, with E[emitted] = 1 + Σ prefix survival.

    python examples/07_dspark_verify.py
"""

from v41graph import load_model
from v41graph.analysis.serving.dspark_verify import verify_curve
from v41graph.costs.requests.dspark_acceptance import Acceptance

model = load_model()
acceptance = Acceptance((0.9, 0.8, 0.7, 0.6, 0.5))
for batch in (1, 64):
    curve = verify_curve(model, "h200_sxm", acceptance, batch)
    print(f"batch {batch}:")
    for p in curve.points:
        print(f"  k={p.k}  E[emitted]={p.emitted:.4f}  step={1e3 * p.step_s:.3f} ms  {p.tokens_per_s:,.0f} tokens/s")
    print(f"  chosen k={curve.chosen}: {curve.reason}")
