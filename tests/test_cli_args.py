"""The CLI parses, calls and renders; no command edits its parsed arguments (issue 36, item 5).

What a command's options resolve to (the checkpoint, the deployment, the basis) travels as a
``Resolved`` record (cli/options/resolved.py), never written back on the ``argparse.Namespace``.
Two checks keep it so: every typical command line runs on arguments that refuse any write once
parsed, with the same status and output as the plain run; and no function under src/v41graph/cli
assigns to (or mutates in place) an attribute of a parameter named ``args``.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import os
import reprlib

import pytest

from helpers import ROOT

cli_main = importlib.import_module("v41graph.cli.main")  # the module (the package's `main` is its function)

CLI = ROOT / "src" / "v41graph" / "cli"

#: a typical line of every command that resolves a checkpoint, a deployment or a default (the lines the
#: tests of each command run: test_one_answer.py, test_ask.py, test_serving.py, test_dot.py, test_checkpoints.py)
LINES = [
    "cost", "cost --json --tp 4 --ep 4 --prefill 4096",
    "cost --model deepseek-v4-flash --checkpoint fp4 --fp4-on-hopper",
    "cost --attn-dp 8 --tp 8 --ep 8", "formula sol_time", "formula token_layers --json",
    "formula sol_time --prefill N --at N=131072",
    "compile", "compile --json --tp 2", "dot", "dot --layers 20 --no-costs", "dot --collapse --prefill 512",
    "memory", "memory --model deepseek-v4-flash --hardware b200 --json",
    "ask max-context", "ask max-context --tp 1 --json", "ask compute-bound", "ask crossover --replay off,bounded",
    "ask crossover --model deepseek-v4-flash,deepseek-v4.1-flash --ratio 1.01 --json", "ask derivative --by-op",
    "ask sensitivity", "diff --replay off,bounded --prefill 1024",
    "simulate --rate 1 --duration 20", "simulate --rate 1 --json", "simulate --rate 1 --duration 10 --hardware gb300 "
    "--tp 4 --cost runtime", "restore --prefix 64K --suffix 1K --hardware b200", "dspark --batch 1,8 --json",
    "compare --hardware h200_sxm --hardware b200", "compare --model deepseek-v4.1-flash --model deepseek-v4-flash",
    "report --out rep",
]


class ArgsWritten(AssertionError):
    """A command wrote its parsed arguments."""


class FrozenArgs(argparse.Namespace):
    """An ``argparse.Namespace`` that argparse fills as usual and that refuses every write once frozen."""

    __slots__ = ("_frozen",)  # kept out of vars(args), which the commands may read

    def freeze(self) -> FrozenArgs:
        object.__setattr__(self, "_frozen", True)
        return self

    def __setattr__(self, name, value) -> None:
        if getattr(self, "_frozen", False):
            raise ArgsWritten(f"a command wrote args.{name} = {reprlib.repr(value)} after parsing")
        super().__setattr__(name, value)

    def __delattr__(self, name) -> None:
        if getattr(self, "_frozen", False):
            raise ArgsWritten(f"a command deleted args.{name} after parsing")
        super().__delattr__(name)


def _frozen_parsers(monkeypatch) -> None:
    """``main`` parses into a :class:`FrozenArgs`, frozen before the command runs."""
    build = cli_main.build_parser

    def frozen_parser():
        parser = build()
        parse = parser.parse_args
        parser.parse_args = lambda argv=None: parse(argv, namespace=FrozenArgs()).freeze()
        return parser
    monkeypatch.setattr(cli_main, "build_parser", frozen_parser)


def test_frozen_args_refuse_a_write_after_parsing():
    args = argparse.ArgumentParser().parse_args([], namespace=FrozenArgs())
    args.tp = 8  # still parsing: argparse's own writes pass
    args.freeze()
    with pytest.raises(ArgsWritten, match="args.tp = 4"):
        args.tp = 4
    with pytest.raises(ArgsWritten, match="deleted args.tp"):
        del args.tp
    assert vars(args) == {"tp": 8}


@pytest.mark.parametrize("line", LINES)
def test_every_command_runs_on_arguments_it_never_writes(line, capsys, monkeypatch, tmp_path):
    runs = []
    for frozen in (False, True):
        folder = tmp_path / ("frozen" if frozen else "plain")  # report writes here: the same name in each
        folder.mkdir()
        monkeypatch.chdir(folder)
        if frozen:
            _frozen_parsers(monkeypatch)
        status = cli_main.main(line.split())
        runs.append((status, *capsys.readouterr()))
    assert runs[0][0] == 0, runs[0][2]
    assert runs[1] == runs[0]


#: methods that change a list, dict or set in place
MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "sort", "add", "discard"}


def _on_args(node: ast.AST) -> bool:
    """``node`` is ``args.X`` (any depth: ``args.X.Y``), ``vars(args)`` or ``args.__dict__``."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
        if isinstance(node, ast.Name) and node.id == "args":
            return True
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "vars"
            and any(isinstance(a, ast.Name) and a.id == "args" for a in node.args))


def _targets(node: ast.AST) -> list[ast.AST]:
    """What ``node`` assigns to or deletes (a for loop's or a with block's target included), flattened."""
    if isinstance(node, (ast.Assign, ast.Delete)):
        targets = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)):
        targets = [node.target]
    elif isinstance(node, ast.With):
        targets = [i.optional_vars for i in node.items]
    else:
        return []
    flat = []
    while targets:
        t = targets.pop()
        if isinstance(t, (ast.Tuple, ast.List)):
            targets += t.elts
        elif isinstance(t, ast.Starred):
            targets.append(t.value)
        elif t is not None:
            flat.append(t)
    return flat


def _writing_call(node: ast.AST) -> bool:
    """``setattr``/``delattr`` on ``args``, or an in-place method (:data:`MUTATORS`) on ``args.X``."""
    if not isinstance(node, ast.Call):
        return False
    if isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr"):
        return bool(node.args) and isinstance(node.args[0], ast.Name) and node.args[0].id == "args"
    return isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS and _on_args(node.func.value)


def writes_to_args(source: str, filename: str = "<source>") -> list[str]:
    """``file:line`` of every write to the arguments in ``source``: an assignment (plain, augmented,
    annotated, deleted, unpacked) to ``args.X``, ``setattr``/``delattr`` on ``args``, or an in-place
    method (:data:`MUTATORS`) on ``args.X``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if _writing_call(node) or any(isinstance(t, (ast.Attribute, ast.Subscript)) and _on_args(t)
                                      for t in _targets(node)):
            found.append(f"{filename}:{node.lineno}")
    return sorted(set(found))


def test_the_static_check_finds_each_kind_of_write():
    planted = ("def f(args):\n    args.tp = 1\n    args.a, x = 1, 2\n    args.n += 1\n    setattr(args, 'k', 1)\n"
               "    args.prefill.append(3)\n    vars(args)['k'] = 1\n    del args.tp\n    y = args.tp\n"
               "    args.prefill.index(3)\n")
    assert writes_to_args(planted) == [f"<source>:{n}" for n in range(2, 9)]


def test_no_cli_function_writes_its_args():
    found = []
    for path in sorted(CLI.rglob("*.py")):
        found += writes_to_args(path.read_text(encoding="utf-8"), os.path.relpath(path, ROOT))
    assert found == []
