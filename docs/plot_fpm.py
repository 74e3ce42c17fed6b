"""Draw docs/fpm-gb200.png: observed vs SOL vs FPM (leave-one-out) over the GB200 calibration points.

Needs matplotlib (``pip install matplotlib``); v41graph itself does not depend on it.

    python docs/plot_fpm.py            # writes docs/fpm-gb200.png next to this script

It also prints the figures docs/fpm.md quotes (SOL share of the observed time, LOO errors).
"""

from __future__ import annotations

import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from v41graph.analysis.forwards.fpm_reference import sol_reference  # noqa: E402
from v41graph.costs.fpm.evaluate import evaluate  # noqa: E402
from v41graph.costs.fpm.predict import Query  # noqa: E402
from v41graph.costs.fpm.load import load_table  # noqa: E402

OUT = Path(__file__).with_name("fpm-gb200.png")


def main() -> None:
    table = load_table("aisimulate-gb200-calibration-v1")
    ev = evaluate(table)
    sol = sol_reference(table.identity)
    rows = sorted(ev.rows, key=lambda r: r.point.key)
    x = range(len(rows))
    observed = [r.point.observed_ms for r in rows]
    sol_ms = [sol(Query.of(r.point)) for r in rows]
    fpm = [r.answer.predicted_ms for r in rows]
    below = [100 * (1 - s / y) for s, y in zip(sol_ms, observed)]
    print(f"SOL below observed: min {min(below):.2f}%, mean {statistics.fmean(below):.2f}%, max {max(below):.2f}%")
    print(f"SOL range {min(sol_ms):.3f}..{max(sol_ms):.3f} ms; observed {min(observed):.1f}..{max(observed):.1f} ms")
    print(ev.verdict)

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 7.5), sharex=True, height_ratios=(3, 2))
    top.semilogy(x, observed, "o", ms=4, color="black", label="observed (GB200, vLLM, TP4; one sample each)")
    top.semilogy(x, sol_ms, "s", ms=3, color="tab:blue", label="SOL (v41graph, same shape, gb200, tp 4)")
    inside = [(i, v) for i, v in zip(x, fpm) if v is not None]
    top.semilogy([i for i, _ in inside], [v for _, v in inside], "x", ms=5, color="tab:red",
                 label="FPM leave-one-out (in-domain points only)")
    top.set_ylabel("forward time (ms, log)")
    top.legend(loc="center left", fontsize=8)
    top.set_title("GB200 calibration-v1 (historical, NOT admitted): observed vs SOL vs FPM")
    err_fpm = [(i, r.error_pct) for i, r in zip(x, rows) if r.error_pct is not None]
    err_phase = [abs(r.baselines["per-phase mean"] - r.point.observed_ms) / r.point.observed_ms * 100 for r in rows]
    bottom.plot(x, err_phase, "o", ms=3, color="tab:gray", label="per-phase mean, leave-one-out")
    bottom.plot([i for i, _ in err_fpm], [e for _, e in err_fpm], "x", ms=5, color="tab:red",
                label="FPM, leave-one-out")
    bottom.set_ylabel("|error| (%)")
    first_prefill = next(i for i, r in zip(x, rows) if r.point.phase == "prefill")
    for ax in (top, bottom):
        ax.axvline(first_prefill - 0.5, color="gray", lw=0.8, ls="--")
    bottom.set_xlabel(f"calibration point (decode 0–{first_prefill - 1}, prefill {first_prefill}–{len(rows) - 1}; "
                      "sorted by batch, new tokens, past KV)")
    bottom.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(OUT, dpi=110, metadata={"Software": None})  # no version stamp: same inputs, same bytes
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
