"""bench/quality.py's chat-set measures (ev@k, session recall, evidence texts, abstention probes) and the
robustness variants of bench/variants.py."""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path

import pytest

from bench.quality import (
    CHAT_METRICS,
    METRICS,
    STEM,
    UNRELATED_WORDS,
    Document,
    Query,
    Reference,
    Suite,
    Unit,
    document_suite,
    evidence_read,
    evidence_returned,
    judge,
    load_cmrc,
    load_jsquad,
    load_locomo,
    random_queries,
    recall_at,
    repeated_share,
    score_query,
    session_ndcg_at,
    session_recall_at,
    turn_session_recall_at,
    turn_text,
)
from bench.variants import apply_variant, first_words, misspell, misspell_word, parse_variants, title_note
from memdex.memory_core.models import Hit

PHOTO_TURN = {
    "speaker": "Mel",
    "dia_id": "D1:2",
    "text": "Look at\nmy  new pot!",
    "blip_caption": "a photo of  a bowl",
}
SAMPLE = {
    "sample_id": "conv-x",
    "conversation": {
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Caroline", "dia_id": "D1:1", "text": "I went to a support group."}, PHOTO_TURN],
        "session_2_date_time": "10:00 am on 9 May, 2023",
        "session_2": [{"speaker": "Caroline", "dia_id": "D2:1", "text": "Fulcrum isotopes everywhere."}],
    },
    "qa": [
        {"question": "What did Mel make?", "evidence": ["D1:2", "D2:1"], "category": 1},
        {"question": "What did Caroline realise?", "evidence": ["D1:1"], "category": 5},
    ],
}


def hit(path: str, snippet: str = "", lines: tuple[int, int] = (1, 1)) -> Hit:
    first, last = lines
    return Hit(path=path, start_line=first, end_line=last, chunk_start_line=first, chunk_end_line=last,
               score=0.5, snippet=snippet)  # fmt: skip


@pytest.fixture
def locomo_dir(tmp_path: Path) -> Path:
    (tmp_path / "locomo").mkdir()
    (tmp_path / "locomo" / "locomo10.json").write_text(json.dumps([SAMPLE]), encoding="utf-8")
    return tmp_path


def test_turn_text_strips_only_the_speaker_prefix() -> None:
    assert turn_text("- **Caroline**: I said - **not** this: ok") == "I said - **not** this: ok"
    assert turn_text("# 2023-05-08") == "# 2023-05-08"


def test_evidence_is_the_written_line_without_its_prefix(locomo_dir: Path) -> None:
    """The photo turn keeps its caption; whitespace is as written to the file."""
    suite = load_locomo(locomo_dir)
    (ws,) = suite.workspaces
    question = ws.queries[0]
    assert question.evidence == ("Look at my new pot! [shares a photo: a photo of a bowl]", "Fulcrum isotopes everywhere.")
    assert "- **Mel**: Look at my new pot! [shares a photo: a photo of a bowl]" in ws.files["memory/2023-05-08.md"]
    assert suite.chat and suite.adversarial == "5 adversarial"


def test_evidence_read_normalises_whitespace_and_case() -> None:
    snippets = ["- **Mel**: LOOK   at\nmy new pot!", "- **Jo**: other"]
    assert evidence_read(["look at my new pot!"], snippets, 2_000) == 1.0
    assert evidence_read(["look at my new pot!", "not returned"], snippets, 2_000) == 0.5


def test_evidence_read_cuts_the_joined_snippets_at_the_limit() -> None:
    """Snippets join with a newline in rank order; evidence straddling the cut counts as missing."""
    first = "x" * 90
    snippets = [first, "the evidence turn"]  # "the evidence turn" occupies characters 92..108
    assert evidence_read(["the evidence turn"], snippets, 108) == 1.0
    assert evidence_read(["the evidence turn"], snippets, 107) == 0.0
    assert evidence_read(["the evidence turn"], snippets[::-1], 20) == 1.0


def test_session_recall_counts_distinct_evidence_files_in_the_top_k() -> None:
    relevant = {Unit("memory/a.md", 2, 2): 1, Unit("memory/a.md", 5, 5): 1, Unit("memory/b.md", 3, 3): 1}
    ranked = [hit("memory/c.md"), hit("memory/a.md"), hit("memory/a.md"), hit("memory/b.md")]
    assert session_recall_at(2, ranked, relevant) == 0.5
    assert session_recall_at(3, ranked, relevant) == 0.5
    assert session_recall_at(4, ranked, relevant) == 1.0


def test_turn_session_recall_counts_evidence_turns_in_the_top_k_files_the_ceiling_of_chunk_recall() -> None:
    relevant = {Unit("memory/a.md", 2, 2): 1, Unit("memory/a.md", 5, 5): 1, Unit("memory/b.md", 3, 3): 1}
    ranked = [hit("memory/c.md"), hit("memory/a.md", lines=(1, 3)), hit("memory/b.md")]
    assert turn_session_recall_at(1, ranked, relevant) == 0.0
    assert turn_session_recall_at(2, ranked, relevant) == pytest.approx(2 / 3)  # a.md's turns, one not covered
    assert recall_at(2, judge(ranked, relevant), relevant) == pytest.approx(1 / 3)
    assert turn_session_recall_at(3, ranked, relevant) == 1.0


def test_chat_scores_come_only_with_a_default_answer() -> None:
    query = Query("q", "pot", "1", {Unit("memory/a.md", 2, 2): 1}, ("my new pot!",))
    ranked = [hit("memory/a.md", lines=(1, 9))]
    plain = score_query(query, ranked, "chunk")
    assert set(plain.scores) == set(METRICS)
    empty = score_query(query, ranked, "chunk", defaults=[])
    assert empty.scores["no_results"] == 1.0 and empty.scores["ev@4k"] == 0.0 and empty.scores["chars"] == 0.0
    found = score_query(query, ranked, "chunk", defaults=[hit("memory/a.md", "- **Mel**: my new pot!")])
    assert set(found.scores) == {*METRICS, *CHAT_METRICS}
    assert found.scores["ev@2k"] == 1.0 and found.scores["chars"] == 22.0 and found.scores["no_results"] == 0.0
    assert found.scores["session_recall@5"] == 1.0
    assert found.scores["session_ndcg@10"] == 0.0  # judged on the session fetch, here none
    by_session = score_query(query, ranked, "chunk", defaults=[], sessions=[hit("memory/b.md"), hit("memory/a.md")])
    assert by_session.scores["session_ndcg@10"] == pytest.approx(1 / math.log2(3))


def test_evidence_returned_counts_turns_inside_a_returned_chunk_shown_or_not() -> None:
    relevant = {Unit("memory/a.md", 2, 2): 1, Unit("memory/a.md", 12, 12): 1, Unit("memory/b.md", 3, 3): 1}
    answer = [hit("memory/a.md", "line 5 only", lines=(1, 9)), hit("memory/b.md", lines=(4, 8))]
    assert evidence_returned(answer, relevant) == pytest.approx(1 / 3)
    assert evidence_returned([*answer, hit("memory/b.md", lines=(3, 3))], relevant) == pytest.approx(2 / 3)
    assert evidence_returned([], relevant) == 0.0


def test_repeated_share_counts_lines_an_earlier_hit_already_shows() -> None:
    """Same file, line number and text: repeated; the same text elsewhere, or in another file, is not."""
    first = hit("memory/a.md", "aaaa\nbbbb", lines=(4, 5))
    again = hit("memory/a.md", "bbbb\ncccc", lines=(5, 6))  # line 5 shown twice: 5 of its 10 characters
    assert repeated_share([first, again]) == pytest.approx(5 / 20)
    assert repeated_share([first, hit("memory/b.md", "bbbb", lines=(5, 5))]) == 0.0
    assert repeated_share([first, hit("memory/a.md", "bbbb", lines=(9, 9))]) == 0.0
    assert repeated_share([]) == 0.0


def test_random_queries_are_deterministic_and_absent_from_the_workspace() -> None:
    # Half the unrelated vocabulary appears in the workspace, inflected: none of it may be asked.
    text = " ".join(word.title() + "s" for word in UNRELATED_WORDS[::2]) + " the quick brown fox"
    probes = random_queries([text], 40, seed="conv-x")
    assert probes == random_queries([text], 40, seed="conv-x")
    assert probes != random_queries([text], 40, seed="conv-y")
    assert [p.kind for p in probes] == ["gibberish"] * 20 + ["words"] * 20
    present = {word[:STEM] for word in re.findall(r"[a-z]+", text.casefold())}
    for probe in probes:
        words = probe.text.split()
        assert 2 <= len(words) <= 4 if probe.kind == "gibberish" else 3 <= len(words) <= 5
        assert not {word[:STEM] for word in words} & present, probe
    assert {w for p in probes if p.kind == "words" for w in p.text.split()} <= set(UNRELATED_WORDS[1::2])


def test_locomo_gives_every_workspace_its_probes(locomo_dir: Path) -> None:
    (ws,) = load_locomo(locomo_dir).workspaces
    assert len(ws.probes) == 200
    assert not any("fulcrum" in p.text or "isotope" in p.text for p in ws.probes)


def test_cmrc_is_one_memory_note_per_paragraph_with_its_first_asked_question(tmp_path: Path) -> None:
    contexts = [
        {"context_id": "C1", "title": "乌龙茶", "context_text": "乌龙茶是一种茶。",
         "qas": [{"query_id": "C1_Q0", "query_text": " ", "answers": []},
                 {"query_id": "C1_Q1", "query_text": "乌龙茶是什么？", "answers": ["茶"]}]},
        {"context_id": "C2", "title": "咖啡", "context_text": "咖啡是饮料。",
         "qas": [{"query_id": "C2_Q0", "query_text": "咖啡是什么？", "answers": ["饮料"]}]},
    ]  # fmt: skip
    (tmp_path / "cmrc2018").mkdir()
    (tmp_path / "cmrc2018" / "cmrc2018_trial.json").write_text(json.dumps(contexts), encoding="utf-8")
    (ws,) = load_cmrc(tmp_path).workspaces
    assert ws.files["memory/C1.md"] == "# 乌龙茶\n\n乌龙茶是一种茶。\n"
    assert ws.extra_paths == ()
    assert [(q.text, list(q.relevant)) for q in ws.queries] == [
        ("乌龙茶是什么？", [Unit.document("memory/C1.md")]),
        ("咖啡是什么？", [Unit.document("memory/C2.md")]),
    ]


def test_jsquad_strips_the_title_prefix_and_asks_the_first_answerable_question(tmp_path: Path) -> None:
    paragraph = {
        "context": "東京 [SEP] 東京は日本の首都である。",
        "qas": [
            {"id": "a1p0q0", "question": "答えのない質問", "answers": [], "is_impossible": True},
            {"id": "a1p0q1", "question": "日本の首都は？", "answers": [{"text": "東京"}], "is_impossible": False},
        ],
    }
    (tmp_path / "jsquad").mkdir()
    data = {"data": [{"title": "東京", "paragraphs": [paragraph]}]}
    (tmp_path / "jsquad" / "test-v1.3.json").write_text(json.dumps(data), encoding="utf-8")
    (ws,) = load_jsquad(tmp_path).workspaces
    assert ws.files == {"memory/a1p0.md": "# 東京\n\n東京は日本の首都である。\n"}
    assert [(q.text, list(q.relevant)) for q in ws.queries] == [("日本の首都は？", [Unit.document("memory/a1p0.md")])]


# Robustness variants (bench/variants.py) ---------------------------------------------------------


def test_parse_variants_takes_repeats_and_commas_and_names_the_choices() -> None:
    assert parse_variants([]) == ["full"]
    assert parse_variants(["titles,q3", "q3", " typo "]) == ["titles", "q3", "typo"]
    with pytest.raises(ValueError, match="unknown variant.*short.*use full, titles, q3, typo"):
        parse_variants(["full,short"])


def test_title_note_keeps_only_the_title_as_heading_and_body() -> None:
    assert title_note("# Dewey  Decimal \n\nA long abstract.\nMore.\n") == "# Dewey  Decimal\n\nDewey  Decimal\n"
    assert title_note("#\n\nFirst line.\nSecond.\n") == "# First line.\n\nFirst line.\n"


def test_first_words_keeps_three_content_words() -> None:
    assert first_words("What problems and concerns are there in making titles?") == "problems concerns making"
    assert first_words("Is it?") == "Is it?"  # only stop words: memdex searches none, the query stays as asked
    assert first_words("Where was the pottery they bought?") == "pottery bought"  # as asked, not memdex's "buy"
    # CJK: stop words cut out, the first 6 characters of the runs left (3 two-character "words").
    assert first_words("乌龙茶是什么茶？") == "乌龙茶 茶"
    assert first_words("尤金袋鼠分布在哪些地区？") == "尤金袋鼠分布"


def test_misspell_word_always_changes_a_word_of_three_or_more_by_one_inner_edit() -> None:
    for word in ("committee", "aaa", "retrieval", "cat"):
        for seed in range(50):
            wrong = misspell_word(word, random.Random(seed))
            assert wrong != word and wrong[0] == word[0] and wrong[-1] == word[-1]
            assert len(wrong) == len(word) and sorted(wrong) == sorted(word) or len(wrong) == len(word) - 1
    assert misspell_word("to", random.Random(1)) == "to"


def test_misspell_changes_only_the_longest_content_word_and_is_seeded() -> None:
    text = "What did Caroline research about adoption?"
    wrong = misspell(text, "conv-1/3")
    assert wrong == misspell(text, "conv-1/3")
    assert {misspell(text, f"q{i}") for i in range(20)} != {wrong}
    changed = [(a, b) for a, b in zip(text.split(), wrong.split(), strict=True) if a != b]
    assert [a for a, _ in changed] == ["Caroline"]
    assert misspell("Who taught Mel?", "q").endswith(" Mel?")  # a past form is a content word too: the longest
    cjk = misspell("乌龙茶是什么？", "q")
    assert cjk.endswith("是什么？") and len(cjk) == len("乌龙茶是什么？") - 1 and cjk.startswith("乌")


def _documents() -> Suite:
    docs = {"1": Document("Short title", "A body about tea."), "2": Document("Other", "Coffee.")}
    return document_suite("toy", docs, {"q": "What about tea?"}, {"q": {"1": 1}}, None, [Reference("r", {})])


def test_titles_variant_rewrites_the_documents_in_their_own_cache_folder() -> None:
    suite = _documents()
    titles = apply_variant(suite, "titles")
    assert titles is not None and titles.name == "toy+titles" and titles.folder == "toy-titles"
    assert titles.workspaces[0].files["docs/1.md"] == "# Short title\n\nShort title\n"
    assert titles.workspaces[0].queries == suite.workspaces[0].queries
    assert titles.references == [] and apply_variant(suite, "full") is suite


def test_query_variants_keep_the_files_index_and_judgements(locomo_dir: Path) -> None:
    suite = _documents()
    q3 = apply_variant(suite, "q3")
    assert q3 is not None and q3.folder == "toy" and q3.workspaces[0].files == suite.workspaces[0].files
    (query,) = q3.workspaces[0].queries
    assert query.text == "tea" and query.relevant == suite.workspaces[0].queries[0].relevant
    chat = load_locomo(locomo_dir)
    assert apply_variant(chat, "titles") is None
    typo = apply_variant(chat, "typo")
    assert typo is not None and typo.folder == "locomo" and typo.chat
    assert [q.text for q in typo.workspaces[0].queries] != [q.text for q in chat.workspaces[0].queries]


def test_session_ndcg_judges_the_distinct_files_of_the_ranked_chunks() -> None:
    relevant = {Unit("memory/a.md", 2, 2): 1, Unit("memory/a.md", 5, 5): 1, Unit("memory/b.md", 3, 3): 1}
    ranked = [hit("memory/c.md"), hit("memory/a.md", lines=(7, 9)), hit("memory/a.md"), hit("memory/b.md")]
    # Files c, a, b at ranks 1-3 (a's second chunk collapsed); ideal: a and b at ranks 1-2.
    ideal = 1 + 1 / math.log2(3)
    assert session_ndcg_at(10, ranked, relevant) == pytest.approx((1 / math.log2(3) + 1 / math.log2(4)) / ideal)
    assert session_ndcg_at(10, ranked[1:], relevant) == pytest.approx(1.0)
    assert session_ndcg_at(1, ranked, relevant) == 0.0
