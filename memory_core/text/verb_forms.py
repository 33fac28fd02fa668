"""English irregular verbs: each past form with its base form, which the index's porter stemmer cannot find. Pure.

Porter folds "bought" and "buy" apart ("bought", "bui"), so a question asked in the present ("what did Audrey
buy?") missed the chat that says "I bought", as "when did she meet Jon?" missed "we met". The index adds the
base form after a line that writes a past form (``I bought it`` -> ``I bought it buy``), and a query asks for
the base form of a past form, so either form finds both.

Forms that are as often another word are left out: "left", "saw", "rose", "born", "lay", "bore", "bound",
"ground", "wound", "shot", "bit", "lit" and "drew" (a name). "found" is kept: the past of "find" is far commoner
than "to found".
"""

from __future__ import annotations

from collections.abc import Sequence

from .separators import TOKEN, cut_at_ascii_separators

# base form, then its past forms (simple past, past participle) that differ from it
_VERBS = """
arise arose arisen; awake awoke awoken; beat beaten; become became; begin began begun; bend bent; bite bitten;
bleed bled; blow blew blown; break broke broken; breed bred; bring brought; build built; burn burnt; buy bought;
catch caught; choose chose chosen; cling clung; come came; creep crept; deal dealt; dig dug; draw drawn;
dream dreamt; drink drank drunk; drive drove driven; eat ate eaten; fall fell fallen; feed fed; feel felt;
fight fought; find found; flee fled; fling flung; fly flew flown; forbid forbade forbidden; forget forgot forgotten;
forgive forgave forgiven; freeze froze frozen; get got gotten; give gave given; go went gone; grow grew grown;
hang hung; hear heard; hide hid hidden; hold held; keep kept; kneel knelt; know knew known; lead led; leap leapt;
learn learnt; lend lent; lose lost; make made; mean meant; meet met; pay paid; ride rode ridden; ring rang rung;
rise risen; run ran; say said; see seen; seek sought; sell sold; send sent; sew sewn; shake shook shaken;
shine shone; show shown; shrink shrank shrunk; sing sang sung; sink sank sunk; sit sat; sleep slept; slide slid;
speak spoke spoken; speed sped; spend spent; spin spun; spring sprang sprung; stand stood; steal stole stolen;
stick stuck; sting stung; strike struck stricken; strive strove striven; swear swore sworn; sweep swept;
swim swam swum; swing swung; take took taken; teach taught; tear tore torn; tell told; think thought;
throw threw thrown; understand understood; wake woke woken; wear wore worn; weave wove woven; weep wept; win won;
withdraw withdrew withdrawn; write wrote written
"""
BASE_FORMS = {form: verb.split()[0] for verb in _VERBS.split(";") for form in verb.split()[1:]}
_FORMS = frozenset(BASE_FORMS)


def base_form(word: str) -> str:
    """The base form of ``word`` (lower case) when it is the past form of an irregular verb, else ``word``."""
    return BASE_FORMS.get(word, word)


def base_forms(words: Sequence[str]) -> list[str]:
    """The base form of each irregular past form among ``words`` (lower case), in their order."""
    if _FORMS.isdisjoint(words):  # most lines: one set operation in C
        return []
    return [BASE_FORMS[word] for word in words if word in _FORMS]


def with_base_forms(text: str) -> str:
    """``text`` with the base form of each irregular past form it writes after it (``we met`` -> ``we met
    meet``): the index's term counts; a base form's place in the text matters to no search."""
    lower = text.lower()
    added = base_forms(cut_at_ascii_separators(lower) if lower.isascii() else TOKEN.findall(lower))
    return f"{text} {' '.join(added)}" if added else text
