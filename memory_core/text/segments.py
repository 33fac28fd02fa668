"""Text of every script cut into keyword terms: what the FTS5 index holds, and a query's pieces. Pure.

FTS5's ``unicode61`` cuts text at spaces and punctuation only, so a run of Chinese, Japanese or Thai
(no spaces between words) is one token, and a Korean word keeps its particle (``화요일로``). This module
rewrites text into a string that ``porter unicode61 remove_diacritics 2`` (:data:`.terms.FTS_TOKENIZER`) cuts
into useful terms, and cuts queries the same way (:func:`query_pieces`), with no dictionary:

* Han, Hiragana and Katakana runs become their single characters and overlapping bigrams
  (``乌龙茶`` -> ``乌 龙 茶 乌龙 龙茶``): a one- or two-character word is a term of its own, a longer
  one the bigrams it shares with the text. A traditional Chinese character is written as its simplified
  form (``會議`` -> ``会 议 会议``: :mod:`.han_forms`). A query asks for the bigrams of its runs (a run of one
  character: that character), after cutting the runs at CJK stop words (``什么``, ``です``).
* Thai, Lao, Khmer and Myanmar runs: the same, over grapheme clusters (a letter with its combining
  marks), since no word dictionary ships with memdex.
* A Korean word keeps its whole form and adds its stem when it ends in a known particle or in the ending of
  a verb made from a noun (``화요일로`` -> ``화요일로 화요일``, ``회의합니다`` -> ``회의합니다 회의``),
  conservatively: a one-syllable particle and every verb ending leave two syllables.
* A Russian, Greek or Hindi word keeps its whole form, and the text adds its Snowball stem (``встречи`` ->
  ``встречи ... встреч``); a query asks for the stem (:mod:`.stemming`).
* Arabic-script text loses its short-vowel marks and folds its alef forms (:func:`.arabic.fold`); a word adds
  its light stem, without its article and suffixes, as a Russian word does (``البيانات`` -> ``... بيان``).
* An Indic, Thai, Lao, Myanmar or Khmer word keeps its vowel signs and tone marks: unicode61 would cut
  ``डेटाबेस`` into its consonants, so the tokenizer takes :data:`WORD_MARKS` as token characters
  (:data:`.terms.FTS_TOKENIZER`).
* A camelCase identifier keeps its whole form and adds its parts (``BillingV2Enabled`` ->
  ``BillingV2Enabled Billing V2 Enabled``); ``_``, ``-`` and ``.`` already separate tokens in unicode61,
  whose phrase match still finds ``test_invoice`` whole.
* An acronym that reads as a stop word in lower case, or as a word porter cuts to another, adds a mark at the
  end of its line (``IT helpdesk`` -> ``IT helpdesk itacronym``, ``UPS`` -> ``UPS upsacronym``): FTS5 folds
  case, so a query that writes ``IT`` asks for the mark instead of "it" wherever notes write it
  (:func:`query_acronym_marks`).
* Text is NFKC-normalised first (full-width ``ＡＢＣ１`` and half-width katakana fold); Latin accents are
  folded by the tokenizer's ``remove_diacritics 2``.

Text without these scripts, camelCase words or acronyms comes back unchanged (up to NFKC), so English ranks as
before.
The indexed string is for the index only: snippets must show the original text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence
from functools import lru_cache

from .arabic import fold
from .base_forms import base_form, with_base_forms
from .han_forms import simplified
from .inflections import porter_stem
from .stemming import STEMMED_LETTERS, stem_of, with_stems
from .stopwords import QUERY_STOPWORDS, foreign_function_words, frames_question, in_contraction
from .value_kinds import query_kind_words, with_value_kinds
from .weekdays import query_weekdays
from .word_frequencies import english_share

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f\u3005\u3006\u3007"  # + 々 〆 〇
_HIRAGANA_CHARS, _KATAKANA_CHARS = "\u3041-\u3096\u309d\u309e", "\u30a1-\u30fa\u30fc-\u30ff\u31f0-\u31ff"
_KANA = _HIRAGANA_CHARS + _KATAKANA_CHARS  # ー, not the ・ separator
_SOUTHEAST_CHARS = "\u0e00-\u0e7f\u0e80-\u0eff\u1000-\u109f\u1780-\u17ff"  # Thai, Lao, Myanmar, Khmer
_HANGUL_CHARS = "\uac00-\ud7a3\u1100-\u11ff\u3131-\u318e"
# The vowel signs, tone marks and other combining marks of the Indic scripts (Devanagari to Sinhala, Tibetan) and
# of Thai, Lao, Myanmar and Khmer: letters of a word there, though unicode61 cuts a word at them (डेटाबेस -> ड ट ब
# स; กิน, "eat", -> ก น, as กัน, "together"); the tokenizer takes them as token characters. From this Python's Unicode
# database: the tokenizer, and so the index identity, holds them (a newer one rebuilds).
_MARKED_SCRIPTS = ((0x0900, 0x1000), (0x1000, 0x10A0), (0x1780, 0x1800))  # Devanagari to Tibetan, Myanmar, Khmer
WORD_MARKS = "".join(
    chr(c) for first, end in _MARKED_SCRIPTS for c in range(first, end) if unicodedata.category(chr(c)).startswith("M")
)
CJK_LETTERS, HANGUL_LETTERS = _HAN + _KANA, _HANGUL_CHARS  # regex ranges, for text.scripts
_SCRIPTS = f"(?P<cjk>[{_HAN}{_KANA}]+)|(?P<sea>[{_SOUTHEAST_CHARS}]+)|(?P<hangul>[{_HANGUL_CHARS}]+)"
_OTHER = f"(?:[^\\W_{_HAN}{_KANA}{_SOUTHEAST_CHARS}{_HANGUL_CHARS}]|[{WORD_MARKS}])"  # other letters and digits
_PIECE = re.compile(f"{_SCRIPTS}|(?P<word>{_OTHER}+(?:_{_OTHER}+)*)")  # POSTGRES_URL: one term, a phrase
# The index rewrites only what it must, and Python's regex scans are slow: a cheap search for any
# character of these scripts (and for a camelCase boundary) comes first, so English text costs two scans.
_SCRIPT_RUN = re.compile(_SCRIPTS)
_HAN_RUN, _KANA_RUN = re.compile(f"[{_HAN}]+"), re.compile(f"[{_KANA}]+")
_HIRAGANA = re.compile(f"[{_HIRAGANA_CHARS}]")
_KATAKANA_GRAM = re.compile(f"[{_KATAKANA_CHARS}]{{2}}")  # a bigram of a katakana word
_GRAM = re.compile(f"[{_HAN}{_KANA}{_SOUTHEAST_CHARS}]")  # a letter of the scripts cut into grams
_ANY_SCRIPT = re.compile(f"[{_HAN}{_KANA}{_SOUTHEAST_CHARS}{_HANGUL_CHARS}{STEMMED_LETTERS}]")
# camelCase boundaries: a lower-case letter then a capital (billingV2), a run of capitals then a word
# (HTTPServer), a digit then a word (V2Enabled); not "H2O" or "3D". Matched at the capital, the letter before
# looked behind at: a pattern that starts with a capital lets the regex engine skip to the next capital, three
# times faster on English text than one that starts with any letter.
_AT_CAMEL = r"(?<=[a-z][A-Z])|(?<=[A-Z0-9][A-Z])(?=[a-z])"  # after the capital of a camelCase boundary
_ANY_CAMEL = re.compile(f"[A-Z](?:{_AT_CAMEL})")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[0-9])(?=[A-Z][a-z])")  # where to cut
# A word of two to five capitals, a word of its own (not a part of "USE_L10N"): an acronym ("IT", "UPS"). Matched
# from its first capital, the rest looked at from there: a capital first lets the regex engine skip to the next
# capital, twice as fast as a pattern that starts with a look-behind.
_AT_ACRONYM = r"(?<!\w[A-Z])(?=[A-Z]{1,4}(?!\w))"  # after an acronym's first capital
_ACRONYM = re.compile(f"[A-Z]{_AT_ACRONYM}[A-Z]{{1,4}}")
_LATIN_WORD = re.compile("[A-Za-z]+")
# The fast test of :func:`segmented`: a camelCase boundary or an acronym's first capital, in one scan.
_ANY_REWRITE = re.compile(f"[A-Z](?:{_AT_CAMEL}|{_AT_ACRONYM})")
ACRONYM_MARK = "acronym"  # after an acronym's lower-case letters, a token no word is: "itacronym"

# Korean particles; the stem must keep two syllables after a one-syllable particle, one after a longer particle.
_PARTICLE_WORDS = (
    "에서부터 으로부터 로부터 에서는 에서도 에게서 한테서 으로는 으로도 이라고 이라는 입니다 에서 에게 한테 께서 "
    "으로 부터 까지 처럼 보다 하고 이랑 마다 조차 밖에 에는 에도 로는 로도 은 는 이 가 을 를 의 에 로 와 과 도 만"
)
# Endings of a verb or adjective made from a noun (회의 + 합니다, 결정 + 됐다, 중요 + 한) and of the copula
# (휴가 + 였다): the noun is what a query asks for ("회의" finds "회의합니다"). Two syllables must remain:
# such nouns are mostly Sino-Korean words of two or more, and shorter stems (했다 -> 했) would match too much.
# The second line holds the question's endings (담당 + 하나요, 휴가 + 인가요): a note states, a query asks.
_ENDING_WORDS = (
    "하였습니까 되었습니까 했습니까 됐습니까 되었나요 이었나요 했을까요 하나요 했나요 합니까 할까요 됩니까 "
    "되나요 됐나요 였나요 인가요 입니까 일까요 하죠 했죠 했니 "
    "하였습니다 되었습니다 이었습니다 했습니다 됐습니다 였습니다 하였다 하였고 되었다 되었고 이었다 이에요 "
    "합니다 합시다 됩니다 했는데 했지만 했으며 했어요 했었다 하세요 하셨다 하는데 하지만 하면서 하려고 하도록 "
    "했다 했고 했던 했어 했음 하는 하고 하며 하면 하기 하여 하다 하지 한다 해요 해서 해도 해야 됐다 됐고 됐어 "
    "된다 되는 되고 되면 되어 돼요 였다 였고 이다 예요 한 할 함 해 된 될 됨"
)
# Ending -> syllables that must remain (하고 is both, and keeps the particle's rule); tried longest first, so
# 으로 before 로 and 하는 before 는.
_KEEP = {ending: 2 for ending in _ENDING_WORDS.split()} | {
    particle: 2 if len(particle) == 1 else 1 for particle in _PARTICLE_WORDS.split()
}
_PARTICLES = frozenset(_PARTICLE_WORDS.split())
# The endings of a verb asked as a question or told in the past, informally (맡 + 나요, 잡 + 았어), after a verb's own
# stem, which the index does not cut off (:func:`korean_stem`): a note states it otherwise (맡는다, 잡았다)
_ASKING_VERB = ("나요", "까요", "니까", "습니까", "았어", "었어", "였어", "았니", "었니", "았지", "었지")
# Hangul syllables from 가 on, each a lead, a vowel and one of 28 finals (none among them); ㅆ is final 20
_FIRST_SYLLABLE, _SYLLABLES, _FINALS, _FINAL_SS = 0xAC00, 11_172, 28, 20
_ENDINGS = frozenset(_ENDING_WORDS.split())
_ENDING_LENGTHS = sorted({len(ending) for ending in _KEEP}, reverse=True)

# Query-side stop words. CJK: cut a query's runs at these (question words, particles, copulas), longest
# first; Korean: dropped whole. Only in queries: the index keeps every character.
_CJK_STOP_WORDS = (
    "为什么 什么 哪些 哪个 哪里 多少 怎么 怎样 如何 是否 的 了 是 吗 呢 吧 哪 谁 和 与 及 在 "
    "我 你 您 他 她 它 我们 你们 他们 她们 它们 咱们 自己 这 那 这个 那个 这些 那些 "  # pronouns, as English's `i`, `this`
    "でしょう ですか ました ません ですが です ます ある いる なに なん どこ だれ いつ どの どれ "
    "の は が を に で と も か へ や"
)
# Japanese function words: the entries of two characters or more of Lucene's Japanese (Kuromoji) stop list.
# Its one-kana entries (た し れ ...) are left out: cutting a query's runs at them broke its verbs apart.
_JAPANESE_FUNCTION_WORDS = (
    "ある いる から こと として など なっ ない この ため その あっ よう また もの という あり まで られ なる "
    "による によって により おり より なり られる において なかっ なく しかし について だっ その後 できる それ ので "
    "なお のみ でき における および いう さらに でも たり その他 に関する たち ます なら に対して 特に せる 及び "
    "これら とき では にて ほか ながら うち そして とともに ただし かつて それぞれ または ほど ものの に対する "
    "ほとんど と共に といった です とも ところ ここ "
    # question words beyond the list's: "why", "how", "how long", "what kind", "how much", "who"
    "なぜ どうして どうやって どのように どのくらい どれくらい どんな いくら いくつ 誰 のです んです"
)
CJK_STOPWORDS = sorted(set(_CJK_STOP_WORDS.split()) | set(_JAPANESE_FUNCTION_WORDS.split()), key=len, reverse=True)
# as a query's runs are cut, its traditional characters folded: その後 is その后 there
_FOLDED_STOPWORDS = sorted({simplified(word) for word in CJK_STOPWORDS}, key=len, reverse=True)


def _cutter(words: list[str]) -> re.Pattern[str]:
    """A pattern whose split() cuts a run at ``words`` (tried in order) and keeps them."""
    return re.compile("(" + "|".join(map(re.escape, words)) + ")")


_CJK_STOP = _cutter(_FOLDED_STOPWORDS)
# Japanese "what" (何年に, 何人): a stop word in a query with kana, so Japanese. In Chinese it stays a term: a
# common surname (何炅) and part of words (任何).
_JAPANESE_WHAT = "何"
_JAPANESE_STOP = _cutter([*_FOLDED_STOPWORDS, _JAPANESE_WHAT])
_PARTICLE_OR_WHAT = re.compile(f"[{_KANA}]+|{_JAPANESE_WHAT}")  # a lone kanji between two of these is a word
_KOREAN_STOP_WORDS = "무엇 무엇을 뭐 뭘 어디 어디서 언제 누가 누구 왜 어떻게 어떤 어느 무슨 얼마 얼마나 몇 그리고 그런데 하지만 및 또는"
# A question word asked with the copula or a question's ending on it: 언제야 ("when is it?"), 뭐였지 ("what was it?")
_QUESTION_WORDS = "무엇 뭐 어디 언제 누구 왜 어떻게 얼마"
_ASKING_ENDINGS = "야 이야 지 죠 요 예요 에요 이에요 인가요 인지 입니까 일까요 니 냐 였지 였어 였죠 였나요 였어요 였더라 더라"
KOREAN_STOPWORDS = frozenset(_KOREAN_STOP_WORDS.split()) | {
    word + ending for word in _QUESTION_WORDS.split() for ending in _ASKING_ENDINGS.split()
}

# What a query term is worth: a word, a weak term (searched only when the query has no word), a stop word.
Weight = int
WORD, WEAK, STOP = 0, 1, 2


def _clusters(run: str) -> list[str]:
    """Grapheme clusters of a run, roughly: each letter with the combining marks after it."""
    clusters: list[str] = []
    for char in run:
        if clusters and unicodedata.category(char).startswith("M"):
            clusters[-1] += char
        else:
            clusters.append(char)
    return clusters


def _bigrams(units: list[str]) -> list[str]:
    """Overlapping pairs of ``units``; a single unit is its own gram."""
    return [a + b for a, b in zip(units, units[1:])] or units


def _asks_with_a_verb(word: str) -> bool:
    """Whether a Korean query word is a verb asked as a question or told in the past informally: one of
    :data:`_ASKING_VERB`'s endings after a stem, or 어, 지, 니 or 냐 after a syllable whose last consonant is ㅆ, the
    past's (갔어, 껐어, 바꿨어: the past merged into the stem's syllable)."""
    if len(word) > 2 and word.endswith(_ASKING_VERB):
        return True
    code = ord(word[-2]) - _FIRST_SYLLABLE if len(word) > 1 else -1
    return word[-1] in "어지니냐" and 0 <= code < _SYLLABLES and code % _FINALS == _FINAL_SS


def korean_stem(word: str) -> str | None:
    """``word`` without its trailing particle or verb ending, when it has one and enough syllables remain;
    else None."""
    for length in _ENDING_LENGTHS:
        rest = len(word) - length
        if (keep := _KEEP.get(word[rest:])) is not None and rest >= keep:
            return word[:rest]
    return None


def _script_piece(match: re.Match[str]) -> str:
    text = match.group(0)
    if match.lastgroup == "hangul":
        stem = korean_stem(text)
        grams = [text, stem] if stem else [text]
    else:
        units = list(text) if match.lastgroup == "cjk" else _clusters(text)
        grams = units + _bigrams(units) if len(units) > 1 else units
    return f" {' '.join(grams)} "


def _with_camel_parts(text: str) -> str:
    """``text`` with the parts of each camelCase word added after it (found from its boundaries: a
    regex for whole camelCase words is several times slower on long English text)."""
    pieces: list[str] = []
    done = 0  # text[:done] is in pieces
    for match in _ANY_CAMEL.finditer(text):
        start, end = match.start() - 1, match.end()  # the boundary's two characters
        if start < done:
            continue  # another boundary of a word already handled
        while start > done and text[start - 1].isalnum():
            start -= 1
        while end < len(text) and text[end].isalnum():
            end += 1
        word = text[start:end]
        pieces += [text[done:end], " ", " ".join(_CAMEL.split(word)), " "]
        done = end
    return "".join(pieces) + text[done:] if pieces else text


@lru_cache(maxsize=4096)  # a search marks the lines of its candidates: the same few acronyms, again and again
def acronym_mark(word: str) -> str | None:
    """The token the index adds for ``word`` when it is an acronym that FTS5 cannot tell from an everyday English
    word, else None: one that reads as a stop word in lower case ("IT", "US", "WHO", "SO"), or as a word that porter
    cuts to another ("UPS" -> "up", "AIDS" -> "aid"): ``itacronym``. FTS5 folds case, so "who is IT?" ranked first
    every note that says "it", and "how much was the UPS?" the log that says "filled up". Other acronyms need no
    mark: "API" reads as no word, and "SMART" or "RANK" only as their own homograph (each mark makes its chunk one
    term longer, which BM25 reads as thinner)."""
    if not _ACRONYM.fullmatch(word) or word in _OPERATORS:
        return None
    lower = word.lower()
    confused = lower in QUERY_STOPWORDS or (english_share(lower) > 0 and porter_stem(lower) != lower)
    return lower + ACRONYM_MARK if confused else None


def _with_acronym_marks(text: str) -> str:
    """``text`` with the :func:`acronym_mark` of each acronym that has one at the end of its line (where it
    splits no phrase: "US-IT", "IT helpdesk"), in lines that write acronyms (:func:`_writes_acronyms`)."""
    if "\n" in text:
        return "\n".join(map(_with_acronym_marks, text.split("\n")))
    marks = [mark for word in _ACRONYM.findall(text) if (mark := acronym_mark(word))]
    return f"{text} {' '.join(marks)}" if marks and _writes_acronyms(text) else text


def _writes_acronyms(text: str) -> bool:
    """Whether a line or a query writes its words in capitals as acronyms: not when it is all in capitals ("WHAT
    IS THE PLAN", a title in capitals, whose marks would only make it longer), unless it is one word ("IT")."""
    return text.upper() != text or len(_LATIN_WORD.findall(text)) == 1


def query_acronym_marks(text: str) -> dict[str, str]:
    """Each acronym the query writes in capitals (:func:`_writes_acronyms`), lower-cased as its term, with its
    :func:`acronym_mark`, when it has one: the query asks for the capitals where notes write them."""
    text = unicodedata.normalize("NFKC", text)
    if not _writes_acronyms(text):
        return {}
    return {word.lower(): mark for word in _ACRONYM.findall(text) if (mark := acronym_mark(word))}


def index_text(text: str) -> str:
    """The string the keyword index holds for ``text`` (cut by :data:`.terms.FTS_TOKENIZER`): its
    :func:`segmented` text, with the base form of each English word form porter cannot fold that it writes
    after it ("bought" -> "buy", "allergic" -> "allergy", "DB" -> "database": :mod:`.base_forms`), and the kind of
    each value it writes without naming it ("dana@acme.io" -> "email": :mod:`.value_kinds`)."""
    return with_value_kinds(with_base_forms(segmented(text)))


def segmented(text: str) -> str:
    """``text`` with its scripts' pieces, its words' stems and its camelCase words' parts: :func:`index_text`
    before the base forms, which the Python side adds from the tokens it cuts anyway.

    Plain ASCII without a camelCase word or an acronym is its own segmented text, found with one regex search: NFKC,
    the script pieces, the camel parts and the acronyms' marks would change nothing. Most lines of English notes
    are such lines, and a search segments every line of its candidates (a sixth less time there,
    docs/benchmarks.md)."""
    if text.isascii():
        return text if _ANY_REWRITE.search(text) is None else _with_acronym_marks(_with_camel_parts(text))
    text = unicodedata.normalize("NFKC", text)
    if _ANY_SCRIPT.search(text):  # traditional Chinese folded once for the whole text: its runs are cut from it
        text = _SCRIPT_RUN.sub(_script_piece, with_stems(simplified(text)))
    return _with_acronym_marks(_with_camel_parts(text))


def _run_pieces(piece: str, kind: str, japanese: bool) -> Iterator[tuple[str, Weight]]:
    """The grams of a CJK or Southeast Asian run of a query, cut at CJK stop words (``japanese``: the query's).

    A lone character left between one-character stop words (``在日`` -> ``日``) is weak, searched only when
    the query has no other word: such stop words are often part of a word (``在日``, ``和服``). After a
    longer stop word it is a word of its own (``喝什么茶`` -> ``茶``), as is a one-character query, and so is
    a kanji between two Japanese particles (``日本の湖は`` -> ``湖``): kana particles do not join a kanji's
    word. So is a kanji between Japanese ``何`` ("what") and a particle: it names what is asked for
    (``何年に起こった`` -> ``年``, matching ``1870年``). With a particle on one side only it stays weak (``州か``,
    ``の宰``, ``何割``: more often a word's fragment).
    """
    stop_words = _JAPANESE_STOP if japanese else _CJK_STOP
    parts = stop_words.split(piece) if kind == "cjk" else [piece]  # run, stop word, run, ...
    runs = [(at, run) for at, run in enumerate(parts) if at % 2 == 0 and run]
    if not runs:  # the whole run is stop words
        yield from ((gram, STOP) for gram in _bigrams(list(piece)))
    for at, run in runs:
        units = list(run) if kind == "cjk" else _clusters(run)
        stops = [parts[near] for near in (at - 1, at + 1) if 0 <= near < len(parts)]
        between_particles = len(stops) == 2 and _HAN_RUN.fullmatch(run) and all(map(_PARTICLE_OR_WHAT.fullmatch, stops))
        weak = len(units) == 1 and bool(stops) and (
            all(len(stop) == 1 for stop in stops) or _HIRAGANA.fullmatch(run) is not None  # the す of の・です・か
        ) and not between_particles
        yield from ((gram, WEAK if weak else WORD) for gram in _bigrams(units))


def katakana_words(terms: Sequence[str]) -> list[tuple[int, ...]]:
    """The katakana words of a query's ``terms`` (in the query's order), each as the places of its bigrams:
    katakana bigrams that follow one another, each starting with the letter the one before ends with
    (``アッ ップ プル ルパ パイ``). Katakana writes one loanword or a compound of them between other scripts, so
    its bigrams stand for a word, unlike the overlapping grams of a Chinese run."""
    words: list[tuple[int, ...]] = []
    word: list[int] = []
    for at, term in enumerate(terms):
        if _KATAKANA_GRAM.fullmatch(term) and word and terms[word[-1]][1] == term[0]:
            word.append(at)
            continue
        if len(word) > 1:
            words.append(tuple(word))
        word = [at] if _KATAKANA_GRAM.fullmatch(term) else []
    if len(word) > 1:
        words.append(tuple(word))
    return words


def is_gram(term: str) -> bool:
    """Whether a query term is a gram of a script written without spaces (Han, kana, Thai, ...): one of the
    overlapping pieces :func:`index_text` cuts such text into, rather than a word."""
    return _GRAM.search(term) is not None


_OPERATORS = frozenset({"AND", "OR"})  # a search engine's, written between words: no acronym


def _is_acronym(piece: str) -> bool:
    """A word of two letters or more in capitals (``IT``, ``US``, ``ER``): never a function word (unless the
    whole query is in capitals)."""
    return len(piece) > 1 and piece.isupper() and piece not in _OPERATORS


def query_pieces(text: str) -> Iterator[tuple[str, Weight]]:
    """(term, :data:`Weight`) for every term of a query, in order; each term is one token of
    :func:`index_text`'s output (a CJK term one of its bigrams), lower-cased. A lone CJK character right after
    a number is its counter (``5月``, ``3つ``): weak, since the number says what it means; so is an English word
    that frames the question (:func:`.stopwords.frames_question`: "tell", "describe", "kind" before "of"). A name
    for the tasks is the word task items are held to say: "to-do list" -> "todo" (:mod:`.value_kinds`); a weekday in
    another language is its English name: "Freitag", "金曜日" -> "friday" (:mod:`.weekdays`)."""
    text = query_weekdays(query_kind_words(simplified(fold(unicodedata.normalize("NFKC", text)))))
    japanese = _KANA_RUN.search(text) is not None
    number_end = -1  # where the query's last number ends
    capitals = _writes_acronyms(text)  # else a query in capitals: its words are not acronyms
    matches = list(_PIECE.finditer(text))
    words = [m.group(0).lower() for m in matches if m.lastgroup == "word" and not (capitals and _is_acronym(m.group(0)))]
    foreign = foreign_function_words(words)
    for at, match in enumerate(matches):
        piece = match.group(0)
        kind = match.lastgroup
        if kind == "cjk" and len(piece) == 1 and match.start() == number_end:
            yield piece, WEAK  # one word with its number (5月, 6号, 1990年), as English's 6th is
        elif kind in ("cjk", "sea"):
            yield from _run_pieces(piece, kind, japanese)
        elif kind == "hangul":  # a word with a particle or an ending is asked as its stem, which the index adds
            term = korean_stem(piece) or piece
            attached = at > 0 and matches[at - 1].end() == match.start() and piece in _PARTICLES  # PostgreSQL을
            bare = len(piece) > 1 and piece in _ENDINGS  # 했나요, 인가요: a verb's ending written alone, no noun
            if attached or bare or {piece, term} & KOREAN_STOPWORDS:
                yield term, STOP
            else:  # a verb asked as a question (맡나요, 잡았어) is written otherwise in a note (맡는다, 잡았다)
                yield term, WEAK if term == piece and _asks_with_a_verb(piece) else WORD
        else:
            word = piece.lower()
            function = word in QUERY_STOPWORDS or word in foreign or in_contraction(text, match.start(), match.end())
            if function and not (capitals and _is_acronym(piece)):
                yield word, STOP
            elif frames_question(word, matches[at + 1].group(0).lower() if at + 1 < len(matches) else ""):
                yield word, WEAK
            else:
                # a word of a stemmed script (Russian, Arabic, ...): its stem; an English form porter cannot fold: its base
                yield stem_of(word) or base_form(word), WORD
            if piece.isdigit():
                number_end = match.end()
