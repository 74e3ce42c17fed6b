"""Speed and picks of ``v41graph deploy`` on the issue-35 question, beside AIConfigurator's ``cli default``
when it is installed, and the simulator's rate on the Azure conversation trace.

The question: DeepSeek-V4-Flash on 8 × h200_sxm, ISL 4000, OSL 1000, TTFT 1 s, TPOT 50 ms and 20 ms, on the
default basis (hybrid: measured kernel tables cover h200_sxm) and the checkpoint h200 runs (FP8 experts) —
exactly the command a user types, run as a child process, so its CPU time (``getrusage`` of the children:
user + system) and peak memory are the command's own. Also ``--gpus 1000`` (the guard rail: an answer within
60 s and 2 GB). AIConfigurator 0.12's ``aiconfigurator cli default`` for the same question runs in the same
way when its CLI is found (``$AICONFIGURATOR``, a path — it pins its own dependencies, so it may live in a venv
of its own: ``python -m venv aic && aic/bin/pip install aiconfigurator==0.12.0`` — else ``aiconfigurator`` on
PATH); without it the bench says so and skips it.

Run: ``python benchmarks/bench_deploy.py [--write-doc] [--simulate]``. Prints one line per run: wall, CPU, peak
memory and the picks (tokens/s per GPU, analytic and simulated, and the winner); asserts nothing (tests never
depend on time). ``--write-doc`` records the runs, with the machine and date, in benchmarks/bench_deploy.json and
rewrites docs/deploy.md's two generated tables (side by side, speed) and its stamp from that record;
tests/test_docs_from_scripts.py regenerates the tables from the record and fails when the doc drifts.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import STAMP, replace_block, run_record, stamp  # noqa: E402

TRACE = HERE.parents[1] / "shared/data/traces/azure-llm-2023/conv.csv"
RECORD, DOC = HERE / "bench_deploy.json", HERE.parent / "docs" / "deploy.md"
SIDE_BEGIN, SIDE_END = "<!-- bench_deploy: side by side -->", "<!-- bench_deploy: end side by side -->"
#: runs of each 8-GPU question (their median is the figure); AIConfigurator's minute-long runs and the 1,000-GPU
#: guard rail once each
REPEAT = 3
SPEED_BEGIN, SPEED_END = "<!-- bench_deploy: speed -->", "<!-- bench_deploy: end speed -->"
QUESTION = ["--model", "deepseek-v4-flash", "--hardware", "h200_sxm", "--isl", "4000", "--osl", "1000",
            "--ttft", "1s"]
AIC_MODEL = "sgl-project/DeepSeek-V4-Flash-FP8"


def _child(argv: list[str]) -> tuple[subprocess.CompletedProcess, float, float, int]:
    """(the run, wall s, CPU s of the child: user + system, its peak resident set in bytes)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    w = time.perf_counter()
    run = subprocess.run(argv, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - w
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return run, wall, cpu, after.ru_maxrss * 1024  # ru_maxrss: the largest child so far, in KiB on Linux


def _picks(data: dict) -> dict:
    """Each mode's pick (label, tokens/s per GPU analytic and simulated) and the winner, from deploy's JSON."""
    picks = {}
    for mode in ("aggregated", "disaggregated"):
        p = data["picks"].get(mode)
        picks[mode] = None if p is None else {
            "label": p["label"], "analytic": round(p["analytic"]["tokens_per_s_per_gpu"], 1),
            "simulated": round(p["simulated"]["tokens_per_s_per_gpu"], 1)}
    winner = data.get("winner")
    return {"picks": picks, "winner": winner["mode"] if winner else None}


def _picks_text(run: dict) -> str:
    out = [f"{mode}: none" if p is None else
           f"{mode}: {p['label']} {p['analytic']:,.0f} analytic / {p['simulated']:,.0f} simulated tok/s/GPU"
           for mode, p in run["picks"].items()]
    return "; ".join(out) + (f"; winner {run['winner']}" if run["winner"] else "; no winner")


def deploy(gpus: int, tpot: str, repeat: int = 1) -> dict:
    """``v41graph deploy`` as a user types it, ``repeat`` times: the median wall and CPU, the largest peak, the picks
    (printed, and returned for the record; each run's CPU in ``cpu_s_runs``: one machine's speed drifts by
    10–20 % within minutes, so one run is not a figure)."""
    samples = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            argv = [sys.executable, "-m", "v41graph.cli", "deploy", *QUESTION, "--gpus", str(gpus), "--tpot", tpot,
                    "--json", "-o", os.path.join(tmp, "out")]
            samples.append(_child(argv))
    run = samples[0][0]
    wall, cpu = (statistics.median(s[i] for s in samples) for i in (1, 2))
    rss = max(s[3] for s in samples)
    head = f"v41graph deploy {gpus} × h200_sxm, TPOT {tpot} (default basis" + \
        (f", median of {repeat})" if repeat > 1 else ")")
    timing = {"gpus": gpus, "tpot": tpot, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
              "cpu_s_runs": [round(s[2], 1) for s in samples], "peak_gib": round(rss / 2**30, 2),
              "exit": run.returncode}
    if run.returncode not in (0, 2) or not run.stdout.strip():
        print(f"{head}: exit {run.returncode}, {wall:.1f} s wall, {cpu:.1f} s CPU; {run.stderr.strip()[-300:]}")
        return {**timing, "picks": {}, "winner": None}
    data = json.loads(run.stdout)
    result = {**timing, "basis": data["basis"]["name"], **_picks(data)}
    if any(_picks(json.loads(s[0].stdout)) != _picks(data) for s in samples[1:]):
        print(f"{head}: the runs' picks differ (they must not: same inputs, same answer)")
    print(f"{head}: {wall:.1f} s wall, {cpu:.1f} s CPU, peak {rss / 2**30:.2f} GiB, basis {result['basis']}; "
          f"{_picks_text(result)}")
    return result


def _aic_cli() -> str | None:
    """AIConfigurator's CLI: ``$AICONFIGURATOR`` (a path: it may live in a venv of its own, since it pins its own
    dependencies), else ``aiconfigurator`` on PATH."""
    return os.environ.get("AICONFIGURATOR") or shutil.which("aiconfigurator")


def _aic_best(stdout: str) -> dict[str, dict]:
    """Each mode's rank-1 row of AIConfigurator's "Top Configurations" tables: tokens/s per GPU and the engines."""
    best, mode = {}, None
    for line in stdout.splitlines():
        if "Top Configurations" in line:
            mode = {"agg": "aggregated", "disagg": "disaggregated"}.get(line.split()[0])
        elif mode and line.startswith("|  1 "):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            best[mode] = {"tokens_per_s_per_gpu": float(cells[2]),
                          "engines": " + ".join(c for c in cells if "pp" in c and "tp" in c)}
            mode = None
    return best


def aiconfigurator(tpot_ms: int) -> dict | None:
    """AIConfigurator's ``cli default`` on the same question, when its CLI is found (None otherwise)."""
    cli = _aic_cli()
    if cli is None:
        print("AIConfigurator cli default: skipped — its CLI (the aiconfigurator package) is not installed; set "
              "AICONFIGURATOR to its path")
        return None
    argv = [cli, "cli", "default", "--model-path", AIC_MODEL, "--system", "h200_sxm", "--backend", "sglang",
            "--total-gpus", "8", "--isl", "4000", "--osl", "1000", "--ttft", "1000", "--tpot", str(tpot_ms)]
    with tempfile.TemporaryDirectory() as tmp:
        run, wall, cpu, rss = _child([*argv, "--save-dir", tmp])
    best = _aic_best(run.stdout)
    figures = "; ".join(f"{mode}: {b['tokens_per_s_per_gpu']:,.0f} tok/s/GPU ({b['engines']})"
                        for mode, b in best.items()) or run.stdout.strip()[-300:]
    print(f"AIConfigurator cli default, TPOT {tpot_ms} ms: exit {run.returncode}, {wall:.1f} s wall, {cpu:.1f} s "
          f"CPU, peak {rss / 2**30:.2f} GiB; {figures}")
    return {"tpot": f"{tpot_ms}ms", "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "peak_gib": round(rss / 2**30, 2), "exit": run.returncode, "best": best}


def simulate_rate(basis: str, requests: int = 5000) -> None:
    """Cold: a fresh coster (every step shape compiled during the run, as ``simulate --trace`` does);
    warm: the same run again on the same coster (every shape compiled: the event loop alone)."""
    from v41graph import load_model
    from v41graph.analysis.deploy.deploy_check import check_aggregated
    from v41graph.analysis.deploy.deploy_price import Costers
    from v41graph.analysis.deploy.deploy_space import EngineMapping, Instance
    from v41graph.costs.hardware import load_hardware
    from v41graph.costs.measured.tiers import TRANSFERS, CostMode
    from v41graph.workload.arrivals import read_trace
    if not TRACE.is_file():
        print(f"simulate: no trace at {TRACE}; skipped")
        return
    arrivals = sorted(read_trace(TRACE), key=lambda a: a.t)[:requests]
    cost = None if basis == "sol" else CostMode(basis, TRANSFERS, None)
    costers = Costers(load_model("deepseek-v4-flash"), load_hardware("h200_sxm"), cost)
    inst = Instance(EngineMapping(8, 1, 8), 256, 8192)
    walls = []
    for _ in ("cold", "warm"):
        w = time.perf_counter()
        check_aggregated(costers, inst, 1, arrivals, 90)
        walls.append(time.perf_counter() - w)
    print(f"simulate conversation trace, first {len(arrivals):,} requests, TP8/EP8 ({basis}): cold {walls[0]:.1f} s "
          f"wall = {len(arrivals) / walls[0]:,.0f} simulated requests per wall-second ({costers.compiled} step shapes "
          f"compiled); warm {walls[1]:.1f} s = {len(arrivals) / walls[1]:,.0f}/s")


SHORT = {"aggregated": "agg", "disaggregated": "disagg"}


def _label(pick: dict | None) -> str:
    return "none" if pick is None else f"{pick['analytic']:,.0f} / {pick['simulated']:,.0f} ({pick['label']})"


def side_by_side(record: dict) -> str:
    """The doc's table of both tools' best tokens/s per GPU per mode and TPOT, from the record."""
    ours = {r["tpot"]: r for r in record["v41graph"] if r["gpus"] == 8}
    theirs = {r["tpot"]: r for r in record["aiconfigurator"]}
    rows = ["| best tokens/s per GPU at the SLA | v41graph (analytic / simulated) | AIConfigurator 0.12 "
            "| ratio (simulated / AIC) |", "|---|---|---|---|"]
    for tpot in ("50ms", "20ms"):
        for mode in ("aggregated", "disaggregated"):
            pick, aic = ours[tpot]["picks"].get(mode), theirs.get(tpot, {}).get("best", {}).get(mode)
            ratio = f"{pick['simulated'] / aic['tokens_per_s_per_gpu']:.2f}" if pick and aic else "—"
            their = f"{aic['tokens_per_s_per_gpu']:,.0f} ({aic['engines']})" if aic else "—"
            rows.append(f"| TPOT {tpot[:-2]} ms, {mode} | {_label(pick)} | {their} | {ratio} |")
        best = theirs.get(tpot, {}).get("best", {})
        their_winner = max(best, key=lambda m: best[m]["tokens_per_s_per_gpu"]) if best else "—"
        rows.append(f"| TPOT {tpot[:-2]} ms, winner | {ours[tpot]['winner'] or 'none'} | {their_winner} | |")
    return "\n".join(rows)


def speed(record: dict) -> str:
    """The doc's speed table: every run of the record, as a user types it, with its CPU and memory."""
    rows = ["| run (8 × h200_sxm unless said; V4-Flash FP8, ISL 4000 / OSL 1000, TTFT 1 s) | wall | CPU "
            "| CPU against AIConfigurator's, same question, same run | peak memory "
            "| picks (tokens/s per GPU, analytic / simulated) |", "|---|---|---|---|---|---|"]
    theirs = {r["tpot"]: r["cpu_s"] for r in record["aiconfigurator"]}
    for r in record["v41graph"]:
        what = f"v41graph deploy, TPOT {r['tpot'][:-2]} ms" + (f", `--gpus {r['gpus']}`" if r["gpus"] != 8 else "")
        runs = r.get("cpu_s_runs", [r["cpu_s"]])
        if len(runs) > 1:
            what += f" (median of {len(runs)} runs: CPU {', '.join(f'{c:.1f}' for c in runs)} s)"
        share = f"1/{theirs[r['tpot']] / r['cpu_s']:.1f}" if r["gpus"] == 8 and r["tpot"] in theirs else "—"
        picks = "; ".join(f"{SHORT[m]} {_label(p)}" for m, p in r["picks"].items())
        rows.append(f"| {what} | {r['wall_s']:.1f} s | {r['cpu_s']:.1f} s | {share} | {r['peak_gib']:.2f} GiB "
                    f"| {picks} |")
    for r in record["aiconfigurator"]:
        picks = "; ".join(f"{SHORT[m]} {b['tokens_per_s_per_gpu']:,.0f} ({b['engines']})" for m, b in r["best"].items())
        rows.append(f"| AIConfigurator `cli default`, TPOT {r['tpot'][:-2]} ms | {r['wall_s']:.1f} s | "
                    f"{r['cpu_s']:.1f} s | 1 | {r['peak_gib']:.2f} GiB | {picks} |")
    return "\n".join(rows)


def generate(text: str, record: dict, stamp_line: str) -> str:
    """docs/deploy.md with its generated blocks (and its stamp) rewritten from ``record``."""
    text = replace_block(text, SIDE_BEGIN, SIDE_END, side_by_side(record))
    text = replace_block(text, SPEED_BEGIN, SPEED_END, speed(record))
    return STAMP.sub(stamp_line, text, count=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-doc", action="store_true",
                        help="record the runs in benchmarks/bench_deploy.json and rewrite docs/deploy.md's tables")
    parser.add_argument("--simulate", action="store_true", help="also time the simulator on the conversation trace")
    args = parser.parse_args(argv)
    print(time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), f"{os.cpu_count()} CPUs", sys.platform)
    record = {"run": run_record(), "v41graph": [deploy(8, "50ms", REPEAT), deploy(8, "20ms", REPEAT)],
              "aiconfigurator": []}
    for tpot_ms in (50, 20):
        aic = aiconfigurator(tpot_ms)
        if aic is not None:
            record["aiconfigurator"].append(aic)
    record["v41graph"].append(deploy(1000, "50ms"))
    if args.simulate:
        simulate_rate("sol")
        simulate_rate("hybrid")
    if args.write_doc:
        RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        DOC.write_text(generate(DOC.read_text(encoding="utf-8"), record, stamp("benchmarks/bench_deploy.py")),
                       encoding="utf-8")
        print(f"wrote {DOC.relative_to(HERE.parent)} and {RECORD.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
