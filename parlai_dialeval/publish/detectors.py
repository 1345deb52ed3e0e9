"""What the scrubber looks for, each detector with what it covers and what it cannot (the dataset card and
the command's report quote both), run on a text's canonical view (publish/textview.py).

Phone numbers are libphonenumber's (the ``phonenumbers`` package, Google's metadata for every region);
e-mail addresses, URLs, listed names and ids are patterns written here: no offline library reads the
obfuscated address forms, names with arbitrary spacing, or the ids of one study (docs/publishing.md says
why scrubadub and Presidio are not used). ``HIGH_RISK`` are broader patterns checked on the text after
scrubbing: what they find is left in place, counted, and refused by ``--strict``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from parlai_dialeval.publish.textview import canonical

# Top-level domains an address with a spoken at or dot must end with: the generic ones and the country codes
# that are no English word (tokenised corpora write "looking at it . it"; "at <word> dot com" is rare in prose).
TLDS = ("com|org|net|edu|gov|mil|info|biz|io|ai|co|tv|xyz|"
        "uk|de|fr|es|nl|ca|au|jp|cn|ru|br|ch|se|dk|fi|pl|ie|nz|za|mx|kr|sg|hk|tw|il|tr|pt|gr|cz|hu|ro|ar|cl|"
        "ua|vn|th|ph|pk|ng|eg|sa|ae|ir|ac|eu")
# Mail providers: "name1234 mail.ru", "john.smith gmail.com" (an address with its @ left out) when the word
# before looks like an address's (a digit, dot or underscore in it, or 8 characters or more), not "I use gmail.com".
_PROVIDERS = "gmail|googlemail|yahoo|ymail|hotmail|outlook|msn|aol|icloud|mail|yandex|protonmail|proton|gmx|web|qq|163|126"
_PROVIDER_NAMES = tuple(_PROVIDERS.split("|"))
_WORD_EDGE_L, _WORD_EDGE_R = r"(?<![^\W_])", r"(?![^\W_])"

_AT_SIGN = r"\s?@\s?|\s?[(\[{<]\s?at\s?[)\]}>]\s?"  # @, spaced or not, or a bracketed at
_SPOKEN_DOT = r"\s\.\s|\s?[(\[{<]\s?dot\s?[)\]}>]\s?|\sdot\s"
_LABEL = r"[^\W_](?:[\w-]{0,61}[^\W_])?"
# An address: a local part, then either an @ (or bracketed at) and a plainly dotted domain ending in any
# top-level domain, or any at ("at" included) and a domain whose last dot is spoken, spaced or bracketed
# and which ends in a known top-level domain. "name at domain.com" is neither ("I work at amazon.com"):
# HIGH_RISK's "spelled address" counts it, and --strict refuses it.
_EMAIL = re.compile(
    rf"(?<![\w.+-])[\w+-]+(?:(?:\.|\sdot\s|\s?[(\[{{<]\s?dot\s?[)\]}}>]\s?)[\w+-]+)*"
    rf"(?:(?:{_AT_SIGN}){_LABEL}(?:\.{_LABEL})*\.[a-z]{{2,24}}"
    rf"|(?:{_AT_SIGN}|\sat\s){_LABEL}(?:(?:\.|{_SPOKEN_DOT}){_LABEL})*(?:{_SPOKEN_DOT})(?:{TLDS}))(?![\w-])", re.I)
_PROVIDER_ADDRESS = re.compile(
    rf"(?<![\w.+-])(?:[\w+-]*[\d._][\w.+-]*|[\w+-]{{8,}})\s(?:{_PROVIDERS})(?:\.|\sdot\s)(?:{TLDS})(?![\w-])", re.I)
_URL = re.compile(r"(?:https?://|www\.)[^\s<>\"{}|\\^`]+", re.I)
_DOMAIN_PATH = re.compile(rf"(?<![\w@.-])(?:[a-z0-9](?:[a-z0-9-]{{0,61}}[a-z0-9])?\.)+(?:{TLDS})/[^\s<>\"{{}}|\\^`]*", re.I)
_DOMAIN_PATH_GATE = re.compile(rf"\.(?:{TLDS})/")  # on the lowered text
_PROLIFIC_ID = re.compile(r"(?<![0-9a-f])[0-9a-f]{24}(?![0-9a-f])", re.I)  # Prolific ids: 24 hex digits
_PLATFORM_ID = re.compile(rf"{_WORD_EDGE_L}(?=[0-9A-Z]*[0-9])(?=[0-9A-Z]*[A-Z])[0-9A-Z]{{12,40}}{_WORD_EDGE_R}")  # MTurk's
_ID_RUN = re.compile(r"[^\W_]+(?:[_:.@/-][^\W_]+)*")
_ID_PART = re.compile(r"[^\W_]+")
_DIGIT = re.compile(r"\d")
# Cheap tests that let most texts skip a detector (Python's regexes cost microseconds per word): an address
# needs an at; a URL "http", "www." or a path; an id, a phone number or a digit run digits.
# (Each begins with a character class: Python's engine then skips to candidates, 10-40 times faster than
# a case-insensitive alternation.)
_AT_WORD = re.compile(r"[\s(\[{<][aA][tT][\s)\]}>]")
_LONG_TOKEN = {n: re.compile(rf"[0-9A-Za-z]{{{n}}}") for n in (12, 16)}
MAX_ID_PARTS = 6  # an id is searched as up to this many word parts joined by _ : . @ / -
MIN_ID_LENGTH = 5


@dataclass(frozen=True)
class Detector:
    kind: str     # the placeholder is {{KIND}}
    covers: str
    cannot: str


DETECTORS = (  # the card quotes these: forms, never example values (docs/publishing.md has examples)
    Detector("email", "addresses written plainly, with spaces around the @ or the dots, in fullwidth letters, with "
             "HTML references for @ or dots, or spelled out: name at domain dot com, name(at)domain(dot)com, "
             "name [at] domain [dot] com; and a mail provider's domain after an address-like word (name1234 "
             "gmail.com)",
             "name at domain.com with a plain at and plain dots (prose: I work at amazon.com; left and counted as a "
             "spelled address), addresses split by other words, spelled letter by letter, or in another language's "
             "words for at and dot (arroba, punkt)"),
    Detector("phone", "numbers with a + and country code that libphonenumber finds possible, and national numbers "
             "of --phone-region that are valid there or have 10 digits or more; in any script's digits (Arabic-"
             "Indic, fullwidth, ...) and any grouping",
             "numbers written in words, national numbers of other regions without their + and country code (set "
             "--phone-region), numbers under 10 digits that the region's plan does not list"),
    Detector("url", "http(s):// and www. addresses, and domains followed by a path (domain.com/name)",
             "a bare domain without a path (domain.com), addresses spelled out (domain dot com)"),
    Detector("name", "the names listed with --names, as whole words in any case, with any spacing between their "
             "parts (double, non-breaking, zero-width, none), fullwidth letters and accents folded",
             "names not in the list (no name recogniser runs offline), nicknames and misspellings, one part of a "
             "listed full name alone (list first names on their own lines too)"),
    Detector("id", "every worker, assignment, HIT and participant id of the study (any case, fullwidth), Prolific-"
             "style ids (24 hex digits) and MTurk-style ids (12 or more capitals and digits) even when unknown",
             f"ids shorter than {MIN_ID_LENGTH} characters or without a digit (they are ordinary words; counted "
             "below), ids typed with spaces inside"),
)

# Broader than the detectors: what they leave that may still identify someone (--strict refuses it); each
# with the cheap test a text must pass first.
HIGH_RISK = {
    "digit run": (_DIGIT.search, re.compile(r"(?:\d[\s().+/-]{0,2}){8,}\d")),
    "at sign": (lambda text: "@" in text, re.compile(r"[^\W_]\s?@|@\s?[^\W_]")),
    "spelled address": (_AT_WORD.search, re.compile(
        rf"{_WORD_EDGE_L}(?:at|\(at\)|\[at\])\s?[^\W_][\w-]*(?:\s?(?:dot|\(dot\)|\[dot\])\s?|\.)(?:{TLDS}){_WORD_EDGE_R}",
        re.I)),
    "id-like token": (_LONG_TOKEN[16].search, re.compile(
        rf"{_WORD_EDGE_L}(?=(?:[a-z]*\d){{3}})(?=(?:\d*[a-z]){{3}})[a-z0-9]{{16,}}{_WORD_EDGE_R}", re.I)),
}


def emails(text: str):
    patterns = [_EMAIL] if "@" in text or _AT_WORD.search(text) else []
    lowered = text.lower()
    if any(name in lowered for name in _PROVIDER_NAMES):
        patterns.append(_PROVIDER_ADDRESS)
    for pattern in patterns:
        for match in pattern.finditer(text):
            yield match.start(), match.end()


def urls(text: str):
    lowered = text.lower()
    patterns = ([_URL] if "http" in lowered or "www." in lowered else []) + \
        ([_DOMAIN_PATH] if "/" in text and _DOMAIN_PATH_GATE.search(lowered) else [])
    for pattern in patterns:
        for match in pattern.finditer(text):
            end = match.start() + len(match.group().rstrip(".,;:!?'"))
            if end > match.start():
                yield match.start(), end


class Phones:
    """libphonenumber's matcher over the view (every script's digits are ASCII there)."""

    def __init__(self, region: str):
        import phonenumbers

        self._phonenumbers, self.region = phonenumbers, region

    def __call__(self, text: str):
        if len(_DIGIT.findall(text)) < 7:  # nothing to find, and the matcher costs
            return
        library = self._phonenumbers
        for match in library.PhoneNumberMatcher(text, self.region, leniency=library.Leniency.POSSIBLE):
            raw = match.raw_string.lstrip("(")
            if raw.startswith("+") or sum(c.isdigit() for c in raw) >= 10 or library.is_valid_number(match.number):
                yield match.start, match.end


class Names:
    """The listed names as whole words, their parts joined by any spacing (or none) in the view."""

    def __init__(self, names):
        patterns = set()
        for name in names:
            parts = _ID_PART.findall(canonical(name))
            if parts:
                patterns.add(r"[\s._'’-]{0,2}".join(map(re.escape, parts)))
        self.count = len(patterns)
        self._regex = (re.compile(rf"{_WORD_EDGE_L}(?:{'|'.join(sorted(patterns, key=len, reverse=True))}){_WORD_EDGE_R}",
                                  re.I) if patterns else None)

    def __call__(self, text: str):
        if self._regex is not None:
            for match in self._regex.finditer(text):
                yield match.start(), match.end()


class KnownIds:
    """The study's own ids (worker, assignment, HIT, participant), found in a text as a run of up to
    ``MAX_ID_PARTS`` word parts, case-insensitively; ``owner`` says which field each came from."""

    def __init__(self, ids: dict[str, str]):
        self.owner: dict[str, tuple[str, str]] = {}
        self.fields = dict(ids)  # every id, searched for or not: a name that IS one becomes its pseudonym
        self.too_short = 0
        for raw, field in ids.items():
            key = canonical(raw).casefold()
            if len(key) >= MIN_ID_LENGTH and any(c.isdigit() for c in key):
                self.owner.setdefault(key, (field, raw))
            else:
                self.too_short += 1

    def find(self, text: str):
        """(start, end, field, raw id) of each known id in ``text``, longest first where they overlap."""
        if not self.owner or not _DIGIT.search(text):  # every id searched for holds a digit
            return
        for run in _ID_RUN.finditer(text):
            token = run.group()
            if len(token) < MIN_ID_LENGTH or not _DIGIT.search(token):
                continue
            if _ID_PART.fullmatch(token):  # one part (most runs): no sub-runs to try
                found = self.owner.get(token.casefold())
                if found:
                    yield (run.start(), run.end(), *found)
                continue
            parts = [(m.start(), m.end()) for m in _ID_PART.finditer(run.group())]
            base, i = run.start(), 0
            while i < len(parts):
                for j in range(min(len(parts), i + MAX_ID_PARTS) - 1, i - 1, -1):
                    start, end = base + parts[i][0], base + parts[j][1]
                    found = self.owner.get(text[start:end].casefold())
                    if found:
                        yield (start, end, *found)
                        i = j
                        break
                i += 1

    def __call__(self, text: str):
        if not _DIGIT.search(text):
            return
        for start, end, *_ in self.find(text):
            yield start, end
        if not _LONG_TOKEN[12].search(text):  # both patterns need 12 letters and digits in a row
            return
        for pattern in (_PROLIFIC_ID, _PLATFORM_ID):
            for match in pattern.finditer(text):
                yield match.start(), match.end()


def high_risk(text: str) -> list[str]:
    """The kinds of ``HIGH_RISK`` pattern in ``text`` (a view's text), once per finding."""
    return [kind for kind, (gate, pattern) in HIGH_RISK.items() if gate(text) for _ in pattern.finditer(text)]
