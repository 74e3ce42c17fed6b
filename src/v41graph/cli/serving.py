"""``v41graph simulate | restore | ratios``: serving figures a client sees.

``simulate`` runs Poisson arrivals (or ``--trace FILE``) through a continuous-batching scheduler
whose steps are costed by the compiled graph; ``restore`` prices one prefix hit from a storage
tier; ``ratios`` compares V4.1's caches with V4-Flash's.
"""

from __future__ import annotations

import argparse

from ..costs.hardware import load_hardware
from ..costs.tiers import TIERS
from ..model.config import load_model
from ..workload.arrivals import MAX_OUTPUT_TOKENS, MAX_TRACE_REQUESTS
from .options.checkpoint_options import resolve_checkpoint
from .shared import emit
from .options.cost_options import add_cost_options, add_hardware_option
from .shared import add_overlap_option
from .options.plan_options import add_mapping_options, degree, token_count
from .lists import comma_list


def _rates(text: str) -> tuple[float, ...]:
    error = f"{text!r} is not a comma-separated list of positive rates (finite, e.g. 2,4,8)"
    rates = comma_list(text, float, error=error)
    if any(not 0 < r < float("inf") for r in rates):
        raise argparse.ArgumentTypeError(error)
    return rates


def _probabilities(text: str) -> tuple[float, ...]:
    error = f"{text!r} is not a comma-separated list of probabilities in [0, 1]"
    values = comma_list(text, float, error=error)
    if any(not 0 <= v <= 1 for v in values):
        raise argparse.ArgumentTypeError(error)
    return values


def _positive(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = 0.0
    if not 0 < v < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive finite number of seconds")
    return v


def _step_options(args: argparse.Namespace):
    """What the command line asks of the step costs (:class:`~v41graph.analysis.serving.step_basis.StepOptions`)."""
    from ..analysis.serving.step_basis import StepOptions
    return StepOptions(cost=args.cost, transfers=tuple(args.transfers), measured_root=args.measured_root,
                       fpm_table=args.fpm_table, replay=args.fpm_replay, allow_unadmitted=args.allow_unadmitted,
                       estimator=args.estimator, bucket=not args.exact_steps)


def cmd_simulate(args: argparse.Namespace) -> None:
    from ..analysis.serving.simulate import Scheduler
    from ..analysis.serving.simulate_answer import (serving_check_answer, simulate_answer, simulate_window,
                                                    simulate_workload)
    from ..analysis.serving.step_basis import choose_step_basis
    from ..render.text.serving_text import simulate_text
    from .options.mapping_options import print_priced, resolve_mapping
    hardware = load_hardware(args.hardware)
    ran = resolve_checkpoint(args, hardware, load_model(args.model))  # the checkpoint the GPU runs
    model = ran.model
    trace, duration = simulate_window(args.trace, requests=args.trace_requests, duration=args.duration,
                                      rates=args.rate, output=args.output)
    choice = resolve_mapping(args, model, hardware, simulate_workload(args.prompt, args.output))
    step = choose_step_basis(model, hardware, choice.mapping, _step_options(args), disagg=args.disagg)
    if args.serving_check:
        from ..render.text.fpm_serving import serving_check_text
        answer = serving_check_answer(step, choice, overlap=not args.disable_overlap_schedule,
                                      checkpoints=ran.checkpoints)
        return print_priced(args, answer, serving_check_text)
    sched = Scheduler(args.max_prefill_tokens, args.chunked_prefill_size, args.max_running_requests, args.mixed,
                      overlap=not args.disable_overlap_schedule)
    answer = simulate_answer(model, hardware, choice, step, rates=args.rate, prompt=args.prompt, output=args.output,
                             duration=duration, seed=args.seed, scheduler=sched, trace=trace,
                             bucket=not args.exact_steps, disagg=args.disagg, prefill_tp=args.prefill_tp,
                             prefill_ep=args.prefill_ep, dspark=args.dspark_acceptance, checkpoints=ran.checkpoints)
    print_priced(args, answer, simulate_text)


def cmd_restore(args: argparse.Namespace) -> None:
    from ..analysis.serving.serving_summary import restore_summary
    from ..render.text.serving_text import restore_text
    hardware = load_hardware(args.hardware)
    ran = resolve_checkpoint(args, hardware, load_model(args.model))
    emit(args, restore_summary(ran.model, hardware, prefix=args.prefix, suffix=args.suffix, tier=args.tier,
                               swa_cached=args.swa == "kept", tp=args.tp, ep=args.ep, dp=args.dp), restore_text,
         ran.checkpoints)


def cmd_ratios(args: argparse.Namespace) -> None:
    from ..analysis.serving.serving_summary import ratios_summary
    from ..render.text.serving_text import ratios_text
    emit(args, ratios_summary(load_model(args.model), load_model(args.against), args.context), ratios_text)


def _mapping(p, auto: bool = False) -> None:
    add_hardware_option(p, "GPU the engine runs on")
    add_mapping_options(p, auto=auto)


def add_serving_parsers(sub, common) -> None:
    p = sub.add_parser("simulate", parents=[common], help="serving simulation: TTFT/ITL percentiles and "
                       "throughput per arrival rate")
    p.add_argument("--rate", type=_rates, default=(2.0,), help="arrival rates per second, comma-separated "
                   "(default: 2)")
    p.add_argument("--prompt", type=token_count, default=4096, help="prompt tokens per request (default: 4096)")
    p.add_argument("--output", type=token_count, default=256, help="output tokens per request (default: 256)")
    p.add_argument("--duration", type=_positive, default=None, help="arrival window and throughput window "
                   "in seconds (default: 600; with --trace the whole trace); with --trace, when given, only the rows "
                   "with t < DURATION are "
                   "replayed and reading stops at the first row past it (not given: every row, window 600 s)")
    p.add_argument("--seed", type=int, default=1, help="numpy seed of the Poisson arrivals (default: 1)")
    p.add_argument("--trace", default=None, help="CSV trace t,prompt,output[,hit,swa_cached,tier] (or the "
                   "Azure arrived_at,num_prefill_tokens,num_decode_tokens) instead of Poisson arrivals, read "
                   f"row by row; at most {MAX_TRACE_REQUESTS:,} requests and {MAX_OUTPUT_TOKENS:,} output "
                   "tokens are replayed (27-40 s, 2.4 GB on the Azure conv trace): a longer trace is refused, cut it "
                   "with --trace-requests or --duration")
    p.add_argument("--trace-requests", type=degree, default=None, metavar="N", help="replay the trace's first N "
                   "rows and stop reading there (rows in arrival order; default: every row, up to "
                   f"{MAX_TRACE_REQUESTS:,})")
    _mapping(p, auto=True)
    p.add_argument("--max-prefill-tokens", type=token_count, default=16384, help="token budget of a prefill "
                   "step (default: 16384)")
    p.add_argument("--chunked-prefill-size", type=token_count, default=8192, help="largest chunk of one prompt "
                   "per step (default: 8192)")
    p.add_argument("--max-running-requests", type=degree, default=256, help="running requests (default: 256)")
    p.add_argument("--mixed", action="store_true", help="decode requests join prefill steps (mixed chunk)")
    add_overlap_option(p)
    p.add_argument("--exact-steps", action="store_true", help="cost every step shape exactly (slow) instead "
                   "of rounding decode batches and contexts up to buckets")
    p.add_argument("--disagg", action="store_true", help="prefill and decode on separate instances; the KV "
                   "crosses the NIC (TTFT includes it)")
    p.add_argument("--prefill-tp", type=degree, default=None, help="prefill instance TP (default: --tp)")
    p.add_argument("--prefill-ep", type=degree, default=None, help="prefill instance EP (default: --ep)")
    p.add_argument("--dspark-acceptance", type=_probabilities, default=None, help="DSpark on: per-position "
                   "acceptance of the drafted tokens, comma-separated (e.g. 0.8,0.6,0.4,0.3,0.2); each decode "
                   "step verifies that many and emits 1 + the accepted ones (default: off)")
    add_cost_options(p, {"fpm": "whole-forward measured tables (--fpm-table), inside the measured domain; a step "
                         "outside it is priced on the runtime basis of the same table and counted 'extrapolated'",
                         "runtime": "each step's SOL kernels plus the engine's own cost per forward, fitted to the "
                         "GPU's whole-forward table (--fpm-table; the fit's error and the extrapolated steps stated)"},
                     serving=True)
    from .fpm_serving import add_fpm_serving_options
    add_fpm_serving_options(p)
    p.set_defaults(func=cmd_simulate)
    p = sub.add_parser("restore", parents=[common], help="TTFT of one prefix hit restored from a storage tier")
    p.add_argument("--prefix", type=token_count, required=True, help="cached prefix tokens")
    p.add_argument("--suffix", type=token_count, required=True, help="new tokens after the prefix")
    p.add_argument("--tier", choices=TIERS, default="host_dram", help="where the global KV waits "
                   "(default: host_dram)")
    p.add_argument("--swa", choices=("kept", "lost"), default="lost", help="SWA state of the hit; lost: encoder "
                   "bounded replay (default: lost)")
    _mapping(p)
    p.set_defaults(func=cmd_restore)
    p = sub.add_parser("ratios", parents=[common], help="V4.1 / V4-Flash global KV and persisted-cache ratios")
    p.add_argument("--context", type=token_count, default=1048576, help="tokens (default: 1M = 1,048,576)")
    p.add_argument("--against", default="deepseek-v4-flash", help="the model compared with "
                   "(default: deepseek-v4-flash)")
    p.set_defaults(func=cmd_ratios)
