"""``ask``'s answers as text: a solved value with its bracket and checks, a derivative (or its split by op
family), a sensitivity's figures; each from the answer's ``to_dict()``.

>>> print(answer_text({"question": "max-context", "value": 10, "exact": True, "method": "closed form",
...                    "bracket": [8, 12], "checks": {"fits": True}}), end="")
max-context: 10  (exact; closed form)
bracket: [8, 12]
  fits: True
>>> print(derivative_text({"question": "d sol_time / dN", "expr": "2*N", "derivative": "2"}), end="")
d sol_time / dN
  f(N) = 2*N
  f'(N) = 2
>>> print(sensitivity_text({"prefill": 8192, "sol_time_s": 0.5}), end="")
prefill: 8192
sol_time_s: 0.5
"""

from __future__ import annotations

from typing import Any


def answer_text(d: dict[str, Any]) -> str:
    """A solved value: ``question: value  (exact or numeric; method)``, its bracket and its checks."""
    lines = [f"{d['question']}: {d['value']}  ({'exact' if d['exact'] else 'numeric'}; {d['method']})"]
    if d.get("bracket"):
        lines.append(f"bracket: [{d['bracket'][0]}, {d['bracket'][1]}]")
    lines += [f"  {k}: {v}" for k, v in d.get("checks", {}).items()]
    return "\n".join(lines) + "\n"


def derivative_text(d: dict[str, Any]) -> str:
    """A derivative: f(N) and f'(N), or with ``by_op`` the rate of each op family."""
    if "by_op" in d:
        lines = [f"  {k}: {v}" for k, v in d["by_op"].items()]
    else:
        lines = [f"  f(N) = {d['expr']}", f"  f'(N) = {d['derivative']}"]
    return "\n".join([d["question"], *lines]) + "\n"


def sensitivity_text(d: dict[str, Any]) -> str:
    """A sensitivity: one ``key: value`` line per figure."""
    return "\n".join(f"{k}: {v}" for k, v in d.items()) + "\n"


__all__ = ["answer_text", "derivative_text", "sensitivity_text"]
