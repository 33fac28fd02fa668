"""Retrieval-quality benchmark: run public evaluation sets through ``MemoryEngine.search``.

Usage (from the repository root)::

    .venv/bin/python bench/quality.py DATASET [--mode keyword|vector|hybrid|rrf|hybrid:V/T|all ...]
        [--model PATH.gguf] [--threads 1] [--mmr] [--decay] [--eval-dir ../shared/eval] [--cache-dir bench/.cache]
        [--json out.json] [--chunk-tokens 400] [--chunk-overlap 80] [--window-tokens N]
        [--store sqlite|postgres] [--pg-url URL]
        [--provider local|openai] [--openai-base-url URL] [--openai-model NAME] [--openai-dimensions N]
        [--variant full|titles|q3|typo ...]

    DATASET = locomo [--limit-conversations N] | scifact [--limit-queries N] | cisi [--limit-queries N]
            | cmrc [--limit-queries N] | jsquad [--limit-queries N]

Each dataset has one loader that turns the raw files into a :class:`Suite`: workspaces (Markdown
files to write) with their queries and each query's graded relevant units. Everything else is
shared: materialising the workspaces under the cache dir, indexing and searching them with the same
engine code the ``memory_search`` tool uses, judging hits, and the metrics, which follow
``../shared/eval/README.md`` exactly so the figures compare with its reference numbers.

Modes (``--mode``, repeatable; default ``keyword``; ``all`` = the first four):

* ``keyword`` - ``embedding.provider = "none"``: FTS5/BM25 only.
* ``vector``  - embeddings, weighted fusion with ``vector_weight = 1, text_weight = 0`` (keyword-only
  candidates score 0 and rank below the vector candidates, so the top 10 is the pure vector ranking).
* ``hybrid``  - embeddings, weighted fusion 0.7 / 0.3 (OpenClaw's weights; memdex defaults to 0.2 / 0.8).
* ``rrf``     - embeddings, ``query.fusion = "rrf"`` (k = 60).
* ``hybrid:V/T`` - weighted fusion with vector weight V and text weight T, for experiments.

Variants (``--variant``, repeatable or comma-separated; default ``full``) run the set on another shape of
data with the same judgements: ``titles`` (each document cut to its title), ``q3`` (queries cut to their
first 3 content words), ``typo`` (one query word misspelled); see ``bench/variants.py``, and
``bench/robustness.py`` for the sets x variants table beside the plain FTS5 floor.

Embeddings come from the local GGUF model (``--model``) or, with ``--provider openai``, from any
OpenAI-compatible endpoint (``--openai-base-url``, ``--openai-model``, ``--openai-dimensions``; the key
from ``OPENAI_API_KEY`` or ``MEMDEX_EMBEDDING__OPENAI__API_KEY``), exactly as memdex's settings take them.

``--mmr`` and ``--decay`` turn on ``query.mmr`` / ``query.temporal_decay`` (defaults) in every mode.
For decay, "today" in a LoCoMo conversation is the day after its last session (when the questions
are asked); the pooled variant keeps each chat's logs in a sub-folder, which decay treats as undated.

Every ranked search passes ``min_score = 0`` (the benchmark measures ranking, not the threshold). Chunk-level
suites (LoCoMo) request ``max_results = 10`` chunks. Document-level suites (SciFact, CISI) request 30
chunks, keep each document's best (first) chunk and score the first 10 distinct documents, so a
document split into several chunks cannot crowd others out of the top 10.

Chat suites (LoCoMo) also measure what an agent gets. Each question is searched a second time at the
tool's defaults (no ``max_results`` / ``min_score``): ev@2k / ev@4k = share of its evidence turns found
whole in the first 2,000 / 4,000 characters of the returned snippets, with the characters returned and
whether nothing came back. Session recall@5 / @10 (the evidence's files among the top-k ranked hits) comes
from the ranked search. For abstention, seeded random-word queries (gibberish, and real words absent
from the conversation) are searched at the defaults too: an empty answer is the right one.

Indexes are cached per (dataset, workspace, chunking, embedding provider/model) in
``<cache>/<dataset>/<workspace>/index-t<tokens>-o<overlap>-k<code>[-local-<model>].sqlite`` (``<code>``: this
checkout's chunker and keyword terms, :data:`INDEX_CODE`; ``<dataset>-titles`` for
the ``titles`` variant; ``q3`` and ``typo`` ask other queries of the same files and share the set's): the keyword mode
has its own file; every embedding mode with the same model shares one (same vectors, only the query
settings differ), so the corpus is embedded once and later runs only re-check file stamps. Progress of
long builds goes to stderr. llama.cpp runs on one thread by default (``--threads``): the vectors are
identical for any thread count, and two threads were many times slower here whenever another process
competed for the two cores.

The evaluation data is read where it lies and never copied into the repository; the generated
workspaces and indexes live in ``bench/.cache`` (gitignored) and are reused on the next run.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import json
import logging
import math
import random
import re
import string
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import anyio

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # so `python bench/quality.py` works without an install
    sys.path.insert(0, str(REPO_ROOT))

from bench.perf_support import local_postgres, wait_until
from bench.variants import VARIANTS, apply_variant, parse_variants
from memdex.memory_core.config import Settings, load_settings
from memdex.memory_core.engine import MemoryEngine
from memdex.memory_core.limits import MAX_ANSWER_CHARS, MIN_SNIPPET_CHARS
from memdex.memory_core.models import Hit
from memdex.memory_core.text.chunking import CHUNKER_VERSION
from memdex.memory_core.text.terms import TERMS_IDENTITY

DEFAULT_EVAL_DIR = REPO_ROOT.parent / "shared" / "eval"
DEFAULT_CACHE_DIR = REPO_ROOT / "bench" / ".cache"
DEFAULT_MODEL = REPO_ROOT.parent / "shared" / "models" / "all-MiniLM-L6-v2-f16.gguf"
MAX_RESULTS = 10  # every metric looks at the top 10 ranked items (chunks or documents) at most
DOCUMENT_FETCH = 30  # chunks requested per query at document level, collapsed to distinct documents
MIN_SCORE = 0.0  # we measure ranking, not the threshold
QUERY_EMBED_TIMEOUT = 60.0  # generous: a slow query embedding must not silently turn into keyword search
WHOLE_FILE = sys.maxsize  # `last` line of a unit that is a whole document
# What the index's text comes from in this checkout (chunker, keyword terms), in each cached index's name
INDEX_CODE = hashlib.sha256(f"{CHUNKER_VERSION}; {TERMS_IDENTITY}".encode()).hexdigest()[:8]

Level = Literal["chunk", "document"]


# Data model -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    """A relevant unit: lines ``first..last`` (1-based, inclusive) of a workspace file."""

    path: str
    first: int = 1
    last: int = WHOLE_FILE

    @classmethod
    def document(cls, path: str) -> Unit:
        """A whole file: every chunk of it covers the unit."""
        return cls(path, 1, WHOLE_FILE)

    def covered_by(self, hit: Hit) -> bool:
        """True when the hit is in the same file and its line range overlaps the unit's."""
        return hit.path == self.path and hit.chunk_start_line <= self.last and self.first <= hit.chunk_end_line


Grades = Mapping[Unit, int]  # a query's relevant units and their relevance grades (>= 1)


@dataclass(frozen=True)
class Query:
    """One question, the group it is reported under, and the graded units that answer it."""

    qid: str
    text: str
    group: str
    relevant: Grades
    evidence: tuple[str, ...] = ()  # chat sets: the evidence turns' text, without the speaker prefix


@dataclass(frozen=True)
class Probe:
    """A query with no answer in its workspace (abstention): the right answer is no results."""

    kind: Literal["gibberish", "words", "other-topic"]
    text: str


@dataclass(frozen=True)
class BenchWorkspace:
    """The files of one workspace (path relative to its root -> text) and the queries run on it."""

    name: str
    files: dict[str, str]
    queries: list[Query]
    extra_paths: tuple[str, ...] = ()  # memdex `extra_paths`, relative to the workspace root
    today: dt.date | None = None  # "today" for temporal decay (None: the real date)
    probes: tuple[Probe, ...] = ()  # chat sets: random-word queries, searched at the defaults


@dataclass(frozen=True)
class Reference:
    """Published or previously measured figures to compare with."""

    label: str
    values: dict[str, float]


@dataclass(frozen=True)
class Suite:
    """What a dataset loader returns: workspaces plus how to judge and report on them."""

    name: str
    workspaces: list[BenchWorkspace]
    level: Level  # chunk: judge chunks as returned; document: best chunk per document first
    metrics: tuple[str, ...]  # names in METRICS, in table order
    rows: list[tuple[str, frozenset[str]]]  # report row label -> query groups pooled in it
    headline: str  # label of the row the mode table compares
    key_metric: str = "ndcg@10"
    references: list[Reference] = field(default_factory=list)
    breakdown: tuple[str, ...] = ()  # metrics shown per row (group) and mode, when there are several rows
    notes: list[str] = field(default_factory=list)
    chat: bool = False  # chat set: also CHAT_METRICS (defaults search, session recall) and probes
    adversarial: str = ""  # chat sets: label of the row of adversarial questions (abstention report)
    cache: str = ""  # folder under the cache dir (default: the name); a variant asking other queries shares it

    @property
    def folder(self) -> str:
        """The suite's folder under the cache dir: its workspaces and indexes."""
        return self.cache or self.name

    @property
    def fetch(self) -> int:
        """Chunks requested per search."""
        return MAX_RESULTS if self.level == "chunk" else DOCUMENT_FETCH

    @property
    def n_queries(self) -> int:
        return sum(len(ws.queries) for ws in self.workspaces)

    @property
    def scored(self) -> tuple[str, ...]:
        """Every score a query of this suite gets: METRICS, plus CHAT_METRICS for chat sets."""
        return (*METRICS, *CHAT_METRICS) if self.chat else tuple(METRICS)


# Metrics (README "Metrics"): `covered[i]` = relevant units covered by the item at rank i + 1 ------
# An item is a chunk (chunk level) or a document's best chunk (document level). With all grades 1,
# the graded nDCG below is exactly the README's chunk-level nDCG (gain 1 per item covering >= 1
# unit, ideal min(#units, k) such items); with grades it is the standard nDCG (gain 2^g - 1).


Covered = Sequence[frozenset[Unit]]


def judge(items: Sequence[Hit], relevant: Grades) -> list[frozenset[Unit]]:
    """For each ranked item, the relevant units it covers."""
    return [frozenset(u for u in relevant if u.covered_by(item)) for item in items]


def best_chunk_per_document(hits: Sequence[Hit]) -> list[Hit]:
    """Collapse ranked chunks to documents: each file once, at the rank of its best chunk."""
    best: dict[str, Hit] = {}
    for hit in hits:
        best.setdefault(hit.path, hit)
    return list(best.values())


def recall_at(k: int, covered: Covered, relevant: Grades) -> float:
    """Fraction of the relevant units covered by the union of the top ``k`` items."""
    return len(frozenset().union(*covered[:k])) / len(relevant)


def hit_at(k: int, covered: Covered, relevant: Grades) -> float:
    """1 when any of the top ``k`` items covers a relevant unit."""
    return float(any(covered[:k]))


def mrr_at(k: int, covered: Covered, relevant: Grades) -> float:
    """1 / rank of the first item (within the top ``k``) covering a relevant unit, else 0."""
    return next((1.0 / rank for rank, units in enumerate(covered[:k], start=1) if units), 0.0)


def _gain(grade: int) -> float:
    return 2.0**grade - 1.0


def ndcg_at(k: int, covered: Covered, relevant: Grades) -> float:
    """nDCG: an item gains 2^g - 1 for the best grade it covers; the ideal ranks the units' gains."""
    dcg = sum(
        max(_gain(relevant[u]) for u in units) / math.log2(rank + 1)
        for rank, units in enumerate(covered[:k], start=1)
        if units
    )
    gains = sorted((_gain(g) for g in relevant.values()), reverse=True)[:k]
    ideal = sum(gain / math.log2(rank + 1) for rank, gain in enumerate(gains, start=1))
    return dcg / ideal


Metric = Callable[[Covered, Grades], float]


def _at(fn: Callable[[int, Covered, Grades], float], k: int) -> Metric:
    return lambda covered, relevant: fn(k, covered, relevant)


METRICS: dict[str, Metric] = {
    "recall@5": _at(recall_at, 5),
    "recall@10": _at(recall_at, 10),
    "hit@5": _at(hit_at, 5),
    "mrr@10": _at(mrr_at, 10),
    "ndcg@10": _at(ndcg_at, 10),
}


# Chat sets: session recall from the ranked answer; what the agent reads from the answer at the defaults.
SESSION_KS = {"session_recall@5": 5, "session_recall@10": 10}
READ_LIMITS = {"ev@2k": 2_000, "ev@4k": 4_000}  # characters of snippets an agent reads
CHAT_METRICS = (
    *SESSION_KS, "session_ndcg@10", "turn_session_recall@5", *READ_LIMITS, "ev_returned", "chars", "repeated",
    "no_results",
)


def session_recall_at(k: int, hits: Sequence[Hit], relevant: Grades) -> float:
    """Fraction of the relevant units' distinct files (one per session) among the top ``k`` hits' paths."""
    files = {unit.path for unit in relevant}
    return len(files & {hit.path for hit in hits[:k]}) / len(files)


def file_grades(relevant: Grades) -> dict[Unit, int]:
    """The relevant units' files as whole units, each at the best grade of its units (chat sets: the sessions)."""
    grades: dict[Unit, int] = {}
    for unit, grade in relevant.items():
        whole = Unit.document(unit.path)
        grades[whole] = max(grade, grades.get(whole, 0))
    return grades


def session_ndcg_at(k: int, hits: Sequence[Hit], relevant: Grades) -> float:
    """nDCG@k of the hits' distinct files against the relevant units' files: the level of a plain FTS5 table
    with one row per file (``bench/tokenizers.py``), so the two compare."""
    files = file_grades(relevant)
    return ndcg_at(k, judge(best_chunk_per_document(hits), files), files)


def turn_session_recall_at(k: int, hits: Sequence[Hit], relevant: Grades) -> float:
    """Share of the relevant units (evidence turns) whose file is among the top ``k`` hits' paths: the most
    chunk recall@k could be with the same sessions found, however the chunks within them were chosen."""
    files = {hit.path for hit in hits[:k]}
    return sum(unit.path in files for unit in relevant) / len(relevant)


def normalise_text(text: str) -> str:
    """Whitespace collapsed to single spaces, case-folded."""
    return " ".join(text.split()).casefold()


def evidence_read(evidence: Sequence[str], snippets: Sequence[str], limit: int) -> float:
    """Share of ``evidence`` texts found whole in the snippets joined in rank order and cut at ``limit`` chars."""
    read = normalise_text("\n".join(snippets)[:limit])
    return sum(normalise_text(text) in read for text in evidence) / len(evidence)


def repeated_share(hits: Sequence[Hit]) -> float:
    """Share of an answer's characters in lines an earlier hit of it already shows (same file, line and text):
    what the overlap of neighbouring chunks costs the reader."""
    seen: set[tuple[str, int, str]] = set()
    repeated = total = 0
    for hit in hits:
        for at, line in enumerate(hit.snippet.split("\n")):
            key = (hit.path, hit.start_line + at, line)
            total += len(line) + 1
            repeated += (len(line) + 1) * (key in seen)
            seen.add(key)
    return repeated / total if total else 0.0


def evidence_returned(hits: Sequence[Hit], relevant: Grades) -> float:
    """Share of the relevant units (evidence turns) inside a returned hit's chunk, shown in its snippet or
    not: the most that better snippets could show; the rest is lost to ranking."""
    return sum(any(unit.covered_by(hit) for hit in hits) for unit in relevant) / len(relevant)


def chat_scores(
    query: Query, ranked: Sequence[Hit], defaults: Sequence[Hit], sessions: Sequence[Hit]
) -> dict[str, float]:
    """CHAT_METRICS: session recall of the ranked hits; session nDCG of ``sessions`` (the document-level
    fetch: DOCUMENT_FETCH chunks, collapsed to their files); ev@k, evidence in the returned chunks,
    characters and emptiness of the default answer."""
    snippets = [hit.snippet for hit in defaults]
    return {
        **{name: session_recall_at(k, ranked, query.relevant) for name, k in SESSION_KS.items()},
        "session_ndcg@10": session_ndcg_at(MAX_RESULTS, sessions, query.relevant),
        "turn_session_recall@5": turn_session_recall_at(5, ranked, query.relevant),  # recall@5's ceiling
        **{name: evidence_read(query.evidence, snippets, limit) for name, limit in READ_LIMITS.items()},
        "ev_returned": evidence_returned(defaults, query.relevant),
        "chars": float(sum(map(len, snippets))),
        "repeated": repeated_share(defaults),
        "no_results": float(not defaults),
    }


@dataclass(frozen=True)
class QueryResult:
    """A query's scores under every metric."""

    qid: str
    group: str
    scores: dict[str, float]


def score_query(
    query: Query,
    hits: Sequence[Hit],
    level: Level,
    defaults: Sequence[Hit] | None = None,
    sessions: Sequence[Hit] = (),
) -> QueryResult:
    """Rank items (collapsing to documents at document level), judge the top 10, apply every metric.

    ``defaults`` (chat sets) is the answer at the tool's defaults; with it the query also gets CHAT_METRICS,
    its session nDCG judged on ``sessions``, the answer to a document-level fetch.
    """
    items = best_chunk_per_document(hits) if level == "document" else hits
    covered = judge(items[:MAX_RESULTS], query.relevant)
    scores = {name: fn(covered, query.relevant) for name, fn in METRICS.items()}
    if defaults is not None:
        scores |= chat_scores(query, hits, defaults, sessions)
    return QueryResult(query.qid, query.group, scores)


def macro_average(results: Sequence[QueryResult], names: Iterable[str]) -> dict[str, float]:
    """Mean of each score in ``names`` over ``results`` (NaN when there are none)."""
    return {name: (sum(r.scores[name] for r in results) / len(results)) if results else math.nan for name in names}


# LoCoMo ------------------------------------------------------------------------------------------

LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
LOCOMO_REFERENCE = {"recall@5": 0.790, "recall@10": 0.859, "hit@5": 0.853, "mrr@10": 0.704, "ndcg@10": 0.739}
_SESSION_KEY = re.compile(r"session_(\d+)")
_EVIDENCE_ID = re.compile(r"D:?(\d+):(\d+)")


def parse_locomo_date(text: str) -> dt.date:
    """The day of a session timestamp such as ``1:56 pm on 8 May, 2023``."""
    return dt.datetime.strptime(" ".join(text.split()), "%I:%M %p on %d %B, %Y").date()


def normalise_evidence(raw: Iterable[str]) -> list[str]:
    """Evidence ids, split on ``;``/whitespace and normalised (``D:11:26``->``D11:26``, ``D30:05``->``D30:5``).

    Tokens that do not look like an id at all (e.g. a bare ``D``) are kept as-is; they resolve to nothing.
    """
    ids: list[str] = []
    for entry in raw:
        for token in re.split(r"[;\s]+", entry):
            if token:
                match = _EVIDENCE_ID.fullmatch(token)
                ids.append(f"D{int(match[1])}:{int(match[2])}" if match else token)
    return ids


def format_turn(turn: dict[str, Any]) -> str:
    """One dialogue turn as a single Markdown list line."""
    line = f"- **{turn['speaker']}**: {' '.join(str(turn['text']).split())}"
    if caption := turn.get("blip_caption"):
        line += f" [shares a photo: {' '.join(str(caption).split())}]"
    return line


_TURN_PREFIX = re.compile(r"- \*\*[^*]+\*\*: ")


def turn_text(line: str) -> str:
    """A turn line as written (see :func:`format_turn`) without its ``- **Name**: `` prefix."""
    match = _TURN_PREFIX.match(line)
    return line[match.end() :] if match else line


def unit_text(files: Mapping[str, str], unit: Unit) -> str:
    """The text of a one-line unit's turn, as written to its file."""
    return turn_text(files[unit.path].splitlines()[unit.first - 1])


def locomo_workspace(sample: dict[str, Any], folder: str = "memory") -> tuple[dict[str, str], dict[str, Unit]]:
    """One conversation's daily logs (``<folder>/YYYY-MM-DD.md``) and the (file, line) of every turn."""
    conv = sample["conversation"]
    sessions = sorted(
        (int(m[1]), turns)
        for key, turns in conv.items()
        if (m := _SESSION_KEY.fullmatch(key)) and isinstance(turns, list) and turns
    )
    files: dict[str, str] = {}
    where: dict[str, Unit] = {}
    for number, turns in sessions:
        day = parse_locomo_date(conv[f"session_{number}_date_time"]).isoformat()
        path = f"{folder}/{day}.md"
        if path in files:
            raise ValueError(f"{sample['sample_id']}: two sessions on {day}")
        lines = [f"# {day}"]
        for turn in turns:
            lines.append(format_turn(turn))
            where[turn["dia_id"]] = Unit(path, len(lines), len(lines))
        files[path] = "\n".join(lines) + "\n"
    return files, where


def load_locomo(eval_dir: Path, limit: int | None = None, pooled: bool = False) -> Suite:
    """LoCoMo as in the README: one workspace per conversation, evidence turns as relevant lines.

    ``pooled`` is the README's harder variant: every conversation in one workspace
    (``memory/<conversation>/YYYY-MM-DD.md``), so each question competes with all ten chats.
    """
    samples = json.loads((eval_dir / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    workspaces: list[BenchWorkspace] = []
    dropped_ids: list[str] = []
    dropped_questions: list[str] = []
    for sample in samples[:limit]:
        sid = sample["sample_id"]
        files, where = locomo_workspace(sample, f"memory/{sid}" if pooled else "memory")
        queries: list[Query] = []
        for index, qa in enumerate(sample["qa"]):
            qid = f"{sid}/{index}"
            ids = normalise_evidence(qa.get("evidence", []))
            dropped_ids += [f"{sid} {i!r}" for i in ids if i not in where]
            units = {where[i]: 1 for i in ids if i in where}
            if not units:
                dropped_questions.append(qid)
                continue
            evidence = tuple(unit_text(files, unit) for unit in units)
            queries.append(Query(qid, str(qa["question"]), str(qa["category"]), units, evidence))
        # The questions are asked the day after the last session, so --decay ages the logs as then.
        last = max(dt.date.fromisoformat(Path(path).stem) for path in files)
        workspaces.append(BenchWorkspace(sid, files, queries, today=last + dt.timedelta(days=1)))
    if pooled:
        files = {path: text for ws in workspaces for path, text in ws.files.items()}
        workspaces = [BenchWorkspace("pooled", files, [q for ws in workspaces for q in ws.queries])]
    per_workspace = math.ceil(PROBES_PER_SUITE / len(workspaces))
    claims = other_topic_questions(eval_dir)
    workspaces = [
        replace(
            ws,
            probes=tuple(random_queries(ws.files.values(), per_workspace, seed=ws.name))
            + tuple(Probe("other-topic", text) for text in random.Random(ws.name).sample(claims, min(per_workspace, len(claims)))),
        )
        for ws in workspaces
    ]
    groups = {str(c): f"{c} {name}" for c, name in LOCOMO_CATEGORIES.items()}
    headline = "headline (1-4)"
    return Suite(
        name="locomo-pooled" if pooled else "locomo",
        workspaces=workspaces,
        level="chunk",
        metrics=tuple(METRICS),
        rows=[(label, frozenset({g})) for g, label in groups.items()]
        + [(headline, frozenset({"1", "2", "3", "4"}))],
        headline=headline,
        references=[Reference("README keyword floor (plain FTS5)", LOCOMO_REFERENCE)],
        breakdown=("recall@10", "ndcg@10"),
        notes=[
            _dropped("evidence id(s) that point nowhere", dropped_ids),
            _dropped("question(s) left without evidence", dropped_questions),
        ],
        chat=True,
        adversarial=groups["5"],
    )


# Abstention probes: queries whose words appear nowhere in the workspace -------------------------
# A word counts as present when a workspace word shares its first STEM letters (the whole word when
# shorter): a crude stem, so FTS5's porter stemmer cannot match an inflected form either.

PROBES_PER_SUITE = 200  # split evenly over the workspaces; half gibberish, half real words
STEM = 5
_LETTERS = re.compile(r"[^\W\d_]+")
UNRELATED_WORDS = tuple(
    """
    abscissa accretion adiabatic aileron albedo alkaloid allele alluvium amortize anticline aphelion
    apogee aquifer arbitrage asymptote azimuth ballast basalt bathymetry bitumen bollard brachiopod
    bulkhead caisson capacitor carburetor cartilage cathode centrifuge chromosome cladding coefficient
    colloid conifer crankshaft cuneiform cytoplasm declination dendrite detritus diffraction dolomite
    drumlin dynamo eccentricity ecliptic electrolyte ellipsoid enzyme epicycle equinox escarpment
    estuary eutectic feldspar fiduciary flange flywheel fulcrum gasket geodesic gneiss graphene
    gyroscope halogen hydraulic hypotenuse igneous impedance inductor isobar isotope isthmus joist
    kinematics laminar latitude lattice lemma lignite lithium logarithm longitude magnetite mandible
    manifold meridian meteorite mitochondria molybdenum moraine nebula neutrino nitrate obsidian
    orthogonal oscillator osmosis parabola parallax perihelion permafrost petiole phoneme photon
    piston plankton polymer porosity precession propeller protozoa pulsar quadrant quartzite quasar
    radiator refraction resistor rhizome riparian rotor salinity sandstone schist sediment semaphore
    sextant silicate solenoid spectrometer sprocket stalactite stratum subduction sulfate synapse
    tangent tectonic tensor theodolite thermocline tributary tundra turbine valence venturi vertebra
    viscosity voltage vortex watershed zeolite zenith
    """.split()  # noqa: SIM905 - a word list reads better as words
)


def random_queries(texts: Iterable[str], count: int, seed: str) -> list[Probe]:
    """``count`` seeded queries none of whose words is in ``texts``: half 2-4 gibberish words, half 3-5
    words of UNRELATED_WORDS."""
    present = {word[:STEM] for text in texts for word in _LETTERS.findall(text.casefold())}
    vocabulary = [word for word in UNRELATED_WORDS if word[:STEM] not in present]
    rng = random.Random(seed)

    def gibberish() -> str:
        while (word := "".join(rng.choices(string.ascii_lowercase, k=rng.randint(STEM, 9))))[:STEM] in present:
            pass
        return word

    half = count // 2
    return [Probe("gibberish", " ".join(gibberish() for _ in range(rng.randint(2, 4)))) for _ in range(half)] + [
        Probe("words", " ".join(rng.sample(vocabulary, rng.randint(3, 5)))) for _ in range(count - half)
    ]


def other_topic_questions(eval_dir: Path) -> list[str]:
    """SciFact's claims (biomedical statements), when the data is there: queries on another topic that
    share ordinary words with a chat ("show", "people", "increase"), which the right answer still ignores."""
    path = eval_dir / "scifact" / "queries.jsonl"
    return [str(row["text"]) for row in read_jsonl(path)] if path.is_file() else []


def _dropped(what: str, items: Sequence[str]) -> str:
    return f"dropped {len(items)} {what}: {', '.join(items) or '-'}"


# Document collections (SciFact, CISI, CMRC 2018, JSQuAD) ----------------------------------------
# One workspace, one file per document ("# title", a blank line, the body). SciFact and CISI live at
# `docs/<id>.md`, indexed through memdex's `extra_paths = ["docs"]`: the README's layout, and the way a
# user would point memdex at a folder of notes that is not their daily memory. The CJK reading sets
# live at `memory/<id>.md` (the README's layout for them). Relevant units are whole documents.

IR_METRICS = ("ndcg@10", "recall@10", "mrr@10")
DOCS_DIR = "docs"
MEMORY_DIR = "memory"


@dataclass(frozen=True)
class Document:
    title: str
    body: str


def document_markdown(doc: Document) -> str:
    """A document as a note: ``# title``, a blank line, the body."""
    return f"# {' '.join(doc.title.split())}\n\n{doc.body.strip()}\n"


def document_suite(
    name: str,
    documents: Mapping[str, Document],
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
    limit: int | None,
    references: list[Reference],
    folder: str = DOCS_DIR,
) -> Suite:
    """A document collection as one workspace, one file per document under ``folder`` (``docs`` is indexed
    as an extra path, ``memory`` as memory); judged queries in qrels order, the first ``limit`` of them."""
    files = {f"{folder}/{doc_id}.md": document_markdown(doc) for doc_id, doc in documents.items()}
    extra_paths = () if folder == MEMORY_DIR else (folder,)
    dropped_judgements: list[str] = []
    dropped_queries: list[str] = []
    suite_queries: list[Query] = []
    for qid, judged in list(qrels.items())[:limit]:
        dropped_judgements += [f"{qid}->{d}" for d, g in judged.items() if g > 0 and d not in documents]
        relevant = {Unit.document(f"{folder}/{d}.md"): g for d, g in judged.items() if g > 0 and d in documents}
        if not relevant or qid not in queries:
            dropped_queries.append(qid)
            continue
        suite_queries.append(Query(qid, queries[qid], "all", relevant))
    return Suite(
        name=name,
        workspaces=[BenchWorkspace("corpus", files, suite_queries, extra_paths=extra_paths)],
        level="document",
        metrics=IR_METRICS,
        rows=[("all", frozenset({"all"}))],
        headline="all",
        references=references,
        notes=[
            f"{len(documents)} documents as {folder}/<id>.md"
            + (f" (indexed via extra_paths=[{folder!r}])" if extra_paths else ""),
            _dropped("judgement(s) of unknown documents", dropped_judgements),
            _dropped("judged query(ies) without text or relevant documents", dropped_queries),
        ],
    )


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                yield json.loads(line)


def load_scifact(eval_dir: Path, limit: int | None = None, split: Literal["test", "train"] = "test") -> Suite:
    """BEIR SciFact: 5,183 abstracts; the test split's 300 queries, or the train split's 809 (``scifact-train``:
    claims no default was chosen on, the same abstracts and index). Graded qrels, all grade 1."""
    base = eval_dir / "scifact"
    documents = {str(d["_id"]): Document(str(d["title"]), str(d["text"])) for d in read_jsonl(base / "corpus.jsonl")}
    queries = {str(q["_id"]): str(q["text"]) for q in read_jsonl(base / "queries.jsonl")}
    qrels: dict[str, dict[str, int]] = {}
    rows = (base / "qrels" / f"{split}.tsv").read_text(encoding="utf-8").splitlines()[1:]  # header
    for qid, doc_id, grade in (row.split("\t") for row in rows if row.strip()):
        qrels.setdefault(qid, {})[doc_id] = int(grade)
    if split == "train":
        return replace(document_suite("scifact-train", documents, queries, qrels, limit, []), cache="scifact")
    references = [
        Reference("BM25 (BEIR paper)", {"ndcg@10": 0.665}),
        Reference("BM25 flat (Anserini)", {"ndcg@10": 0.679}),
        Reference("plain FTS5 bm25 (README)", {"ndcg@10": 0.687}),
        Reference("all-MiniLM-L6-v2 (quoted ~)", {"ndcg@10": 0.64}),
        Reference("bge-small-en-v1.5 (MTEB)", {"ndcg@10": 0.713}),
    ]
    return document_suite("scifact", documents, queries, qrels, limit, references)


def load_scifact_train(eval_dir: Path, limit: int | None = None) -> Suite:
    """SciFact's train split (809 claims) over the same abstracts: a held-out check, as the split is never tuned on."""
    return load_scifact(eval_dir, limit, "train")


_SMART_FIELD = re.compile(r"\.([A-Z])(?:\s+(.*))?")


def parse_smart(text: str) -> Iterator[tuple[str, dict[str, str]]]:
    """Records of a SMART file: (``.I`` id, field letter -> the field's lines joined with newlines)."""
    record: str | None = None
    fields: dict[str, list[str]] = {}
    current: list[str] | None = None

    def finish() -> Iterator[tuple[str, dict[str, str]]]:
        if record is not None:
            yield record, {key: "\n".join(lines).strip() for key, lines in fields.items()}

    for line in text.splitlines():
        match = _SMART_FIELD.fullmatch(line.rstrip())
        if match and match[1] == "I":
            yield from finish()
            record, fields, current = (match[2] or "").strip(), {}, None
        elif match:
            current = fields.setdefault(match[1], [])
            if match[2]:
                current.append(match[2])
        elif current is not None:
            current.append(line.strip())
    yield from finish()


def load_cisi(eval_dir: Path, limit: int | None = None) -> Suite:
    """CISI: 1,460 documents (title ``.T`` and abstract ``.W``), the 76 judged queries (``.W``), binary qrels."""
    base = eval_dir / "cisi"

    def smart(name: str) -> Iterator[tuple[str, dict[str, str]]]:
        return parse_smart((base / name).read_text(encoding="utf-8", errors="replace"))

    documents = {rid: Document(f.get("T", ""), f.get("W", "")) for rid, f in smart("CISI.ALL")}
    queries = {rid: " ".join(f.get("W", "").split()) for rid, f in smart("CISI.QRY")}
    qrels: dict[str, dict[str, int]] = {}
    for line in (base / "CISI.REL").read_text(encoding="utf-8").splitlines():
        if parts := line.split():
            qrels.setdefault(parts[0], {})[parts[1]] = 1
    references = [
        Reference("plain FTS5 porter (README)", {"ndcg@10": 0.318}),
        Reference("Lucene-style BM25 (README, SOURCE.md)", {"ndcg@10": 0.362, "mrr@10": 0.593}),
    ]
    return document_suite("cisi", documents, queries, qrels, limit, references)


# CJK reading sets (README "CJK"): one note per paragraph, its first (answerable) question the query and
# the paragraph its one relevant note. They test whether keyword search can cut Chinese and Japanese
# text into terms at all.

CJK_TRIGRAM_NOTE = "plain FTS5 trigram, OR of 3-char pieces (README)"


def load_cmrc(eval_dir: Path, limit: int | None = None) -> Suite:
    """CMRC 2018 trial (Chinese): 256 paragraphs, the first question of each (the first non-blank one:
    one paragraph's first question is a lone space)."""
    contexts = json.loads((eval_dir / "cmrc2018" / "cmrc2018_trial.json").read_text(encoding="utf-8"))
    documents = {str(c["context_id"]): Document(str(c["title"]), str(c["context_text"])) for c in contexts}
    queries: dict[str, str] = {}
    for context in contexts:
        if asked := [str(q["query_text"]).strip() for q in context["qas"] if str(q["query_text"]).strip()]:
            queries[str(context["context_id"])] = asked[0]
    qrels = {doc_id: {doc_id: 1} for doc_id in queries}
    references = [
        Reference("plain FTS5 porter unicode61 (README)", {"ndcg@10": 0.165}),
        Reference(CJK_TRIGRAM_NOTE, {"ndcg@10": 0.936}),
    ]
    return document_suite("cmrc", documents, queries, qrels, limit, references, folder=MEMORY_DIR)


_JSQUAD_QUESTION = re.compile(r"q\d+$")  # a question id is its paragraph's id + "q<n>"


def load_jsquad(eval_dir: Path, limit: int | None = None) -> Suite:
    """JSQuAD test, JGLUE v1.3 (Japanese): 1,159 paragraphs, the first answerable question of each."""
    data = json.loads((eval_dir / "jsquad" / "test-v1.3.json").read_text(encoding="utf-8"))["data"]
    documents: dict[str, Document] = {}
    queries: dict[str, str] = {}
    for article in data:
        title = str(article["title"])
        prefix = f"{title} [SEP] "
        for paragraph in article["paragraphs"]:
            answerable = [q for q in paragraph["qas"] if not q.get("is_impossible")]
            if not answerable:
                continue
            doc_id = _JSQUAD_QUESTION.sub("", str(answerable[0]["id"]))
            context = str(paragraph["context"])
            documents[doc_id] = Document(title, context.removeprefix(prefix))
            queries[doc_id] = str(answerable[0]["question"])
    qrels = {doc_id: {doc_id: 1} for doc_id in queries}
    references = [
        Reference("plain FTS5 porter unicode61 (README)", {"ndcg@10": 0.231}),
        Reference(CJK_TRIGRAM_NOTE, {"ndcg@10": 0.924}),
    ]
    return document_suite("jsquad", documents, queries, qrels, limit, references, folder=MEMORY_DIR)


# Modes -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mode:
    """How the engine is configured for one row of the table."""

    name: str
    embeddings: bool  # False: embedding.provider "none"; True: the local GGUF model
    query: dict[str, Any]  # `query` settings (fusion and weights); mmr/decay come from the command line


BASE_MODES: dict[str, Mode] = {
    "keyword": Mode("keyword", False, {}),
    "vector": Mode("vector", True, {"fusion": "weighted", "vector_weight": 1.0, "text_weight": 0.0}),
    "hybrid": Mode("hybrid", True, {"fusion": "weighted", "vector_weight": 0.7, "text_weight": 0.3}),
    "rrf": Mode("rrf", True, {"fusion": "rrf", "vector_weight": 0.5, "text_weight": 0.5}),
}
_WEIGHTED = re.compile(r"(hybrid|rrf):(\d*\.?\d+)/(\d*\.?\d+)")


def parse_modes(specs: Sequence[str]) -> list[Mode]:
    """Modes from ``--mode`` values: a base name, ``all``, or ``hybrid:V/T``; duplicates dropped."""
    modes: dict[str, Mode] = {}
    for spec in specs or ["keyword"]:
        if spec == "all":
            modes.update(BASE_MODES)
        elif spec in BASE_MODES:
            modes[spec] = BASE_MODES[spec]
        elif match := _WEIGHTED.fullmatch(spec):
            fusion = "rrf" if match[1] == "rrf" else "weighted"
            vector, text = float(match[2]), float(match[3])
            name = f"{match[1]} {vector:g}/{text:g}"
            modes[name] = Mode(name, True, {"fusion": fusion, "vector_weight": vector, "text_weight": text})
        else:
            raise argparse.ArgumentTypeError(
                f"unknown mode {spec!r}: use keyword, vector, hybrid, rrf, all or hybrid:V/T (e.g. hybrid:0.5/0.5)"
            )
    return list(modes.values())


# Running -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunConfig:
    """Where things live, how the engine chunks, and the query options shared by every mode."""

    cache_dir: Path
    model: Path = DEFAULT_MODEL
    provider: str = "local"  # or "openai"
    openai_base_url: str | None = None
    openai_model: str = "text-embedding-3-small"
    openai_dimensions: int | None = None
    chunk_tokens: int = 400
    chunk_overlap: int = 80
    window_tokens: int | None = None  # embedding.window_tokens; None = memdex's default
    mmr: bool = False
    decay: bool = False
    threads: int = 1  # llama.cpp threads; results are identical for any count, only speed differs
    pg_url: str | None = None  # index into this PostgreSQL database instead of SQLite files

    def index_name(self, mode: Mode) -> str:
        """One index per chunking, version of the chunker and keyword terms, and embedding setup; every embedding
        mode of a model shares one. Two checkouts whose indexes differ (one at the commit before a new segmenter
        version, say) each keep their own: run side by side on one cache, they would rebuild each other's
        indexes mid-run, and each would rank over the other's terms."""
        name = f"index-t{self.chunk_tokens}-o{self.chunk_overlap}-k{INDEX_CODE}"
        if mode.embeddings:
            name += "-" + re.sub(r"[^A-Za-z0-9._-]+", "_", self.embedder)
            if self.window_tokens is not None:
                name += f"-w{self.window_tokens}"
        return name + ".sqlite"

    @property
    def embedder(self) -> str:
        """Which embeddings the embedding modes use, e.g. ``local-all-MiniLM-L6-v2-f16``."""
        if self.provider == "local":
            return f"local-{self.model.stem}"
        where = hashlib.sha256((self.openai_base_url or "").encode()).hexdigest()[:8]
        dims = f"-d{self.openai_dimensions}" if self.openai_dimensions else ""
        return f"openai-{self.openai_model}{dims}-{where}"

    def settings(self, mode: Mode, root: Path, base: Path, extra_paths: Sequence[str]) -> Settings:
        embedding: dict[str, Any] = {"provider": "none"}
        if mode.embeddings:
            embedding = {"provider": self.provider, "query_timeout": QUERY_EMBED_TIMEOUT}
            if self.window_tokens is not None:
                embedding["window_tokens"] = self.window_tokens
            if self.provider == "local":
                embedding["local"] = {"model": str(self.model), "n_threads": self.threads}
            else:
                embedding["openai"] = {"base_url": self.openai_base_url, "model": self.openai_model,
                                       "dimensions": self.openai_dimensions}  # fmt: skip
        store: dict[str, Any] = {"backend": "sqlite"}
        if self.pg_url is not None:  # one memory per workspace and index setup, as the SQLite files are
            memory = f"{base.relative_to(self.cache_dir).as_posix()}/{self.index_name(mode).removesuffix('.sqlite')}"
            store = {"backend": "postgres", "postgres": {"url": self.pg_url, "memory": memory[-128:].lstrip("/-_.")}}
        return load_settings(
            workspace=root,
            extra_paths=list(extra_paths),
            index_path=base / self.index_name(mode),
            store=store,
            chunking={"tokens": self.chunk_tokens, "overlap": self.chunk_overlap},
            embedding=embedding,
            query={**mode.query, "mmr": self.mmr, "temporal_decay": self.decay},
        )


@dataclass
class ModeRun:
    """One mode's results over a whole suite."""

    mode: Mode
    results: list[QueryResult] = field(default_factory=list)
    index_seconds: float = 0.0  # syncing (building or checking) the indexes
    search_seconds: float = 0.0  # the ranked searches
    defaults_seconds: float = 0.0  # chat sets: the searches at the defaults (questions and probes)
    fallbacks: int = 0  # searches of an embedding mode answered keyword-only (should stay 0)
    defaults: dict[str, float] = field(default_factory=dict)  # the tool's default max_results and min_score
    probes: list[tuple[str, bool]] = field(default_factory=list)  # chat sets: (probe kind, answer empty)


def materialise(ws: BenchWorkspace, root: Path) -> int:
    """Make ``root`` hold exactly ``ws.files``; rewrite only what differs. Returns files written.

    Unchanged files keep their mtime, so the engine's incremental sync reuses the cached index.
    """
    written = 0
    for rel, text in ws.files.items():
        target = root / rel
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            written += 1
    wanted = {root / rel for rel in ws.files}
    for stray in [p for p in root.rglob("*.md") if p not in wanted]:
        stray.unlink()
    return written


class ProgressLog:
    """A sync progress callback that reports to stderr at most every ``every`` seconds."""

    def __init__(self, label: str, every: float = 15.0) -> None:
        self.label = label
        self.every = every
        self.started = self.last = time.perf_counter()

    def __call__(self, done: int, total: int, unit: str) -> None:
        now = time.perf_counter()
        if 0 < done < total and now - self.last >= self.every:  # the caller reports completion
            elapsed = now - self.started
            eta = elapsed / done * (total - done)
            log(f"    {self.label}: {done}/{total} {unit} ({elapsed:.0f}s, ~{eta:.0f}s to go)")
            self.last = now


async def run_mode(ws: BenchWorkspace, suite: Suite, mode: Mode, config: RunConfig, run: ModeRun) -> None:
    """Sync one workspace's index for ``mode`` (reusing the cache), search every query, add to ``run``."""
    base = config.cache_dir / suite.folder / ws.name
    settings = config.settings(mode, base / "workspace", base, ws.extra_paths)
    label = f"{ws.name} [{mode.name}]"
    async with MemoryEngine(settings, background_sync=False) as engine:
        started = time.perf_counter()
        report = await engine.sync(progress=ProgressLog(label))
        synced = time.perf_counter()
        status = await engine.status()
        if mode.embeddings and status.mode != "hybrid":
            raise RuntimeError(f"{label}: embeddings are not in use ({status.note}); check --model / --provider")
        if ws.today is not None:
            engine.today = lambda: ws.today  # type: ignore[method-assign]
        if mode.embeddings and config.pg_url is None:  # the steady state: vector searches from the copy in RAM
            await wait_until(engine.vectors_in_ram, 300, f"{label}: the vectors in RAM")
        expected = "hybrid" if mode.embeddings else "keyword"

        async def search(text: str, **limits: Any) -> list[Hit]:
            answer = await engine.search(text, **limits)
            run.fallbacks += answer.mode != expected
            return answer.results

        # The ranking is measured apart from the answer's size: the shortest snippets, the largest budget, so
        # no ranked chunk is left out. The abstention bar (min_share) stays: it withholds whole answers, and a
        # question it wrongly leaves unanswered counts as a miss.
        engine.searcher.query = settings.query.model_copy(update={"snippet_chars": MIN_SNIPPET_CHARS})
        ranked = [
            await search(q.text, max_results=suite.fetch, min_score=MIN_SCORE, max_chars=MAX_ANSWER_CHARS)
            for q in ws.queries
        ]
        # Chat sets are also judged by session, against a plain FTS5 row per session file: as the document
        # sets are, from DOCUMENT_FETCH chunks collapsed to their files (10 chunks cover about 7 sessions).
        sessions: list[list[Hit]] = [
            await search(q.text, max_results=DOCUMENT_FETCH, min_score=MIN_SCORE, max_chars=MAX_ANSWER_CHARS)
            for q in ws.queries
        ] if suite.chat else [[]] * len(ws.queries)
        engine.searcher.query = settings.query
        searched = time.perf_counter()
        if suite.chat:
            defaults: list[list[Hit] | None] = [await search(q.text) for q in ws.queries]
            run.probes += [(probe.kind, not await search(probe.text)) for probe in ws.probes]
            run.defaults = {"max_results": settings.query.max_results, "min_score": settings.query.min_score}
        else:
            defaults = [None] * len(ws.queries)
        finished = time.perf_counter()
    run.results += [
        score_query(query, hits, suite.level, answer, by_session)
        for query, hits, answer, by_session in zip(ws.queries, ranked, defaults, sessions, strict=True)
    ]
    run.index_seconds += synced - started
    run.search_seconds += searched - synced
    run.defaults_seconds += finished - searched
    log(
        f"  {label}: {report.changed} file(s) (re)indexed in {synced - started:.1f}s, {status.chunks} chunks, "
        f"{len(ws.queries)} queries{' (and again by session)' if suite.chat else ''} in {searched - synced:.1f}s"
        + (f", {len(ws.queries) + len(ws.probes)} at the defaults in {finished - searched:.1f}s" if suite.chat else "")
    )


async def run_suite(suite: Suite, modes: Sequence[Mode], config: RunConfig) -> list[ModeRun]:
    """Every workspace in turn: write it once, then run each mode on it."""
    runs = [ModeRun(mode) for mode in modes]
    for ws in suite.workspaces:
        written = materialise(ws, config.cache_dir / suite.folder / ws.name / "workspace")
        log(f"  {ws.name}: {len(ws.files)} files ({written} written), {len(ws.queries)} queries")
        for run in runs:
            await run_mode(ws, suite, run.mode, config, run)
    return runs


# Reporting ---------------------------------------------------------------------------------------


def summarise(suite: Suite, results: Sequence[QueryResult]) -> list[dict[str, Any]]:
    """One row per report line: label, n and macro-averaged metrics."""
    rows = []
    for label, groups in suite.rows:
        chosen = [r for r in results if r.group in groups]
        rows.append({"label": label, "n": len(chosen), **macro_average(chosen, suite.scored)})
    return rows


def headline_row(suite: Suite, run: ModeRun) -> dict[str, Any]:
    return next(row for row in summarise(suite, run.results) if row["label"] == suite.headline)


def _cells(values: Mapping[str, float], names: Sequence[str], width: int, sign: str = "") -> str:
    return "".join(f"{values[m]:>{sign}{width}.3f}" if m in values else " " * width for m in names)


def render_mode_table(suite: Suite, runs: Sequence[ModeRun]) -> str:
    """Headline row of every mode, a delta vs keyword on the key metric, timings, then the references."""
    metrics, key, cell = suite.metrics, suite.key_metric, 11
    baseline = next((headline_row(suite, r) for r in runs if r.mode.name == "keyword"), None)
    labels = ["mode", *(r.mode.name for r in runs), *(ref.label for ref in suite.references)]
    width = max(map(len, labels)) + 2
    delta_name = f"Δ{key} vs kw" if baseline else ""
    delta_width = len(delta_name) + 2 if baseline else 0
    header = (
        f"{'mode':<{width}}{'n':>6}{''.join(f'{m:>{cell}}' for m in metrics)}"
        f"{delta_name:>{delta_width}}{'index s':>10}{'search s':>10}"
    )
    lines = [header, "-" * len(header)]
    for run in runs:
        row = headline_row(suite, run)
        delta = f"{row[key] - baseline[key]:>+{delta_width}.3f}" if baseline else ""
        lines.append(
            f"{run.mode.name:<{width}}{row['n']:>6}{_cells(row, metrics, cell)}{delta}"
            f"{run.index_seconds:>10.1f}{run.search_seconds:>10.1f}"
        )
    if suite.references:
        lines.append("-" * len(header))
        for ref in suite.references:
            lines.append(f"{ref.label:<{width}}{'':>6}{_cells(ref.values, metrics, cell)}".rstrip())
    return "\n".join(lines)


def render_breakdown(suite: Suite, runs: Sequence[ModeRun], metric: str) -> str:
    """``metric`` for every report row (rows) and mode (columns)."""
    summaries = [{row["label"]: row for row in summarise(suite, run.results)} for run in runs]
    width = max(len(label) for label, _ in suite.rows) + 2
    cell = max(len(r.mode.name) for r in runs) + 3
    header = f"{metric:<{width}}{'n':>6}" + "".join(f"{r.mode.name:>{cell}}" for r in runs)
    lines = [header, "-" * len(header)]
    for label, _ in suite.rows:
        if label == suite.headline:
            lines.append("-" * len(header))
        n = summaries[0][label]["n"]
        lines.append(f"{label:<{width}}{n:>6}" + "".join(f"{s[label][metric]:>{cell}.3f}" for s in summaries))
    return "\n".join(lines)


def _value(name: str, value: float) -> str:
    return f"{value:.0f}" if name == "chars" else f"{value:.3f}"


def render_rows(suite: Suite, run: ModeRun, names: Sequence[str]) -> str:
    """``names`` for every report row (rows) of one mode."""
    width = max(len(run.mode.name), *(len(label) for label, _ in suite.rows)) + 2
    header = f"{run.mode.name:<{width}}{'n':>6}" + "".join(f"{name:>{len(name) + 2}}" for name in names)
    lines = [header, "-" * len(header)]
    for row in summarise(suite, run.results):
        if row["label"] == suite.headline:
            lines.append("-" * len(header))
        cells = "".join(f"{_value(name, row[name]):>{len(name) + 2}}" for name in names)
        lines.append(f"{row['label']:<{width}}{row['n']:>6}{cells}")
    return "\n".join(lines)


def _share(flags: Sequence[bool]) -> float:
    return sum(flags) / len(flags) if flags else math.nan


def abstention(suite: Suite, run: ModeRun) -> dict[str, float]:
    """Shares of answers at the defaults with no results: adversarial questions, probes, answerable questions."""
    rows = {row["label"]: row for row in summarise(suite, run.results)}
    return {
        "adversarial_no_results": rows[suite.adversarial]["no_results"],
        "random_no_results": _share([empty for kind, empty in run.probes if kind != "other-topic"]),
        "gibberish_no_results": _share([empty for kind, empty in run.probes if kind == "gibberish"]),
        "words_no_results": _share([empty for kind, empty in run.probes if kind == "words"]),
        "other_topic_no_results": _share([empty for kind, empty in run.probes if kind == "other-topic"]),
        "answerable_no_results": rows[suite.headline]["no_results"],
    }


def render_abstention(suite: Suite, runs: Sequence[ModeRun]) -> str:
    """One row per mode: the :func:`abstention` shares."""
    columns = {
        "adversarial_no_results": suite.adversarial,
        "random_no_results": f"random (n={sum(kind != 'other-topic' for kind, _ in runs[0].probes)})",
        "gibberish_no_results": "gibberish",
        "words_no_results": "real words",
        "other_topic_no_results": f"other topic (n={sum(kind == 'other-topic' for kind, _ in runs[0].probes)})",
        "answerable_no_results": f"answerable {suite.headline.removeprefix('headline ')}",
    }
    width = max(len("mode"), *(len(r.mode.name) for r in runs)) + 2
    header = f"{'mode':<{width}}" + "".join(f"{label:>{len(label) + 3}}" for label in columns.values())
    lines = [header, "-" * len(header)]
    for run in runs:
        shares = abstention(suite, run)
        lines.append(
            f"{run.mode.name:<{width}}"
            + "".join(f"{shares[key]:>{len(label) + 3}.3f}" for key, label in columns.items())
        )
    return "\n".join(lines)


def render_chat(suite: Suite, runs: Sequence[ModeRun]) -> list[str]:
    """The chat-set sections: what the agent reads and session recall per mode, then abstention."""
    limits = ", ".join(f"{k}={v:g}" for k, v in runs[0].defaults.items())
    out = [
        "",
        f"What the agent reads — memory_search at its defaults ({limits}): ev@2k / ev@4k = share of evidence "
        "turns whole in the first 2,000 / 4,000 characters of the snippets; ev_returned = share inside a returned "
        "hit's chunk, shown or not (the rest is lost to ranking); chars = characters returned; "
        "repeated = share of them in lines an earlier hit of the answer shows; "
        f"no_results = share of empty answers. session_recall@k = evidence files among the top k of {MAX_RESULTS}; "
        f"session_ndcg@10 = nDCG@10 of the distinct files of {DOCUMENT_FETCH} chunks (a search of its own, as "
        "document sets are judged); "
        "turn_session_recall@5 = evidence turns in the top 5's files (the most chunk recall@5 could be).",
    ]
    out += [block for run in runs for block in ("", render_rows(suite, run, CHAT_METRICS))]
    out += ["", "Abstention — share of answers at the defaults with no results (random-word probes: want 1; "
            "answerable questions: want 0):", "", render_abstention(suite, runs)]  # fmt: skip
    return out


def describe_search(suite: Suite, config: RunConfig, modes: Sequence[Mode]) -> list[str]:
    """What every figure below was measured with."""
    if suite.level == "chunk":
        ranking = f"top {MAX_RESULTS} chunks (max_results={MAX_RESULTS})"
    else:
        ranking = (
            f"max_results={suite.fetch} chunks, collapsed to each document's best chunk, "
            f"top {MAX_RESULTS} distinct documents scored"
        )
    lines = [
        f"search: {ranking}; min_score={MIN_SCORE:g} (ranking measured, not the threshold); "
        f"mmr {'on' if config.mmr else 'off'}, temporal decay {'on' if config.decay else 'off'}",
        f"chunks {config.chunk_tokens}/{config.chunk_overlap} tokens; metrics macro-averaged over queries; "
        f"store {'sqlite' if config.pg_url is None else 'postgres'}",
    ]
    if any(m.embeddings for m in modes):
        if config.provider == "local":
            lines.append(f"embedding model (local provider): {config.model}, {config.threads or 'all'} thread(s)")
        else:
            lines.append(f"embeddings: {config.openai_model} at {config.openai_base_url or 'api.openai.com'}")
    lines += [f"mode {m.name}: " + _mode_settings(m) for m in modes]
    return lines


def _mode_settings(mode: Mode) -> str:
    provider = "embedding.provider=local" if mode.embeddings else "embedding.provider=none"
    return ", ".join([provider, *(f"query.{k}={v}" for k, v in mode.query.items())])


def report(suite: Suite, config: RunConfig, runs: Sequence[ModeRun], seconds: float) -> str:
    """The whole plain-text report."""
    out = [f"{suite.name} — {suite.level} level, {suite.headline}: n = {headline_row(suite, runs[0])['n']} "
           f"queries, {len(runs)} mode(s), {seconds:.1f}s wall"]
    out += [f"  {line}" for line in [*describe_search(suite, config, [r.mode for r in runs]), *suite.notes]]
    out += [f"  WARNING: {r.mode.name}: {r.fallbacks} search(es) fell back to keyword" for r in runs if r.fallbacks]
    out += ["", render_mode_table(suite, runs)]
    if len(suite.rows) > 1:
        out += ["", f"By {'category' if suite.chat else 'group'}:"]
        out += [block for metric in suite.breakdown for block in ("", render_breakdown(suite, runs, metric))]
    if suite.chat:
        out += render_chat(suite, runs)
    return "\n".join(out)


def chat_json(suite: Suite, run: ModeRun) -> dict[str, Any]:
    """A chat set's extras for one mode: the tool's defaults, their searches' time, the abstention shares."""
    if not suite.chat:
        return {}
    return {
        "defaults": run.defaults,
        "defaults_search_seconds": round(run.defaults_seconds, 3),
        "random_queries": sum(kind != "other-topic" for kind, _ in run.probes),
        "other_topic_queries": sum(kind == "other-topic" for kind, _ in run.probes),
        "abstention": abstention(suite, run),
    }


def write_json(path: Path, suite: Suite, config: RunConfig, runs: Sequence[ModeRun], seconds: float) -> None:
    """Settings, references, notes, and per mode its summary rows, timings and per-query scores."""
    payload = {
        "dataset": suite.name,
        "level": suite.level,
        "settings": {
            "chunk_tokens": config.chunk_tokens,
            "chunk_overlap": config.chunk_overlap,
            "window_tokens": config.window_tokens,
            "store": "sqlite" if config.pg_url is None else "postgres",
            "max_results": suite.fetch,
            "scored_items": MAX_RESULTS,
            "min_score": MIN_SCORE,
            "mmr": config.mmr,
            "temporal_decay": config.decay,
            "embedder": config.embedder,
            "model": str(config.model) if config.provider == "local" else config.openai_model,
            "threads": config.threads,
        },
        "workspaces": len(suite.workspaces),
        "notes": suite.notes,
        "headline": suite.headline,
        "references": [{"label": ref.label, **ref.values} for ref in suite.references],
        "seconds": round(seconds, 3),
        "modes": [
            {
                "mode": run.mode.name,
                "provider": "local" if run.mode.embeddings else "none",
                "query": run.mode.query,
                "index": config.index_name(run.mode),
                "index_seconds": round(run.index_seconds, 3),
                "search_seconds": round(run.search_seconds, 3),
                "keyword_fallbacks": run.fallbacks,
                **chat_json(suite, run),
                "rows": summarise(suite, run.results),
                "queries": [{"id": r.qid, "group": r.group, **r.scores} for r in run.results],
            }
            for run in runs
        ],
    }
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")


def log(message: str) -> None:
    """Progress goes to stderr so stdout holds only the report."""
    print(message, file=sys.stderr, flush=True)


# Command line ------------------------------------------------------------------------------------

Loader = Callable[[argparse.Namespace], Suite]


def _dataset_parsers(sub: Any, common: argparse.ArgumentParser) -> Iterator[tuple[str, Loader]]:
    """Register one subcommand per dataset; yield its name and loader."""
    locomo = sub.add_parser("locomo", parents=[common], help="LoCoMo: one workspace per conversation")
    locomo.add_argument("--limit-conversations", type=int, metavar="N", help="only the first N conversations")
    locomo.add_argument("--pooled", action="store_true", help="all conversations in one workspace (harder)")
    yield "locomo", lambda args: load_locomo(args.eval_dir, args.limit_conversations, args.pooled)
    collections: dict[str, tuple[str, Callable[[Path, int | None], Suite]]] = {
        "scifact": ("BEIR SciFact test split: 5,183 abstracts, 300 queries", load_scifact),
        "scifact-train": ("SciFact's train split, held out: the same abstracts, 809 queries", load_scifact_train),
        "cisi": ("CISI: 1,460 documents, 76 judged queries", load_cisi),
        "cmrc": ("CMRC 2018 trial (Chinese): 256 paragraphs, their first questions", load_cmrc),
        "jsquad": ("JSQuAD test (Japanese): 1,159 paragraphs, their first answerable questions", load_jsquad),
    }
    for name, (help_text, load) in collections.items():
        parser = sub.add_parser(name, parents=[common], help=help_text)
        parser.add_argument(
            "--limit-queries", type=int, metavar="N", help="only the first N judged queries (all documents are indexed)"
        )
        yield name, lambda args, load=load: load(args.eval_dir, args.limit_queries)


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, Loader]]:
    """The CLI: options shared by every dataset, then one subcommand per dataset."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--mode", action="append", default=[], metavar="MODE",
        help="keyword, vector, hybrid, rrf, all, or hybrid:V/T (weighted fusion with weights V and T); "
        "repeatable (default: keyword)",
    )  # fmt: skip
    common.add_argument(
        "--variant", action="append", default=[], metavar="NAME",
        help=f"{', '.join(VARIANTS)} (bench/variants.py); repeatable or comma-separated (default: full)",
    )  # fmt: skip
    common.add_argument(
        "--model", type=Path, default=DEFAULT_MODEL, help="GGUF model of the embedding modes (default: %(default)s)"
    )
    common.add_argument(
        "--threads", type=int, default=1,
        help="llama.cpp threads for the embedding modes, 0 = all cores (default: %(default)s: the same "
        "vectors, and far faster than 2 when another process competes for the CPU)",
    )  # fmt: skip
    common.add_argument("--provider", choices=["local", "openai"], default="local",
                        help="embeddings of the embedding modes (default: %(default)s)")  # fmt: skip
    common.add_argument("--openai-base-url", help="OpenAI-compatible endpoint (default: api.openai.com)")
    common.add_argument("--openai-model", default="text-embedding-3-small", help="(default: %(default)s)")
    common.add_argument("--openai-dimensions", type=int, help="ask the model for shorter vectors")
    common.add_argument("--mmr", action="store_true", help="turn on query.mmr (diversity re-ranking) in every mode")
    common.add_argument("--decay", action="store_true", help="turn on query.temporal_decay in every mode")
    common.add_argument(
        "--eval-dir", type=Path, default=DEFAULT_EVAL_DIR, help="shared evaluation data (default: %(default)s)"
    )
    common.add_argument(
        "--cache-dir", type=Path, default=DEFAULT_CACHE_DIR, help="workspaces and indexes (default: %(default)s)"
    )
    common.add_argument("--json", type=Path, metavar="OUT", help="also write results as JSON")
    common.add_argument("--chunk-tokens", type=int, default=400, help="chunk size in tokens (default: %(default)s)")
    common.add_argument("--chunk-overlap", type=int, default=80, help="chunk overlap in tokens (default: %(default)s)")
    common.add_argument("--window-tokens", type=int, metavar="N",
                        help="embedding.window_tokens (default: memdex's); its indexes are kept apart")  # fmt: skip
    common.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite",
                        help="index store (default: %(default)s); postgres: --pg-url, or a pgserver under the cache dir")  # fmt: skip
    common.add_argument("--pg-url", help="PostgreSQL (with pgvector) for --store postgres")
    common.add_argument("--verbose", action="store_true", help="show memdex's own log messages")
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    sub = parser.add_subparsers(dest="dataset", required=True, metavar="DATASET")
    loaders = dict(_dataset_parsers(sub, common))
    return parser, loaders


def main(argv: Sequence[str] | None = None) -> int:
    """Load the chosen dataset, run every mode on it, print the table and optionally write JSON."""
    parser, loaders = build_parser()
    args = parser.parse_args(argv)
    try:
        modes = parse_modes(args.mode)
        variants = parse_variants(args.variant)
    except (argparse.ArgumentTypeError, ValueError) as exc:
        parser.error(str(exc))
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    config = RunConfig(
        cache_dir=args.cache_dir.resolve(),
        model=args.model.expanduser().resolve(),
        provider=args.provider,
        openai_base_url=args.openai_base_url,
        openai_model=args.openai_model,
        openai_dimensions=args.openai_dimensions,
        chunk_tokens=args.chunk_tokens,
        chunk_overlap=args.chunk_overlap,
        window_tokens=args.window_tokens,
        mmr=args.mmr,
        decay=args.decay,
        threads=args.threads,
    )
    loaded = loaders[args.dataset](args)
    for variant in variants:
        suite = apply_variant(loaded, variant)
        if suite is None:
            log(f"{loaded.name}: variant {variant!r} does not apply to a chat set (see bench/variants.py); skipped")
            continue
        log(f"{suite.name}: {len(suite.workspaces)} workspace(s), {suite.n_queries} queries, "
            f"modes {', '.join(m.name for m in modes)}; cache {config.cache_dir / suite.folder}")
        started = time.perf_counter()
        with contextlib.ExitStack() as stack:
            if args.store == "postgres":
                url = args.pg_url or stack.enter_context(local_postgres(config.cache_dir / "postgres-quality"))
                config = replace(config, pg_url=url)
            runs = anyio.run(run_suite, suite, modes, config)
        seconds = time.perf_counter() - started
        print()
        print(report(suite, config, runs, seconds))
        if args.json:
            out = args.json if len(variants) == 1 else args.json.with_stem(f"{args.json.stem}-{variant}")
            write_json(out, suite, config, runs, seconds)
            log(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
