"""``v41graph deploy``: which deployment meets my SLA on N GPUs (analysis/deploy/deploy_search.py).

Like every serving answer it takes the most realistic basis that covers the hardware by default
(:func:`~v41graph.cli.options.cost_options.serving_cost_mode`): hybrid where the measured kernel tables cover
the GPU (h200_sxm, b200, gb200, gb300), else SOL; ``--cost sol`` prices on SOL. Off SOL each pick
also carries its analytic figures on SOL beside the forecast, as a ratio (the picks only: the
search itself is priced once).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

from ..costs.hardware import load_hardware
from ..model.config import load_model
from ..analysis.deploy.deploy_space import CAPS, CHUNKS
from ..workload.arrivals import MAX_TRACE_REQUESTS
from .options.checkpoint_options import checkpoint_lines, resolve_checkpoint
from .options.cost_options import add_cost_options, add_hardware_option, serving_cost_mode
from .out_folder import check_folder, output_folder
from .options.plan_options import add_routing_option, degree, tokens_at_least
from .shared import add_overlap_option

_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
#: the repository root: a trace path may be given relative to it or to its parent (``../shared/…``)
ROOT = Path(__file__).resolve().parents[3]


def duration(text: str) -> float:
    """``1s``, ``50ms``, ``0.5s``, ``800us`` → seconds (a unit is required: AIConfigurator takes ms, SLAs say s)."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(s|ms|us)\s*", text)
    if not m or float(m.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive duration with a unit (e.g. 1s, 50ms)")
    return float(m.group(1)) * _UNITS[m.group(2)]


def _positive(text: str) -> float:
    """A positive finite number (a rate): ``inf`` and ``nan`` are refused, as no deployment carries them."""
    try:
        v = float(text)
    except ValueError:
        v = -1.0
    if not (v > 0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive finite number")
    return v


#: ``--isl``: at least 1 token (a prompt of no token has no first token); ``--osl``: at least 2 (TPOT is the
#: time between a request's tokens: one token has none)
_isl = tokens_at_least(1, "a prompt length", "a prompt holds at least 1 token")
_osl = tokens_at_least(2, "an output length deploy can rank", "TPOT needs at least 2 output tokens")


def _percentile(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = -1.0
    if not 0 < v < 100:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentile in (0, 100) (e.g. 90)")
    return v


def trace_path(text: str) -> Path:
    """The trace as given, else relative to the repository root, else to its parent (``shared/…``)."""
    for p in (Path(text), ROOT / text, ROOT.parent / text, ROOT.parent / text.lstrip("./").removeprefix("../")):
        if p.is_file():
            return p
    raise argparse.ArgumentTypeError(f"--trace {text!r}: no such file (looked here, under {ROOT} and {ROOT.parent})")


def _words(text: str) -> tuple[str, ...]:
    return tuple(w.strip() for w in text.split(",") if w.strip())


def _counts(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(w) for w in _words(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma list of whole numbers (e.g. 0,3)") from None


def _sizes(text: str) -> tuple[int, ...]:
    """A comma list of whole numbers ≥ 1 (caps, chunk sizes), sorted and without repeats."""
    try:
        values = tuple(int(w) for w in _words(text))
    except ValueError:
        values = ()
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma list of whole numbers >= 1 (e.g. 2048,4096)")
    return tuple(sorted(set(values)))


def _rows(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        v = -1
    if v < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of rows >= 0 (0: all)")
    return v


#: every name ``deploy`` writes: a folder holding only these is an earlier deploy's, replaced whole
DEPLOY_FILES = ("deploy.json", "candidates.csv", "deploy.html", "pareto.png")


def cmd_deploy(args: argparse.Namespace) -> None:
    from ..analysis.basis import basis_line
    from ..analysis.deploy.deploy_typed import deploy_answer, deploy_question, deploy_trace
    from ..render.text.deploy_text import deploy_csv, deploy_text
    from .options.checkpoint_options import shown_checkpoints
    hardware = load_hardware(args.hardware)
    # the checkpoint the GPU runs: its experts' storage is priced, its Hugging Face id is the launch lines' model
    ran = resolve_checkpoint(args, hardware, load_model(args.model))
    model = ran.model
    trace = deploy_trace(args.trace, args.trace_requests or None) if args.trace else None
    q = deploy_question(isl=args.isl, osl=args.osl, ttft_s=args.ttft, tpot_s=args.tpot, gpus=args.gpus, rate=args.rate,
                        tokens_per_s=args.target_tokens_per_s, percentile=args.percentile, requests=args.requests,
                        seed=args.seed, trace=trace)
    check_folder(args.output, DEPLOY_FILES, force=args.force, option="deploy -o")  # before the search, not after
    served = serving_cost_mode(args, hardware.name)
    bar = None
    if sys.stderr.isatty() and not args.json:
        from tqdm import tqdm
        bar = tqdm(desc="deploy", unit="cand", file=sys.stderr)
    axes = {"replay": args.replay, "engram": args.engram, "verify": args.dspark_verify}
    answer = deploy_answer(model, hardware, q, served, trace=trace, max_gpus=args.max_gpus,
                           checkpoints=shown_checkpoints(args, ran.checkpoints), check=args.check, top=args.top,
                           axes=axes, progress=bar.update if bar else None, scheduler=args.scheduler,
                           overlap=not args.disable_overlap_schedule, allow_unlaunchable=args.allow_unlaunchable,
                           routing=args.routing, caps=args.caps, chunks=args.chunks,
                           ep_below_tp=args.ep_below_tp)
    if bar:
        bar.close()
    data, basis = answer.to_dict(), answer.basis
    from ..render.html.result_pages import deploy_page
    out = Path(args.output)
    notes = [f"wrote {out / 'deploy.json'} and {out / 'candidates.csv'} (every candidate, with its reason)",
             f"page: {out / 'deploy.html'} (the picks, the front with the SLA, why the rest were rejected, launch "
             "lines)"]
    with output_folder(out, DEPLOY_FILES, force=args.force, option="deploy -o") as tmp:  # whole, or not at all
        (tmp / "deploy.json").write_text(answer.to_json() + "\n", encoding="utf-8")
        (tmp / "candidates.csv").write_text(deploy_csv(data), encoding="utf-8")
        (tmp / "deploy.html").write_text(deploy_page(data, basis_line(basis)), encoding="utf-8")
        try:
            from ..render.deploy_plot import deploy_pareto
            deploy_pareto(data, tmp / "pareto.png", basis["name"])
            notes.append(f"Pareto plot: {out / 'pareto.png'}")
        except Exception as exc:  # matplotlib absent (extra `plot`): say so, keep the answer
            notes.append(f"no Pareto plot: {exc}")
    if args.json:
        print(answer.to_json())
        return
    print("\n".join([basis_line(basis), *checkpoint_lines(args, ran.checkpoints), deploy_text(data), *notes]))


def add_deploy_parser(sub, common) -> None:
    p = sub.add_parser("deploy", parents=[common], help="which deployment (aggregated or disaggregated) meets "
                       "a TTFT/TPOT SLA on N GPUs, checked by simulation")
    add_hardware_option(p, "GPU of the deployment")
    p.add_argument("--gpus", type=degree, default=None, help="GPU budget (or --rate: the fewest GPUs)")
    p.add_argument("--rate", type=_positive, default=None, help="target request rate (req/s, Poisson): search "
                   "budgets 1, 2, 4, … for the fewest GPUs that serve it within the SLA")
    p.add_argument("--target-tokens-per-s", type=_positive, default=None, help="target output tokens/s: --rate "
                   "= this / OSL")
    p.add_argument("--max-gpus", type=degree, default=64, help="the largest budget --rate climbs to (default: 64)")
    p.add_argument("--isl", type=_isl, default=4000, help="prompt tokens per request (default: 4000)")
    p.add_argument("--osl", type=_osl, default=1000, help="output tokens per request (default: 1000)")
    p.add_argument("--ttft", type=duration, required=True, help="TTFT target at the percentile, e.g. 1s")
    p.add_argument("--tpot", type=duration, required=True, help="TPOT target at the percentile, e.g. 50ms")
    p.add_argument("--percentile", type=_percentile, default=90.0, help="SLA percentile (default: 90)")
    p.add_argument("--trace", type=trace_path, default=None, help="CSV trace (t,prompt,output or the Azure "
                   "arrived_at,num_prefill_tokens,num_decode_tokens) replayed instead of Poisson arrivals; read "
                   "row by row up to --trace-requests")
    p.add_argument("--trace-requests", type=_rows, default=1000, metavar="N", help="the trace's first N rows "
                   f"(in arrival order), and reading stops there; 0: all, up to {MAX_TRACE_REQUESTS:,} (a "
                   "longer trace is refused) (default: 1000)")
    p.add_argument("--requests", type=degree, default=400, help="Poisson requests per simulation check, at least "
                   "(up to 4× for a warm-up of one request lifetime; default: 400)")
    p.add_argument("--check", type=degree, default=2, help="candidates of each mode checked by simulation, "
                   "then ranked on their simulated figures (default: 2)")
    p.add_argument("--top", type=degree, default=5, help="candidates listed per mode (default: 5)")
    p.add_argument("--seed", type=int, default=1, help="numpy seed of the Poisson arrivals (default: 1)")
    p.add_argument("--caps", type=_sizes, default=CAPS, help="concurrency caps searched per engine (SGLang "
                   "--max-running-requests, split over the attention-DP ranks; default: "
                   f"{','.join(map(str, CAPS))})")
    p.add_argument("--chunks", type=_sizes, default=CHUNKS, help="chunked-prefill sizes searched per attention "
                   "rank (SGLang --chunked-prefill-size divided by the attention-DP size; chunks below the prompt "
                   "spread a prefill over mixed steps; default: " f"{','.join(map(str, CHUNKS))})")
    p.add_argument("--ep-below-tp", action="store_true", help="also search EP sizes below each engine's TP "
                   "(--ep-size E, E | T: MoE-TP × EP mixes, on SGLang's default --moe-a2a-backend none; about 1.7× "
                   "the CPU) (default: off: EP 1 or all of the engine's GPUs)")
    p.add_argument("--replay", type=_words, default=None, help="V4.1 decoder replay values searched (off,bounded; "
                   "default: both on V4.1)")
    p.add_argument("--engram", type=_words, default=None, help="V4.1 Engram residency values searched (hbm,host; "
                   "default: hbm; host, which no SGLang flag expresses, only with --allow-unlaunchable)")
    p.add_argument("--allow-unlaunchable", action="store_true", help="also search knob values no engine flag "
                   "expresses (Engram tables in host memory); a pick's launch lines then say what is missing "
                   "(default: off)")
    p.add_argument("--dspark-verify", type=_counts, default=None, help="V4.1 DSpark drafted tokens verified per "
                   "decode step, searched (0 = off … 5; default: 0,3 on V4.1)")
    add_routing_option(p)
    add_overlap_option(p)
    p.add_argument("--scheduler", default=None, metavar="ADDRESS", help="price the candidates on a Dask cluster at "
                   "ADDRESS (tcp://host:8786; extra v41graph[distributed]); the answer is the local one")
    p.add_argument("-o", "--output", default="deploy-out", help="folder for deploy.json, candidates.csv, "
                   "deploy.html and pareto.png, written whole: built in a hidden sibling and renamed into place, "
                   "replacing an earlier deploy's folder there; a folder holding other files is refused (default: "
                   "deploy-out)")
    p.add_argument("--force", action="store_true", help="replace the -o folder whole even when it holds files "
                   "deploy does not write (default: off: such a folder is refused)")
    add_cost_options(p, serving=True)
    p.set_defaults(func=cmd_deploy)
