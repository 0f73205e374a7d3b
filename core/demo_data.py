"""Bundled demo data: two-hop questions about a small fictional world.

Everything here is invented and generated procedurally from a fixed seed, so the
output is identical on every call and in every Python process. The world has
rivers, towns, people, bands and companies; each entity has one knowledge-base
page. Questions follow the HotpotQA distractor setting: 10 paragraphs each, the
two gold pages named in the supporting facts plus 8 distractor pages about other
entities of the same world.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from core.data import Paragraph, Question

DEMO_DATASET = "demo"
_SEED = 4417
_PER_TEMPLATE = 6
_N_PARAGRAPHS = 10

_ONSETS = (
    "B", "C", "D", "F", "G", "H", "K", "L", "M", "N", "P", "R", "S", "T", "V", "W",
    "Br", "Cr", "Dr", "Gr", "Th", "St", "Ell", "Orr", "Ast",
)
_VOWELS = ("a", "e", "i", "o", "u", "ae", "ei", "ou")
_MIDDLES = ("l", "r", "n", "m", "v", "th", "nd", "rr", "ss", "ll", "sk", "rn")
_TOWN_ENDINGS = ("mere", "ford", "holt", "wick", "stead", "by", "ton", "combe", "haven")
_RIVER_ENDINGS = ("a", "en", "is", "ow", "ue")
_SURNAME_ENDINGS = ("ow", "er", "an", "ett", "ley", "in", "ard", "ick")
_BAND_ENDINGS = ("more", "ing", "ane", "ey", "ell")
_PROVINCE_ENDINGS = ("march", "land", "shire")
_HILLS_KINDS = ("Hills", "Fells", "Heights", "Downs")
_BAND_KINDS = ("Quartet", "Ensemble", "Collective", "Trio", "Choir", "Brass Band", "Players")
_GENRES = ("glass-folk", "harbour jazz", "drone pop", "chamber rock", "marsh blues",
           "lantern soul", "reed punk")
_COMPANY_KINDS = (
    ("Optics", "lens-making"), ("Freight", "shipping"), ("Foundry", "metalworking"),
    ("Textiles", "weaving"), ("Ceramics", "pottery"), ("Instruments", "instrument-making"),
    ("Paper Mills", "papermaking"), ("Lamps", "lamp-making"),
)
_FIRST_NAMES = (
    ("Ilsa", "She"), ("Corin", "He"), ("Maren", "She"), ("Tobiah", "He"), ("Elsbeth", "She"),
    ("Davor", "He"), ("Nyssa", "She"), ("Perrin", "He"), ("Halde", "She"), ("Oswin", "He"),
    ("Liora", "She"), ("Brannoc", "He"), ("Saffi", "She"), ("Edric", "He"), ("Wenna", "She"),
    ("Aurel", "He"),
)
_BAND_JOBS = ("musician", "composer", "singer", "fiddler")
_COMPANY_JOBS = ("engineer", "merchant", "inventor", "industrialist")
_OTHER_JOBS = ("poet", "painter", "historian", "cartographer")
_KNOWN_FOR = (
    "a long-running radio programme", "an unfinished memoir", "restoring an old lighthouse",
    "a collection of field recordings", "a series of lectures on river trade",
    "a prize-winning garden", "a book of local legends",
)
_DIRECTIONS = ("north", "south", "east", "west")
_T = TypeVar("_T")


class _Named(Protocol):
    @property
    def name(self) -> str: ...


_N = TypeVar("_N", bound=_Named)
_N_RIVERS, _N_TOWNS, _N_BANDS, _N_COMPANIES, _N_OTHERS = 8, 14, 10, 10, 6


@dataclass(frozen=True)
class _River:
    name: str
    length: int
    hills: str
    direction: str
    tributary: str


@dataclass(frozen=True)
class _Town:
    name: str
    province: str
    river: str
    population: int
    recorded: int


@dataclass(frozen=True)
class _Person:
    name: str
    pronoun: str
    job: str
    birth_town: str
    birth_year: int
    residence: str
    study_town: str
    known_for: str


@dataclass(frozen=True)
class _Org:
    """A band (label = genre) or a company (label = industry)."""

    name: str
    kind: str
    label: str
    year: int
    town: str
    founder: str
    partner: str
    extra: int


@dataclass(frozen=True)
class _World:
    rivers: tuple[_River, ...]
    towns: tuple[_Town, ...]
    persons: tuple[_Person, ...]
    bands: tuple[_Org, ...]
    companies: tuple[_Org, ...]


@dataclass(frozen=True)
class _Item:
    """A question before its distractors are drawn."""

    text: str
    answer: str
    type: str
    facts: tuple[tuple[str, int], ...]


def demo_questions() -> list[Question]:
    """The bundled demo questions (dataset "demo"), identical on every call.

    Returns:
        60 two-hop questions (bridge and comparison) with ids "demo-001"...,
        each with 10 paragraphs: 2 gold pages and 8 distractors, in a shuffled order.
    """
    rng = random.Random(_SEED)
    world = _build_world(rng)
    pages = _build_pages(world, rng)
    per_template = [template(world, rng) for template in _TEMPLATES]
    items = [group[k] for k in range(_PER_TEMPLATE) for group in per_template]
    texts = {title: paragraph.text for title, (_, paragraph) in pages.items()}
    return [
        _assemble(f"demo-{n:03d}", item, pages, texts, rng)
        for n, item in enumerate(items, start=1)
    ]


# --------------------------------------------------------------------------- world


def _word(rng: random.Random, used: set[str], endings: tuple[str, ...]) -> str:
    """A fresh invented word with one of the given endings."""
    while True:
        word = rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_MIDDLES)
        word += rng.choice(endings)
        if word not in used:
            used.add(word)
            return word


def _distinct_years(rng: random.Random, starts: list[int], low: int, high: int) -> list[int]:
    """One year per start (start + low..high), all different."""
    years: list[int] = []
    for start in starts:
        year = start + rng.randint(low, high)
        while year in years:
            year += 1
        years.append(year)
    return years


def _build_world(rng: random.Random) -> _World:
    """Generate all entities of the fictional world."""
    used: set[str] = set()
    provinces = [_word(rng, used, _PROVINCE_ENDINGS) for _ in range(4)]
    hills = [f"{_word(rng, used, ('an', 'ock', 'ith'))} {rng.choice(_HILLS_KINDS)}"
             for _ in range(_N_RIVERS)]
    river_names = [f"{_word(rng, used, _RIVER_ENDINGS)} River" for _ in range(_N_RIVERS)]
    lengths = rng.sample(range(40, 420), _N_RIVERS)
    rivers = tuple(
        _River(name, lengths[i], hills[i], rng.choice(_DIRECTIONS),
               rng.choice([r for r in river_names if r != name]))
        for i, name in enumerate(river_names)
    )
    populations = rng.sample(range(2_000, 90_000, 100), _N_TOWNS)
    towns = tuple(
        _Town(_word(rng, used, _TOWN_ENDINGS), rng.choice(provinces),
              river_names[i % _N_RIVERS], populations[i], rng.randint(900, 1500))
        for i in range(_N_TOWNS)
    )
    town_names = [t.name for t in towns]
    persons = _build_persons(rng, used, town_names)
    bands = _build_orgs(rng, used, persons[:_N_BANDS], town_names, "band")
    companies = _build_orgs(rng, used, persons[_N_BANDS:_N_BANDS + _N_COMPANIES],
                            town_names, "company")
    return _World(rivers, towns, persons, bands, companies)


def _build_persons(rng: random.Random, used: set[str], towns: list[str]) -> tuple[_Person, ...]:
    """Band founders, then company founders, then other people."""
    total = _N_BANDS + _N_COMPANIES + _N_OTHERS
    jobs = ([_BAND_JOBS] * _N_BANDS + [_COMPANY_JOBS] * _N_COMPANIES
            + [_OTHER_JOBS] * _N_OTHERS)
    birth_years = rng.sample(range(1880, 1975), total)
    persons = []
    for i in range(total):
        first, pronoun = rng.choice(_FIRST_NAMES)
        birth_town, residence, study_town = rng.sample(towns, 3)
        persons.append(_Person(
            f"{first} {_word(rng, used, _SURNAME_ENDINGS)}", pronoun, rng.choice(jobs[i]),
            birth_town, birth_years[i], residence, study_town, rng.choice(_KNOWN_FOR),
        ))
    return tuple(persons)


def _build_orgs(
    rng: random.Random, used: set[str], founders: tuple[_Person, ...], towns: list[str], kind: str
) -> tuple[_Org, ...]:
    """One band or company per founder, with distinct founding years."""
    years = _distinct_years(rng, [p.birth_year for p in founders], 19, 38)
    names = []
    labels = []
    for _ in founders:
        if kind == "band":
            names.append(f"{_word(rng, used, _BAND_ENDINGS)} {rng.choice(_BAND_KINDS)}")
            labels.append(rng.choice(_GENRES))
        else:
            suffix, industry = rng.choice(_COMPANY_KINDS)
            names.append(f"{_word(rng, used, _BAND_ENDINGS)} {suffix}")
            labels.append(industry)
    extra_range = (2, 9) if kind == "band" else (40, 900)
    return tuple(
        _Org(name, kind, labels[i], years[i], rng.choice(towns), founders[i].name,
             rng.choice([n for n in names if n != name]), rng.randint(*extra_range))
        for i, name in enumerate(names)
    )


# --------------------------------------------------------------------------- pages


def _article(noun: str) -> str:
    """The indefinite article for a noun."""
    return "an" if noun[0].lower() in "aeiou" else "a"


def _maybe(rng: random.Random, sentences: list[str], extra: str) -> tuple[str, ...]:
    """Append an optional last sentence about half the time (4 or 5 sentences)."""
    return tuple(sentences + [extra]) if rng.random() < 0.5 else tuple(sentences)


def _build_pages(world: _World, rng: random.Random) -> dict[str, tuple[str, Paragraph]]:
    """Every entity's page, keyed by title, with the entity kind."""
    river_of = {t.name: t.river for t in world.towns}
    founded = {o.founder: o for o in world.bands + world.companies}
    pages: dict[str, tuple[str, Paragraph]] = {}
    for r in world.rivers:
        passes = [t.name for t in world.towns if t.river == r.name]
        pages[r.name] = ("river", Paragraph(r.name, _maybe(rng, [
            f"The {r.name} is a river {r.length} kilometres long.",
            f"It rises in the {r.hills} and flows {r.direction} towards the sea.",
            f"Along its course it passes {' and '.join(passes)}.",
            f"Its main tributary is the {r.tributary}.",
        ], "Flat-bottomed barges still carry timber on its lower reaches.")))
    for t in world.towns:
        pages[t.name] = ("town", Paragraph(t.name, _maybe(rng, [
            f"{t.name} is a town in the province of {t.province}.",
            f"It lies on the banks of the {t.river}.",
            f"{t.name} has a population of {t.population:,}.",
            f"It was first recorded in {t.recorded}.",
        ], "A weekly market is held in its old square.")))
    for p in world.persons:
        org = founded.get(p.name)
        second = (f"{p.pronoun} founded {org.name} in {org.year}." if org
                  else f"{p.pronoun} studied at the college in {p.study_town}.")
        pages[p.name] = ("person", Paragraph(p.name, _maybe(rng, [
            f"{p.name} is {_article(p.job)} {p.job} born in {p.birth_town} in {p.birth_year}.",
            second,
            f"{p.pronoun} later settled in {p.residence}.",
            f"{p.pronoun} is known for {p.known_for}.",
        ], f"{p.pronoun} often spoke of childhood summers on the {river_of[p.birth_town]}.")))
    for b in world.bands:
        pages[b.name] = ("band", Paragraph(b.name, _maybe(rng, [
            f"{b.name} is {_article(b.label)} {b.label} band formed in {b.year} in {b.town}.",
            f"The band was founded by {b.founder}.",
            f"Its debut record appeared {b.extra} years after the band formed.",
            f"{b.name} has toured with {b.partner}.",
        ], f"The group rehearses in an old mill near the {river_of[b.town]}.")))
    for c in world.companies:
        pages[c.name] = ("company", Paragraph(c.name, _maybe(rng, [
            f"{c.name} is {_article(c.label)} {c.label} company founded in {c.year}.",
            f"It was founded by {c.founder}.",
            f"The company is headquartered in {c.town}.",
            f"Its main competitor is {c.partner}.",
        ], f"It employs about {c.extra} people.")))
    return pages


# --------------------------------------------------------------------------- questions


def _pick(rng: random.Random, seq: Sequence[_T]) -> list[_T]:
    """_PER_TEMPLATE distinct elements of seq."""
    return rng.sample(list(seq), _PER_TEMPLATE)


def _spread(rng: random.Random, seq: Sequence[_T], answer: Callable[[_T], str]) -> list[_T]:
    """_PER_TEMPLATE elements of seq, spreading the answers as evenly as possible."""
    shuffled = rng.sample(list(seq), len(seq))
    rank: dict[str, int] = {}
    keyed = []
    for position, element in enumerate(shuffled):
        key = answer(element)
        rank[key] = rank.get(key, -1) + 1
        keyed.append((rank[key], position, element))
    return [element for _, _, element in sorted(keyed, key=lambda k: k[:2])][:_PER_TEMPLATE]


def _founder(world: _World, org: _Org) -> _Person:
    """The person who founded an organisation."""
    return next(p for p in world.persons if p.name == org.founder)


def _town(world: _World, name: str) -> _Town:
    """The town with this name."""
    return next(t for t in world.towns if t.name == name)


def _band_founder_birthplace(world: _World, rng: random.Random) -> list[_Item]:
    return [_Item(f"In which town was the founder of {b.name} born?",
                  _founder(world, b).birth_town, "bridge", ((b.name, 1), (b.founder, 0)))
            for b in _spread(rng, world.bands, lambda o: _founder(world, o).birth_town)]


def _company_founder_birth_year(world: _World, rng: random.Random) -> list[_Item]:
    return [_Item(f"In what year was the founder of {c.name} born?",
                  str(_founder(world, c).birth_year), "bridge",
                  ((c.name, 1), (c.founder, 0))) for c in _pick(rng, world.companies)]


def _company_town_river(world: _World, rng: random.Random) -> list[_Item]:
    return [_Item(f"On which river does the town where {c.name} is headquartered lie?",
                  _town(world, c.town).river, "bridge",
                  ((c.name, 2), (c.town, 1)))
            for c in _spread(rng, world.companies, lambda o: _town(world, o.town).river)]


def _town_river_source(world: _World, rng: random.Random) -> list[_Item]:
    rivers = _pick(rng, world.rivers)
    towns = [rng.choice([t for t in world.towns if t.river == r.name]) for r in rivers]
    return [_Item(f"In which range of hills does the river flowing through {t.name} rise?",
                  r.hills, "bridge", ((t.name, 1), (r.name, 1)))
            for t, r in zip(towns, rivers)]


def _founder_band_genre(world: _World, rng: random.Random) -> list[_Item]:
    return [_Item(f"What genre of music does the band founded by {b.founder} play?",
                  b.label, "bridge", ((b.founder, 1), (b.name, 0)))
            for b in _spread(rng, world.bands, lambda o: o.label)]


def _band_town_province(world: _World, rng: random.Random) -> list[_Item]:
    return [_Item(f"In which province is the town where {b.name} was formed?",
                  _town(world, b.town).province, "bridge", ((b.name, 0), (b.town, 0)))
            for b in _spread(rng, world.bands, lambda o: _town(world, o.town).province)]


def _compare(
    rng: random.Random, entities: Sequence[_N], key: Callable[[_N], int], wording: str,
    first_wins: bool, fact: int,
) -> list[_Item]:
    """Comparison questions over distinct pairs; the answer is an entity name."""
    pairs = rng.sample(list(itertools.combinations(entities, 2)), _PER_TEMPLATE)
    items = []
    for pair in pairs:
        a, b = rng.sample(list(pair), 2)
        winner = min((a, b), key=key) if first_wins else max((a, b), key=key)
        items.append(_Item(wording.format(a=a.name, b=b.name), winner.name, "comparison",
                           ((a.name, fact), (b.name, fact))))
    return items


def _bands_formed_first(world: _World, rng: random.Random) -> list[_Item]:
    return _compare(rng, world.bands, lambda o: o.year,
                    "Which band was formed first, {a} or {b}?", True, 0)


def _companies_founded_earlier(world: _World, rng: random.Random) -> list[_Item]:
    return _compare(rng, world.companies, lambda o: o.year,
                    "Which company was founded earlier, {a} or {b}?", True, 0)


def _rivers_longer(world: _World, rng: random.Random) -> list[_Item]:
    return _compare(rng, world.rivers, lambda r: r.length,
                    "Which river is longer, the {a} or the {b}?", False, 0)


def _towns_larger(world: _World, rng: random.Random) -> list[_Item]:
    return _compare(rng, world.towns, lambda t: t.population,
                    "Which town has the larger population, {a} or {b}?", False, 2)


_TEMPLATES: tuple[Callable[[_World, random.Random], list[_Item]], ...] = (
    _band_founder_birthplace, _bands_formed_first, _company_founder_birth_year,
    _rivers_longer, _company_town_river, _companies_founded_earlier, _town_river_source,
    _towns_larger, _founder_band_genre, _band_town_province,
)


def _assemble(
    qid: str, item: _Item, pages: dict[str, tuple[str, Paragraph]], texts: dict[str, str],
    rng: random.Random,
) -> Question:
    """Add 8 distractors (related pages first, then same-kind, then others) and shuffle.

    `texts` holds each page's text (`Paragraph.text` joins its sentences on every read;
    read once per page rather than once per page and question, the demo's 60 questions
    take a quarter of the time).
    """
    gold = list(dict.fromkeys(title for title, _ in item.facts))
    gold_kinds = {pages[t][0] for t in gold}
    others = [t for t in pages if t not in gold]
    related = [t for t in others if any(g in texts[t] for g in gold)]
    chosen = rng.sample(related, min(2, len(related)))
    same_kind = [t for t in others if pages[t][0] in gold_kinds and t not in chosen]
    chosen += rng.sample(same_kind, min(_N_PARAGRAPHS - 3 - len(chosen), len(same_kind)))
    rest = [t for t in others if t not in chosen]
    chosen += rng.sample(rest, _N_PARAGRAPHS - len(gold) - len(chosen))
    titles = gold + chosen
    rng.shuffle(titles)
    return Question(
        id=qid, dataset=DEMO_DATASET, question=item.text, answer=item.answer,
        type=item.type, level="", paragraphs=tuple(pages[t][1] for t in titles),
        supporting_facts=item.facts,
    )
