"""``v41graph fpm``: whole-forward measured tables — predict a shape, evaluate error, system figures.

TABLE is a built-in name (``aisimulate-gb200-calibration-v1``, ``aisimulate-gb300-off-v1``,
``aisimulate-gb300-on-v1``) or a folder (the plain layout ``identity.json`` + ``points.csv``, or
an AISimulate FPM folder). A table that is not admitted for prediction refuses ``predict``
unless ``--allow-unadmitted`` is given; ``evaluate`` never needs it (it only measures error).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..costs.fpm.load import BUILTIN, load_table, read_points_csv
from ..costs.fpm.table import TableError
from ..ir.plan import DECODER_REPLAY
from .options.plan_options import add_plan_options, plan_from_args
from .options.cost_options import add_hardware_option


def _print(args: argparse.Namespace, answer, text) -> None:
    """``--json``: the typed answer's ``to_json()``; else its text, from the same record."""
    print(answer.to_json() if args.json else text(answer.to_dict()))


def cmd_fpm_predict(args: argparse.Namespace) -> None:
    from ..analysis.forwards.fpm_answers import predict_answer
    from ..render.text.fpm_text import answer_text
    from ..costs.fpm.predict import Query, refuse_unadmitted
    from ..model.config import load_model
    table = load_table(args.table)
    refuse_unadmitted(table, args.allow_unadmitted)  # before the query is read, as before any work
    query = Query.make(args.phase, args.batch, args.new_tokens, past_kv=args.past_kv)
    answer = predict_answer(load_model(args.model), table, query, replay=args.replay,
                            allow_unadmitted=args.allow_unadmitted, sol_reference=args.sol_reference,
                            sol_fallback=args.sol_fallback, estimator=args.estimator)
    _print(args, answer, answer_text)


def cmd_fpm_evaluate(args: argparse.Namespace) -> None:
    from ..analysis.forwards.fpm_answers import evaluate_answer
    from ..render.text.fpm_text import evaluation_text
    from ..model.config import load_model
    table = load_table(args.table)
    holdout = None
    if args.holdout is not None:
        path = Path(args.holdout)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise TableError(f"fpm evaluate --holdout: no such file {str(path)!r}") from None
        except OSError as exc:  # a folder, or unreadable: say so, not "no such file"
            raise TableError(f"fpm evaluate --holdout: cannot read {str(path)!r}: {exc.strerror or exc}") from None
        holdout, _ = read_points_csv(text, str(path))
    answer = evaluate_answer(load_model(args.model), table, holdout, holdout_name=args.holdout,
                             sol_reference=args.sol_reference, estimator=args.estimator)
    _print(args, answer, evaluation_text)


def cmd_fpm_system(args: argparse.Namespace) -> None:
    """System figures of the plan on the table's own deployment (its runtime), on ``--hardware``."""
    from ..analysis.forwards.fpm_answers import system_answer, system_gpu
    from ..render.text.fpm_text import system_text
    table = load_table(args.table)
    gpu = system_gpu(table, args.hardware)  # before the plan is read, as before any work
    answer = system_answer(table, plan_from_args(args), gpu, allow_unadmitted=args.allow_unadmitted)
    _print(args, answer, system_text)  # the figures, typed (no basis: the table's own)


def cmd_fpm_gap(args: argparse.Namespace) -> None:
    """Measured vs SOL (and hybrid with --hybrid) at every point of each table."""
    from ..analysis.forwards.fpm_answers import GapAnswer, table_gap
    from ..model.config import load_model
    from ..render.text.fpm_gap_text import gap_text, plot_gap
    model = load_model(args.model)
    gaps = [table_gap(model, load_table(name), hybrid=args.hybrid) for name in args.table]
    message = plot_gap(gaps, args.plot) if args.plot else None
    if args.json:
        print(GapAnswer(tuple(gaps), message).to_json())
        return
    print("\n\n".join(gap_text(g) for g in gaps))
    if message:
        print(message)


def _estimator_option(p: argparse.ArgumentParser) -> None:
    from ..costs.fpm.estimators import CANDIDATES
    p.add_argument("--estimator", choices=("chosen",) + CANDIDATES, default="chosen",
                   help="how an in-domain query that is not a measured point is valued (default: chosen, "
                   "the candidate with the lowest leave-one-out MAPE in the query's phase)")


def add_fpm_parser(sub, common: argparse.ArgumentParser) -> None:
    """Register ``fpm predict | evaluate | system | gap`` under ``sub`` (the top-level subparsers)."""
    fpm = sub.add_parser("fpm", help="whole-forward measured (FPM) tables: predict, evaluate, system, gap")
    fsub = fpm.add_subparsers(dest="fpm_command", required=True, parser_class=type(fpm))
    table_help = f"built-in table ({', '.join(BUILTIN)}) or a folder"
    sol_help = "interpolate observed − SOL and add the query's SOL back (schedules each point; slower)"
    p = fsub.add_parser("predict", parents=[common], help="one whole-forward prediction with its tier")
    p.add_argument("table", metavar="TABLE", help=table_help)
    p.add_argument("--phase", choices=("prefill", "decode"), required=True)
    p.add_argument("--batch", type=int, required=True, help="requests in the batch")
    p.add_argument("--new-tokens", type=int, default=None,
                   help="prefill tokens summed over requests (decode: one per request, the default)")
    p.add_argument("--past-kv", type=int, required=True, help="past KV summed over requests, current query excluded")
    p.add_argument("--allow-unadmitted", action="store_true",
                   help="use a table that is not admitted for prediction (every answer says so)")
    p.add_argument("--replay", choices=DECODER_REPLAY, default=None,
                   help="the query's decoder replay policy (default: the table's)")
    p.add_argument("--sol-reference", action="store_true", help=sol_help)
    _estimator_option(p)
    p.add_argument("--sol-fallback", action="store_true", help="outside the measured domain answer SOL, flagged as "
                   "tier 'sol' (a lower bound, not a measurement)")
    p.set_defaults(func=cmd_fpm_predict)
    p = fsub.add_parser("evaluate", parents=[common], help="held-out error (leave-one-out without --holdout) "
                        "beside the table-mean and per-phase-mean baselines")
    p.add_argument("table", metavar="TABLE", help=table_help)
    p.add_argument("--holdout", default=None, metavar="CSV", help="phase,batch_size,total_prefill_tokens,"
                   "total_kv_read_tokens,observed_ms (extra columns ignored)")
    p.add_argument("--sol-reference", action="store_true", help=sol_help)
    _estimator_option(p)
    p.set_defaults(func=cmd_fpm_evaluate)
    p = fsub.add_parser("system", parents=[common], help="TTFT / ITL / throughput of a plan from the table's "
                        "forward times, on the table's own deployment (plan policies and GPU are checked)")
    p.add_argument("table", metavar="TABLE", help=table_help)
    add_plan_options(p, default_prefill=None)
    # the table's measured forwards are its own checkpoint's: no --checkpoint to choose
    add_hardware_option(p, "GPU the plan runs on", default=None, default_text="the table's", checkpoint=False)
    p.add_argument("--allow-unadmitted", action="store_true", help="use a table not admitted for prediction")
    p.set_defaults(func=cmd_fpm_system)
    p = fsub.add_parser("gap", parents=[common], help="the SOL gap: measured forward time vs v41graph's SOL "
                        "of the same shape, per phase and batch (efficiency, elasticity)")
    p.add_argument("table", metavar="TABLE", nargs="+", help=table_help)
    p.add_argument("--hybrid", action="store_true", help="also the hybrid time of every shape (slow: "
                   "about 16 s per shape on a laptop-class CPU)")
    p.add_argument("--plot", default=None, metavar="FILE", help="write the plot (.png or .svg; extra "
                   "v41graph[plot])")
    p.set_defaults(func=cmd_fpm_gap)


__all__ = ["add_fpm_parser"]
