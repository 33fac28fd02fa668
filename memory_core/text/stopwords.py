"""Function words: the words a query drops, since they say nothing of what is asked for. Only queries drop
them; the index keeps every word.

English's, Russian's, Hindi's, Hebrew's, Arabic's, Persian's and Urdu's are dropped from every query
(:data:`QUERY_STOPWORDS`). Those of French, Spanish, Portuguese, Italian, German, Dutch, the Scandinavian languages,
Polish, Czech, Indonesian, Vietnamese and Turkish are dropped from a query written in that language
(:func:`foreign_function_words`): many of them are words in English ("de" in "Rio de Janeiro" and "de novo", "die",
"war", "car", "pour", "come", "men"), and an English query keeps them. Single letters other than ``a`` and ``i`` are
never dropped (vitamin D, T cells, E. coli), but in a Polish or Czech query ("w", "z": "in", "with") or where an
apostrophe cut them off a word (:func:`in_contraction`: the "s" of "Dave's", the "l" of "l'amour"), nor is a word in
capitals in a query that is not (:func:`.segments.query_pieces`: "a job in IT", "WHO data"). CJK and Korean function
words are cut where their scripts are segmented (:mod:`.segments`). English words that frame a question ("tell me",
"describe", "how many", "what kind of") are searched only when a query has no other word (:func:`frames_question`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .arabic import fold
from .word_frequencies import english_share

# English words that carry no retrieval signal in questions: articles, prepositions, pronouns, question words,
# conjunctions, auxiliaries, the adverbs that ask whether something holds by now ("what's still open?", "paid
# yet?": searched, a word no note holds made the answer abstain), and the contractions a typed query writes
# without the apostrophe ("whats the redis port"), whose parts it drops when written with one. Not "may" (the
# month), "mine", "up", "down", "out", "off", "over" (a site is down), nor the contractions that are words
# ("ill", "well", "wed", "id") or negations ("didnt", as "didn" of "didn't", matches a chat's "I didn't").
_ENGLISH = (
    "a an and are as at be been but by can could did do does for from had has have how i if in into is it its me my "
    "of on or our she he her his him so that the their them they this to was we were what when where which who whom "
    "why will with would you your "
    "about after against although am among another any because before being between both during each either "
    "every few having here hers herself himself itself more most must myself neither no nor not once only other "
    "ours ourselves own same should since some such than then there these those though through too toward towards "
    "unless until upon us very whether while whose within without yours yourself yourselves themselves theirs "
    "also just again still yet already whats hows wheres whens whys whos thats theres im ive youre youve theyre weve"
)
# Articles, prepositions, pronouns, question words ("how much" among them), conjunctions, the common forms of "be" and
# "have", "still", and the elided forms a query cuts at the apostrophe (qu'est, dell'anno).
_FRENCH = (
    "le la les un une des du de au aux et ou où est sont été était étaient être ai avons avez ont avait ce cet cette "
    "ces que qui quoi quel quelle quels quelles dans pour par avec sans sur sous chez entre vers depuis pendant "
    "avant après mais donc car ne pas se sa son ses leur leurs nous vous il ils elle elles je tu lui en à comment "
    "quand pourquoi combien mon ma mes ton ta tes notre nos votre vos aussi très tout tous toute toutes qu jusqu lorsqu "
    "encore"
)
_SPANISH = (
    "el la los las un una unos unas de del al en es son fue fueron ser estar está están estaba ha han hemos había "
    "que qué quien quién quienes cual cuál cuales cuáles cuando cuándo donde dónde como cómo por para con sin "
    "sobre entre hasta desde pero muy su sus mi mis tu tus nuestro nuestra nuestros nuestras lo le les se te nos "
    "ese esa esos esas este esta estos estas eso esto ya también porque cuánto cuánta cuántos cuántas cuanto cuanta "
    "cuantos cuantas adónde adonde todavía aún"
)
_PORTUGUESE = (
    "o os as um uma uns umas de do da dos das no na nos nas em é são foi foram ser estar está estão que quem qual "
    "quais quando onde como por para com sem mas ou muito seu sua seus suas meu minha nosso nossa ele ela eles "
    "elas eu você vocês se ao aos à às pelo pela pelos pelas este esta isso isto esse essa não também já porque "
    "quanto quanta quantos quantas ainda"
)
_ITALIAN = (
    "il lo la gli le un uno una di del della dei degli delle dello al alla ai agli alle allo da dal dalla dai in "
    "nel nella nei nelle con su sul sulla per tra fra ed è sono era che chi cosa quale quali quando dove come "
    "perché non ma anche molto suo sua suoi sue mio mia nostro nostra io tu lui lei noi voi loro si ci vi ne ha "
    "hanno ho abbiamo essere stato stata questo questa questi queste quello quella dell dall nell sull all quest "
    "quanto quanta quanti quante ancora"
)
_GERMAN = (
    "der die das den dem des ein eine einer eines einem einen und oder aber ist sind war waren wird werden wurde "
    "wurden hat haben hatte hatten habe bin von zu zum zur im vom beim an am auf aus bei mit für über unter nach "
    "vor durch gegen ohne um als wie wo wann warum wieso was wer wen wem welche welcher welches dass nicht auch "
    "noch nur schon sehr ich du er sie es wir ihr uns euch man mein meine dein deine sein seine ihre unser unsere "
    "dieser diese dieses sich kein keine ob wieviel wieviele"
)
_DUTCH = (
    "de het een en of maar is zijn was waren wordt worden werd heeft hebben had van in op aan met voor door naar "
    "bij uit over om te tot als dat die dit deze wat wie waar wanneer waarom hoe ik jij je hij zij ze wij we "
    "jullie mijn jouw haar ons onze niet geen ook nog er hoeveel"
)
# Vietnamese writes a word's syllables apart, and a function word may be a syllable of another word ("sao" of
# "tại sao", "why", and of "sao lưu", "backup"): only syllables that are seldom part of a word that names something.
_VIETNAMESE = (
    "của là gì và các những này đó kia ấy với được đã đang sẽ không có thì mà cho ai nào đâu khi nhiêu như về ở "
    "trong tôi nó hoặc nhưng cũng rất lắm vì để nên rồi vậy ạ à nhé hả"
)
# Vietnamese function words written only with letters French, Spanish or Portuguese write too ("là", "gì", "và"):
# each counts once, as an ASCII one does, since "il est là" is French. Those with a letter only Vietnamese writes
# ("của", "cũng", "được": ă, đ, ĩ, ũ, ơ, ư, or a vowel marked as only Vietnamese marks it) tell the language alone.
_VIETNAMESE_LETTER = re.compile("[ăđĩũơư\u1ea0-\u1ef9]")
_COUNTS_ONCE = frozenset(word for word in _VIETNAMESE.split() if not _VIETNAMESE_LETTER.search(word))
# Turkish postpositions, pronouns, question words and particles; not those that are English names or words too
# ("ben", "kim", "sen", "her", "o", "en").
_TURKISH = (
    "ve ile bir bu şu da de mi mı mu mü ne neden niye niçin nasıl nerede nereye nereden hangi kime kimi kimin için "
    "gibi kadar çok daha ama fakat veya ki hiç biz siz onlar benim senin onun bizim sizin onların bana sana ona "
    "bunu şunu onu bunun şunun değil"
)
# Swedish, and Danish and Norwegian (one list: they share most of these words).
_SWEDISH = (
    "och att det som en ett är var har hade inte på för med av till den de om jag du han hon vi ni dem vad vem "
    "vilka vilken vilket när varför hur kan ska skulle kommer blev bli från men eller så också bara mycket min mitt "
    "mina din ditt dina sitt sina hans hennes deras vår vårt våra där här"
)
_DANISH_NORWEGIAN = (
    "og at det som en et er var har havde hadde ikke på for med af av til den de om jeg du han hun vi dem hvad hva "
    "hvem hvilke hvilken når hvor hvorfor hvordan kan skal vil blev ble fra men eller så også kun meget mye min mit "
    "mine din dit dine sit sine hans hendes hennes deres vores vår vårt våre der her"
)
# Polish and Czech prepositions (their one-letter ones too: "w", "z", "u", "o", "v"), conjunctions, pronouns,
# question words, the common forms of "be" and "have", "not" and "yes".
_POLISH = (
    "w we z ze na do o od po przy u za przez dla bez pod nad przed między oraz lub albo ale czy że żeby to ten ta "
    "te tego tej tych tym co kto kogo komu kiedy gdzie jak jaki jaka jakie jakiego jakiej który która które "
    "którego której jest są był była było byli były być będzie mam ma mamy mają się mi mnie mój moja moje mojego "
    "nasz nasza nasze jego jej ich już jeszcze też także bardzo ile dlaczego czemu tak nie"
)
_CZECH = (
    "v ve z ze na do o od po při u za přes bez pod nad před mezi nebo ale že aby to ten ta ty toho té tom co "
    "kdo koho komu kdy kde jak jaký jaká jaké jakou který která které kterého je jsou byl byla bylo byli být bude "
    "jsem jsi jsme jste mám má máme mají se si mi mě můj moje naše jeho její jejich už ještě také velmi kolik proč ano ne"
)
# Indonesian and Malay.
_INDONESIAN = (
    "yang dan di ke dari untuk dengan pada ini itu adalah akan tidak ada apa siapa kapan mana bagaimana mengapa "
    "kenapa berapa dia mereka kami kita saya anda aku kamu juga sudah telah belum atau tetapi tapi karena oleh "
    "sebagai dalam"
)
# Russian question words, pronouns, prepositions and particles (from Snowball's Russian stop list), matched
# before stemming: "какая", "где", "мы", "для" say nothing of what is asked for.
_RUSSIAN = (
    "и в во не что он на я с со как а то все она так его но да ты к у же вы за бы по только ее мне было вот от "
    "меня еще нет о из ему когда ли если уже или ни быть был него до вас там себя ей может они где есть ней для "
    "мы тебя их чем была сам без чего тоже себе под будет ж тогда кто этот того потому этого какой какая какие "
    "какое каких ним здесь этом мой тем чтобы нее были куда зачем всех при об хоть после над через эти нас про "
    "всего них эту моя свою этой перед том такой им между почему сколько чей чья чьи всё её ещё"
)
# Hindi postpositions, pronouns, question words and the copula.
_HINDI = (
    "के का की को में से पर है हैं था थी थे और या कि क्या कब कहाँ कहां कौन क्यों कैसे किस किसने किसको यह वह ये वे "
    "हम मैं तुम आप ने लिए भी तो हमने मैंने उसने इस उस इसे उसे एक"
)
# Hebrew question words, prepositions, pronouns and particles, as words of their own (a prefixed form, "ועל",
# is another word: the index takes no prefix off).
_HEBREW = (
    "מה מי מתי איפה איך למה מדוע האם כמה איזה איזו אילו על של את עם אל מן זה זו זאת אלה אלו הוא היא הם הן אני "
    "אתה אנחנו אתם אתן יש אין כי אם או גם לא כל רק עוד כבר אבל שלי שלך שלו שלה שלנו שלהם לי לך לו לה לנו להם "
    "היה הייתה היו יהיה"
)
# Arabic prepositions, pronouns, question words and particles, as :func:`.arabic.fold` leaves them.
_ARABIC = (
    "في من على الى عن ما ماذا متى اين كيف لماذا هل هذا هذه ذلك تلك التي الذي الذين و او ام مع كان كانت هو هي "
    "هم نحن انا انت انتم لم لن قد ثم بين عند كل اي"
)
# Persian's and Urdu's, as a query writes them (folded below, as the index folds the Arabic script). Persian writes
# a verb's prefix and a plural's suffix after a zero-width non-joiner, which cuts them into words of their own
# (می‌کنیم, پرداخت‌ها).
_PERSIAN = (
    "و در به از که این آن را با است هست نیست بود شد برای تا یا اما اگر هم چه چرا چی چیست کی کجا چطور چگونه چند "
    "چقدر کدام آیا درباره من تو او ما شما آنها یک هر همه خود کسی چیزی می نمی ها های ای ام"
)
# Urdu's "پر" ("on") is Persian's "full" too, and "آپ" ("you") folds to Persian's "اپ" ("app"): both rare in a question
_URDU = "کا کی کے لیے لئے میں سے پر ہے ہیں تھا تھی تھے اور یا کہ کیا کب کہاں کون سا کیوں کیسے یہ وہ نے کو بھی ہم آپ"
ENGLISH_STOPWORDS = frozenset(_ENGLISH.split())
# English words that frame a question rather than name what it asks for: the verbs that ask for what someone
# said ("how did Caroline describe her trip", "can you tell me", "what did Dana say") and the words that ask
# for a count or a kind ("how many", "what kind of"). The notes that answer hold the trip, the count or the
# kind, seldom the framing word; where a note does ("Tell Dana about outages"), a small memory weighed it as
# rare as a name. A query searches them only when it has no other word ("tell me"). Not "remember" or "remind",
# which notes answer in their own words ("it reminds me of home").
_FRAMING = (
    "describe described mention mentioned say says said tell told suggest suggested explain discuss discussed "
    "know many much according"
)
_KINDS = frozenset({"kind", "kinds", "sort", "sorts", "type", "types"})  # framing only before "of": "type 2 diabetes"
_FRAMING_WORDS = frozenset(_FRAMING.split())
# Every word a query drops, whatever its language (lower-cased as a query's words are); a query of them alone has
# nothing to search for (:func:`.terms.only_stop_words`).
QUERY_STOPWORDS = frozenset(word for words in (_ENGLISH, _RUSSIAN, _HINDI, _HEBREW, _ARABIC) for word in words.split()) | {
    fold(word) for word in f"{_PERSIAN} {_URDU}".split()
}
_GERMAN_WORDS = frozenset(_GERMAN.split())
_OTHER_LATIN = (
    _FRENCH, _SPANISH, _PORTUGUESE, _ITALIAN, _DUTCH, _SWEDISH, _DANISH_NORWEGIAN, _POLISH, _CZECH, _INDONESIAN, _VIETNAMESE,
    _TURKISH,
)  # fmt: skip
_LATIN_SCRIPT = (_GERMAN_WORDS, *(frozenset(words.split()) for words in _OTHER_LATIN))
_EVERY_FUNCTION_WORD = QUERY_STOPWORDS.union(*_LATIN_SCRIPT)


def foreign_function_words(words: Sequence[str]) -> frozenset[str]:
    """The function words a query of ``words`` (lower-cased, in order) drops as a query in French, Spanish,
    Portuguese, Italian, German, Dutch, Swedish, Danish, Norwegian, Polish, Czech, Indonesian, Vietnamese or Turkish: those of
    each language in which two of its words or more are function words (English's aside: "in", "was"), and more of
    them than are English ones. "Quelle est la couleur du ciel" drops "est la du"; "what did Jolene do in Rio de
    Janeiro" keeps "de". A function word written with a letter English does not write counts as two: "¿Qué prefiere
    Lucía?" drops "qué"."""
    english = sum(word in ENGLISH_STOPWORDS for word in words)
    return frozenset(word for language in _LATIN_SCRIPT for word in _written_in(words, language, english))


def is_function_word(word: str) -> bool:
    """Whether ``word`` (lower-cased) is a function word of some language the stop lists know, whether or not the
    query it is in tells that language: German "ist" in "Wogegen ist Katrin allergisch?"."""
    return word in _EVERY_FUNCTION_WORD


def is_german(words: Sequence[str]) -> bool:
    """Whether ``words`` (lower-cased) are German, by :func:`foreign_function_words`' test. German writes every
    noun with a capital, so its case tells no name (:mod:`.names`)."""
    return bool(_written_in(words, _GERMAN_WORDS, sum(word in ENGLISH_STOPWORDS for word in words)))


def _written_in(words: Sequence[str], language: frozenset[str], english: int) -> list[str]:
    """The function words of ``language`` among ``words`` that English does not share, when they tell that
    language: one at least, and two or more with the ones English shares ("was", "am" in "Was ist am Montag?"),
    and more of those than ``english`` (how many of ``words`` are English function words); else none. One that
    English never writes counts as two (:func:`_telling`)."""
    distinct = list(dict.fromkeys(words))  # a word asked twice ("pro-inflammatory ... pro- and") tells no more
    found = [word for word in distinct if word in language and word not in ENGLISH_STOPWORDS]
    if not found:
        return []
    shared = sum(word in language for word in distinct if word in ENGLISH_STOPWORDS)
    told = shared + sum(_telling(word, english) for word in found)
    return found if told >= 2 and told > english else []


def _telling(word: str, english: int) -> int:
    """How much a function word of another language tells that language: two where English never writes it, one
    else. A letter English lacks says so ("qué", "für"); so does a word outside English's commonest in a query
    with no English function word ("vom" in "Telefonnummer vom Vermieter", not "mis" of "by sequestrating
    mis-capped RNAs", nor "de" or "los", which English writes in names). Not a word of one or two letters: "z" of
    "z-index" and "er" of "sam er" (the ER) tell no Polish or German."""
    if word in _COUNTS_ONCE or len(word) <= 2 and word.isascii():
        return 1
    if not word.isascii():
        return 2
    return 2 if english == 0 and not english_share(word) else 1


def frames_question(word: str, following: str) -> bool:
    """Whether ``word`` (lower-cased), followed in an English query by ``following``, frames the question
    rather than names what it asks for: searched only when the query has no other word."""
    return word in _FRAMING_WORDS or (word in _KINDS and following == "of")


_APOSTROPHES = "'\u2019"
# What English writes after an apostrophe in a contraction or a possessive: it's, Dave's, don't, I'm, he'd, we'll,
# you're, I've. Each is in most chunks of English notes, and as a query word it counted as one the memory holds.
_CLITICS = frozenset({"s", "t", "m", "d", "ll", "re", "ve"})


def in_contraction(text: str, start: int, end: int) -> bool:
    """Whether the word ``text[start:end]`` is a part of a contraction or an elision that the apostrophe cut off:
    a clitic after it ("Dave's", "I'm", "we'll", "don't"'s "t", "the 90's"), or an elided article, pronoun or
    conjunction before it ("l'amour", "d'accord", "j'ai", "qu'il", "O'Brien"'s "o"). A negation keeps its verb
    ("didn" matches a chat's "I didn't")."""
    if start >= 2 and text[start - 1] in _APOSTROPHES and text[start - 2].isalnum():
        return text[start:end].lower() in _CLITICS
    if end + 1 < len(text) and text[end] in _APOSTROPHES and text[end + 1].isalpha():
        return end - start == 1 or text[start:end].lower().endswith("qu")
    return False
