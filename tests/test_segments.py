"""memory_core.text.segments and .terms: notes in every script found by their words, through a real SQLite FTS5 table."""

from __future__ import annotations

import random
import re
import sqlite3
from collections import Counter
from collections.abc import Iterator
from importlib.resources import files

import pytest

from memdex.memory_core.text.han_forms import simplified
from memdex.memory_core.text.segments import (
    WORD_MARKS,
    acronym_mark,
    index_text,
    katakana_words,
    korean_stem,
    query_acronym_marks,
)
from memdex.memory_core.text.terms import (
    FTS_TOKENIZER,
    _tokens,
    key_counts,
    only_stop_words,
    query_terms,
    stems,
    term_keys,
)

TEA = "用户喜欢喝乌龙茶，不喜欢咖啡。"
NOTES = {
    "tea": TEA,
    "meeting": "회의는 화요일로 옮겼다.",
    "cafe": "Met Zoë at the café near the station.",
    "tests": "Fixed the flaky test in tests/test_invoice.py today.",
    "flag": "The BillingV2Enabled flag turns on billing-v2 for new accounts.",
    "tokyo": "来週、東京でプロジェクトの打ち合わせをします。",
    "thai": "ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ",
    "english": "The database migration was postponed to Friday.",
    "hindi": "हमने बिलिंग के लिए नया डेटाबेस चुना।",
    "russian": "Встреча с командой разработчиков по вторникам.",
    "arabic": "اخترنا قاعدة بيانات جديدة لنظام الفواتير.",
}


@pytest.fixture
def fts() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(name UNINDEXED, text, tokenize={FTS_TOKENIZER!r})")
    conn.executemany("INSERT INTO t(name, text) VALUES (?, ?)", [(k, index_text(v)) for k, v in NOTES.items()])
    yield conn
    conn.close()


def search(conn: sqlite3.Connection, query: str) -> list[str]:
    """Note names for the OR of the query's quoted terms, best first (as the stores search)."""
    terms = query_terms(query)
    assert terms, query
    match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
    return [name for (name,) in conn.execute("SELECT name FROM t WHERE t MATCH ? ORDER BY bm25(t)", (match,))]


@pytest.mark.parametrize(
    ("query", "note"),
    [
        ("乌龙茶", "tea"),  # three characters: its bigrams
        ("咖啡", "tea"),  # two characters: one bigram
        ("茶", "tea"),  # one character: a unigram of the index
        ("用户喜欢喝什么茶", "tea"),  # a question: 什么 is a stop word, the rest cut into grams
        ("화요일", "meeting"),  # the note says 화요일로 (particle attached)
        ("화요일에 회의", "meeting"),
        ("cafe", "cafe"),  # accents fold both ways
        ("café", "cafe"),
        ("zoe", "cafe"),
        ("invoice", "tests"),  # identifier parts
        ("test_invoice.py", "tests"),  # and the whole
        ("billing", "flag"),  # camelCase parts and hyphenated parts
        ("BillingV2Enabled", "flag"),
        ("billing-v2", "flag"),
        ("डेटाबेस", "hindi"),  # a Devanagari word with its vowel signs
        ("चुनें", "hindi"),  # another form of चुना: the same stem
        ("встречи команды", "russian"),  # other forms of встреча, командой
        ("البيانات", "arabic"),  # with the article: بيانات
        ("قَاعِدَةُ", "arabic"),  # with its short vowels: قاعدة
        ("東京", "tokyo"),  # kanji
        ("プロジェクト", "tokyo"),  # katakana
        ("打ち合わせはいつですか", "tokyo"),  # kanji + hiragana, question particles dropped
        ("การเว้นวรรค", "thai"),
        ("migrations postponed", "english"),  # English still stems
    ],
)
def test_query_finds_its_note_first(fts: sqlite3.Connection, query: str, note: str) -> None:
    assert search(fts, query)[:1] == [note]


def test_other_notes_do_not_match(fts: sqlite3.Connection) -> None:
    assert search(fts, "咖啡") == ["tea"]
    assert search(fts, "회의") == ["meeting"]
    assert sorted(search(fts, "화요일")) == ["meeting", "russian"]  # a weekday is held in English too: "по вторникам"
    assert search(fts, "invoice") == ["tests"]
    assert search(fts, "बिल्ली") == []  # "cat": shares its consonants ब ल with बिलिंग, no word


def test_cjk_runs_become_unigrams_and_bigrams() -> None:
    assert index_text("乌龙茶").split() == ["乌", "龙", "茶", "乌龙", "龙茶"]
    assert index_text("茶").split() == ["茶"]
    assert index_text("J-APIニュース").split() == ["J-API", "ニ", "ュ", "ー", "ス", "ニュ", "ュー", "ース"]


def test_query_cuts_runs_at_stop_words() -> None:
    assert query_terms("乌龙茶") == ["乌龙", "龙茶"]
    assert query_terms("用户喜欢喝什么茶") == ["用户", "户喜", "喜欢", "欢喝", "茶"]
    assert query_terms("東京へ行きましたか") == ["东京", "行き"]  # kanji that are traditional forms fold (.han_forms)
    assert query_terms("什么") == []  # only stop words: nothing to search for
    assert query_terms("和服 東京") == ["东京"]  # a character left between one-character stop words is weak…
    assert query_terms("和服") == ["服"]  # …kept when nothing else remains
    assert query_terms("书和茶") == ["书", "茶"]  # …and words of their own when the query is made of such
    assert query_terms("日本の湖はどれか") == ["日本", "湖"]  # a kanji between two Japanese particles is a word…
    assert query_terms("州か 東京") == ["东京"]  # …with a particle on one side only, it is weak
    assert query_terms("法華経は何章からなるか") == ["法华", "华経", "章"]  # から, なる: Japanese function words
    assert query_terms("普仏戦争は何年に") == ["普仏", "仏戦", "戦争", "年"]  # Japanese 何 ("what") names what is asked
    assert query_terms("何割 東京です") == ["东京"]  # …with a particle on one side only, it is weak
    assert query_terms("何炅的节目") == ["何炅", "节目"]  # Chinese (no kana): 何 is part of words, a surname
    # Japanese question words; a lone hiragana left between function words is weak (の・す・か, か・り・ました)
    assert query_terms("なぜ PostgreSQL を選んだのですか？") == ["postgresql", "选ん", "んだ"]
    assert query_terms("責任者は誰ですか") == ["责任", "任者"]
    assert query_terms("バックアップはどのくらいかかりましたか") == ["バッ", "ック", "クア", "アッ", "ップ"]
    assert query_terms("他的父亲是谁") == ["父亲"]  # pronouns are stop words, as English's
    # a number's counter is weak, searched only when nothing else remains (the number says it)
    assert query_terms("在5月6号我读了一本书，它的名字是？") == ["5", "6", "一本", "本书", "名字"]
    assert query_terms("1990年") == ["1990"]
    assert query_terms("月") == ["月"]


def test_traditional_chinese_is_cut_as_its_simplified_form() -> None:
    """Notes typed in Taiwan and notes pasted from the mainland web hold the same words in two forms: both sides
    write a traditional character as its simplified form, and a traditional question word is cut off."""
    assert index_text("會議改到週五。").split() == index_text("会议改到周五。").split()
    assert query_terms("資料庫什麼時候遷移？") == query_terms("资料库什么时候迁移？") == ["资料", "料库", "时候", "候迁", "迁移"]
    assert simplified("乾淨的於") == "干净的于"  # a character listed with two forms takes the first
    assert simplified("大阪で") == "大阪で"  # ... unless that is itself: 阪 stays (大阪)
    text = files("memdex.memory_core.text").joinpath("han_forms.txt").read_text(encoding="utf-8")
    pairs = [line.split() for line in text.splitlines() if line and not line.startswith("#")]
    assert len(pairs) > 4_000 and all(len(pair) == 2 and len(pair[0]) == len(pair[1]) == 1 for pair in pairs)
    assert simplified("".join(pair[0] for pair in pairs)) == "".join(pair[1] for pair in pairs)  # one for one, no chain
    assert query_terms("その後どうなった") == ["どう"]  # a Japanese function word with a traditional form (後) is cut
    assert simplified("Zoë 会议 ∑") == "Zoë 会议 ∑"  # other text as it was


def test_korean_keeps_the_word_and_adds_its_stem() -> None:
    assert index_text("사무실로").split() == ["사무실로", "사무실"]
    assert korean_stem("집으로") == "집"  # a two-syllable particle may leave one syllable
    assert korean_stem("나이") is None  # a one-syllable particle must leave two
    assert query_terms("무엇을 사무실에") == ["사무실"]  # 무엇을 is a stop word; 사무실에 is asked as its stem


def test_a_katakana_word_is_the_chain_of_its_bigrams() -> None:
    assert katakana_words(query_terms("アップルパイの作り方は？")) == [(0, 1, 2, 3, 4)]  # 作り, り方: kanji's
    assert katakana_words(query_terms("データベースとサーバー")) == [(0, 1, 2, 3, 4), (5, 6, 7)]
    assert katakana_words(query_terms("テスト 用户喜欢喝茶 ア")) == [(0, 1)]  # Chinese grams and one letter are no word


def test_a_korean_question_asks_for_its_nouns() -> None:
    """A question ends its verb otherwise than a note (담당하나요, the note 담당함) and may put a particle on a
    word of another script (PostgreSQL을); each word is asked once, as the stem the index adds."""
    assert query_terms("백업은 누가 담당하나요?") == ["백업", "담당"]
    assert [korean_stem(word) for word in ("선택했나요", "결정됐나요", "휴가인가요", "회의합니까")] == [
        "선택", "결정", "휴가", "회의"
    ]  # fmt: skip
    assert query_terms("왜 PostgreSQL을 선택했나요?") == ["postgresql", "선택"]  # 을: the particle of PostgreSQL
    assert query_terms("마감은 언제인가요? 얼마나 걸렸나요?") == ["마감"]  # 언제, 얼마나: question words; 걸렸나요: below
    assert query_terms("이 도") == ["이", "도"]  # a particle's syllable on its own is a word ("tooth", "province")
    # a question word with the copula on it, a verb's ending written alone: no noun to ask for
    assert query_terms("연습은 언제야? 회의는 뭐였지? 큐는 무엇을 쓰기로 했나요?") == ["연습", "회의", "큐는", "쓰기"]
    assert query_terms("사무실은 어디에요?") == ["사무실"]  # 에요: as often written as 예요
    assert query_terms("해 한") == ["해", "한"]  # a one-syllable ending is also a word ("sun", "one")
    # a verb asked as a question or told in the past, informally, is searched only when nothing else is (a note
    # writes 맡는다, 잡았다); a noun that ends alike stays a word (영어, "English")
    assert query_terms("보안 검토는 누가 맡나요? 언제로 잡았어?") == ["보안", "검토"]
    assert query_terms("맡나요") == ["맡나요"] and query_terms("영어 단어") == ["영어", "단어"]
    assert query_terms("누가 서버 껐어? 비밀번호 바꿨어?") == ["서버", "비밀번호"]  # the past merged into the stem: ㅆ
    assert query_terms("아버지 어머니") == ["아버지", "어머니"]  # 지, 니 after another syllable: nouns ("father", "mother")


def test_korean_verbs_made_from_nouns_add_the_noun() -> None:
    assert index_text("회의합니다").split() == ["회의합니다", "회의"]
    assert [korean_stem(word) for word in ("선택했습니다", "결정됐다", "중요한", "휴가였다", "공부하는")] == [
        "선택", "결정", "중요", "휴가", "공부"
    ]  # fmt: skip
    assert korean_stem("공부하는") == "공부"  # the longer ending first: not 공부하 + the particle 는
    assert korean_stem("강한") is None  # every verb ending leaves two syllables (강하다: "strong")
    assert korean_stem("만났다") is None  # a verb's own stem is not guessed
    assert query_terms("언제 회의해?") == ["회의"]


def test_russian_and_greek_words_add_their_stems_and_queries_ask_for_them() -> None:
    assert index_text("Встреча с командой").split() == ["Встреча", "с", "командой", "встреч", "команд"]
    assert query_terms("Когда встречи?") == ["встреч"]  # когда: a Russian stop word, dropped before stemming
    assert query_terms("что где когда") == []  # stop words only
    assert query_terms("βάσεις δεδομένων") == query_terms("βάση δεδομένα") == ["βασ", "δεδομεν"]
    assert index_text("он был там").split() == ["он", "был", "там"]  # short words are not stemmed
    assert index_text("Сбербанк API").split() == ["Сбербанк", "API"]  # a word that is its own stem is not repeated


def test_a_query_drops_what_an_apostrophe_cuts_off_a_word() -> None:
    """The "s" of "Dave's" is in most chunks of English notes; as a query word the memory was said to hold it."""
    assert query_terms("What is Dave's main passion?") == ["dave", "main", "passion"]
    assert query_terms("What’s the port? I'm sure we'll find it, you're right, I've seen it") == [
        "port", "sure", "find", "right", "see"
    ]  # fmt: skip
    assert query_terms("why don't we stop") == ["don", "stop"]  # a negation keeps its verb, drops the "t"
    assert query_terms("in the 90's") == ["90"]
    assert query_terms("d'accord avec O'Brien") == ["accord", "brien"]  # "avec": French, which English never writes
    assert query_terms("it's") == [] and only_stop_words("it's") == ["it", "s"]  # nothing left to search for
    # the same letters and words elsewhere are kept
    assert query_terms("vitamin d and T cells") == ["vitamin", "d", "t", "cells"]
    assert query_terms("who won the game") == ["win", "game"]
    assert query_terms("rock 'n' roll") == ["rock", "n", "roll"]


def test_a_query_in_french_german_spanish_portuguese_italian_or_dutch_drops_their_function_words() -> None:
    assert query_terms("Quelle est la couleur du ciel ?") == ["couleur", "ciel"]
    assert query_terms("Qu'est-ce que l'équipe a décidé ?") == ["équipe", "décidé"]  # l': elided before a vowel
    assert query_terms("Wann ist das Teamtreffen mit Anna?") == ["teamtreffen", "anna"]
    assert query_terms("¿Dónde está la base de datos de facturación?") == ["base", "datos", "facturación"]
    assert query_terms("Onde está a base de dados?") == ["base", "dados"]
    assert query_terms("Perché abbiamo scelto questo database?") == ["scelto", "database"]
    assert query_terms("Quando è la riunione dell'anno?") == ["riunione", "anno"]  # dell': an elided form
    assert query_terms("Wanneer is de vergadering van het team?") == ["vergadering", "team"]
    assert query_terms("les de la") == query_terms("der das und") == []  # function words only
    assert query_terms("la réunion") == ["la", "réunion"]  # one function word does not say the query is French


def test_a_function_word_written_with_a_letter_english_does_not_write_tells_its_language_alone() -> None:
    """A short question has one function word: "qué", "où", "für", "você" are no English word."""
    assert query_terms("¿Qué prefiere Lucía?") == ["prefiere", "lucía"]
    assert query_terms("Où travaille Claire ?") == ["travaille", "claire"]
    assert query_terms("Für wen ist das Budget?") == ["budget"]
    assert query_terms("Sở thích của Lan là gì?") == ["sở", "thích", "lan"]  # "của": only Vietnamese writes ủ
    assert query_terms("Ayşe için ne almalıyız?") == ["ayşe", "almalıyız"]
    assert query_terms("על מה דנה אחראית?") == ["דנה", "אחראית"]  # Hebrew's, in every query
    assert query_terms("Vem är Anna och vad gör hon?") == ["anna", "gör"]
    assert query_terms("Hvem er Anna og hva gjør hun?") == ["anna", "gjør"]
    assert query_terms("Apa yang disukai Sari?") == ["disukai", "sari"]
    assert query_terms("O que você prefere?") == ["prefere"]
    assert query_terms("Que préfère Claire ?") == ["que", "préfère", "claire"]  # "que" alone says no language
    # outnumbered by English's function words, it stays: a phrase English borrowed
    assert query_terms("Where is the café with the à la carte menu?") == ["café", "à", "la", "carte", "menu"]


def test_an_english_query_keeps_the_words_other_languages_use_as_function_words() -> None:
    """Many are English words, or parts of names and terms English uses."""
    assert query_terms("why did the car die in the war") == ["car", "die", "war"]
    assert query_terms("what did the men build") == ["man", "build"]  # Swedish "men", "but"; asked as "man"
    assert query_terms("AI and CI on the MIT van, con or pour") == ["ai", "ci", "mit", "van", "con", "pour"]
    assert query_terms("Caroline's trip to Rio de Janeiro") == ["caroline", "trip", "rio", "de", "janeiro"]
    assert query_terms("De novo assembly of the sequence data") == ["de", "novo", "assembly", "sequence", "data"]
    assert query_terms("vitamin D and IL-6 in T cells under ER stress") == [
        "vitamin", "d", "il", "6", "t", "cells", "under", "er", "stress"
    ]  # fmt: skip
    assert query_terms("il est là") == ["là"]  # French: two of its words are function words there
    assert query_terms("is IT down for US users") == ["it", "down", "us", "users"]
    assert query_terms("why didn't she call") == ["didn", "call"]  # "didn" matches a chat's "I didn't"


def test_a_contraction_typed_without_its_apostrophe_is_dropped_as_its_parts_are() -> None:
    """"what's" is "what" and "s", both dropped; typed "whats" it was a word no note holds."""
    assert query_terms("whats the redis port") == query_terms("what's the redis port") == ["redis", "port"]
    assert query_terms("im not sure whos on call and theyre away") == ["sure", "call", "away"]
    assert query_terms("why didnt she call") == ["didnt", "call"]  # a negation stays, as "didn" of "didn't"


def test_an_english_question_drops_its_prepositions_and_determiners_but_not_words_that_name_things() -> None:
    """In a small memory a preposition is as rare as a name: "about" in one note of six outranked the note on the
    billing database (tests/test_search_features.py)."""
    assert query_terms("what did we decide about the database for the billing service and why?") == [
        "decide", "database", "billing", "service"
    ]  # fmt: skip
    assert query_terms("which of these notes hold something else about any other project, since then?") == [
        "notes", "hold", "something", "else", "project"
    ]  # fmt: skip
    assert query_terms("what happened in May?") == ["happened", "may"]  # the month
    assert query_terms("when was the site down, and was it out of memory?") == ["site", "down", "out", "memory"]


def test_an_english_question_drops_the_adverbs_that_ask_whether_something_holds_by_now() -> None:
    """"Still", "yet" and "already" ask about time, not about a thing: searched, a word no note holds, "what's still
    open?" was answered with nothing where "what's open?" found the open tasks (tests/test_value_kinds.py)."""
    assert query_terms("what's still open?") == query_terms("what's open?") == ["open"]
    assert query_terms("has Dana replied yet, or did I already pay Marco?") == ["dana", "replied", "pay", "marco"]


def test_an_english_question_searches_what_it_asks_for_not_the_words_that_frame_it() -> None:
    """"Tell", "describe", "how many", "what kind of": the note that answers holds the trip or the count, not the
    framing word. They are searched when nothing else is asked; "type" names a thing unless "of" follows."""
    assert query_terms("can you tell me when the invoices go out?") == ["invoices", "go", "out"]
    assert query_terms("How did Caroline describe her trip, and what did Mel say about it?") == [
        "caroline", "trip", "mel"
    ]  # fmt: skip
    assert query_terms("how many kids does Mel have, and what kind of car?") == ["kids", "mel", "car"]
    assert query_terms("what type of diet helps with type 2 diabetes?") == ["type", "diet", "helps", "2", "diabetes"]
    assert query_terms("tell me") == ["tell"]
    assert query_terms("what did I mention?") == ["mention"]
    assert query_terms("Caroline remembers the trip; it reminds her of home") == [
        "caroline", "remembers", "trip", "reminds", "home"
    ]  # fmt: skip


def test_indic_words_keep_their_vowel_signs() -> None:
    assert query_terms("ডেটাবেস") == ["ডেটাবেস"]  # Bengali: one word, not its consonants ড ট ব স
    assert query_terms("हमने किस डेटाबेस को चुनें?") == ["डेटाबेस", "चुन"]  # Hindi: stop words out, stems in
    assert stems("डेटाबेस चुना।") == {"डेटाबेस", "चुना", "चुन"}  # the danda ends a word


def test_arabic_is_folded_and_lightly_stemmed() -> None:
    assert query_terms("ما هي قاعدة البيانات التي اخترناها؟") == ["قاعد", "بيان", "اخترنا"]  # stop words out
    assert query_terms("والبيانات") == query_terms("بيانات") == ["بيان"]  # "and the" and a plural suffix
    assert query_terms("الفواتير") == ["فواتير"]  # a broken plural stays a word of its own
    assert query_terms("کتاب") == query_terms("كتاب")  # Persian's kaf and Arabic's: one letter


def test_persian_and_urdu_queries_drop_their_function_words() -> None:
    assert query_terms("سارا چه کسی است؟") == ["سارا"]  # "who is Sara?"
    assert query_terms("به چه چیزی حساسیت دارم؟") == ["حساسيت", "دارم"]  # "what am I allergic to?"
    assert query_terms("آیا جمعه استقرار می‌کنیم؟") == ["جمع", "استقرار", "كنيم"]  # the verb's prefix cut off
    assert query_terms("بلنگ کے لیے ہم نے کیا چنا؟") == ["بلنگ", "چنا"]  # Urdu: "what did we choose for billing?"


def test_identifiers_keep_the_whole_and_add_parts() -> None:
    assert index_text("BillingV2Enabled").split() == ["BillingV2Enabled", "Billing", "V2", "Enabled"]
    assert index_text("HTTPServer").split() == ["HTTPServer", "HTTP", "Server"]


def test_plain_english_is_unchanged() -> None:
    text = "The database migration was postponed to Friday, see notes/billing-v2.md."
    assert index_text(text).split() == text.split()
    assert query_terms("What was postponed to Friday?") == ["postponed", "friday"]


def test_full_width_and_half_width_forms_fold() -> None:
    assert index_text("ＡＢＣ１２").split() == ["ABC12"]
    assert index_text("ｶﾀｶﾅ").split() == ["カ", "タ", "カ", "ナ", "カタ", "タカ", "カナ"]


def test_letters_and_digits_alone_are_not_identifiers() -> None:
    assert index_text("H2O and 3D and mRNA").split() == ["H2O", "and", "3D", "and", "mRNA", "m", "RNA"]


def _camel_parts_by_plain_pattern(text: str) -> str:
    """The camelCase parts as the plain definition of a boundary finds them, scanning from every letter."""
    pieces, done = [], 0
    for match in re.finditer(r"[a-z][A-Z]|[A-Z][A-Z][a-z]|[0-9][A-Z][a-z]", text):
        start, end = match.start(), match.end()
        if start < done:
            continue
        while start > done and text[start - 1].isalnum():
            start -= 1
        while end < len(text) and text[end].isalnum():
            end += 1
        parts = re.split(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[0-9])(?=[A-Z][a-z])", text[start:end])
        pieces += [text[done:end], " ", " ".join(parts), " "]
        done = end
    return "".join(pieces) + text[done:]


def _marked_by_plain_pattern(text: str) -> str:
    """Each acronym's mark after it, as a plain pattern for a token of two to five capitals finds them."""

    def marked(line: str) -> str:
        if line.upper() == line and len(re.findall("[A-Za-z]+", line)) != 1:
            return line
        marks = [acronym_mark(word) for word in re.findall(r"\b[A-Z]{2,5}\b", line)]
        return " ".join([line, *filter(None, marks)])

    return "\n".join(map(marked, text.split("\n")))


def test_camel_case_boundaries_and_acronyms_are_found_wherever_they_stand() -> None:
    """The scan that skips to capitals finds every camelCase boundary and every acronym the plain patterns
    find: at a text's start and end, after digits, in runs of capitals, next to accented letters, underscores
    and punctuation."""
    rng = random.Random(7)
    alphabet = ["a", "z", "B", "Q", "0", "9", "_", "-", " ", ".", "\n", "é", "Ü", "HTTP", "Server", "getX", "V2", "IT", "US"]
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))) for _ in range(20_000)]
    for text in [*texts, "aB", "ABc", "1Ab", "ÜBerlin", "iPhone XMLHttpRequest", "x_yZ", "IT", "ÜIT", "IT_desk"]:
        assert index_text(text) == _marked_by_plain_pattern(_camel_parts_by_plain_pattern(text)), text
    assert index_text("IT_desk, US-IT").endswith("IT usacronym itacronym") and "itacronym" not in index_text("ÜIT ITS")


def test_tokens_cut_through_the_byte_table_are_those_of_the_plain_pattern() -> None:
    """The fast cut (ASCII separators to spaces, a split; the pattern only for pieces with other letters) gives
    unicode61's tokens, runs of letters and digits, next to dashes, accents, combining marks, CJK, Unicode spaces,
    zero-width characters and Indic and Thai vowel signs."""
    plain, indic = re.compile(r"[^\W_]+"), re.compile(f"(?:[^\\W_]|[{WORD_MARKS}])+")
    rng = random.Random(11)
    alphabet = ["a", "Z", "0", "_", "-", " ", ".", "\n", "\t", "—", "é", "e\u0301", "\u00a0", "\u3000", "\u200b",
                "\x1c", "日本", "한국", "ไทย", "กิน", "дв", "घटना", "ि", "²", "½", "ª", "Ⅻ", "\ufeff"]  # fmt: skip
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14))) for _ in range(20_000)]
    for text in [*texts, "", "plain ascii words, v2.0", "naïve café—done"]:
        pattern = indic if any(mark in text for mark in WORD_MARKS) else plain
        assert _tokens(text) == pattern.findall(text), text


@pytest.mark.parametrize(
    ("query", "text"),
    [
        ("乌龙茶", TEA),
        ("cafe", NOTES["cafe"]),
        ("zoë", "zoe"),
        ("invoice", NOTES["tests"]),
        ("billing", NOTES["flag"]),
        ("화요일", NOTES["meeting"]),
        ("backups", "one backup a day"),
        ("การเว้นวรรค", NOTES["thai"]),
    ],
)
def test_python_matching_agrees_with_the_index(query: str, text: str) -> None:
    """Coverage and snippets match a query term in a text exactly when the term's keys are among the text's."""
    present = stems(text)
    assert all(term_keys(term) <= present for term in query_terms(query)), (query_terms(query), sorted(present))


def test_python_matching_does_not_see_what_is_not_there() -> None:
    present = stems(TEA)
    assert not term_keys("红茶") <= present  # shares 茶, but not the bigram
    assert not term_keys("coffee") <= present


def test_a_text_is_cut_into_the_terms_of_its_lines_as_fts5_cuts_it(fts: sqlite3.Connection) -> None:
    """Python cuts a chunk line by line (a snippet's lines are then cut once, with their chunk): the same terms,
    as many as FTS5 cuts from the whole text, in every script and with stems added after a line."""
    rng = random.Random(3)
    lines = [*NOTES.values(), "", "  ", "getX HTTPServer_v2 — done", "x\r"]
    texts = ["\n".join(rng.choice(lines) for _ in range(rng.randint(1, 8))) for _ in range(200)]
    fts.execute("CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, t, instance)")
    for number, text in enumerate(texts):
        assert key_counts(text) == sum((key_counts(line) for line in text.split("\n")), Counter()), text
        fts.execute("INSERT INTO t(name, text) VALUES (?, ?)", (f"text {number}", index_text(text)))
        rowid = fts.execute("SELECT max(rowid) FROM t").fetchone()[0]
        (cut,) = fts.execute("SELECT count(*) FROM temp.terms WHERE doc = ? AND col = 'text'", (rowid,)).fetchone()
        assert key_counts(text).total() == cut, text


def test_an_acronym_that_reads_as_a_word_is_marked_in_the_index_and_asked_by_its_mark() -> None:
    assert acronym_mark("IT") == "itacronym" and acronym_mark("UPS") == "upsacronym"
    assert acronym_mark("AIDS") == "aidsacronym"  # porter: "aid"
    # no word; only its own homograph; not in capitals; an operator; six letters or more: a word in capitals
    assert [acronym_mark(word) for word in ("API", "KRAS", "SMART", "It", "OR", "NOTHING")] == [None] * 6
    assert index_text("Our UPS account, the IT desk") == "Our UPS account, the IT desk upsacronym itacronym"
    assert index_text("filled up; it works; USE_L10N") == "filled up; it works; USE_L10N"  # a constant's words
    assert index_text("# IT\nTHE US AND IT") == "# IT itacronym\nTHE US AND IT"  # a line in capitals: one word
    assert query_acronym_marks("who is IT? and the UPS, again: IT") == {"it": "itacronym", "ups": "upsacronym"}
    assert query_acronym_marks("WHO IS IT") == {}  # a query in capitals writes no acronym
    assert query_acronym_marks("IT") == {"it": "itacronym"}  # unless it is one word
