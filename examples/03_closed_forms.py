"""Symbolic cost queries: token×layers, KV bytes and SOL time as functions of the prompt length N.

The plan's length is the sympy symbol `N`; `closed_form` runs the same cost functions that give
numbers, so the expressions are not a second copy of any formula. `lambdify` turns one into a
numpy function for sweeps.

    python examples/03_closed_forms.py
"""

import numpy as np
import sympy

from v41graph import Plan, Request, closed_form, load_model
from v41graph.symbols import N

model = load_model()
plan = Plan([Request.prefill(N)], decoder_replay="bounded")  # SGLang cut: layers 21–39 see the tail

token_layers = closed_form(model, plan, "token_layers")
kv = closed_form(model, plan, "kv_bytes")
sol = closed_form(model, plan, "sol_time", hardware="h200_sxm")

print(f"token_layers(N) = {token_layers.expr}")
print(f"kv_bytes(N) = {kv.expr}")
print(f"kv bytes per token as N → ∞: {sympy.limit(kv.expr / N, N, sympy.oo)}")
print(f"at N = 1M: token×layers {token_layers(N=1 << 20):,}, KV {kv(N=1 << 20):,} B")

# SOL time is summed along the critical path chosen numerically at N = 8192; valid_range says
# over which N that path stays critical, so the expression is exact there.
lo, hi = sol.valid_range
print(f"sol_time(N) on h200_sxm: {len(sol.critical_path)} critical-path nodes, valid for N in [{lo:,}, {hi:,}]")
print(f"sol_time(8192) = {float(sol(N=8192)) * 1e3:.3f} ms")

# One vectorised call evaluates a closed form over a whole grid of prompt lengths.
grid = np.array([1024, 4096, 8192, 16384, 32768])
f_tl, f_kv = token_layers.lambdify(), kv.lambdify()
print(f"{'N':>7} {'token×layers':>13} {'KV bytes':>12}")
for n, tl, b in zip(grid, f_tl(grid), f_kv(grid)):
    print(f"{n:>7} {int(tl):>13,} {int(b):>12,}")

# The SOL form holds where its path is critical: sweep it inside valid_range only.
inside = np.linspace(lo, hi, 5).astype(int)
print("N       SOL ms  (inside the valid range)")
for n, t in zip(inside, sol.lambdify()(inside)):
    print(f"{n:<7} {t * 1e3:.3f}")
