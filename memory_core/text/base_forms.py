"""English words in forms the index's porter stemmer cannot fold, each with the form a query asks for. Pure.

Porter folds a regular word's endings ("decided", "decide") but not
- an irregular verb's past forms: "bought" stays "bought" and "buy" becomes "bui", so "what did Audrey buy?"
  missed the chat that says "I bought";
- an irregular plural: "children", "teeth";
- a word made from another by more than an ending: "allergic" (allergy), "decision" (decide), "choice" (choose),
  "failure" (fail), "payment" (pay); and "died", which porter cuts to "di" while "die" stays "die";
- a British spelling: "colour", "favourite", "centre", "organised" ("any allergies?" and "what's his favorite
  color?" missed a MEMORY.md that says "Allergic to penicillin" and "Favourite colour: green");
- a word as notes shorten it: "db", "appt", "Dr", "meds", "prod" ("what's the production database host?" missed
  "Prod DB: pg-prod-01").
The index adds the base form after a line that writes such a form (``I bought it`` -> ``I bought it buy``), and
a query asks for the base form, so either form finds both, and every regular form of the base ("buys"). The index
adds the English word after a weekday, a task or a phone named in another language as well ("Freitag" ->
"friday", "Aufgaben" -> "task", "Telefon" -> "phone": :mod:`.weekdays`, :mod:`.value_kinds`), which a query asks
for them by.

Forms that are as often another word are left out: "left", "saw", "rose", "born", "lay", "bore", "bound",
"ground", "wound", "shot", "bit", "lit" and "drew" (a name); "application" (software, not applying), "sale",
"flight", "tyre" ("tire" is also "tired"), "cheque" ("check"), "pkg" (also protein kinase G). "found" is kept:
the past of "find" is far commoner than "to found".
"""

from __future__ import annotations

from collections.abc import Sequence

from .separators import TOKEN, cut_at_ascii_separators
from .value_kinds import KIND_FORMS
from .weekdays import FEIRA_DAYS, FEIRAS
from .weekdays import FORMS as WEEKDAY_FORMS

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
# a plural that is no regular ending away from its singular
_PLURALS = """
child children; foot feet; goose geese; half halves; knife knives; man men; mouse mice; shelf shelves;
tooth teeth; wife wives; woman women
"""
# a word made from another that porter keeps apart from it, and the short verbs whose "-ied" porter cuts to "-i"
_DERIVED = """
allergy allergic; analyze analysis; anxious anxiety anxieties; choose choice choices; decide decision decisions;
depart departure departures; describe description descriptions; diet dietary; die died dies dying death deaths;
explain explanation explanations; fail failure failures; injure injury injuries; lie lied lies lying;
lose loss losses; marry marriage marriages; pay payment payments; prescribe prescription prescriptions;
religion religious; subscribe subscription subscriptions;
succeed succeeded succeeding success successes successful successfully; tie tied ties tying
"""
# British spellings, each family under its American spelling (porter folds the American forms' endings)
_BRITISH = """
aluminum aluminium; analyze analyse analysed analyses analysing; anemia anaemia; catalog catalogue catalogues;
center centre centres centred; color colour colours coloured colouring colourful; defense defence;
behavior behaviour behaviours behavioural; dialog dialogue dialogues; esophagus oesophagus; estrogen oestrogen;
favorite favourite favourites; fetus foetus foetal; fiber fibre fibres; flavor flavour flavours flavoured;
gray grey; honor honour honours honoured; humor humour; jewelry jewellery; judgment judgement judgements;
labor labour; license licence licences; liter litre litres; meter metre metres; mold mould mouldy; mom mum mums;
neighbor neighbour neighbours; neighborhood neighbourhood neighbourhoods; offense offence offences;
pajamas pyjamas; paralyze paralyse paralysed; pediatric paediatric paediatrics paediatrician; program programme
programmes; rumor rumour rumours; skeptical sceptical; skillful skilful; theater theatre theatres; tumor tumour
tumours
"""
# words as notes shorten them, under the full word; under the short one where the full word's stem is another
# word's too ("production" and "product" stem alike, so "prod" stands for both forms)
_SHORT = """
appointment appt appts; argument args; bicycle bike bikes biking biked; birthday bday bdays; cert certificate
certificates; configuration config configs; convo conversation conversations; credential creds;
database db dbs; dept department departments; directory dir dirs; doctor dr; environment env envs;
favorite fave faves fav favs; government govt; hour hrs; implementation impl; influenza flu; information info;
infrastructure infra; introduction intro intros; kubernetes k8s; laboratory lab labs; manager mgr mgrs;
mathematics math maths; medication meds; meeting mtg mtgs; message msg msgs; minute mins;
parameter param params; performance perf; photograph photo photos; picture pic pics; prod production productions;
rehabilitation rehab; repository repo repos; spec specification specifications; statistics stats;
television tv; tomorrow tmrw; uni university universities; vaccine vax; week wk wks; year yr yrs
"""
# American verbs in "-ize" that British English writes "-ise", with their forms and their nouns in "-isation"
_IZE_VERBS = """
apologize authorize categorize criticize customize emphasize finalize initialize maximize memorize minimize
normalize optimize organize personalize prioritize realize recognize serialize specialize standardize summarize
synchronize utilize visualize
"""
_ISE_ENDINGS = ("e", "ed", "es", "ing", "ation", "ations")


def _families(table: str) -> dict[str, str]:
    """Each form of ``table`` ("base form form; base form ...") with its base."""
    return {form: family.split()[0] for family in table.split(";") for form in family.split()[1:]}


def _british_ise() -> dict[str, str]:
    """Each British "-ise" form of :data:`_IZE_VERBS` with its American verb ("organised" -> "organize")."""
    return {verb[:-2] + "s" + ending: verb for verb in _IZE_VERBS.split() for ending in _ISE_ENDINGS}


BASE_FORMS = {
    **_families(_VERBS),
    **_families(_PLURALS),
    **_families(_DERIVED),
    **_families(_BRITISH),
    **_british_ise(),
    **_families(_SHORT),
}
# What the index adds: the base forms, and the English word for a weekday, a task or a phone in another language
_ADDED = BASE_FORMS | WEEKDAY_FORMS | KIND_FORMS
_FORMS = frozenset(_ADDED) | FEIRAS


def base_form(word: str) -> str:
    """The base form of ``word`` (lower case) when it is one of :data:`BASE_FORMS`' forms, else ``word``."""
    return BASE_FORMS.get(word, word)


def base_forms(words: Sequence[str]) -> list[str]:
    """What the index adds after ``words`` (lower case), in their order: the base form of each of
    :data:`BASE_FORMS`' forms, and the English word for each weekday, task or phone named in another language."""
    if _FORMS.isdisjoint(words):  # most lines: one set operation in C
        return []
    return [added for at, word in enumerate(words) if word in _FORMS and (added := _added(words, at))]


def _added(words: Sequence[str], at: int) -> str | None:
    """What the index adds after ``words[at]``, one of :data:`_FORMS`: a Portuguese weekday's "feira" names its day
    by the number before it ("sexta-feira": Friday); else none."""
    word = words[at]
    if word in FEIRAS:
        return FEIRA_DAYS.get(words[at - 1].removesuffix("s")) if at else None
    return _ADDED[word]


def with_base_forms(text: str) -> str:
    """``text`` with the base form of each of :data:`BASE_FORMS`' forms it writes after it (``we met`` -> ``we
    met meet``): the index's term counts; a base form's place in the text matters to no search."""
    lower = text.lower()
    added = base_forms(cut_at_ascii_separators(lower) if lower.isascii() else TOKEN.findall(lower))
    return f"{text} {' '.join(added)}" if added else text
