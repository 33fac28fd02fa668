"""What a line writes without naming it: a web address, an email address, an IP address, a phone number, a task, a
weekday. Pure.

"Grafana: https://grafana.internal.acme.io" answers "what's the Grafana URL?", "Dana Ruiz <dana@acme.io>" answers
"what's Dana's email?", "NAS at 192.168.1.20" (or "2001:db8::20") answers "what's the IP of the NAS?" and
"Plumber: Marco, 0176 555 0101" answers "what's the plumber's phone number?", but none of them says "URL", "email",
"IP" or "phone": keyword search ranked first any other note on Grafana, Dana, the NAS or the plumber. The index
adds the kind's words after a line that writes such a value (as :mod:`.base_forms` adds a word's base form), so the
question finds the note that holds the value. A phone number is told from the dates, times, prices, versions and
ticket numbers that are digits with spaces, dots or dashes too by its form: a country code after "+", or a first 0
(a trunk prefix), and 10 to 15 digits in all, or North America's (555) 123-4567.

A Markdown task item is such a value too: "- [ ] Call the plumber" is an open task and "- [x] Renewed passport" a
done one, and neither says so, so "open tasks", "TODO" and "what have I done?" found nothing. A task item adds
"task todo" and its state's words; a line that writes "to-do" adds "todo", and a query asks "to-do" and "to-do
list" as "todo" ("to" and "do" are stop words alone, and no task item says "list"). Nine other languages' words for
a task, its state or a phone are held and asked for as the English ones (:data:`KIND_FORMS`: "Aufgaben" -> "task").

An ISO date names its weekday: a daily log's heading "# 2026-12-03" is a Thursday's, and "what happened on
Thursday?" found nothing. The index adds the English weekday after a line that writes a date, as it does after a
weekday written in another language (:mod:`.weekdays`).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import re
from functools import lru_cache

from ..textutil import either
from .weekdays import ENGLISH

_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://\w")
_EMAIL = re.compile(r"\w@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
_IPV4 = re.compile(r"\d(?<![\d.]\d)\d{0,2}\.(?:\d{1,3}\.){2}\d{1,3}(?!\d|\.\d)")  # a sentence may end after it
_DOTTED = re.compile(r"\.\d{1,3}\.\d")  # what an IP address holds: a tenth of the time of _IPV4's scan
# What may be an IPv6 address ("2001:db8::1", "fe80::1ff:fe23:4567:890a", "::1"), told from a time, a MAC address or
# "std::vector" by the standard library; only in a line with "::" or seven colons
_IPV6 = re.compile(r"(?<![\w:.])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?![\w:])")
_URL_WORDS = ("url", "link", "website")
# A phone number: with its country code ("+49 176 5550101", "+1 (555) 123-4567"), with its trunk 0 ("0176 555 0101",
# "(030) 1234567"), or as North America writes it ("(555) 123-4567", "555-123-4567"); not inside a longer number
_NUMBER_RUN = re.compile(r"\d[\d ()./-]{8,22}\d")  # what one holds: a tenth of the time of _PHONE's scan
_PHONE = re.compile(
    r"(?<![\w+.,/-])(?:\+\d{1,3}(?: ?\(0\))?(?:[ ./-]?\(?\d{1,5}\)?){2,5}|\(?0\d{1,5}\)?(?:[ ./-]\d{2,8}){1,3}"
    r"|\(\d{3}\) ?\d{3}[ .-]\d{4}|\d{3}([.-])\d{3}\1\d{4})(?![\w/-]|[.,]\d)"
)
_PHONE_DIGITS = range(10, 16)  # 8 at least after a "+"
_PHONE_WORDS = ("phone", "telephone")
# An ISO date's month and day, after its year: a pattern that starts with a character scans a line in a tenth of
# the time of one that starts with the year's digits (most lines write no date)
_MONTH_DAY = re.compile(r"-(\d\d)-(\d\d)(?![\d-])")
# A task item as GitHub and Obsidian write it: a list item ("-", "*", "+" or "1.") whose text starts with a box
_TASK = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+\[([ xX])\](?![^ \t])")
_OPEN_TASK_WORDS = ("task", "todo", "open", "pending")
_DONE_TASK_WORDS = ("task", "todo", "done", "completed", "finished")
_TO_DO = re.compile(r"(?<![\w-])to-dos?(?![\w-])", re.I)  # "to-do", "To-Dos": one word, "todo", written as two
# How a query names the tasks: "to-do list", "todo list", "task list" ask for them, whose lines do not say "list" (a
# word no note holds, it made the answer abstain); "left to do" and "need to do" ask for the open ones
_TASK_NAME = re.compile(r"(?<![\w-])(?:(to-?dos?)|((?:left|needs?) to do)|tasks?)(?:[ -]lists?)?(?![\w-])", re.I)
# How other languages name tasks, their states and a phone, under the word a task item or a phone number is held to
# say: the index adds that word after such a word (:mod:`.base_forms`), and a query asks by it ("¿qué tareas tengo
# pendientes?" -> "task pending", "Telefonnummer" -> "phone"). Not words as often another: Dutch "taken" (English
# "taken"), Italian "fatto" ("fact"), Spanish "hecho", German "Handy" (English "handy").
_KIND_FORMS = """
task aufgabe aufgaben tâche tâches tache taches tarea tareas tarefa tarefas compito compiti taak
    задача задачи задач задачу задачам задачах zadanie zadania zadań úkol úkoly úkolů;
open offen offene offenen offener openstaand openstaande otwarte otwarty otwartych otevřené otevřený otevřených;
pending pendiente pendientes pendente pendentes;
done erledigt erledigte erledigten terminé terminée terminés terminées afgerond afgeronde zrobione zrobiony hotové
    hotovo;
completed completado completada completados completadas terminado terminada terminados terminadas concluído
    concluída concluídos concluídas concluido concluida concluidos concluidas completato completata completati
    completate выполнено выполнена выполнены wykonane ukończone dokončené splněné;
phone telefon telefonnummer telefonnummern handynummer téléphone telefono teléfono telefone telefoon telefoonnummer
    телефон телефона телефону телефоном telefonu telefonem
"""
KIND_FORMS = {form: family.split()[0] for family in _KIND_FORMS.split(";") for form in family.split()[1:]}
"""Each word another language names a task, its state or a phone with (lower case), with the English word it stands
for."""
# ... and what is left to do, as "left to do" asks for the open tasks ("¿qué tengo que hacer?", "was ist noch zu tun?")
_FOREIGN_KIND_WORD = re.compile(
    r"(?<![\w-])(?:(?P<open>(?:tengo|hay|queda|falta) (?:que|por) hacer|noch zu (?:tun|erledigen)|(?:reste|rester) à faire"
    r"|(?:rimane|resta) da fare|nog te doen)"
    r"|(?P<todo>à faire|a faire|por hacer|da fare|te doen|zu erledigen)"
    rf"|(?P<word>{either(KIND_FORMS)}))(?![\w-])",
    re.I,
)


def value_kinds(line: str) -> list[str]:
    """The words that name the kinds of value ``line`` writes (each kind once): ``["email"]`` for a line with an
    email address. A search takes them of every line of its candidates: a cheap test comes first."""
    kinds: list[str] = []
    if "://" in line and _URL.search(line):
        kinds += _URL_WORDS
    if "@" in line and _EMAIL.search(line):
        kinds.append("email")
    if _writes_ip(line):
        kinds.append("ip")
    if _NUMBER_RUN.search(line) and _writes_phone(line):
        kinds += _PHONE_WORDS
    if _MONTH_DAY.search(line):
        kinds += _weekdays(line)
    if "]" in line and (task := _TASK.match(line)):
        kinds += _OPEN_TASK_WORDS if task.group(1) == " " else _DONE_TASK_WORDS
    if _writes_to_do(line) and "todo" not in kinds:
        kinds.append("todo")
    return kinds


def _writes_ip(line: str) -> bool:
    """Whether ``line`` writes an IPv4 address (parts below 256) or an IPv6 address (:data:`_IPV6`, with a digit:
    not "::" nor "a::b", checked by :mod:`ipaddress`); each behind a cheap test."""
    if _DOTTED.search(line) and any(max(map(int, ip.group(0).split("."))) < 256 for ip in _IPV4.finditer(line)):
        return True
    if "::" not in line and line.count(":") < 7:
        return False
    for candidate in _IPV6.finditer(line):
        if any(char.isdigit() for char in candidate.group(0)):
            try:
                ipaddress.IPv6Address(candidate.group(0))
            except ValueError:
                continue
            return True
    return False


def _writes_phone(line: str) -> bool:
    """Whether ``line`` writes a phone number (:data:`_PHONE`) with as many digits as one has."""
    for number in _PHONE.finditer(line):
        digits = sum(char.isdigit() for char in number.group(0))
        if digits in _PHONE_DIGITS or (digits >= 8 and number.group(0).startswith("+")):
            return True
    return False


def _weekdays(line: str) -> list[str]:
    """The weekday of each ISO date ``line`` writes that is a day of the calendar, each once."""
    days: dict[str, None] = {}
    for found in _MONTH_DAY.finditer(line):
        at = found.start()
        year = line[at - 4 : at]
        if len(year) == 4 and year.isdigit() and (at == 4 or not (line[at - 5].isdigit() or line[at - 5] == "-")):
            if day := _weekday(year, *found.groups()):
                days[day] = None
    return list(days)


@lru_cache(maxsize=1024)  # a memory's logs write the same few hundred dates
def _weekday(year: str, month: str, day: str) -> str | None:
    """The English weekday of a date written as digits, or None when there is no such day (``2026-02-30``)."""
    try:
        return ENGLISH[dt.date(int(year), int(month), int(day)).weekday()]
    except ValueError:
        return None


def _writes_to_do(line: str) -> bool:
    """Whether ``line`` writes "to-do": a cheap test first, for the pattern's scan costs a line 2 µs."""
    return ("-do" in line or "-Do" in line or "-DO" in line) and _TO_DO.search(line) is not None


def query_kind_words(query: str) -> str:
    """``query`` with each name it gives the tasks written as the word task items are held to say, and a phone in
    another language as "phone": "to-do list" -> "todo", "what's left to do?" -> "open todo", "task list" -> "task",
    "Aufgaben" -> "task", "à faire" -> "todo", "tengo que hacer" -> "open todo", "Telefonnummer" -> "phone"."""
    query = _TASK_NAME.sub(lambda name: "todo" if name.group(1) else "open todo" if name.group(2) else "task", query)
    return _FOREIGN_KIND_WORD.sub(_english_kind, query)


def _english_kind(name: re.Match[str]) -> str:
    """The English words a task's or a phone's name in another language (:data:`_FOREIGN_KIND_WORD`) is asked as."""
    return "open todo" if name.group("open") else "todo" if name.group("todo") else KIND_FORMS[name.group("word").lower()]


def with_value_kinds(text: str) -> str:
    """``text`` with the :func:`value_kinds` of each of its lines after it: the index's term counts, as
    :func:`value_kinds` gives them line by line to the Python side."""
    added = [word for line in text.split("\n") for word in value_kinds(line)]
    return f"{text} {' '.join(added)}" if added else text
