"""From Thai name words to the English spellings Thai people use, keyed on the Thai letters.

Three stages, each a list of small rules that look at the Thai word and rewrite the spelling:

1. **Base spelling** (:func:`base_spelling`): pythainlp's neural ``thai2rom_onnx`` romanizer
   (a bundled ONNX model, offline), or its rule-based ``royin`` (RTGS) romanizer where the
   neural output is empty, has spaces or anything but ASCII letters and hyphens, or runs away
   into a repeated cycle (pythainlp issue 1403: a cycle of 1-12 letters three or more times at
   the end). One exception: where the neural reading wrote a stray syllable after a space for a
   silent ending (``จิรภัทร`` chiraphat t), royin's is no string of RTGS syllables (:func:`is_rtgs`:
   chinphatn) and the neural reading's first word is one, that first word. Both engines are run once by
   :func:`build_table`, and their raw outputs are shipped in ``datasets/thai-names/romanization.csv``,
   so that every student gets the same data whatever their pythainlp version.

2. **Repairs** (:func:`rtgs_spelling`): three faults of ``thai2rom_onnx`` on names, fixed
   back to the RTGS spelling the engine meant:

   ==========================  ========================  ==================================
   fault                       Thai letters              example
   ==========================  ========================  ==================================
   a syllable read twice       ฐ/ท closing a syllable,   ณัฐธพงษ์ natthathaphong
                               then ท/ธ/ฑ (not ธรร-)      -> natthaphong; ยุทธ yuthatha -> yut
   ``พร`` read as ``phora``    พร + a consonant          พรชัย phorachai -> phonchai
   the linking ``cha`` lost    ช + ญ (not ญ์); ช + พ      พิชญา phitya -> phitchaya,
                               after a bare consonant     กชพร kotphon -> kotchaphon
   ==========================  ========================  ==================================

3. **Name spelling** (:func:`name_spelling`): the rules that turn RTGS into the spelling Thai
   people usually choose for their names. Each fires only when the Thai letters that make the
   sound are there:

   ============================  ===============================  ==============================
   rule                          Thai letters                     example
   ============================  ===============================  ==============================
   ``ch`` -> ``j``               จ (and no ช ฉ ฌ; else only       ใจดี chaidi -> jaidi
                                 when จ is the first consonant)
   ``si`` -> ``sri``             ศรี at the start or the end      ศรีสุข sisuk -> srisuk
   ``bun`` -> ``boon``           บุญ                              บุญชม bunchom -> boonchom
   ``on`` -> ``orn``             ร closing an inherent o: at the  สมพร somphon -> somphorn,
                                 end (also -รณ์, -กรณ์), and พร    จินดาภรณ์ -> chindaphorn,
                                 + a consonant                    พรชัย phonchai -> phornchai
   ``o`` -> ``or``               open อ (ออ) at the end, or       ละออ la-o -> la-or,
                                 ending the first syllable        ก่อเกียรติ kokiat -> korkiat
   ``i`` -> ``ee``               every ี (also ีย์; not ศรี, not   ใจดี jaidi -> jaidee,
                                 เ-ีย), when each i of the        ทวีศักดิ์ thawisak -> thaweesak,
                                 spelling can be matched to its   จารีย์ chari -> charee
                                 ิ/ี/ฤ; else only a final ี
   ``an/at`` -> ``arn/art``      า + a final n or t sound at the  กานต์ kan -> karn,
                                 end                              ชูชาติ chuchat -> chuchart
   ``oe`` -> ``er``              เ-ิ (each one)                   เลิศ loet -> lert,
                                                                  ประเสริฐ prasoet -> prasert
   ``aeo`` -> ``aew``            แ-ว (each one)                   แก้ว kaeo -> kaew
   ``iao`` -> ``iew``            เ-ียว (each one)                 เขียว khiao -> khiew
   ``uea`` -> ``ua``             เ-ือ (each one)                  เรือง rueang -> ruang
   ``ph`` -> ``p``               พ or ภ (and no ผ)                สมพร somphorn -> somporn
   ``th`` -> ``t``               ท ธ ฐ ฑ ฒ (and no ถ)             ณัฐพล natthaphon -> nattapon
   ``kh`` -> ``k``               ค or ข (and no ฆ ฅ ฃ)            ขวัญใจ khwanjai -> kwanjai
   ============================  ===============================  ==============================

   The aspirate rules (the last three) only apply when every letter in the word that could
   make that ``h`` sound maps the same way; otherwise the word keeps its RTGS aspirate.

Spellings vary in real life, so every word also carries **alternatives** (:func:`spelling_variants`),
which grading accepts: the repaired RTGS spelling, the name spelling without the aspirate rules
(``Thanakorn`` beside ``Tanakorn``), the name spelling with RTGS's vowels (``Prasoet`` beside ``Prasert``),
and the name spelling with the rules that real names use about
as often as not (each alone, and all together):

   ============================  ===============================  ==============================
   alternative                   Thai letters                     example
   ============================  ===============================  ==============================
   final by its letter           the last sounding consonant:     คงเดช kongdet -> kongdech,
                                 ด d, ช ch, จ j, ส ศ ษ s, ล l,    ไชยโรจน์ chairot -> chairoj,
                                 ท ธ th                           กัมพล kampon -> kampol
   ``w`` -> ``v``                ว starting a syllable            วิชัย wichai -> vichai
   ``a`` -> ``u``                ั or ำ right after the first     ชัชชัย chatchai -> chutchai,
                                 consonant (not ัย, ัว)           ดำรง damrong -> dumrong
   ``u`` -> ``oo``               every ุ and ู, when each u of    สุนทร sunthon -> soonthon,
                                 the spelling can be matched      ภูมิ phum -> phoom
   ============================  ===============================  ==============================

Two more alternatives write the main spelling's conventions in full (:data:`BY_LETTER_RULES`):

   ============================  ===============================  ==============================
   alternative                   Thai letters                     example
   ============================  ===============================  ==============================
   letter by letter              j for จ beside ช/ฉ/ฌ, p t k for  โรจนวิชัย -> Rojanawichai,
                                 พภ ทธฐฑฒ คข beside ผ ถ ฆ (a      พรมเผือก -> Promphuak,
                                 final ถ writes no h), ee for ี   ชนาธินาถ -> Chanatinart,
                                 beside เ-ิ; where there are as    เจริญชัยสกุลคีรี ->
                                 many of the letters as ch, ph,   Jarernchaisakunkeeree
                                 th, kh, i (not with ห, whose h
                                 may follow a final t, p, k)
   no hyphen                     a hyphen that reads the same     เอื้ออภิญญกุล Ua-pinyakun ->
                                 without it: not between two      Uapinyakun, เดชอนันต์ Det-anan
                                 vowels (Ta-ek is not Taek), a    -> Detanan
                                 consonant and h, a vowel and ng
   ============================  ===============================  ==============================

The main spelling changes a letter only where every letter that writes its sound agrees (or, for ี,
where each i can be matched); the letter-by-letter spelling is the one a model that learned each letter's
convention writes, so grading accepts it too. No spelling accepted before is dropped: the main spellings
are unchanged.
"""

from __future__ import annotations

import re
from typing import Callable, Iterable

from labs.common.files import write_csv

TABLE_COLUMNS = ("word", "roles", "thai2rom_onnx", "royin")
ENGINES = ("thai2rom_onnx", "royin")
LEADING_VOWELS = "เแโใไ"
CONSONANTS = "กขฃคฅฆงจฉชซฌญฎฏฐฑฒณดตถทธนบปผฝพฟภมยรลวศษสหฬอฮ"
TONE_MARKS = "่้๊๋"
VOWELS = "aeiou"
_SPELLING = re.compile(r"[a-z]+(?:-[a-z]+)*")
_RUNAWAY = re.compile(r"(.{1,12}?)\1{2,}$")  # pythainlp issue 1403: a cycle repeated to the length cap
_SILENT_END = re.compile(r"(?:[ทตด]ร|[ก-ฮ])[ิุ]?์$")  # a silenced letter or two at the end: -ณ์, -ทร์, -ดิ์
ENGLISH_NAME = re.compile(r"[A-Za-z]+(?:[ -][A-Za-z]+)*")

Rule = Callable[[str, str], str]  # (Thai word, spelling) -> spelling


def is_clean_spelling(spelling: str) -> bool:
    """ASCII letters, optionally joined by hyphens: no spaces, no other characters."""
    return bool(_SPELLING.fullmatch(spelling))


def is_runaway(spelling: str) -> bool:
    """``thai2rom``'s runaway decoding (pythainlp issue 1403): a short cycle three or more times at the
    end."""
    return bool(_RUNAWAY.search(spelling))


# RTGS syllables: an onset (or none, before a first vowel), vowel letters, a final (or none).
ONSETS = set("k kh ng ch s y d t th n b p ph f m r l w h".split()) | set(
    "kr kl kw khr khl khw pr pl phr phl tr thr br bl dr fr fl".split()
)
FINALS = ("", "k", "t", "p", "n", "m", "ng")


def is_rtgs(spelling: str) -> bool:
    """True if ``spelling`` (lowercase, hyphens allowed) splits into RTGS syllables: each run of consonants
    between vowels is a final and an onset, the first an onset, the last a final."""
    letters = spelling.replace("-", "")
    if not re.fullmatch("[a-z]+", letters) or not re.search("[aeiou]", letters):
        return False
    first, *middle, last = re.split("[aeiou]+", letters)
    return (
        (first == "" or first in ONSETS)
        and last in FINALS
        and all(any(run.startswith(f) and run[len(f) :] in ONSETS for f in FINALS) for run in middle)
    )


def base_spelling(row: dict) -> str | None:
    """The base (RTGS-style) lowercase spelling of a table row, or None if neither engine gave one.

    The first usable (clean, not runaway) reading of the neural engine's and royin's; but where the neural
    reading has a space and is so unusable, royin's is usable yet no string of RTGS syllables, and the neural
    reading's first word is usable and RTGS syllables, that first word (``จิรภัทร``: chiraphat t, royin
    chinphatn)."""
    neural, royin = ((row.get(engine) or "").strip().lower() for engine in ENGINES)
    usable = [s for s in (neural, royin) if is_clean_spelling(s) and not is_runaway(s)]
    first_word, space, _ = neural.partition(" ")
    if (
        space
        and usable == [royin]
        and not is_rtgs(royin)
        and is_clean_spelling(first_word)
        and is_rtgs(first_word)
        and not is_runaway(first_word)
    ):
        return first_word
    return usable[0] if usable else None


# --- small helpers on Thai letters and on spellings
# -------------------------------------------------------------


def _first_consonant(word: str) -> str:
    return word.lstrip(LEADING_VOWELS)[:1]


def _sounding(word: str) -> str:
    """The word without its silenced end (``จินดาภรณ์`` -> ``จินดาภร``, ``จันทร์`` -> ``จัน``)."""
    return _SILENT_END.sub("", word)


def _standalone(spelling: str, letter: str) -> list[int]:
    """Positions of ``letter`` not next to another vowel letter (the ``i`` of ``wichai``, not of ``chai``)."""
    return [
        p
        for p, c in enumerate(spelling)
        if c == letter
        and (p == 0 or spelling[p - 1] not in VOWELS)
        and (p + 1 == len(spelling) or spelling[p + 1] not in VOWELS)
    ]


def _replace_at(spelling: str, positions: Iterable[int], new: str) -> str:
    for p in sorted(positions, reverse=True):
        spelling = spelling[:p] + new + spelling[p + 1 :]
    return spelling


def _first_vowel_group(spelling: str) -> re.Match | None:
    return re.search(f"[{VOWELS}]+", spelling)


# --- stage 2: repairs of the romanizer's faults
# -----------------------------------------------------------------


def _repair_doubled_syllable(word: str, spelling: str) -> str:
    """ณัฐธพงษ์ natthathaphong -> natthaphong: ฐ/ท closing a syllable and the next ท/ธ/ฑ make one ``tha``."""
    if re.search("[ัิุ][ฐท][ทธฑ](?!รร)", word) and spelling.count("thatha") == 1:
        if re.search("[ฐท][ทธฑ]$", word) and spelling.endswith("thatha"):
            return spelling[: -len("thatha")] + "t"  # ยุทธ yuthatha -> yut: the pair closes the word
        return spelling.replace("thatha", "tha")
    return spelling


def _repair_phora(word: str, spelling: str) -> str:
    """พรชัย phorachai -> phonchai: พร before a consonant is ``phon``, not ``phora``."""
    if re.search(f"พร[{CONSONANTS.replace('ร', '').replace('ห', '')}]", word):
        return spelling.replace("phora", "phon")
    return spelling


_T_FINALS = "จชซดตถทธฎฏฐฑฒศษส"


def _repair_linking_cha(word: str, spelling: str) -> str:
    """พิชญา phitya -> phitchaya, กชพร kotphon -> kotchaphon: ช before ญ/พ also starts a ``cha`` syllable.

    ชพ only after a bare consonant (กช-, not เดช-): elsewhere it is a compound's seam (เวชพานิช wetphanit).
    Each site must match one ``ty`` (ชญ) or ``tph`` (ชพ) of the spelling, and no other letter may write
    those."""
    others = f"[{_T_FINALS.replace('ช', '')}]"
    for site, written, other in (
        (r"(?<=.)ชญ(?!์)", "ty", f"{others}[ยญ]"),
        (
            f"(?<![{LEADING_VOWELS}][{CONSONANTS}])(?<=[{CONSONANTS}])ชพ(?![ก-ฮ]?์)",
            "tph",
            f"{others}[{CONSONANTS}]?์?พ",
        ),
    ):
        sites = len(re.findall(site, word))
        if sites and not re.search(other, word) and spelling.count(written) == sites:
            spelling = spelling.replace(written, "tcha" + written[1:])
    return spelling


REPAIRS: tuple[Rule, ...] = (_repair_doubled_syllable, _repair_phora, _repair_linking_cha)


# --- stage 3: name spelling
# -------------------------------------------------------------------------------------


def _rule_j(word: str, spelling: str) -> str:
    if "จ" not in word:
        return spelling
    if not any(c in word for c in "ชฉฌ"):
        return spelling.replace("ch", "j")
    if _first_consonant(word) == "จ" and spelling.startswith("ch"):
        return "j" + spelling[2:]
    return spelling


def _letter_by_letter(thai: str, letters: str, spelling: str, written: str) -> list[str] | None:
    """The letter of ``letters`` behind each ``written`` in the spelling, in order, when the Thai letters
    ``thai`` have as many of them as the spelling has ``written`` (counted, not aligned); else None."""
    sources = [c for c in thai if c in letters]
    return sources if sources and len(sources) == spelling.count(written) else None


def _from_letters(spelling: str, written: str, sources: list[str], keep: str, plain: str) -> str:
    """Each ``written`` in the spelling whose letter (``sources``, in order) is not in ``keep`` becomes
    ``plain``."""
    parts = spelling.split(written)
    return parts[0] + "".join(
        (written if letter in keep else plain) + part for letter, part in zip(sources, parts[1:])
    )


def _rule_j_by_letter(word: str, spelling: str) -> str:
    """j for each ch that จ writes beside ช, ฉ or ฌ, when each ch has its letter: โรจนวิชัย rochanawichai ->
    rojanawichai."""
    sources = _letter_by_letter(_sounding(word), "จชฉฌ", spelling, "ch")
    if sources and "จ" in sources:
        return _from_letters(spelling, "ch", sources, keep="ชฉฌ", plain="j")
    return _rule_j(word, spelling)


def _rule_sri(word: str, spelling: str) -> str:
    if word.startswith("ศรี") and spelling.startswith("si") and not spelling.startswith("sri"):
        spelling = "sr" + spelling[1:]
    if len(word) > 3 and word.endswith("ศรี") and spelling.endswith("si") and not spelling.endswith("sri"):
        spelling = spelling[:-2] + "sri"
    return spelling


def _rule_boon(word: str, spelling: str) -> str:
    return spelling.replace("bun", "boon", word.count("บุญ")) if "บุญ" in word else spelling


def _rule_orn(word: str, spelling: str) -> str:
    """ร closing an inherent o: final (-พร, -ภรณ์, -กรณ์) and พร before a consonant."""
    sounding = _sounding(word)
    if len(sounding) >= 2 and sounding[-1] == "ร" and sounding[-2] in CONSONANTS and spelling.endswith("on"):
        spelling = spelling[:-2] + "orn"
    if re.search(f"พร[{CONSONANTS.replace('ร', '').replace('ห', '')}]", word):
        spelling = re.sub("phon(?=[^aeiou])", "phorn", spelling)
    return spelling


def _rule_open_o(word: str, spelling: str) -> str:
    """Open อ (the long vowel ออ with no final) is ``or``: ละออ la-o -> la-or, ก่อเกียรติ kokiat -> korkiat.

    In the first syllable only with a tone mark (ก่อ, ข้อ), where อ cannot be the next syllable's
    consonant."""
    if (
        len(word) >= 2
        and word[-1] == "อ"
        and word[-2] in CONSONANTS + TONE_MARKS
        and spelling.endswith("o")
        and (len(word) > 2 or word[0] != "อ")
    ):
        return spelling + "r"
    opening = re.match(f"[{CONSONANTS}][{TONE_MARKS}]อ(?=[{LEADING_VOWELS}]|[{CONSONANTS}][ัิีึืุูา็])", word)
    first = _first_vowel_group(spelling)
    if opening and word[0] != "อ" and first and first.group() == "o":
        return spelling[: first.end()] + "r" + spelling[first.end() :]
    return spelling


def _i_sources(word: str, skip_oe: bool = False) -> list[str]:
    """Each Thai letter that writes a standalone ``i``, in order: ``long`` (ี), ``short`` (ิ, ฤ, ศรี's ี).
    With ``skip_oe``, not the ิ of เ-ิ (oe, er: no i; เจริญ, not เอทิลีน's เอ + ทิ)."""
    sources = []
    for k, c in enumerate(word):
        if skip_oe and c == "ิ" and re.search(f"เ[{CONSONANTS}][รลว]?$", word[max(0, k - 3) : k]):
            continue
        if c == "ิ" or c == "ฤ":
            sources.append("short")
        elif c == "ี":
            if word[max(0, k - 2) : k] == "ศร":
                sources.append("short")  # ศรี is sri, never sree
            elif word[k + 1 : k + 2] == "ย" and word[k + 2 : k + 3] != "์" and "เ" in word[max(0, k - 3) : k]:
                continue  # เ-ีย is ia: its i is not standalone
            else:
                sources.append("long")
    return sources


def _rule_ee(word: str, spelling: str, skip_oe: bool = False) -> str:
    """Every ี is ``ee`` (ทวีศักดิ์ thaweesak, จารีย์ charee); if the i's cannot be matched, only a final
    one."""
    sources, positions = _i_sources(_sounding(word), skip_oe), _standalone(spelling, "i")
    if "long" in sources and len(sources) == len(positions):
        return _replace_at(spelling, [p for p, s in zip(positions, sources) if s == "long"], "ee")
    if (
        word.endswith("ี")
        and not word.endswith("ศรี")
        and spelling.endswith("i")
        and not spelling.endswith("ee")
    ):
        return spelling[:-1] + "ee"
    return spelling


_N_FINALS, _T_SOUND_FINALS = "นณญรลฬ", "ดตทธฐฑฒถจชซศษสฏฎ"


def _rule_arn_art(word: str, spelling: str) -> str:
    """A final long า + n or t sound: กานต์ kan -> karn, ชูชาติ chuchat -> chuchart."""
    end = re.search("า([ก-ฮ])[ิุ]?$", _sounding(word))
    if not end or (spelling[-3:-2] or "a") in VOWELS:
        return spelling
    if end.group(1) in _N_FINALS and spelling.endswith("an"):
        return spelling[:-1] + "rn"
    if end.group(1) in _T_SOUND_FINALS and spelling.endswith("at"):
        return spelling[:-1] + "rt"
    return spelling


def _rule_ee_by_letter(word: str, spelling: str) -> str:
    """``_rule_ee`` that knows the ิ of เ-ิ writes no i: เจริญชัยสกุลคีรี charoenchaisakunkhiri ->
    charoenchaisakunkheeree (the rule alone cannot match the i's, so makes only the last one ee)."""
    return _rule_ee(word, spelling, skip_oe=True)


def _vowel_rule(thai: str, rtgs: str, name: str) -> Rule:
    """RTGS writes the vowel of the Thai pattern ``thai`` as ``rtgs``; names write it ``name``.

    Only when the word's spelling has as many ``rtgs`` as the word has of the pattern (each can be
    matched to its letters); otherwise the spelling is left as it is."""
    pattern = re.compile(thai)

    def rule(word: str, spelling: str) -> str:
        count = len(pattern.findall(word))
        if count and spelling.count(rtgs) == count:
            return spelling.replace(rtgs, name)
        return spelling

    rule.__name__ = f"_rule_{name}"
    return rule


_C, _TONE = f"[{CONSONANTS}]{{1,2}}", f"[{TONE_MARKS}]?"
# The vowels RTGS writes as no Thai name does: เ-ิ oe (เลิศ loet -> lert), แ-ว aeo (แก้ว kaeo -> kaew),
# เ-ียว iao (เขียว khiao -> khiew), เ-ือ uea (เรือง rueang -> ruang).
VOWEL_RULES: tuple[Rule, ...] = (
    _vowel_rule(f"เ{_C}ิ", "oe", "er"),
    _vowel_rule(f"แ{_C}{_TONE}ว", "aeo", "aew"),
    _vowel_rule(f"เ{_C}ี{_TONE}ยว", "iao", "iew"),
    _vowel_rule(f"เ{_C}ื{_TONE}อ", "uea", "ua"),
)


def _aspirate_rule(letters: str, others: str, aspirate: str, plain: str) -> Rule:
    def rule(word: str, spelling: str) -> str:
        if any(c in word for c in letters) and not any(c in word for c in others):
            return spelling.replace(aspirate, plain)
        return spelling

    return rule


SPELLING_RULES: tuple[Rule, ...] = (
    _rule_j,
    _rule_sri,
    _rule_boon,
    _rule_orn,
    _rule_open_o,
    _rule_ee,
    _rule_arn_art,
    *VOWEL_RULES,
)
ASPIRATES = (("พภ", "ผ", "ph", "p"), ("ทธฐฑฒ", "ถ", "th", "t"), ("คข", "ฆฅฃ", "kh", "k"))
ASPIRATE_RULES: tuple[Rule, ...] = tuple(_aspirate_rule(*aspirate) for aspirate in ASPIRATES)


def _without_final(word: str, spelling: str) -> str:
    """The sounding word without its last consonant where that closes the word, as the spelling's last
    consonant says (a final writes no h: ชนาธินาถ chanathinat; พยัคฆ phayakkha reads its ฆ)."""
    sounding = _sounding(word)
    closes = spelling[-1:] not in VOWELS and sounding[-2:-1] not in ("", *LEADING_VOWELS)
    return sounding[:-1] if closes and sounding[-1] in CONSONANTS else sounding


def _aspirates_by_letter(word: str, spelling: str) -> str:
    """The aspirate rules; and where one is kept from firing by another letter that writes the aspirate
    (not the word's final), the plain sound for its letters and the aspirate for the others, letter by
    letter: พรมเผือก phromphueak -> promphueak; ชนาธินาถ chanathinat -> chanatinat (ถ closes the word).
    Not in a word with ห, whose h may follow a final t, p or k and so throw the count off."""
    thai = _without_final(word, spelling)
    for letters, others, aspirate, plain in ASPIRATES:
        if not any(c in thai for c in others):  # then the aspirate rule, with a final of the others allowed
            spelling = _aspirate_rule(letters, "", aspirate, plain)(word, spelling)
            continue
        sources = _letter_by_letter(thai, letters + others, spelling, aspirate) if "ห" not in word else None
        if sources:
            spelling = _from_letters(spelling, aspirate, sources, keep=others, plain=plain)
    return spelling


# The same conventions, letter by letter: where the rules above leave a letter as RTGS writes it because
# another letter writes the same sound (จ beside ช, พ beside ผ) or cannot be matched to its letter, these
# match each one; their spelling is an alternative. The main spelling's rules, with these in place of two.
BY_LETTER = {_rule_j: _rule_j_by_letter, _rule_ee: _rule_ee_by_letter}
BY_LETTER_RULES: tuple[Rule, ...] = tuple(BY_LETTER.get(rule, rule) for rule in SPELLING_RULES) + (
    _aspirates_by_letter,
)


# --- alternatives: spellings real names use about as often as not
# ------------------------------------------------

_LETTER_FINALS = {
    "ด": ("t", "d"),
    "ช": ("t", "ch"),
    "จ": ("t", "j"),
    "ส": ("t", "s"),
    "ศ": ("t", "s"),
    "ษ": ("t", "s"),
    "ล": ("n", "l"),
    "ท": ("t", "th"),
    "ธ": ("t", "th"),
}


def _alt_letter_final(word: str, spelling: str) -> str:
    """The last consonant by its letter, not its sound: คงเดช kongdet -> kongdech, กัมพล kampon -> kampol."""
    sounding = _sounding(word)
    final = sounding[-1:]
    if final in _LETTER_FINALS and len(sounding) >= 2 and sounding[-2] not in LEADING_VOWELS:
        sound, letter = _LETTER_FINALS[final]
        if spelling.endswith(sound) and not spelling.endswith(letter):
            return spelling[: -len(sound)] + letter
    return spelling


def _alt_v(word: str, spelling: str) -> str:
    """ว starting a syllable is ``v``: วิชัย wichai -> vichai, ประวิทย์ prawit -> pravit (not ขวัญ khwan)."""
    if "ว" not in word:
        return spelling
    return re.sub(f"(?:(?<=^)|(?<=[{VOWELS}]))w(?=[{VOWELS}])", "v", spelling)


def _alt_u(word: str, spelling: str) -> str:
    """ั or ำ right after the first consonant is ``u``: ชัชชัย chatchai -> chutchai, ดำรง damrong ->
    dumrong."""
    first = _first_vowel_group(spelling)
    if not first or first.group() != "a" or len(word) < 3 or word[0] not in CONSONANTS:
        return spelling
    if (word[1] == "ั" and word[2] not in "ยว") or (
        word[1] == "ำ" and spelling[first.end() : first.end() + 1] == "m"
    ):
        return spelling[: first.start()] + "u" + spelling[first.end() :]
    return spelling


def _alt_oo(word: str, spelling: str) -> str:
    """Every ุ/ู is ``oo`` when each standalone u of the spelling can be matched to one: สุนทร sunthon ->
    soonthon."""
    sources = [
        c
        for k, c in enumerate(word)
        if c in "ุู" and word[k + 1 : k + 2] not in ("ย", "ว") and word[max(0, k - 1) : k + 2] != "บุญ"
    ]
    positions = _standalone(spelling, "u")
    if sources and len(sources) == len(positions):
        return _replace_at(spelling, positions, "oo")
    return spelling


ALTERNATIVE_RULES: tuple[Rule, ...] = (_alt_letter_final, _alt_v, _alt_u, _alt_oo)


def _apply(rules: Iterable[Rule], word: str, spelling: str) -> str:
    for rule in rules:
        spelling = rule(word, spelling)
    return spelling


def title(spelling: str) -> str:
    """``somchai`` -> ``Somchai``; only the first letter is raised (``Kora-akkharin``)."""
    return spelling[:1].upper() + spelling[1:]


def rtgs_spelling(word: str, base: str) -> str:
    """The base spelling with the romanizer's faults repaired (still RTGS-style, lowercase)."""
    return _apply(REPAIRS, word, base)


def name_spelling(word: str, base: str) -> str:
    """The main English spelling of one Thai name word, from its base spelling."""
    return title(_apply(SPELLING_RULES + ASPIRATE_RULES, word, rtgs_spelling(word, base)))


def without_hyphens(spelling: str) -> str:
    """The spelling without each hyphen that reads the same without it: not one between two vowels (ta-ek is
    not taek), between a consonant and an h (waet-hi is not waethi) or between a vowel and ng (thawi-ngoen
    is not thawingoen). ua-phinyakun -> uaphinyakun, det-anan -> detanan."""

    def join(match: re.Match) -> str:
        left, right = match.group(1), match.group(2)
        keep = (
            (left in VOWELS and right[0] in VOWELS)
            or (left not in VOWELS and right[0] == "h")
            or (left in VOWELS and right == "ng")
        )
        return left + "-" * keep

    if "-" not in spelling:
        return spelling
    return re.sub("([a-z])-(?=([a-z]{1,2}))", join, spelling)


def spelling_variants(word: str, base: str) -> list[str]:
    """All accepted spellings of one word, the main one first, without repeats.

    Then: the main spelling with each alternative rule alone and with all of them, the letter-by-letter
    spelling, the spelling without the aspirate rules, the main and letter-by-letter spellings without
    hyphens, and the repaired RTGS spelling.
    """
    rtgs = rtgs_spelling(word, base)
    main = _apply(SPELLING_RULES + ASPIRATE_RULES, word, rtgs)
    variants = (
        [main] + [rule(word, main) for rule in ALTERNATIVE_RULES] + [_apply(ALTERNATIVE_RULES, word, main)]
    )
    before_vowels = tuple(rule for rule in SPELLING_RULES if rule not in VOWEL_RULES) + ASPIRATE_RULES
    by_letter = _apply(BY_LETTER_RULES, word, rtgs)
    variants += [by_letter, _apply(before_vowels, word, rtgs), _apply(SPELLING_RULES, word, rtgs)]
    variants += [without_hyphens(v) for v in (main, by_letter)] + [rtgs]
    return list(dict.fromkeys(title(v) for v in variants))


THAI_WORD = re.compile("[\u0e01-\u0e4e]+")  # Thai letters, vowels and marks (not digits, not ฯ)
ROMANIZE_COLUMNS = ("thai", "spelling", "alternatives")


def checked_words(words: Iterable[str]) -> list[str]:
    """The words to romanize, each once, in order; an InputError for none, or for one that is not Thai."""
    from labs.common.errors import InputError

    words = list(dict.fromkeys(words))
    if not words:
        raise InputError("no Thai words given; pass words (python -m labs romanize สมชาย ใจดี) or --file FILE")
    bad = next((w for w in words if not THAI_WORD.fullmatch(w)), None)
    if bad is not None:
        raise InputError(f"{bad[:40]!r} is not a Thai word: give Thai letters only, one word per name part")
    return words


def romanize_table_or_live(words: Iterable[str], lexicon_words: dict) -> list[dict]:
    """``python -m labs romanize``: each Thai word's main spelling and alternatives, as CSV rows.

    A word in the kit's table (``lexicon_words``, :class:`NameWord` by Thai word) gets the table's
    spellings, the same as in the datasets; any other word is romanized live by pythainlp's
    engines, then goes through the same repairs and rules.
    """
    from labs.common.errors import InputError

    words = checked_words(words)
    live = [w for w in words if w not in lexicon_words]
    raw = dict(zip(live, zip(*(romanize_words(live, engine) for engine in ENGINES)))) if live else {}
    rows = []
    for word in words:
        if word in lexicon_words:
            spellings = list(lexicon_words[word].spellings)
        else:
            base = base_spelling(dict(zip(ENGINES, raw[word])))
            if base is None:
                raise InputError(
                    f"pythainlp gives no usable spelling for {word!r} (thai2rom_onnx: {raw[word][0]!r}, "
                    f"royin: {raw[word][1]!r})"
                )
            spellings = spelling_variants(word, base)
        rows.append({"thai": word, "spelling": spellings[0], "alternatives": "|".join(spellings[1:])})
    return rows


def romanize_words(words: Iterable[str], engine: str) -> list[str]:
    """Romanize Thai words with one of pythainlp's offline engines (``thai2rom_onnx``, ``royin``)."""
    from pythainlp.transliterate import romanize

    import labs  # noqa: F401  (offline mode before pythainlp loads)

    return [romanize(word, engine=engine) for word in words]


def build_table(path, progress: bool = True) -> int:
    """Romanize every kept name word and the dictionary words with both engines; write the table to ``path``.

    Takes two to three minutes on a laptop CPU. Returns the number of words written.
    """
    from pythainlp.transliterate import romanize
    from tqdm.auto import tqdm

    import labs  # noqa: F401
    from labs.name_transliteration.corpus import DICTIONARY, dictionary_words, name_words

    roles = {word: sorted(r) for word, r in name_words().items()}
    roles.update({word: [DICTIONARY] for word in dictionary_words(roles)})
    rows = []
    for word in tqdm(
        sorted(roles), desc="romanizing name and dictionary words", unit="word", disable=not progress
    ):
        rows.append(
            {
                "word": word,
                "roles": "|".join(roles[word]),
                "thai2rom_onnx": romanize(word, engine="thai2rom_onnx"),
                "royin": romanize(word, engine="royin"),
            }
        )
    return write_csv(path, TABLE_COLUMNS, rows)
