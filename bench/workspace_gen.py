"""A seeded generator of realistic memdex workspaces, for the benchmarks and their smoke test.

A workspace is ``MEMORY.md`` plus daily logs ``memory/YYYY-MM-DD.md`` (and, for a second or third
file on the same day, ``memory/YYYY-MM-DD-<slug>.md``), going back from a fixed date. Each log has
headings, bullet lists, task items, `code spans`, the odd fenced block, ticket IDs (``BILL-4821``),
short commit hashes, people, dates and times, and long-tail names (customers, hosts, codenames) with
Zipf-distributed mentions; about one file in ten also has CJK sentences. Sizes
vary, typically 0.5-4 KB.

File ``i`` depends only on ``(seed, i)``, so a smaller workspace is a prefix of a larger one, and
:func:`sample_queries` can re-create any file to draw queries whose answers exist.
"""

from __future__ import annotations

import datetime as dt
import itertools
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memdex.memory_core.text.chunking import chunk_markdown

END_DATE = dt.date(2026, 6, 30)  # fixed, so the output never depends on today
FILES_PER_DAY = 3
DAY_SLUGS = ("", "-meeting", "-research")
DEFAULT_SIZES = (500, 4000)  # bytes, typical range of a daily log
CJK_SHARE = 0.1

PEOPLE = (
    "Priya", "Marco", "Aiko", "Lena", "Tomás", "Chen Wei", "Fatima", "Olu", "Sven", "Noor",
    "Diego", "Hana", "Ravi", "Ingrid", "Kwame", "Yuki", "Mateo", "Zara", "Jonas", "Amara",
)  # fmt: skip
PROJECTS = (
    ("BILL", "billing-service"), ("AUTH", "auth-gateway"), ("SRCH", "search-indexer"), ("MOB", "mobile-app"),
    ("DATA", "data-pipeline"), ("OPS", "infra"), ("WEB", "web-frontend"), ("ML", "ranking-model"),
)  # fmt: skip
TECH = (
    "PostgreSQL", "SQLite", "Redis", "Kafka", "Kubernetes", "Terraform", "nginx", "gRPC", "GraphQL", "S3",
    "Celery", "FastAPI", "React", "Rust", "pytest", "Grafana", "Prometheus", "OpenTelemetry", "DuckDB", "Vault",
)  # fmt: skip
CODE = (
    "POSTGRES_URL", "retry_backoff", "max_connections", "--dry-run", "git rebase -i", "make deploy",
    "FEATURE_FLAG_NEW_CHECKOUT", "timeout_ms=3000", "kubectl rollout undo", "SELECT count(*)", "npm ci",
    "pip install -e .", "cache.ttl", "X-Request-ID", "ulimit -n 65536", "REDIS_MAX_MEMORY", "pool_size=20",
)  # fmt: skip
TOPICS = (
    "schema migration", "deploy pipeline", "database outage", "p95 latency", "cache invalidation", "invoice export",
    "onboarding flow", "Q3 roadmap", "auth refactor", "flaky integration test", "incident review", "load benchmark",
    "TLS certificate renewal", "API quota", "nightly backup", "rollback plan", "search relevance", "webhook retries",
    "pagination bug", "rate limiting", "memory leak", "dependency upgrade", "feature flag cleanup", "cost report",
    "on-call handover", "data retention policy", "mobile crash", "accessibility audit", "price change", "SSO setup",
)  # fmt: skip
VERBS = (
    "reviewed", "fixed", "discussed", "investigated", "shipped", "rolled back", "wrote notes on", "benchmarked",
    "paired on", "documented", "estimated", "reproduced", "closed", "reopened", "split up",
)  # fmt: skip
REASONS = (
    "it is simpler to operate", "the team already knows it", "it halves the p95", "the licence is cheaper",
    "it keeps the data on our side", "the old one cannot shard", "it needs no extra service",
    "the benchmark showed 3x throughput", "support ends next year", "it makes the tests deterministic",
)  # fmt: skip
PERSONAL = (
    "dentist appointment moved to Thursday 9:30", "book club picked 'The Dispossessed'",
    "renew the passport before May", "gym: 5k run in 27 minutes", "birthday gift for Hana: a fountain pen",
    "flight to Lisbon on the 14th, seat 23A", "call the landlord about the boiler",
    "try the ramen place on Oak Street", "sourdough starter needs feeding",
)  # fmt: skip
CJK_SENTENCES = (
    "今日は東京チームとデプロイ手順を確認した。", "来週までに請求書のエクスポートを直す必要がある。",
    "検索の遅延は主にキャッシュの失効が原因だった。", "我们决定把缓存迁移到 Redis,下周上线。",
    "数据库迁移在周五晚上完成,没有停机。", "李明负责认证网关的重构。", "회의에서 배포 일정을 다시 논의했다.",
    "新しいオンボーディングの流れはユーザーに好評だった。", "性能测试显示 p95 延迟下降了一半。",
)  # fmt: skip
SECTIONS = ("Standup", "Meetings", "Decisions", "Incidents", "Notes", "TODO", "Links", "Personal", "Customers")
_SYLLABLES = ("ka", "lo", "ren", "vi", "ta", "mor", "sel", "du", "an", "quo", "zi", "bel", "tor", "ni", "pha",
              "gri", "os", "el", "ul", "im", "dra", "sun", "ve", "kor")  # fmt: skip


def _lexicon() -> tuple[str, ...]:
    names = [a.capitalize() + b + c for a in _SYLLABLES for b in _SYLLABLES for c in ("", "a", "is", "on", *_SYLLABLES)]
    random.Random(0).shuffle(names)
    return tuple(names)


#: 16k names of customers, hosts, repositories and codenames: the long tail real notes are full of.
#: Mentions follow Zipf's law, so a few names are everywhere and most are rare.
LEXICON = _lexicon()
_LEXICON_WEIGHTS = tuple(itertools.accumulate(1 / (rank + 1) ** 1.1 for rank in range(len(LEXICON))))
_LEXICON_SET = frozenset(name.lower() for name in LEXICON)

_ID = re.compile(r"\b[A-Z]{2,4}-\d{3,4}\b")
_HASH = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7}\b")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_WORD = re.compile(r"\b[A-Za-z]{4,}(?:-[A-Za-z]+)*\b(?!-\d)")  # words, not the letters of an ID


@dataclass(frozen=True)
class GeneratedWorkspace:
    """What :func:`write_workspace` wrote."""

    root: Path
    files: int  # daily logs plus MEMORY.md
    bytes: int
    chunks: int | None  # counted with memdex's chunker when a chunk target was asked for


class _Writer:
    """Random Markdown lines for one file, from one seeded ``random.Random``."""

    def __init__(self, rng: random.Random, day: dt.date) -> None:
        self.rng = rng
        self.day = day

    def pick(self, items: tuple[str, ...]) -> str:
        return self.rng.choice(items)

    def ticket(self) -> str:
        key, _ = self.rng.choice(PROJECTS)
        return f"{key}-{self.rng.randint(100, 9999)}"

    def commit(self) -> str:
        while not _HASH.fullmatch(value := f"{self.rng.getrandbits(28):07x}"):
            pass
        return value

    def name(self) -> str:
        """A long-tail name (customer, host, codename), Zipf-distributed."""
        return self.rng.choices(LEXICON, cum_weights=_LEXICON_WEIGHTS)[0]

    def when(self) -> str:
        return f"{self.rng.randint(7, 19):02d}:{self.rng.choice((0, 15, 30, 45)):02d}"

    def later(self) -> str:
        return (self.day + dt.timedelta(days=self.rng.randint(1, 30))).isoformat()

    def bullet(self, section: str) -> str:
        r = self.rng
        project = r.choice(PROJECTS)[1]
        if section == "Decisions":
            a, b = r.sample(TECH, 2)
            return f"- Decision: use {a} for the {self.pick(TOPICS)} instead of {b}; {self.pick(REASONS)}."
        if section == "Incidents":
            host = f"{self.name().lower()}-db-0{r.randint(1, 9)}"
            return (f"- {self.when()} {self.ticket()}: {self.pick(TOPICS)} on `{host}` ({project}), "
                    f"rolled back {self.commit()}; {self.pick(PEOPLE)} on call.")  # fmt: skip
        if section == "TODO":
            box = r.choice(("[ ]", "[ ]", "[x]"))
            person, ticket, topic = self.pick(PEOPLE), self.ticket(), self.pick(TOPICS)
            return f"- {box} {person} to follow up on {ticket} ({topic}) by {self.later()}."
        if section == "Links":
            return f"- https://git.example.com/{project}/commit/{self.commit()} — {self.pick(TOPICS)}"
        if section == "Personal":
            return f"- {self.pick(PERSONAL)}"
        if section == "Customers":
            return (f"- {self.name()} ({self.name()} Group) asked about the {self.pick(TOPICS)}; "
                    f"{self.pick(PEOPLE)} owns it, renewal {self.later()}.")  # fmt: skip
        return (f"- {self.pick(VERBS).capitalize()} the {self.pick(TOPICS)} for {self.name()} in `{self.pick(CODE)}` "
                f"with {self.pick(PEOPLE)} ({self.ticket()}).")  # fmt: skip

    def paragraph(self) -> str:
        r = self.rng
        sentences = [
            f"{self.pick(PEOPLE)} thinks the {self.pick(TOPICS)} is blocked on {self.pick(TECH)}.",
            f"Project {self.name()} depends on {self.name()}; {self.pick(PEOPLE)} will check with {self.name()}.",
            f"We measured the {self.pick(TOPICS)} again: {r.randint(2, 900)} ms before, {r.randint(2, 900)} ms after.",
            f"Commit {self.commit()} touched `{self.pick(CODE)}`; see {self.ticket()}.",
            f"Next review of the {self.pick(TOPICS)} is on {self.later()} at {self.when()}.",
            f"Open question from {self.pick(PEOPLE)}: do we still need {self.pick(TECH)} for the {self.pick(TOPICS)}?",
        ]
        return " ".join(r.sample(sentences, r.randint(2, 4)))

    def fence(self) -> str:
        return f"```sh\n{self.pick(CODE)}\n{self.pick(CODE)}\n```"


def file_path(index: int) -> str:
    """The workspace-relative path of daily log ``index`` (0 = the most recent)."""
    day = END_DATE - dt.timedelta(days=index // FILES_PER_DAY)
    return f"memory/{day.isoformat()}{DAY_SLUGS[index % FILES_PER_DAY]}.md"


def daily_log(index: int, seed: int = 0, sizes: tuple[int, int] = DEFAULT_SIZES) -> str:
    """The Markdown of daily log ``index``: depends only on (seed, index, sizes)."""
    rng = random.Random(f"{seed}:{index}")
    day = END_DATE - dt.timedelta(days=index // FILES_PER_DAY)
    w = _Writer(rng, day)
    lo, hi = sizes
    target = min(hi, max(lo, int(rng.lognormvariate(7.3, 0.6))))  # median ~1.5 KB
    title = day.isoformat() + (f" — {rng.choice(PROJECTS)[1]}" if index % FILES_PER_DAY else "")
    parts = [f"# {title}", ""]
    if rng.random() < CJK_SHARE:
        parts += [" ".join(rng.sample(CJK_SENTENCES, rng.randint(1, 3))), ""]
    size = sum(len(p) + 1 for p in parts)
    while size < target:
        section = rng.choice(SECTIONS)
        block = [f"## {section}", ""]
        block += [w.bullet(section) for _ in range(rng.randint(2, 6))]
        if rng.random() < 0.5:
            block += ["", w.paragraph()]
        if rng.random() < 0.1:
            block += ["", w.fence()]
        block.append("")
        parts += block
        size += sum(len(p.encode("utf-8")) + 1 for p in block)
    return "\n".join(parts)


def long_term_memory(seed: int = 0) -> str:
    """A curated ``MEMORY.md``: preferences, facts and decisions."""
    rng = random.Random(f"{seed}:memory")
    w = _Writer(rng, END_DATE)
    lines = ["# Memory", "", "## Preferences", ""]
    lines += [f"- {p} prefers {rng.choice(TECH)} and reviews in the morning." for p in rng.sample(PEOPLE, 6)]
    lines += ["", "## Facts", ""]
    lines += [f"- The {name} deploy key is {key}-{rng.randint(1000, 9999)}; owner {rng.choice(PEOPLE)}."
              for key, name in PROJECTS]  # fmt: skip
    lines += ["", "## Decisions", ""] + [w.bullet("Decisions") for _ in range(12)]
    return "\n".join(lines) + "\n"


def iter_files(seed: int = 0, sizes: tuple[int, int] = DEFAULT_SIZES) -> Iterator[tuple[str, str]]:
    """(relative path, text) of ``MEMORY.md`` and then the daily logs, newest first, without end."""
    yield "MEMORY.md", long_term_memory(seed)
    index = 0
    while True:
        yield file_path(index), daily_log(index, seed, sizes)
        index += 1


def write_workspace(
    root: Path,
    *,
    files: int | None = None,
    chunks: int | None = None,
    seed: int = 0,
    sizes: tuple[int, int] = DEFAULT_SIZES,
    tokens: int = 400,
    overlap: int = 80,
) -> GeneratedWorkspace:
    """Write ``files`` files (MEMORY.md included), or as many as give ``chunks`` chunks, under ``root``.

    Chunks are counted with memdex's chunker at ``tokens``/``overlap``, as the index will cut them.
    """
    if (files is None) == (chunks is None):
        raise ValueError("pass exactly one of files= or chunks=")
    (root / "memory").mkdir(parents=True, exist_ok=True)
    written = total_bytes = total_chunks = 0
    for rel, text in iter_files(seed, sizes):
        if (files is not None and written >= files) or (chunks is not None and total_chunks >= chunks):
            break
        data = text.encode("utf-8")
        (root / rel).write_bytes(data)
        written += 1
        total_bytes += len(data)
        if chunks is not None:
            total_chunks += len(chunk_markdown(text, tokens, overlap))
    return GeneratedWorkspace(root, written, total_bytes, total_chunks if chunks is not None else None)


def sample_queries(files: int, n: int, seed: int = 0, sizes: tuple[int, int] = DEFAULT_SIZES) -> list[str]:
    """``n`` search queries drawn from the first ``files`` daily logs of a workspace.

    A mix of what agents send: exact IDs and hashes, code identifiers, names with a keyword, a few
    keywords, and questions in natural language; most have an answer in the workspace.
    """
    rng = random.Random(f"{seed}:queries")
    queries: list[str] = []
    while len(queries) < n:
        text = daily_log(rng.randrange(max(1, files - 1)), seed, sizes)
        words = [w.lower() for w in _WORD.findall(text) if w.lower() not in _NOT_CONTENT]
        names = [w for w in words if w in _LEXICON_SET]
        kind = rng.random()
        if kind < 0.2 and (found := _ID.findall(text) + _HASH.findall(text)):
            queries.append(rng.choice(found))
        elif kind < 0.3 and (spans := _CODE_SPAN.findall(text)):
            queries.append(rng.choice(spans))
        elif kind < 0.5 and names:
            name = rng.choice(names)
            queries.append(f"{name} {rng.choice([w for w in words if w != name] or [''])}".strip())
        elif kind < 0.75 and len(words) >= 3:
            queries.append(" ".join(rng.sample(words, rng.randint(2, 3))))
        elif words:
            template = rng.choice(_QUESTIONS)
            queries.append(template.format(*rng.sample(words, 2), person=rng.choice(PEOPLE)))
    return queries


_NOT_CONTENT = frozenset(
    ["with", "from", "instead", "that", "this", "next", "before", "after", "still", "need", "thinks", "again",
     "http", "https"]
)  # fmt: skip
_QUESTIONS = (
    "what did we decide about the {0} {1}?",
    "when is the {0} {1} review?",
    "what did {person} say about {0}?",
    "why was the {0} rolled back",
    "notes on {0} and {1}",
)
