"""Plain text of FPM answers and evaluations (what ``v41graph fpm`` prints without ``--json``).

Both take the JSON-ready dicts (``Answer.to_dict()``, ``Evaluation.to_dict()``), so the text
and the ``--json`` twin always show the same figures.

>>> print(errors_line("fpm", {"count": 2, "mape": 1.5, "wape": 1.25, "median": 1.5, "p90": 1.9, "worst": 2.0}))
  fpm              n=  2  MAPE  1.500%  WAPE  1.250%  median  1.500%  p90  1.900%  worst  2.000%
"""

from __future__ import annotations

from typing import Any


def _coords(p: dict[str, Any]) -> str:
    return (f"{p['phase']} batch {p['batch_size']}, new tokens {p['total_prefill_tokens']}, "
            f"past KV {p['total_kv_read_tokens']}")


def _admission_line(admission: str) -> str:
    if admission == "admitted":
        return "admission: admitted"
    return f"admission: {admission.upper()} — used only because it was explicitly allowed"


def answer_text(a: dict[str, Any]) -> str:
    lines = [f"table: {a['table']}", _admission_line(a["admission"])]
    if a["query"] is not None:
        lines.append(f"query: {_coords(a['query'])}")
    if a["predicted_ms"] is not None:
        lines.append(f"predicted_ms: {a['predicted_ms']:.4f}  (tier: {a['tier']}; {a['reason']})")
    else:
        lines.append(f"tier: unsupported: {a['reason']}")
        lines.append(f"failure category: {a['category']}")
    sel = a.get("selection")
    if sel and a["estimator"] and a["tier"] != "measured":
        lines.append(f"estimator: {a['estimator']} ({sel['why'][a['query']['phase']]})")
    if a["nearest"] is not None:
        n = a["nearest"]
        lines.append(f"nearest measured point: {_coords(n)} = {n['observed_ms']:.4f} ms")
    for p in a["basis"]:
        if a["tier"] in ("interpolated", "estimated"):
            how = "from" if a["tier"] == "interpolated" else "inside the cell of"
            lines.append(f"  {how} {_coords(p)} = {p['observed_ms']:.4f} ms")
    if a["unverified"]:
        lines.append(f"identity fields the table does not record (not checked): {', '.join(a['unverified'])}")
    return "\n".join(lines)


def _pct(v: float | None) -> str:
    return "     -" if v is None else f"{v:6.3f}%"


def errors_line(name: str, e: dict[str, Any]) -> str:
    return (f"  {name:<16} n={e['count']:>3}  MAPE {_pct(e['mape'])}  WAPE {_pct(e['wape'])}  "
            f"median {_pct(e['median'])}  p90 {_pct(e['p90'])}  worst {_pct(e['worst'])}")


def selection_lines(sel: dict[str, Any]) -> list[str]:
    """Each candidate's leave-one-out errors per phase, the choice and why."""
    lines = [f"estimator candidates, leave-one-out over {sel['held_out']} points (scored where every "
             f"candidate answers):"]
    for phase, per in sel["errors"].items():
        lines.append(f" {phase} ({sel['scored'][phase]} points):")
        lines += [errors_line(c, e) + ("  <- chosen" if c == sel["chosen"][phase] else "") for c, e in per.items()]
        lines.append(f"  chosen: {sel['chosen'][phase]}: {sel['why'][phase]}")
    lines.append(" both phases:")
    lines += [errors_line(c, e) for c, e in sel["overall"].items()]
    lines.append(errors_line("chosen", sel["combined"]))
    lines.append(" (selection and scoring use the same points: the chosen error is optimistic; a holdout is "
                 "the honest check)")
    return lines


def evaluation_text(ev: dict[str, Any]) -> str:
    admission = ev["admission"] if ev["admission"] == "admitted" else ev["admission"].upper()
    lines = [f"table: {ev['table']}  (admission: {admission}; evaluating error needs no admission, "
             f"predicting does)",
             f"method: {ev['method']} over {ev['points']} points"]
    if ev["failed_observations"]:
        lines.append(f"failed observations (no error computed): {len(ev['failed_observations'])}")
    est = ev.get("estimator") or {}
    lines.append("in-domain (points FPM answers; FPM = " + (", ".join(f"{k}: {v}" for k, v in est.items())
                                                          or "interpolation") + "):")
    lines += [errors_line(k, v) for k, v in ev["in_domain"].items()]
    lines.append("out-of-domain (FPM refuses: outside measured domain; nearest point shown for reference only):")
    lines += [errors_line(k, v) for k, v in ev["out_of_domain"].items()]
    lines.append("baselines over all held-out points:")
    lines += [errors_line(k, v) for k, v in ev["all_points"].items()]
    if ev["worst"]:
        lines.append("worst FPM points:")
        for r in ev["worst"]:
            lines.append(f"  {_coords(r['point'])}: observed {r['point']['observed_ms']:.2f} ms, "
                         f"predicted {r['predicted_ms']:.2f} ms, error {r['error_pct']:.3f}%")
    lines.append(f"verdict: {ev['verdict']}")
    if ev.get("selection"):
        lines += selection_lines(ev["selection"])
    return "\n".join(lines)


def system_text(s: dict[str, Any]) -> str:
    """FPM system figures, always with the table, its identity and the measurement boundary."""
    ident = s["identity"]
    lines = [f"table: {s['table']}", _admission_line(ident["admission"]),
             f"identity: {ident['gpu']} / {ident['backend']} {ident['backend_version']} / tp {ident['tp']} ep "
             f"{ident['ep']} dp {ident['dp']} / decoder replay {ident['decoder_replay']} / {ident['modality']}",
             f"boundary: {s['boundary']} (a forward interval of this boundary, not client latency)"]
    a, f = s["answer"], s["figures"]
    if f is None:
        lines.append(f"no FPM figures: {a['tier']}: {a['reason']}")
        return "\n".join(lines)
    ms = lambda v: "-" if v is None else f"{v * 1000:.4f} ms"  # noqa: E731
    lines += [f"forward: {ms(f['forward_s'])}  (tier: {a['tier']}; {a['reason']})",
              f"TTFT: {ms(f['ttft_s'])}", f"ITL: {ms(f['itl_s'])}",
              f"throughput: {f['throughput_tok_s']:.3f} tokens/s ({f['output_tokens']} tokens per forward)"]
    if a["unverified"]:
        lines.append(f"identity fields the table does not record (not checked): {', '.join(a['unverified'])}")
    return "\n".join(lines)


__all__ = ["answer_text", "errors_line", "evaluation_text", "selection_lines", "system_text"]
