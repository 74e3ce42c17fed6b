"""The serving check as text: simulated means beside the observed and AISimulate's.

>>> m = {k: {"v41graph": 150.0, "observed": 156.0, "aisimulate": 154.0, "v41graph_error_pct": -3.846,
...          "aisimulate_error_pct": -1.282} for k in ("forward_ms", "ttft_ms", "tpot_ms")}
>>> print(serving_check_text({"replay": "off", "scope": "core", "metrics": m, "workload": {"prompts": [128],
...       "output": 64, "spacing_s": 60.0}, "fpm": {"table": "t", "estimator": {}}, "boundary": "b",
...       "observed_source": "s", "why_no_observation": None, "emission": "overlap"}).splitlines()[4])
  forward interval    150.00       156.00    -3.85%        154.00    -1.28%
"""

from __future__ import annotations

from typing import Any

from .serving_text import EMISSION_LINE

_NAMES = {"forward_ms": "forward interval", "ttft_ms": "TTFT", "tpot_ms": "mean TPOT"}


def _v(x, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def serving_check_text(c: dict[str, Any]) -> str:
    w = c["workload"]
    if "fpm" in c:
        f = c["fpm"]
        basis = f"table {f['table']} ({', '.join(f'{k}: {v}' for k, v in f['estimator'].items())})"
    else:
        fit = c["runtime"]["fit"]
        basis = (f"runtime basis fitted to {fit['table']} ({fit['kernel']} kernels + {', '.join(fit['terms'])}; "
                 f"leave-one-out MAPE {fit['loo_error']['mape']:.2f} %)")
    lines = [f"serving check: decoder replay {c['replay']}, {c['scope']} scope, {basis}; "
             + EMISSION_LINE[c["emission"]],
             f"workload (a stand-in, see docs/fpm.md): isolated single requests, prompts {w['prompts']}, "
             f"{w['output']} output tokens, {w['spacing_s']:g} s apart",
             f"observed: {c['observed_source'] or c['why_no_observation']}",
             "  metric (ms)       v41graph     observed    error      AISimulate    error"]
    for key, m in c["metrics"].items():
        lines.append(f"  {_NAMES[key]:<16} {m['v41graph']:>9.2f}    {_v(m['observed'], '9.2f'):>9}  "
                     f"{_v(m['v41graph_error_pct'], '+7.2f'):>7}%     {_v(m['aisimulate'], '9.2f'):>9}  "
                     f"{_v(m['aisimulate_error_pct'], '+7.2f'):>7}%")
    lines.append("TTFT and TPOT observed over HTTP include tokenization, output processing and the client, "
                 "which a forward-time model does not contain; the forward interval is the table's own boundary.")
    lines.append(f"simulated boundary: {c['boundary']}")
    return "\n".join(lines)


__all__ = ["serving_check_text"]
