"""Plan options shared by every CLI command that builds a plan.

``--prefill N …``, ``--extend PREFIX:NEW …`` (with ``--swa-lost``), ``--decode B:CTX …``,
``--chunk SIZE``, and the policies ``--replay``, ``--replay-cut``, ``--chunk-tail``,
``--encoder-restore``, ``--fusion``, ``--dspark``, ``--tp``, ``--ep``, ``--dp``. An option the
plan would ignore (``--swa-lost`` without ``--extend``, ``--replay-cut paper`` with replay off, …)
is an error naming both options (:func:`refuse_ignored`).

``--decode B:CTX`` is one request standing for a batch of B identical decodes
(``Request.decode(CTX, copies=B)``). With ``symbolic=True`` (the ``formula`` command) a count
may also be one of the symbol names N, B, L, P, S, e.g. ``--prefill N``, ``--decode B:L``,
``--extend P:S``.

>>> import argparse
>>> p = argparse.ArgumentParser()
>>> add_plan_options(p, symbolic=True)
>>> plan = plan_from_args(p.parse_args(["--decode", "B:L"]))
>>> [(r.kind, r.cached, r.copies) for r in plan.requests]
[('decode', L, B)]
"""

from __future__ import annotations

import argparse
from typing import Callable

from .mapping_options import MAPPING_OPTIONS, add_mapping_options, degree  # noqa: F401  (one definition)
from ...algebra import ceildiv, is_symbolic
from ...errors import PlanError
from ...ir.plan import CHUNK_TAILS, DECODER_REPLAY, ENCODER_RESTORE, FUSION_PROFILES, REPLAY_CUTS, Length, Plan, Request
from ...ir.routing import AIC_POWER_LAW_ALPHA, SHARED_OVERLAP, UNIFORM, Routing, parse_routing
from ...model.mapping import MOE_A2A

#: names a count may take in symbolic plans (``formula``); each is ``symbols.length(name)``
SYMBOL_NAMES = ("N", "B", "L", "P", "S")


_SUFFIX = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def token_count(text: str) -> int:
    """Parse a token count: ``4096``, ``128K`` (×1024), ``1M`` (×1,048,576); never negative."""
    raw = text.strip().replace("_", "").replace(",", "")
    scale = _SUFFIX.get(raw[-1:].lower(), 1)
    digits = raw[:-1] if scale != 1 else raw
    if not digits.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a non-negative token count (e.g. 4096, 128K, 1M)")
    return int(digits) * scale


def routing(text: str) -> Routing:
    """Parse ``--routing``: ``uniform``, ``power-law[:ALPHA[:SEED]]`` or a file of per-expert loads."""
    try:
        return parse_routing(text)
    except PlanError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("plan routing: ")) from None


def add_routing_option(g) -> None:
    """``--routing``: one option, one parser (:func:`routing`) for every command that prices MoE layers."""
    g.add_argument("--routing", type=routing, default=UNIFORM, metavar="MODEL",
                   help="expert loads: uniform, power-law[:ALPHA[:SEED]] (AIConfigurator's generator, alpha "
                        f"{AIC_POWER_LAW_ALPHA} by default) or a file of per-expert loads (default: uniform)")


def tokens_at_least(least: int, what: str, why: str):
    """A parser of a token count (:func:`token_count`) of at least ``least``; below it the one-line error says
    ``'TEXT' is not WHAT: WHY``.

    >>> tokens_at_least(2, "an output length", "TPOT needs 2 tokens")("8K")
    8192
    """
    def parse(text: str) -> int:
        v = token_count(text)
        if v < least:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}: {why}")
        return v
    return parse


#: ``--chunk``: a token count of at least 1 (a 0-token chunk would split nothing)
chunk_size = tokens_at_least(1, "a chunk size", "a chunk holds at least 1 token")


def _symbolic_count(text: str) -> Length:
    if text.strip() in SYMBOL_NAMES:
        from ...symbols import length  # sympy: symbolic plans only
        return length(text.strip())
    try:
        return token_count(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither a token count (e.g. 4096, 128K, 1M) nor one of "
                                         f"the symbols {', '.join(SYMBOL_NAMES)}") from None


def _pair_of(count: Callable[[str], Length]) -> Callable[[str], tuple[Length, Length]]:
    def pair(text: str) -> tuple[Length, Length]:
        left, sep, right = text.partition(":")
        if not sep:
            raise argparse.ArgumentTypeError(f"{text!r} must be two counts separated by ':' (e.g. 64:8K)")
        return count(left), count(right)
    return pair


def add_plan_options(p: argparse.ArgumentParser, *, default_prefill: Length | str | None = 8192,
                     symbolic: bool = False, auto_mapping: bool = False) -> None:
    """The plan options on ``p``; ``default_prefill`` may name a symbol (``"N"``), made when a plan needs it;
    ``auto_mapping``: a command that prices a deployment (no mapping given: the smallest that fits)."""
    count = _symbolic_count if symbolic else token_count
    pair = _pair_of(count)
    g = p.add_argument_group("plan")
    g.add_argument("--prefill", action="extend", type=count, nargs="+", default=[], metavar="N",
                   help="uncached prompts of N tokens (e.g. 1 127 128 8K) (default: one prefill of "
                   f"{default_prefill} tokens when no --prefill, --extend or --decode is given)")
    g.add_argument("--extend", action="extend", type=pair, nargs="+", default=[], metavar="PREFIX:NEW",
                   help="NEW tokens after a prefix-cache hit of PREFIX tokens (default: none)")
    g.add_argument("--swa-lost", action="store_true", help="the extends' SWA state was lost (needs "
                   "--encoder-restore bounded)")
    g.add_argument("--decode", action="extend", type=pair, nargs="+", default=[], metavar="B:CTX",
                   help="a batch of B decode requests at context CTX (one request with B copies) (default: none)")
    g.add_argument("--chunk", type=chunk_size, default=None, metavar="SIZE",
                   help="split every prefill into chunks of SIZE tokens (all chunks' forwards are counted) "
                        "(default: no chunking)")
    g.add_argument("--replay", choices=DECODER_REPLAY, default="off", help="decoder bounded replay")
    g.add_argument("--replay-cut", choices=REPLAY_CUTS, default="sglang",
                   help="sglang: tail from max(kv source)+1 = 21; paper: from L/2 = 20")
    g.add_argument("--chunk-tail", choices=CHUNK_TAILS, default="every", help="which chunks get tail processing")
    g.add_argument("--encoder-restore", choices=ENCODER_RESTORE, default="persisted",
                   help="prefix restore when the SWA state is lost")
    g.add_argument("--fusion", choices=FUSION_PROFILES, default=None,
                   help="fusion profile (default: the model family's, single-pass for V4.1, two-pass for V4)")
    g.add_argument("--dspark", action="store_true", help="DSpark drafting on (decode requests draft 5 positions)")
    add_mapping_options(g, auto=auto_mapping, redundant=True)
    add_routing_option(g)
    g.add_argument("--shared-overlap", choices=SHARED_OVERLAP, default="engine",
                   help="the shared expert beside the routed experts (another stream) or after them: engine "
                        "= overlapped in decode, serial in prefill (SGLang's dual stream up to 1,024 tokens, "
                        "AIConfigurator's decode OverlapOp) (default: engine)")
    g.add_argument("--moe-a2a", choices=MOE_A2A, default="deepep",
                   help="the MoE's all-to-all backend under EP (SGLang --moe-a2a-backend): deepep = dispatch "
                        "+ combine then an attention-TP all-gather; none = every GPU sees every token and one "
                        "all-reduce sums the experts' outputs (SGLang's own default) (default: deepep)")
    g.add_argument("--allow-past-max-position", action="store_true",
                   help="accept lengths past the model's max_position_embeddings (extrapolation) "
                        "(default: off)")
    p.set_defaults(default_prefill=default_prefill)


def refuse_ignored(args: argparse.Namespace, prefills: list) -> None:
    """An option the plan would ignore is an error naming it and what it needs (never a silent no-op)."""
    needs = [
        (args.swa_lost and not args.extend, "--swa-lost: needs --extend (it marks the extends' SWA state as lost)"),
        (args.swa_lost and args.encoder_restore != "bounded",
         "--swa-lost: needs --encoder-restore bounded (a persisted restore cannot serve a lost SWA state)"),
        (args.replay == "bounded" and not (prefills or args.extend),
         "--replay bounded: needs --prefill or --extend (decode tokens run every layer; nothing to prune)"),
        (args.chunk is not None and not prefills, "--chunk: needs --prefill (it splits prefills into chunks)"),
        (args.encoder_restore == "bounded" and not (args.extend and args.swa_lost),
         "--encoder-restore bounded: needs --extend with --swa-lost (it restores a lost SWA state; "
         "nothing is lost here)"),
        (args.replay_cut != "sglang" and args.replay != "bounded",
         f"--replay-cut {args.replay_cut}: needs --replay bounded (the cut is where decoder replay starts)"),
        (args.chunk_tail != "every" and (args.replay != "bounded" or args.chunk is None),
         f"--chunk-tail {args.chunk_tail}: needs --replay bounded and --chunk (it picks which chunks run the tail)"),
        (args.dspark and not args.decode, "--dspark: needs --decode (only decode requests draft)"),
    ]
    for ignored, message in needs:
        if ignored:
            raise PlanError(message)


#: chunks a plan may hold, all its prompts together (a 1M-token prompt in chunks of 16 tokens). Why: each
#: chunk is a request of every layer (ir/plan_checks.py MAX_LEDGER_ROWS bounds the rows), and a command
#: over 65,536 chunks takes ~11 s on 2 cores (1M tokens at chunk 16; at chunk 63: ~3 s); counted from the
#: lengths before any request is made
MAX_CHUNKS = 1 << 16


def plan_from_args(args: argparse.Namespace) -> Plan:
    """Build (and validate) the plan the options describe; with no request, a default prefill."""
    requests: list[Request] = []
    prefills = list(args.prefill)
    if not (prefills or args.extend or args.decode) and args.default_prefill is not None:
        default = args.default_prefill
        prefills = [_symbolic_count(default) if isinstance(default, str) else default]
    refuse_ignored(args, prefills)
    if args.chunk:
        for n in prefills:
            if is_symbolic(n):
                raise PlanError(f"--chunk: needs numeric prompt lengths to split, got --prefill {n}")
        chunks = sum(ceildiv(n, args.chunk) for n in prefills)
        if chunks > MAX_CHUNKS:  # bounded before any request is made
            what = (f"a prompt of {prefills[0]:,} tokens" if len(prefills) == 1
                    else f"{len(prefills)} prompts of {sum(prefills):,} tokens")
            raise PlanError(f"--chunk: {what} in chunks of {args.chunk:,} makes {chunks:,} chunks; "
                            f"at most {MAX_CHUNKS:,} in a plan (cli/options/plan_options.py MAX_CHUNKS)")
    for n in prefills:
        if args.chunk:  # each prompt's chunks are one sequence (one cache)
            seq = ("prompt", len(requests))
            requests += [Request.chunk(n, s, min(args.chunk, n - s), seq=seq) for s in range(0, n, args.chunk)]
        else:
            requests.append(Request.prefill(n))
    requests += [Request.extend(p, s, swa_cached=not args.swa_lost) for p, s in args.extend]
    for batch, ctx in args.decode:
        if not is_symbolic(batch) and batch < 1:
            raise PlanError(f"--decode: batch must be >= 1, got {batch} in {batch}:{ctx}")
        requests.append(Request.decode(ctx, copies=batch))
    return Plan(requests, decoder_replay=args.replay, replay_cut=args.replay_cut, chunk_tail=args.chunk_tail,
                encoder_restore=args.encoder_restore, fusion=args.fusion, dspark="on" if args.dspark else "off",
                tp=args.tp or 1, ep=args.ep or 1, dp=args.dp or 1,  # auto: on_mapping places it after
                routing=args.routing, ep_redundant=args.ep_redundant, shared_overlap=args.shared_overlap,
                moe_a2a=args.moe_a2a)


def on_mapping(plan: Plan, mapping) -> Plan:
    """``plan`` on the degrees of ``mapping`` (the deployment :func:`~.mapping_options.resolve_mapping` picked:
    ``choice.mapping``), its requests and other policies as they are.

    >>> from v41graph.model.mapping import Mapping
    >>> plan = on_mapping(Plan([Request.prefill(8)], replay_cut="paper"), Mapping(tp=4, dp=2, ep=8))
    >>> (plan.tp, plan.dp, plan.ep, plan.replay_cut)
    (4, 2, 8, 'paper')
    """
    return plan.with_policies(tp=mapping.tp, ep=mapping.ep, dp=mapping.dp)
