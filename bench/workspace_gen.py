"""A seeded generator of realistic memdex workspaces, for the benchmarks and their smoke test.

A workspace is ``MEMORY.md`` plus daily logs ``memory/YYYY-MM-DD.md`` (and, for a second or third
file on the same day, ``memory/YYYY-MM-DD-<slug>.md``), going back from a fixed date. Each log has
headings, bullet lists, task items, `code spans`, the odd fenced block, ticket IDs (``BILL-4821``),
short commit hashes, people, dates and times, and long-tail names (customers, hosts, codenames) with
Zipf-distributed mentions; about one file in ten also has CJK sentences. Sizes
vary, typically 0.5-4 KB.

With ``lang="cjk"`` every daily log is written in Chinese (three files in five) or Japanese instead: the same
sections, with CJK topics, people and long-tail names (Han and katakana), and the Latin IDs, hashes, code
spans and product names real CJK notes keep; its queries are CJK too.

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
from string import Formatter

from memdex.memory_core.text.chunking import chunk_markdown

END_DATE = dt.date(2026, 6, 30)  # fixed, so the output never depends on today
FILES_PER_DAY = 3
DAY_SLUGS = ("", "-meeting", "-research")
DEFAULT_SIZES = (500, 4000)  # bytes, typical range of a daily log
CJK_SHARE = 0.1  # English workspaces: files that also have a few CJK sentences
LANGS = ("en", "cjk")

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

    def heading(self, section: str) -> str:
        return section

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


# CJK daily logs (lang="cjk") -------------------------------------------------------------------------

_ZH: dict[str, tuple[str, ...]] = {
    "people": ("李明", "王芳", "张伟", "刘洋", "陈静", "杨磊", "赵敏", "黄晓东", "周杰", "吴婷"),
    "topics": ("数据库迁移", "部署流水线", "数据库故障", "延迟监控", "缓存失效", "发票导出", "新用户引导流程",
               "第三季度路线图", "认证重构", "不稳定的集成测试", "事故复盘", "压力测试", "证书续期", "接口配额",
               "夜间备份", "回滚方案", "搜索相关性", "回调重试", "分页错误", "限流策略", "内存泄漏", "依赖升级",
               "功能开关清理", "成本报告", "值班交接", "数据保留策略", "移动端崩溃", "无障碍审计", "价格调整",
               "单点登录配置"),
    "verbs": ("评审了", "修复了", "讨论了", "排查了", "上线了", "回滚了", "整理了", "压测了", "结对处理了",
              "记录了", "估算了", "复现了", "关闭了", "重新打开了", "拆分了"),
    "reasons": ("运维更简单", "团队已经熟悉它", "p95 延迟减半", "许可证更便宜", "数据留在我们这边",
                "旧方案无法分片", "不需要额外的服务", "压测显示吞吐量提高三倍", "明年停止支持", "测试更稳定"),
    "personal": ("牙医预约改到周四上午九点半", "读书会选了《三体》", "五月前要续签护照", "健身：五公里跑了二十七分钟",
                 "给小红的生日礼物：一支钢笔", "十四号飞上海，座位 23A", "给房东打电话说热水器的事",
                 "去橡树街那家拉面店试试", "酸面包的酵种该喂了"),
    "headings": ("站会", "会议", "决定", "事故", "笔记", "待办", "链接", "个人", "客户"),
    "bullets": (
        "- 和{person}一起{verb}{name}的{topic}，涉及 `{code}`（{ticket}）。",
        "- 决定：{topic}改用 {tech}，不再用 {tech2}；原因是{reason}。",
        "- {when} {ticket}：`{host}` 上出现{topic}问题（{project}），回滚了 {commit}；{person}值班。",
        "- {box} {person}在 {later} 之前跟进 {ticket}（{topic}）。",
        "- https://git.example.com/{project}/commit/{commit} — {topic}",
        "- {personal}",
        "- {name}（{name2}集团）询问了{topic}；由{person}负责，{later} 续约。",
    ),
    "sentences": (
        "{person}认为{topic}卡在 {tech} 上。", "{name}项目依赖{name2}；{person}会和{name3}确认。",
        "我们又测了一次{topic}：之前 {n} ms，之后 {n2} ms。", "提交 {commit} 修改了 `{code}`；见 {ticket}。",
        "{topic}的下次评审在 {later} {when}。", "{person}提问：{topic}还需要 {tech} 吗？",
    ),
    "questions": ("关于{topic}我们决定了什么？", "{topic}什么时候评审？", "{person}对{topic}说了什么？",
                  "为什么回滚了{topic}", "{name}和{topic}的记录"),
}  # fmt: skip
_JA: dict[str, tuple[str, ...]] = {
    "people": ("佐藤", "鈴木", "高橋", "田中", "伊藤", "渡辺", "山本", "中村", "小林", "加藤"),
    "topics": ("スキーマ移行", "デプロイ手順", "データベース障害", "レイテンシ監視", "キャッシュの無効化",
               "請求書のエクスポート", "オンボーディング", "第3四半期のロードマップ", "認証のリファクタリング",
               "不安定な結合テスト", "障害の振り返り", "負荷試験", "証明書の更新", "APIの利用枠", "夜間バックアップ",
               "ロールバック計画", "検索の関連性", "Webhookの再送", "ページングの不具合", "レート制限", "メモリリーク",
               "依存関係の更新", "機能フラグの整理", "コストレポート", "当番の引き継ぎ", "データ保持ポリシー",
               "モバイルのクラッシュ", "アクセシビリティ監査", "価格改定", "シングルサインオンの設定"),
    "verbs": ("レビューした", "修正した", "議論した", "調査した", "リリースした", "ロールバックした", "まとめた",
              "計測した", "ペアで対応した", "文書化した", "見積もった", "再現した", "クローズした", "再オープンした",
              "分割した"),
    "reasons": ("運用が簡単だから", "チームが使い慣れているから", "p95 が半分になるから", "ライセンスが安いから",
                "データを手元に置けるから", "旧方式はシャーディングできないから", "追加のサービスが要らないから",
                "ベンチマークで三倍の性能が出たから", "来年サポートが終わるから", "テストが安定するから"),
    "personal": ("歯医者の予約を木曜の九時半に変更", "読書会の本は『ゲド戦記』に決定", "五月までにパスポートを更新する",
                 "ジム：五キロを二十七分で走った", "花子さんの誕生日プレゼントは万年筆", "十四日に大阪へ、座席は 23A",
                 "給湯器のことで大家さんに電話する", "オーク通りのラーメン屋に行ってみる", "パン種に餌をやる"),
    "headings": ("朝会", "会議", "決定事項", "障害", "メモ", "TODO", "リンク", "個人", "顧客"),
    "bullets": (
        "- {person}さんと{name}の{topic}を{verb}（`{code}`、{ticket}）。",
        "- 決定：{topic}には {tech2} ではなく {tech} を使う。{reason}。",
        "- {when} {ticket}：`{host}`（{project}）で{topic}の問題が発生し、{commit} をロールバックした。当番は{person}さん。",
        "- {box} {person}さんが {later} までに {ticket}（{topic}）をフォローする。",
        "- https://git.example.com/{project}/commit/{commit} — {topic}",
        "- {personal}",
        "- {name}（{name2}グループ）から{topic}について問い合わせがあった。担当は{person}さん、更新は {later}。",
    ),
    "sentences": (
        "{person}さんは{topic}が {tech} で止まっていると考えている。",
        "{name}プロジェクトは{name2}に依存している。{person}さんが{name3}に確認する。",
        "{topic}をもう一度計測した。前は {n} ms、後は {n2} ms。", "コミット {commit} で `{code}` を変更した。{ticket} を参照。",
        "{topic}の次のレビューは {later} の {when}。", "{person}さんからの質問：{topic}にまだ {tech} は必要か？",
    ),
    "questions": ("{topic}について何を決めましたか？", "{topic}のレビューはいつですか？",
                  "{person}さんは{topic}について何と言いましたか？", "{topic}はなぜロールバックされたのか",
                  "{name}と{topic}のメモ"),
}  # fmt: skip
_BULLET_OF_SECTION = {"Decisions": 1, "Incidents": 2, "TODO": 3, "Links": 4, "Personal": 5, "Customers": 6}
_HAN_NAME = "华星云海天明远达辰信安恒泰嘉瑞丰盛宏博智创源通汇鑫宇凯峰锦鸿晨晖启航越腾飞龙凤祥和"
_KATAKANA_NAME = ("カ", "ロ", "レン", "ヴィ", "タ", "モル", "セ", "ドゥ", "アン", "キ", "ジ", "ベル", "トル", "ニ", "ファ",
                  "グリ", "オス", "エル", "ウル", "イム", "ドラ", "サン", "ヴェ", "コル")  # fmt: skip


def _cjk_lexicon() -> tuple[str, ...]:
    """As many long-tail names as :data:`LEXICON` (so its Zipf weights fit): Han and katakana, mixed."""
    han = [a + b + c for a in _HAN_NAME for b in _HAN_NAME for c in ("", *_HAN_NAME[:8]) if a != b]
    kana = [a + b + c for a in _KATAKANA_NAME for b in _KATAKANA_NAME for c in ("", "ー", *_KATAKANA_NAME)]
    names = sorted(set(han) | set(kana))
    random.Random(0).shuffle(names)
    return tuple(names[: len(LEXICON)])


CJK_LEXICON = _cjk_lexicon()


class _CjkWriter(_Writer):
    """The lines of a Chinese or Japanese daily log; remembers the names and topics it wrote (for queries)."""

    def __init__(self, rng: random.Random, day: dt.date) -> None:
        super().__init__(rng, day)
        self.vocab = _JA if rng.random() < 0.4 else _ZH
        self.names: list[str] = []
        self.topics: list[str] = []

    def heading(self, section: str) -> str:
        return self.vocab["headings"][SECTIONS.index(section)]

    def name(self) -> str:
        return self.rng.choices(CJK_LEXICON, cum_weights=_LEXICON_WEIGHTS)[0]

    def _fill(self, template: str) -> str:
        r, v = self.rng, self.vocab
        slots = {f for _, f, _, _ in Formatter().parse(template) if f}
        makers = {
            "person": lambda: r.choice(v["people"]), "topic": lambda: r.choice(v["topics"]),
            "verb": lambda: r.choice(v["verbs"]), "reason": lambda: r.choice(v["reasons"]),
            "personal": lambda: r.choice(v["personal"]), "tech": lambda: self.pick(TECH),
            "tech2": lambda: self.pick(TECH), "code": lambda: self.pick(CODE), "ticket": self.ticket,
            "commit": self.commit, "when": self.when, "later": self.later, "project": lambda: r.choice(PROJECTS)[1],
            "host": lambda: f"{self.pick(LEXICON).lower()}-db-0{r.randint(1, 9)}",
            "box": lambda: r.choice(("[ ]", "[ ]", "[x]")), "n": lambda: str(r.randint(2, 900)),
            "n2": lambda: str(r.randint(2, 900)), "name": self.name, "name2": self.name, "name3": self.name,
        }  # fmt: skip
        values = {slot: makers[slot]() for slot in sorted(slots)}
        self.names += [values[k] for k in ("name", "name2", "name3") if k in values]
        self.topics += [values["topic"]] if "topic" in values else []
        return template.format(**values)

    def bullet(self, section: str) -> str:
        return self._fill(self.vocab["bullets"][_BULLET_OF_SECTION.get(section, 0)])

    def paragraph(self) -> str:
        sentences = self.rng.sample(self.vocab["sentences"], self.rng.randint(2, 4))
        return "".join(self._fill(s) for s in sentences)

    def question(self, rng: random.Random) -> str:
        """A question about this file in its language, its choices drawn from ``rng``."""
        template = rng.choice(self.vocab["questions"])
        values = {"topic": rng.choice(self.topics or list(self.vocab["topics"])),
                  "person": rng.choice(self.vocab["people"]),
                  "name": rng.choice(self.names or list(CJK_LEXICON[:10]))}  # fmt: skip
        return template.format(**values)


def file_path(index: int) -> str:
    """The workspace-relative path of daily log ``index`` (0 = the most recent)."""
    day = END_DATE - dt.timedelta(days=index // FILES_PER_DAY)
    return f"memory/{day.isoformat()}{DAY_SLUGS[index % FILES_PER_DAY]}.md"


def daily_log(index: int, seed: int = 0, sizes: tuple[int, int] = DEFAULT_SIZES, lang: str = "en") -> str:
    """The Markdown of daily log ``index``: depends only on (seed, index, sizes, lang)."""
    return _daily_log(index, seed, sizes, lang)[0]


def _daily_log(index: int, seed: int, sizes: tuple[int, int], lang: str) -> tuple[str, _Writer]:
    """The Markdown of daily log ``index`` and the writer that wrote it."""
    if lang not in LANGS:
        raise ValueError(f"unknown lang {lang!r}; choose from {', '.join(LANGS)}")
    rng = random.Random(f"{seed}:{index}")
    day = END_DATE - dt.timedelta(days=index // FILES_PER_DAY)
    w = _Writer(rng, day) if lang == "en" else _CjkWriter(rng, day)
    lo, hi = sizes
    target = min(hi, max(lo, int(rng.lognormvariate(7.3, 0.6))))  # median ~1.5 KB
    title = day.isoformat() + (f" — {rng.choice(PROJECTS)[1]}" if index % FILES_PER_DAY else "")
    parts = [f"# {title}", ""]
    if lang == "en" and rng.random() < CJK_SHARE:
        parts += [" ".join(rng.sample(CJK_SENTENCES, rng.randint(1, 3))), ""]
    size = sum(len(p) + 1 for p in parts)
    while size < target:
        section = rng.choice(SECTIONS)
        block = [f"## {w.heading(section)}", ""]
        block += [w.bullet(section) for _ in range(rng.randint(2, 6))]
        if rng.random() < 0.5:
            block += ["", w.paragraph()]
        if rng.random() < 0.1:
            block += ["", w.fence()]
        block.append("")
        parts += block
        size += sum(len(p.encode("utf-8")) + 1 for p in block)
    return "\n".join(parts), w


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


def iter_files(seed: int = 0, sizes: tuple[int, int] = DEFAULT_SIZES, lang: str = "en") -> Iterator[tuple[str, str]]:
    """(relative path, text) of ``MEMORY.md`` (English in every lang) and then the daily logs, newest first,
    without end."""
    yield "MEMORY.md", long_term_memory(seed)
    index = 0
    while True:
        yield file_path(index), daily_log(index, seed, sizes, lang)
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
    lang: str = "en",
) -> GeneratedWorkspace:
    """Write ``files`` files (MEMORY.md included), or as many as give ``chunks`` chunks, under ``root``.

    Chunks are counted with memdex's chunker at ``tokens``/``overlap``, as the index will cut them.
    """
    if (files is None) == (chunks is None):
        raise ValueError("pass exactly one of files= or chunks=")
    (root / "memory").mkdir(parents=True, exist_ok=True)
    written = total_bytes = total_chunks = 0
    for rel, text in iter_files(seed, sizes, lang):
        if (files is not None and written >= files) or (chunks is not None and total_chunks >= chunks):
            break
        data = text.encode("utf-8")
        (root / rel).write_bytes(data)
        written += 1
        total_bytes += len(data)
        if chunks is not None:
            total_chunks += len(chunk_markdown(text, tokens, overlap))
    return GeneratedWorkspace(root, written, total_bytes, total_chunks if chunks is not None else None)


def sample_queries(
    files: int, n: int, seed: int = 0, sizes: tuple[int, int] = DEFAULT_SIZES, lang: str = "en"
) -> list[str]:
    """``n`` search queries drawn from the first ``files`` daily logs of a workspace.

    A mix of what agents send: exact IDs and hashes, code identifiers, names with a keyword, a few
    keywords, and questions in natural language; most have an answer in the workspace.
    """
    rng = random.Random(f"{seed}:queries")
    queries: list[str] = []
    while len(queries) < n:
        text, writer = _daily_log(rng.randrange(max(1, files - 1)), seed, sizes, lang)
        if isinstance(writer, _CjkWriter):
            queries.append(_cjk_query(rng, text, writer))
            continue
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


def _cjk_query(rng: random.Random, text: str, writer: _CjkWriter) -> str:
    """A query for a CJK log, in the mix of :func:`sample_queries`: IDs, code, a name and a topic, topics,
    questions."""
    kind = rng.random()
    if kind < 0.2 and (found := _ID.findall(text) + _HASH.findall(text)):
        return rng.choice(found)
    if kind < 0.3 and (spans := _CODE_SPAN.findall(text)):
        return rng.choice(spans)
    if kind < 0.5 and writer.names and writer.topics:
        return f"{rng.choice(writer.names)} {rng.choice(writer.topics)}"
    if kind < 0.75 and writer.topics:
        return " ".join(rng.sample(writer.topics, min(len(writer.topics), rng.randint(1, 2))))
    return writer.question(rng)


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
