"""docs/architecture.md's Glossary (issue 36, item 7: one meaning per word) is kept in step with the names.

Forward: every name the glossary writes in backticks exists — a CLI command or option (in the argparse
tree, walked as docs/cli_doc.py walks it; a value among the option's choices), a public name
(``v41graph.…``, imported), a function with the parameter it names, a class with the member it names,
a file, a JSON key (a string the package writes), a constant; and a name it says was renamed (``was …``)
is gone. Backward: every CLI option and every function or parameter whose name carries one of its words
is named in it, so a new ``--something-check`` or ``check_something`` fails here until the glossary says
which sense it is; so does a name of ``__all__`` that carries one.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import re
from functools import cache

import pytest

import v41graph
import v41graph.ask
import v41graph.extend
from helpers import ROOT, load_script, resolve_dotted

DOC = ROOT / "docs" / "architecture.md"
#: the loaded words issue 36 names; each must be a glossary term
ISSUE_WORDS = ("compile", "check", "fits", "basis", "SOL", "OP", "FPM", "hybrid", "plan", "mapping", "deployment",
               "step", "engine", "replica", "cap")
#: where names the glossary cites may be defined (the package, and the scripts and tests it cites)
CODE_DIRS = ("src/v41graph", "tests", "tools", "docs", "benchmarks")


@cache
def glossary() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("\n## Glossary\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def terms() -> list[str]:
    return re.findall(r"^- \*\*(.+?)\*\* —", glossary(), re.M)


def renamed() -> list[str]:
    """The old spellings the glossary says were renamed: ``(was `name`)``."""
    return re.findall(r"\(was `([^`]+)`\)", glossary())


def tokens() -> list[str]:
    return sorted(set(re.findall(r"`([^`]+)`", glossary())) - set(renamed()))


@cache
def parsers() -> dict[tuple[str, ...], argparse.ArgumentParser]:
    """Every parser of the CLI by its command path: () the top, ("fpm", "predict") a subcommand's."""
    from v41graph.cli.main import build_parser
    commands = load_script("docs/cli_doc.py").commands
    out = {}

    def walk(parser, path):
        out[path] = parser
        if any(isinstance(a, argparse._SubParsersAction) for a in parser._actions):
            for name, sub in commands(parser).items():
                walk(sub, path + (name,))
    walk(build_parser(), ())
    return out


def options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {o: a for a in parser._actions for o in a.option_strings}


def _class_members(node: ast.ClassDef) -> set[str]:
    """A class's methods and the names its body assigns (fields, constants)."""
    mine: set[str] = set()
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            mine.add(item.name)
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            mine.add(item.target.id)
        elif isinstance(item, ast.Assign):
            mine.update(t.id for t in item.targets if isinstance(t, ast.Name))
    return mine


def _identifier(node: ast.AST) -> str | None:
    """The name a Name, an argument or an attribute access spells, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.arg):
        return node.arg
    return node.attr if isinstance(node, ast.Attribute) else None


@cache
def code():
    """What the code defines: functions and classes (name → parameters, members), every identifier, the
    package's string constants (the JSON keys it writes) and its source text."""
    params: dict[str, set[str]] = {}
    members: dict[str, set[str]] = {}
    where: dict[str, set[str]] = {}  # function name -> files, for the backward check's message
    idents: set[str] = set()
    strings: set[str] = set()
    text = []
    for folder in CODE_DIRS:
        package = folder == "src/v41graph"
        for path in sorted((ROOT / folder).rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            text += [source] if package else []
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    args = node.args
                    params.setdefault(node.name, set()).update(a.arg for a in args.posonlyargs + args.args +
                                                                args.kwonlyargs)
                    if package:
                        where.setdefault(node.name, set()).add(path.relative_to(ROOT).as_posix())
                elif isinstance(node, ast.ClassDef):
                    params.setdefault(node.name, set())
                    members.setdefault(node.name, set()).update(_class_members(node))
                elif (name := _identifier(node)) is not None:
                    idents.add(name)
                elif package and isinstance(node, ast.Constant) and isinstance(node.value, str):
                    strings.add(node.value)
    return params, members, where, idents, strings, "\n".join(text)


def _cli(words: list[str]) -> str | None:
    """Why ``v41graph CMD … [--opt [VALUE]]`` is not in the CLI, or None."""
    path: tuple[str, ...] = ()
    rest = words
    while rest and not rest[0].startswith("-") and path + (rest[0],) in parsers():
        path, rest = path + (rest[0],), rest[1:]
    if not rest:
        return None
    return _option(rest, [parsers()[path]], f"v41graph {' '.join(path)}")


def _option(words: list[str], candidates, where: str = "any command") -> str | None:
    """Why ``--opt [VALUE]`` is no option of ``candidates`` (parsers), or None."""
    opt, value = words[0], words[1:]
    found = [options(p)[opt] for p in candidates if opt in options(p)]
    if not found:
        return f"{opt} is no option of {where}"
    if len(value) > 1:
        return f"{' '.join(words)}: one value at most"
    if value and not any(a.choices is None or value[0] in a.choices for a in found):
        return f"{value[0]!r} is not a choice of {opt}"
    return None


def _resolves(dotted: str) -> bool:
    try:
        return resolve_dotted(dotted) is not None
    except (AttributeError, ModuleNotFoundError):
        return False


def _file(relative: str) -> bool:
    suffix = "/" + relative
    return any(p.as_posix().endswith(suffix) for folder in CODE_DIRS for p in (ROOT / folder).rglob("*"))


def _problem_of_a_command_or_key(token: str) -> str | None | bool:
    """A CLI line, a script's flag, an option, a JSON key, a dotted name or a file: why it names nothing, None
    when it does, False when the token is none of those forms."""
    words = token.split()
    if words[0] == "v41graph":
        return _cli(words[1:])
    if words[0] == "python":  # a script's own flag: python SCRIPT --flag
        script = ROOT / words[1]
        ok = script.is_file() and all(f'"{w}"' in script.read_text(encoding="utf-8") for w in words[2:])
        return None if ok else f"{token}: no such script or flag"
    if token.startswith("--"):
        return _option(words, list(parsers().values()))
    if token.startswith('"'):  # a JSON key, or "key": "value"
        missing = [s for s in re.findall(r'"([^"]+)"', token) if s not in code()[4]]
        return f"{token}: the package never writes {missing}" if missing else None
    if token.startswith("v41graph."):
        return None if _resolves(token) else f"{token} does not resolve"
    if token.endswith(".py"):
        return None if _file(token) else f"no file {token}"
    return False


def _problem_of_a_name(token: str) -> str | None:
    """A function or parameter, a class member, a constant, a class or an identifier: why it names nothing."""
    params, members, _, idents, _, source = code()
    if m := re.fullmatch(r"(\w+)\((?:(\w+)=)?\)", token):  # name(), name(param=)
        name, param = m.groups()
        if name not in params:
            return f"no function or class {name}"
        return f"{name} has no parameter {param}" if param and param not in params[name] else None
    if m := re.fullmatch(r"([A-Z]\w*)\.(\w+)(?:\(\))?", token):  # Class.member, Class.method()
        cls, member = m.groups()
        return None if member in members.get(cls, ()) else f"class {cls} has no member {member}"
    if re.fullmatch(r"[A-Z][A-Z0-9_]+", token):  # a constant or an environment switch
        return None if re.search(rf"\b{token}\b", source) else f"{token} is not in the package"
    if re.fullmatch(r"[A-Z]\w*", token):
        return None if token in members else f"no class {token}"
    if re.fullmatch(r"[a-z_]\w*", token):
        return None if token in idents else f"no name {token} in the code"
    return f"{token}: not a form this test can check (CLI, option, name, file, key)"


def problem(token: str) -> str | None:
    """Why a backticked glossary token names nothing real, or None when it does."""
    found = _problem_of_a_command_or_key(token)
    return _problem_of_a_name(token) if found is False else found


def test_the_glossary_defines_the_words_issue_36_names():
    assert set(ISSUE_WORDS) <= set(terms())
    assert len(terms()) == len(set(terms()))


def test_every_name_the_glossary_writes_exists():
    assert [p for t in tokens() if (p := problem(t))] == []


def test_a_renamed_name_is_gone():
    params, *_ = code()
    assert renamed()  # the glossary says which lesser uses were renamed
    for old in renamed():
        if "." in old:
            module, attr = old.rsplit(".", 1)
            assert not hasattr(importlib.import_module(f"v41graph.{module}"), attr), old
        else:
            assert old not in params, old


def _stems() -> set[str]:
    """The glossary's words as they appear inside names: ``fits`` → ``fit``, ``replica`` …"""
    return {t.lower() for t in terms()} | {t.lower().removesuffix("s") for t in terms() if len(t) > 4}


def _carries(name: str) -> bool:
    """Whether a name's parts (``-``/``_`` separated, plural or not) carry a glossary word."""
    parts = [p.removesuffix("s") for p in re.split(r"[-_]", name.lower().lstrip("-")) if p]
    return any(p == s or (len(s) > 4 and p.startswith(s)) for p in parts for s in _stems())


def test_every_cli_option_carrying_a_glossary_word_is_named_in_it():
    named = {w for t in tokens() for w in t.split() if w.startswith("--")}
    every = {o for p in parsers().values() for o in options(p) if o.startswith("--")}
    assert {o for o in every if _carries(o)} - named == set()


def test_every_function_or_parameter_named_check_is_in_it():
    """The word with the most senses: each function of the package named for it (a checkpoint is another
    word), each class's ``check`` method and each ``check`` parameter is listed under one of its senses."""
    params, members, where, *_ = code()
    said = set(tokens())
    named = [n for n in where if not n.startswith("_") and "check" in n and "checkpoint" not in n]
    missing = [f"{n}() ({', '.join(sorted(where[n]))})" for n in named if n != "check" and f"{n}()" not in said]
    methods = {c for c, ms in members.items() if "check" in ms and c in package_classes()}
    missing += sorted(f"{c}.check()" for c in methods if f"{c}.check()" not in said)
    missing += sorted(f"{n}(check=)" for n in where if "check" in params[n] and f"{n}(check=)" not in said)
    assert len(methods) >= 5 and missing == []


@cache
def package_classes() -> set[str]:
    return {node.name for path in (ROOT / "src" / "v41graph").rglob("*.py")
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(node, ast.ClassDef)}


@pytest.mark.parametrize("module", [v41graph, v41graph.extend, v41graph.ask], ids=lambda m: m.__name__)
def test_every_public_name_carrying_a_glossary_word_is_in_it_and_resolves(module):
    said = " ".join(tokens())
    carrying = [n for n in module.__all__ if _carries(n) or _carries(re.sub(r"(?<!^)(?=[A-Z])", "_", n))]
    assert carrying  # each list holds at least one: the check is not vacuous
    assert [n for n in carrying if not re.search(rf"\b{n}\b", said)] == []
    for token in tokens():
        if token.startswith(module.__name__ + ".") and token.count(".") == module.__name__.count(".") + 1:
            assert token.rsplit(".", 1)[1] in module.__all__, token
