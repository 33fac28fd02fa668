"""Memory in every script, end to end: notes in Chinese, Japanese, Korean, Thai, accented Latin and mixed
English/CJK found by their words over MCP (an in-process client) and the CLI, keyword-only and hybrid (the
real GGUF test model); unrelated and gibberish CJK queries answered with nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from fake_provider import HashFactory
from helpers import TEST_MODEL, needs_shared
from mcp import Client

from memdex.memory_core import MemoryEngine, SearchAnswer
from memdex.memory_core.embeddings.languages import english_only, reads_query, script_warning
from memdex.memory_core.index import syncer
from memdex.memory_core.stores.postgres import postings
from memdex.memory_core.text.scripts import letters_by_script
from memdex.memory_core.text.terms import query_terms
from memdex.server import build_server

NOTES = {
    "MEMORY.md": "# 记忆\n\n- 用户喜欢喝乌龙茶，不喜欢咖啡。\n- 数据库迁移推迟到下个月。\n",
    "memory/2026-03-01.md": "# 2026-03-01\n\n- 来週、東京でプロジェクトの打ち合わせをします。\n- 予算は三百万円です。\n",
    "memory/2026-03-02.md": "# 2026-03-02\n\n- 회의는 화요일로 옮겼다.\n- 서울 사무실 이사는 다음 달이다.\n",
    "memory/2026-03-03.md": "# 2026-03-03\n\n- ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ\n",
    "memory/2026-03-04.md": "# 2026-03-04\n\n- Met Zoë at the café near the station; she moved to Zürich.\n",
    "memory/2026-03-05.md": "# 2026-03-05\n\n- Fixed the flaky test in tests/test_invoice.py; BillingV2Enabled stays off.\n",
    "memory/2026-03-06.md": "# 2026-03-06\n\n- Deploy 周五 via GitHub Actions；回滚方案是 blue-green。\n",
    "memory/2026-03-07.md": "# 2026-03-07\n\n- We went hiking in the mountains with Sam; the weather was lovely.\n",
    "memory/2026-03-08.md": "# 2026-03-08\n\n- 팀장과 예산을 논의했습니다.\n- 새 노트북 구매가 결정됐다.\n",
    "memory/2026-03-09.md": "# 2026-03-09\n\n- Встреча с командой разработчиков по вторникам.\n",
    "memory/2026-03-10.md": "# 2026-03-10\n\n- Επιλέξαμε τη βάση δεδομένων για τις χρεώσεις.\n",
    "memory/2026-03-11.md": "# 2026-03-11\n\n- हमने बिलिंग के लिए नया डेटाबेस चुना।\n",
    "memory/2026-03-12.md": "# 2026-03-12\n\n- আমরা নতুন ডেটাবেস বেছে নিয়েছি।\n",
    "memory/2026-03-13.md": "# 2026-03-13\n\n- اخترنا قاعدة بيانات جديدة لنظام الفواتير.\n",
}
FOUND = [  # (query, the note that must come first)
    ("乌龙茶", "MEMORY.md"),
    ("咖啡", "MEMORY.md"),
    ("用户喜欢喝什么茶？", "MEMORY.md"),
    ("数据库什么时候迁移", "MEMORY.md"),
    ("東京", "memory/2026-03-01.md"),
    ("打ち合わせはいつですか", "memory/2026-03-01.md"),
    ("予算", "memory/2026-03-01.md"),
    ("회의", "memory/2026-03-02.md"),  # 화요일 ("Tuesday") is asked as "tuesday": test_weekdays.py
    ("서울 사무실", "memory/2026-03-02.md"),
    ("การเว้นวรรค", "memory/2026-03-03.md"),
    ("cafe", "memory/2026-03-04.md"),
    ("zurich", "memory/2026-03-04.md"),
    ("invoice", "memory/2026-03-05.md"),
    ("billing", "memory/2026-03-05.md"),
    ("回滚", "memory/2026-03-06.md"),
    ("blue-green deploy", "memory/2026-03-06.md"),
    ("hiking with Sam", "memory/2026-03-07.md"),
    ("논의", "memory/2026-03-08.md"),  # the note says 논의했습니다: the noun of a verb made from it
    ("노트북 구매 결정", "memory/2026-03-08.md"),
    ("встречи разработчиками", "memory/2026-03-09.md"),  # other forms of встреча, разработчиков
    ("βάσεις δεδομένα", "memory/2026-03-10.md"),  # other forms of βάση δεδομένων
    ("डेटाबेस चुनें", "memory/2026-03-11.md"),  # Devanagari words whole, another form of चुना
    ("ডেটাবেস", "memory/2026-03-12.md"),  # Bengali
    ("ما هي البيانات الجديدة؟", "memory/2026-03-13.md"),  # Arabic: بيانات جديدة with the article
]
NOTHING = ["鱲鱳鱴鱵鱶", "天气预报说明天下雨", "カラオケ大会", "양자 컴퓨터", "квантовый компьютер", "बिल्ली का खाना", "quetzal flamingo"]
NOTHING_WARNING = "nothing in memory matches this query"
MakeEngine = Callable[..., MemoryEngine]

pytestmark = pytest.mark.both_stores


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return _written(tmp_path / "ws", NOTES)


def _written(root: Path, notes: dict[str, str]) -> Path:
    """``root`` with each of ``notes`` (path: text) written in it."""
    for rel, text in notes.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


async def _keyword_answers(make_engine: MakeEngine, root: Path, *queries: str) -> list[SearchAnswer]:
    """The keyword-only answers of the memory at ``root`` to ``queries``, in order, from one engine."""
    async with make_engine(workspace=root, embedding=KEYWORD) as engine:
        await engine.sync()
        return [await engine.search(query) for query in queries]


async def _keyword_paths(make_engine: MakeEngine, root: Path, query: str) -> list[str]:
    """The paths a keyword-only search of the memory at ``root`` answers ``query`` with, best first."""
    (answer,) = await _keyword_answers(make_engine, root, query)
    return [hit.path for hit in answer.results]


@asynccontextmanager
async def connected(make_engine: MakeEngine, embedding: dict[str, Any]) -> AsyncIterator[Client]:
    engine = make_engine(embedding=embedding)
    async with Client(build_server(engine)) as client:
        await engine.sync()
        yield client


KEYWORD = {"provider": "none"}
HYBRID = {"provider": "local", "local": {"model": str(TEST_MODEL)}}


async def search(client: Client, query: str) -> dict[str, Any]:
    result = await client.call_tool("memory_search", {"query": query})
    assert not result.is_error, result
    answer = result.structured_content
    assert answer is not None
    return answer


async def test_every_script_is_found_by_its_words_keyword_only(make_engine: MakeEngine) -> None:
    async with connected(make_engine, KEYWORD) as client:
        for query, rel in FOUND:
            answer = await search(client, query)
            assert answer["mode"] == "keyword"
            assert [hit["path"] for hit in answer["results"]][:1] == [rel], (query, answer)
            assert answer["results"][0]["snippet"] in NOTES[rel]  # shown as written, not as indexed
        for query in NOTHING:
            answer = await search(client, query)
            assert answer["results"] == [] and NOTHING_WARNING in (answer["warning"] or ""), (query, answer)


@needs_shared(TEST_MODEL)
async def test_every_script_is_found_by_its_words_hybrid(make_engine: MakeEngine) -> None:
    """With an English-only model (the test model), a query mostly in another script is searched by keyword,
    and the answer says why (its vector would rank notes at random); a Latin-script query is hybrid."""
    async with connected(make_engine, HYBRID) as client:
        for query, rel in FOUND:
            answer = await search(client, query)
            latin = query.isascii() or query in ("cafe", "zurich")
            assert answer["mode"] == ("hybrid" if latin else "keyword"), (query, answer)
            assert latin or "reads English only" in answer["warning"], answer
            assert [hit["path"] for hit in answer["results"]][:1] == [rel], (query, answer)


async def test_an_index_built_with_other_keyword_terms_is_rebuilt_from_the_cache(
    make_engine: MakeEngine, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """An index whose keyword terms were cut by older rules (PostgreSQL: postings of the raw text, where a
    CJK sentence is one token) is rebuilt when opened, with a log line naming why, and no chunk is embedded
    again. (SQLite's own upgrade, migration 0003, is tested in test_sqlite_migrations.py.)"""
    factory = HashFactory()
    with monkeypatch.context() as old:
        old.setattr(syncer, "TERMS_IDENTITY", "porter unicode61")
        old.setattr(postings, "index_text", lambda text: text)
        async with make_engine(provider_factory=factory) as engine:
            await engine.sync()
            assert engine.vectors_ready
    embedded = factory.provider.texts_embedded
    assert embedded > 0
    with caplog.at_level("INFO", logger="memdex.memory_core"):  # the CLI, run in-process by other tests, raises its level
        async with make_engine(provider_factory=factory) as engine:
            await engine.sync()
            answer = await engine.search("咖啡")
            assert answer.mode == "hybrid" and answer.results[0].path == "MEMORY.md"
    assert any("rebuilding" in r.getMessage() and "chunks.fts_tokenizer" in r.getMessage() for r in caplog.records)
    assert factory.provider.texts_embedded == embedded


CHAT = {  # a Chinese chat memory, a day per file, as MemoryBank's (bench/memorybank.py)
    "memory/2026-05-05.md": "- **小雨**: 今天下雨了，我在家里弹了一下午钢琴。\n- **AI**: 听起来很惬意！你弹了什么曲子？\n",
    "memory/2026-05-06.md": "- **小雨**: 我今天读完了一本书，叫《活着》。\n- **AI**: 《活着》是余华写的小说，讲的是福贵的一生。\n",
    "memory/2026-05-07.md": "- **小雨**: 我和朋友去公园跑步了，跑了五公里。\n- **AI**: 太棒了，坚持运动对身体很好。\n",
}
CHAT_FOUND = [  # asked as a chat partner asks: pronouns, and the day as a date
    ("我上个月读的那本书叫什么？", "memory/2026-05-06.md"),
    ("在5月6号我读完的书叫什么名字？", "memory/2026-05-06.md"),
    ("5月5号那天我在家里做了什么？", "memory/2026-05-05.md"),
]


async def test_chinese_chat_questions_are_answered(make_engine: MakeEngine, tmp_path: Path) -> None:
    """Pronouns are stop words (as English's), and a date's counters (月, 号) count once with their numbers, so
    a question asked in chat words finds its day rather than "nothing matches" (each did before)."""
    root = tmp_path / "chat"
    for rel, text in CHAT.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    async with make_engine(workspace=root, embedding=KEYWORD) as engine:
        await engine.sync()
        for query, rel in CHAT_FOUND:
            answer = await engine.search(query)
            assert [hit.path for hit in answer.results][:1] == [rel], (query, answer)
        answer = await engine.search("量子计算机的原理是什么")
        assert answer.results == [] and NOTHING_WARNING in (answer.warning or "")


@pytest.mark.sqlite_only
def test_the_cli_searches_every_script(workspace: Path, tmp_path: Path) -> None:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MEMDEX_")}
    environment |= {"MEMDEX_EMBEDDING__PROVIDER": "none", "MEMDEX_INDEX_PATH": str(tmp_path / "cli.sqlite")}

    def memdex(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "memdex.server.cli", *args, "--workspace", str(workspace)]
        return subprocess.run(command, env=environment, capture_output=True, text=True, timeout=60, encoding="utf-8")

    for query, rel in (("乌龙茶", "MEMORY.md"), ("東京", "memory/2026-03-01.md"), ("서울 사무실", "memory/2026-03-02.md")):
        done = memdex("search", query, "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["results"][0]["path"] == rel
    done = memdex("search", "天气预报")
    assert done.returncode == 0 and NOTHING_WARNING in done.stdout + done.stderr


@pytest.mark.sqlite_only
def test_the_scripts_of_a_memory_and_the_models_that_read_them() -> None:
    letters = letters_by_script("用户喜欢喝乌龙茶 and tea, 화요일")
    assert letters["Chinese/Japanese"] == 8 and letters["Latin"] == 6 and letters["Korean"] == 3
    assert english_only("/models/all-MiniLM-L6-v2-f16.gguf") and english_only("BAAI/bge-small-en-v1.5")
    assert not english_only("hf:ggml-org/embeddinggemma-300M-GGUF/embeddinggemma-300M-Q8_0.gguf")
    assert not english_only("text-embedding-3-small") and not english_only("intfloat/multilingual-e5-small")
    assert script_warning("all-MiniLM-L6-v2", letters) is not None
    assert script_warning("all-MiniLM-L6-v2", letters_by_script("mostly English text, one word 茶")) is None
    assert script_warning("text-embedding-3-small", letters) is None
    assert not reads_query("all-MiniLM-L6-v2", "用户喜欢喝什么茶？") and reads_query("all-MiniLM-L6-v2", "Deploy 周五 via GitHub")
    assert reads_query("text-embedding-3-small", "用户喜欢喝什么茶？") and reads_query("all-MiniLM-L6-v2", "2026")


async def test_a_korean_question_finds_the_note_that_states_it(make_engine: MakeEngine, tmp_path: Path) -> None:
    """"Who looks after the backups?", asked with a particle (백업은) and a question's ending (담당하나요): the note
    that says 백업을 담당함 answers first, not the one that says 백업 twice."""
    notes = {
        "MEMORY.md": "# 메모리\n\n- 김지수 — 결제 시스템 개편의 제품 책임자.\n- 박민호 — 당직 엔지니어; 백업을 담당함.\n",
        "memory/2026-11-19.md": "# 2026-11-19\n\n- 야간 백업이 3시간 걸림; 백업 아카이브가 너무 빨리 커짐.\n",
        "memory/2026-11-20.md": "# 2026-11-20\n\n- 부하 테스트: 스테이징에서 초당 450건을 처리함.\n",
    }
    # "when was the load test?" with the copula on its question word (언제야), "what did the night backup do?" with a
    # verb's ending written alone (했나요), "who handles the backups?" with a verb asked as a question (맡나요): none
    # is named as a word no note holds
    backups, load, night, owner = await _keyword_answers(
        make_engine, _written(tmp_path / "korean", notes),
        "백업은 누가 담당하나요?", "부하 테스트는 언제야?", "야간 백업은 뭐 했나요?", "백업은 누가 맡나요?",
    )  # fmt: skip
    assert [hit.path for hit in backups.results][:1] == ["MEMORY.md"]
    assert [hit.path for hit in load.results] == ["memory/2026-11-20.md"] and load.warning is None
    assert [hit.path for hit in night.results][:1] == ["memory/2026-11-19.md"] and night.warning is None
    assert "MEMORY.md" in [hit.path for hit in owner.results] and owner.warning is None  # no "맡나요" named as missing


async def test_chinese_in_either_form_finds_notes_in_the_other(make_engine: MakeEngine, tmp_path: Path) -> None:
    """A note typed in traditional characters (備份, 資料庫) and one an agent wrote in simplified ones (退款流程, 上线):
    each is found by a question in the other form."""
    notes = {
        "MEMORY.md": "# 長期記憶\n\n- 計費服務的資料庫選用 PostgreSQL 17。\n- 夜間備份要三小時。\n",
        "memory/2026-12-01.md": "# 2026-12-01\n\n- 和王芳开会，讨论退款流程，决定下周上线。\n",
        "memory/2026-12-02.md": "# 2026-12-02\n\n- 房租从 12 月起涨到 6800 元。\n",
    }
    backup, database, refunds = await _keyword_answers(
        make_engine, _written(tmp_path / "chinese", notes), "备份要多久？", "计费服务用什么数据库", "退款流程什麼時候上線？"
    )
    assert [hit.path for hit in backup.results] == ["MEMORY.md"]
    assert [hit.path for hit in database.results] == ["MEMORY.md"]
    assert [hit.path for hit in refunds.results][:1] == ["memory/2026-12-01.md"]


async def test_a_persian_question_is_answered_without_naming_its_function_words(make_engine: MakeEngine, tmp_path: Path) -> None:
    """"Who is Sara?" (سارا چه کسی است؟) named "چه" and "کسی" as words no note holds, and "how much is the rent?"
    ranked the note that says "است" ("is") beside the one that holds the rent."""
    notes = {
        "MEMORY.md": "# حافظه\n\n- سارا مدیر پروژه پرداخت است.\n- من به پنی‌سیلین حساسیت دارم.\n",
        "memory/2026-12-01.md": "# 2026-12-01\n\n- اجاره خانه از دی ماه ۲۵ میلیون تومان.\n",
    }
    sara, rent = await _keyword_answers(
        make_engine, _written(tmp_path / "persian", notes), "سارا چه کسی است؟", "اجاره خانه چقدر است؟"
    )
    assert [hit.path for hit in sara.results] == ["MEMORY.md"] and sara.warning is None
    assert [hit.path for hit in rent.results] == ["memory/2026-12-01.md"] and rent.warning is None


async def test_a_short_spanish_question_does_not_search_for_its_function_word(make_engine: MakeEngine, tmp_path: Path) -> None:
    """"¿Qué prefiere Lucía?" has one function word; written with its accent it says the query is Spanish, so no
    note is found for saying "que" (in four notes it weighed as much as "Lucía")."""
    notes = {
        "MEMORY.md": "# Memoria\n\n- Lucía Gómez: responsable de producto; prefiere propuestas por escrito.\n",
        "memory/2026-11-19.md": "# 2026-11-19\n\n- Diego informó que la copia de seguridad tardó 3 h.\n",
        "memory/2026-11-20.md": "# 2026-11-20\n\n- Propuesta de precios enviada a Lucía.\n",
        "memory/2026-11-21.md": "# 2026-11-21\n\n- Prueba de carga: 450 peticiones/s.\n",
    }
    paths = await _keyword_paths(make_engine, _written(tmp_path / "spanish", notes), "¿Qué prefiere Lucía?")
    assert paths == ["MEMORY.md", "memory/2026-11-20.md"], paths


async def test_a_polish_memory_answers_its_questions_without_their_function_words(make_engine: MakeEngine, tmp_path: Path) -> None:
    """"Kiedy jest wizyta u dentysty?" searched for "kiedy", "jest" and "u" (named as words no note holds); "Kto to
    jest Kasia?" ranked the notes that say "jest"; "Jakie zadania są otwarte?" found no task; "w piątek" no Friday."""
    notes = {
        "MEMORY.md": "# Pamięć\n\n- Kasia Nowak: kierowniczka zespołu.\n- Nie wdrażamy w piątki.\n",
        "memory/2026-12-01.md": "# 2026-12-01\n\n- Tomek jest chory, wraca w poniedziałek.\n",
        "memory/2026-12-03.md": "# 2026-12-03\n\n- Wizyta u dentysty 11.12 o 16:00.\n- [ ] Zamówić nowy laptop\n",
        "memory/2026-12-04.md": "# 2026-12-04\n\n- Technik był, naprawił ogrzewanie; jest ciepło.\n",
    }
    dentist, kasia, tasks, friday = await _keyword_answers(
        make_engine, _written(tmp_path / "polish", notes),
        "Kiedy jest wizyta u dentysty?", "Kto to jest Kasia?", "Jakie zadania są otwarte?", "co było w piątek?",
    )  # fmt: skip
    assert [hit.path for hit in dentist.results] == ["memory/2026-12-03.md"] and dentist.warning is None
    assert [hit.path for hit in kasia.results] == ["MEMORY.md"]
    assert [hit.path for hit in tasks.results][:1] == ["memory/2026-12-03.md"]
    assert {"memory/2026-12-04.md", "MEMORY.md"} <= {hit.path for hit in friday.results}  # a Friday's log, "w piątki"


async def test_a_katakana_word_answers_only_when_half_of_its_bigrams_or_more_are_held(make_engine: MakeEngine, tmp_path: Path) -> None:
    """In three notes about backups, アッ and ップ of バックアップ answered "how do I make an apple pie?" (アップルパイ):
    two of the word's five bigrams are part of another word. A word the notes hold, a part of one (データ of
    データベース), or a word they hold of a compound the query writes as one run, still answers."""
    notes = {
        "MEMORY.md": "# メモリ\n\n- 鈴木健太：バックアップの責任者。\n",
        "memory/2026-11-19.md": "# 2026-11-19\n\n- 夜間バックアップに3時間かかった。\n",
        "memory/2026-11-20.md": "# 2026-11-20\n\n- 請求データベースを PostgreSQL 17 に移行した。\n",
        "memory/2026-11-21.md": "# 2026-11-21\n\n- ソニー・ミュージックの担当者と打ち合わせ。\n",
    }
    root = _written(tmp_path / "japanese", notes)
    assert await _keyword_paths(make_engine, root, "アップルパイの作り方は？") == []
    assert (await _keyword_paths(make_engine, root, "バックアップの責任者は？"))[:1] == ["MEMORY.md"]
    assert await _keyword_paths(make_engine, root, "データの移行") == ["memory/2026-11-20.md"]
    # five bigrams in a row of fourteen: a part of the compound, written as one run
    assert (await _keyword_paths(make_engine, root, "ミュージックエンタテインメント"))[:1] == ["memory/2026-11-21.md"]


async def test_a_thai_word_is_matched_with_its_vowels_and_tone_marks(make_engine: MakeEngine, tmp_path: Path) -> None:
    """FTS5 cut a Thai word at each vowel sign or tone mark, so กิน ("eat") matched กัน ("together"), the same two
    consonants: "eat" found the note about a trip made together. A word keeps its marks now."""
    notes = {
        "memory/2026-11-19.md": "# 2026-11-19\n\n- เราไปเที่ยวเชียงใหม่ด้วยกัน\n",  # we went to Chiang Mai together
        "memory/2026-11-20.md": "# 2026-11-20\n\n- ซื้อปลาที่ตลาดเช้านี้\n",  # bought fish at the market this morning
    }
    root = _written(tmp_path / "thai", notes)
    assert await _keyword_paths(make_engine, root, "กิน") == []
    assert await _keyword_paths(make_engine, root, "กินข้าว") == []
    assert await _keyword_paths(make_engine, root, "เชียงใหม่") == ["memory/2026-11-19.md"]
    assert await _keyword_paths(make_engine, root, "ปลา") == ["memory/2026-11-20.md"]


@pytest.mark.parametrize(
    ("notes", "query"),
    [
        (  # Vietnamese: "what is Lan's hobby?"; the other note says "của" and "là"
            {
                "MEMORY.md": "# Bộ nhớ\n\n- Lan — quản lý; thích cà phê sữa đá.\n",
                "memory/2026-11-19.md": "# 2026-11-19\n\n- Báo cáo chi phí là của phòng kế toán.\n",
                "memory/2026-11-20.md": "# 2026-11-20\n\n- Đã gửi hợp đồng cho Lan.\n",
            },
            "Sở thích của Lan là gì?",
        ),
        (  # Turkish: "what should we buy for Ayşe?"; the other note says "için" ("for")
            {
                "MEMORY.md": "# Hafıza\n\n- Ayşe — yönetici; kahveyi sütlü içer.\n",
                "memory/2026-11-19.md": "# 2026-11-19\n\n- Rapor için bir toplantı ve bir sunum hazırlandı.\n",
                "memory/2026-11-20.md": "# 2026-11-20\n\n- Sözleşme Ayşe'ye gönderildi.\n",
            },
            "Ayşe için ne almalıyız?",
        ),
        (  # Hebrew: "what is Dana responsible for?"; the other note says "על" ("about")
            {
                "MEMORY.md": "# זיכרון\n\n- דנה — מנהלת המוצר; אוהבת קפה שחור.\n",
                "memory/2026-11-19.md": "# 2026-11-19\n\n- דיברנו על זה עם הצוות של יוסי.\n",
                "memory/2026-11-20.md": "# 2026-11-20\n\n- דנה אישרה את התקציב.\n",
            },
            "על מה דנה אחראית?",
        ),
        (  # Swedish: "who is Anna and what does she do?"; the other note says "det", "och", "om", "var"
            {
                "MEMORY.md": "# Minne\n\n- Anna — produktchef; gillar svart kaffe.\n",
                "memory/2026-11-19.md": "# 2026-11-19\n\n- Vi pratade om det med teamet och det var bra.\n",
                "memory/2026-11-20.md": "# 2026-11-20\n\n- Skickade avtalet till Anna.\n",
            },
            "Vem är Anna och vad gör hon?",
        ),
        (  # Indonesian: "what does Sari like?"; the other note says "yang"
            {
                "MEMORY.md": "# Memori\n\n- Sari — manajer produk; suka kopi hitam.\n",
                "memory/2026-11-19.md": "# 2026-11-19\n\n- Kami bicara dengan tim yang ada di kantor.\n",
                "memory/2026-11-20.md": "# 2026-11-20\n\n- Mengirim kontrak ke Sari.\n",
            },
            "Apa yang disukai Sari?",
        ),
    ],
    ids=["vietnamese", "turkish", "hebrew", "swedish", "indonesian"],
)
async def test_a_question_does_not_search_for_its_function_words(
    make_engine: MakeEngine, tmp_path: Path, notes: dict[str, str], query: str
) -> None:
    """In three notes a function word is as rare as a name: the note that held the question's "của" and "là"
    (or "için", "על", "yang") ranked first, above the two that name the person asked about; in Swedish, the
    question's six function words left "Anna" too small a share of it, and it got nothing."""
    paths = await _keyword_paths(make_engine, _written(tmp_path / "notes", notes), query)
    assert sorted(paths) == ["MEMORY.md", "memory/2026-11-20.md"], paths


@pytest.mark.parametrize(
    ("query", "terms"),
    [
        ("¿Cuánto costó el fontanero todavía?", ["costó", "fontanero"]),
        ("Quanto è costato l'idraulico?", ["costato", "idraulico"]),
        ("Quanto custou o encanador?", ["custou", "encanador"]),
        ("Wieviel hat der Klempner gekostet?", ["klempner", "gekostet"]),
        ("Hoeveel kostte de loodgieter?", ["kostte", "loodgieter"]),
        ("Combien a coûté le plombier, encore ?", ["coûté", "plombier"]),
    ],
)
def test_how_much_and_still_are_function_words_of_each_language(query: str, terms: list[str]) -> None:
    """"How much" and "still" are English function words; in Spanish, Italian, Portuguese, German and Dutch the
    answer named "cuánto", "quanto" or "hoeveel" as a word no note holds, and "todavía" or "encore" too."""
    assert query_terms(query) == terms


@pytest.mark.parametrize(
    ("query", "terms"),
    [
        ("Was ist am Mittwoch passiert?", ["wednesday", "passiert"]),  # "was" and "am" are German words too
        ("Was ist Kubernetes?", ["kubernetes"]),
        # not these: one German word among as many English ones, or none that English lacks
        ("die hard was on TV", ["die", "hard", "television"]),
        ("what was in the box", ["box"]),
    ],
)
def test_a_function_word_english_shares_tells_the_language_with_one_it_lacks(query: str, terms: list[str]) -> None:
    """"Was ist am Mittwoch passiert?" searched for "ist", a word of most German notes: "was" and "am" are English
    function words, so "ist" alone told German, which takes two."""
    assert query_terms(query) == terms


@pytest.mark.parametrize(
    ("query", "terms"),
    [
        ("Telefonnummer vom Vermieter", ["phone", "vermieter"]),
        ("Jana im Büro", ["jana", "büro"]),
        ("von Neumann architecture", ["neumann", "architecture"]),
        # not these: English writes the word ("de", "los"), or the query has an English function word beside it
        ("Rio de Janeiro", ["rio", "de", "janeiro"]),
        ("Los Angeles office", ["los", "angeles", "office"]),
        ("IFIT1 restricts viral replication by sequestrating mis-capped RNAs",
         ["ifit1", "restricts", "viral", "replication", "sequestrating", "mis", "capped", "rnas"]),
        ("the MIT license", ["mit", "license"]),
        ("sam er", ["sam", "er"]),  # two letters tell no language: "the ER", typed in lower case
        ("z-index bug", ["z", "index", "bug"]),
    ],
)  # fmt: skip
def test_a_function_word_english_never_writes_tells_the_language_alone(query: str, terms: list[str]) -> None:
    """"Telefonnummer vom Vermieter" searched for "vom", which most German notes hold: one function word, and
    German takes two. One that English never writes (outside its commonest words) is enough where no English
    function word says otherwise, as one with a letter English lacks is ("qué")."""
    assert query_terms(query) == terms
