"""The romanization rules, one by one: where each fires, and where it must not; the repairs; `romanize`."""

import pytest

from labs.common.errors import InputError
from labs.common.files import read_csv
from labs.name_transliteration import romanization as R
from labs.name_transliteration.data import DEFAULT_TABLE, load_lexicon
from tests.conftest import run_cli


def _rule(rule, cases):
    """Each (Thai word, spelling in, spelling out) through ``rule``."""
    for word, spelling, expected in cases:
        assert rule(word, spelling) == expected, (word, spelling)


# --- repairs of thai2rom_onnx's faults
# ---------------------------------------------------------------------------


def test_runaway_repetition_falls_back_to_royin():
    runaway = "banchiphueakan" + "khai" * 20  # pythainlp issue 1403's shape
    assert R.is_runaway(runaway) and R.is_runaway("krungthepp" + "a" * 80)
    assert not R.is_runaway("somchai") and not R.is_runaway("chonchon") and not R.is_runaway("la-o")
    assert R.base_spelling({"thai2rom_onnx": runaway, "royin": "banchi"}) == "banchi"


def test_the_shipped_table_has_no_runaway_output():
    assert not [row["word"] for row in read_csv(DEFAULT_TABLE) if R.is_runaway(row["thai2rom_onnx"])]


def test_a_syllable_read_twice_is_read_once():
    _rule(
        R._repair_doubled_syllable,
        [
            ("ณัฐธพงษ์", "natthathaphong", "natthaphong"),
            ("ณัฐทวี", "natthathawi", "natthawi"),
            ("ยุทธ", "yuthatha", "yut"),  # the pair closes the word
            ("รัฐธรรมนูญ", "ratthathammun", "ratthathammun"),  # ธรร- has its own vowel: two syllables
            ("ททัษชดา", "thathatchada", "thathatchada"),  # ทท- at the start: two syllables
            ("ณัฐพล", "natthaphon", "natthaphon"),  # nothing doubled
        ],
    )


def test_phora_is_phon_before_a_consonant():
    _rule(
        R._repair_phora,
        [
            ("พรชัย", "phorachai", "phonchai"),
            ("พรทิพย์", "phorathip", "phonthip"),
            ("พรรณี", "phanni", "phanni"),  # พรร- is another reading
            ("พรหม", "phrom", "phrom"),
            ("พระราม", "phraram", "phraram"),  # no พร + consonant
        ],
    )


def test_the_linking_cha_of_chaya_and_chapha_is_restored():
    _rule(
        R._repair_linking_cha,
        [
            ("พิชญา", "phitya", "phitchaya"),
            ("ปรัชญาพร", "pratyaphon", "pratchayaphon"),
            ("กชพร", "kotphon", "kotchaphon"),
            ("พิชญ์", "phit", "phit"),  # ญ์ is silent: no syllable
            ("เวชพานิช", "wetphanit", "wetphanit"),  # a compound's seam after a vowel
            ("คชพันธ์", "khotchaphan", "khotchaphan"),  # already there
            ("พิชญุตม์พงศ์", "phitchanutphong", "phitchanutphong"),  # the tph comes from ตม์พ
        ],
    )


# --- the name spelling rules
# -------------------------------------------------------------------------------------


def test_ee_for_every_long_i():
    _rule(
        R._rule_ee,
        [
            ("ใจดี", "jaidi", "jaidee"),
            ("ทวีศักดิ์", "thawisak", "thaweesak"),  # medial ี; ดิ์ is silent
            ("จารีย์", "jari", "jaree"),  # ีย์
            ("ปรียา", "priya", "preeya"),  # ีย without เ is ee + ya
            ("วิชัย", "wichai", "wichai"),  # ิ is short
            ("ศรีสุข", "srisuk", "srisuk"),  # ศรี stays sri
            ("เรียม", "riam", "riam"),  # เ-ีย is ia
            ("กิตติ", "kitti", "kitti"),
        ],
    )


def test_ee_matches_each_i_to_its_letter():
    assert R._rule_ee("วิมลศรีดี", "wimonsridi") == "wimonsridee"  # ิ short, ศรี short, ี long
    assert R._rule_ee("ศิริมณี", "sirimani") == "sirimanee"  # only the third i is long


def test_orn_for_an_r_closing_an_inherent_o():
    _rule(
        R._rule_orn,
        [
            ("สมพร", "somphon", "somphorn"),
            ("จินดาภรณ์", "jindaphon", "jindaphorn"),  # -ภรณ์
            ("ธนากร", "thanakon", "thanakorn"),
            ("พรชัย", "phonchai", "phornchai"),  # พร + consonant
            ("สมพล", "somphon", "somphon"),  # ล, not ร
            ("อรทัย", "orathai", "orathai"),  # อร at the start stays or
            ("พรรณี", "phanni", "phanni"),
        ],
    )


def test_or_for_an_open_o():
    _rule(
        R._rule_open_o,
        [
            ("ละออ", "la-o", "la-or"),
            ("ก่อเกียรติ", "kokiat", "korkiat"),
            ("ข้อยุ่น", "khoyun", "khoryun"),
            ("กองเกียรติ", "kongkiat", "kongkiat"),  # อ with a final: closed
            ("อรทัย", "orathai", "orathai"),  # อ as the first consonant
            ("รอนี", "roni", "roni"),  # no tone mark: อ may be a consonant
        ],
    )


def test_arn_art_for_a_final_long_a():
    _rule(
        R._rule_arn_art,
        [
            ("กานต์", "kan", "karn"),
            ("ชูชาติ", "chuchat", "chuchart"),
            ("ไชนาท", "chainat", "chainart"),
            ("สมชาย", "somchai", "somchai"),  # no n or t final
            ("ประภาส", "praphat", "praphart"),
            ("ชัยวัฒน์", "chaiwat", "chaiwat"),  # ั, not า
            ("กาญจนา", "kanchana", "kanchana"),  # ends in a vowel
        ],
    )


def test_t_for_the_tho_letters_but_not_with_tho_thung():
    th = R.ASPIRATE_RULES[1]
    _rule(
        th,
        [
            ("ณัฐพล", "natthaphon", "nattaphon"),  # ฐ
            ("ธนากร", "thanakon", "tanakon"),
            ("ฑีฆา", "thikha", "tikha"),
            ("ถาวร", "thawon", "thawon"),  # ถ keeps th
            ("ณัฐถา", "natthatha", "natthatha"),  # a ถ anywhere keeps every th
        ],
    )


def test_the_vowels_rtgs_writes_as_no_name_does():
    er, aew, iew, ua = R.VOWEL_RULES
    _rule(
        er,
        [
            ("ประเสริฐ", "prasoet", "prasert"),
            ("บุญเลิศ", "bunloet", "bunlert"),
            ("เฉลิมเกิด", "chaloemkoet", "chalermkert"),  # each one
            ("เธอ", "thoe", "thoe"),  # เ-อ, not เ-ิ: left as it is
            ("เลิศเธอ", "loetthoe", "loetthoe"),  # two oe, one เ-ิ: cannot tell which, so neither
        ],
    )
    _rule(aew, [("แก้ว", "kaeo", "kaew"), ("กองแก้ว", "kongkaeo", "kongkaew"), ("แสง", "saeng", "saeng")])
    _rule(iew, [("เขียว", "khiao", "khiew"), ("เสถียร", "sathian", "sathian")])  # no final ว
    _rule(
        ua,
        [
            ("รุ่งเรือง", "rungrueang", "rungruang"),
            ("เมือง", "mueang", "muang"),
            ("ลือ", "lue", "lue"),  # ื without เ-อ
        ],
    )


def test_rtgs_vowels_stay_accepted():
    variants = R.spelling_variants("ประเสริฐ", "prasoet")
    assert variants[0] == "Prasert" and "Prasoet" in variants
    assert R.spelling_variants("เจริญ", "charoen")[:2] == ["Jarern", "Jaroen"]


def test_the_main_spelling_chains_the_repairs_and_rules():
    assert R.name_spelling("ณัฐธพงษ์", "natthathaphong") == "Nattapong"
    assert R.name_spelling("พรชัย", "phorachai") == "Pornchai"
    assert R.name_spelling("พิชญา", "phitya") == "Pitchaya"
    assert R.name_spelling("กชพร", "kotphon") == "Kotchaporn"
    assert R.name_spelling("ทวีศักดิ์", "thawisak") == "Taweesak"


# --- alternatives
# ------------------------------------------------------------------------------------------------


def test_letter_finals_are_alternatives():
    _rule(
        R._alt_letter_final,
        [
            ("คงเดช", "kongdet", "kongdech"),
            ("ไชยโรจน์", "chairot", "chairoj"),  # จน์: น silent, จ the final
            ("กัมพล", "kampon", "kampol"),
            ("ยอด", "yot", "yod"),
            ("ประกาศ", "prakat", "prakas"),
            ("สมชาย", "somchai", "somchai"),  # ย is a vowel here
            ("ชัยวัฒน์", "chaiwat", "chaiwat"),  # ฒ is not in the list
        ],
    )


def test_v_u_oo_are_alternatives():
    _rule(
        R._alt_v,
        [
            ("วิชัย", "wichai", "vichai"),
            ("ประวิทย์", "prawit", "pravit"),
            ("ขวัญ", "khwan", "khwan"),
            ("แก้ว", "kaew", "kaew"),
        ],
    )
    _rule(
        R._alt_u,
        [
            ("ชัชชัย", "chatchai", "chutchai"),
            ("ดำรง", "damrong", "dumrong"),
            ("ชัย", "chai", "chai"),
            ("สมชาย", "somchai", "somchai"),
            ("บัว", "bua", "bua"),
        ],
    )
    _rule(
        R._alt_oo,
        [
            ("สุนทร", "sunthon", "soonthon"),
            ("ภูมิ", "phum", "phoom"),
            ("บุญมี", "boonmee", "boonmee"),
            ("คุณ", "khun", "khoon"),
        ],
    )


def test_j_letter_by_letter_where_each_ch_has_its_letter():
    _rule(
        R._rule_j_by_letter,
        [
            ("โรจนวิชัย", "rochanawichai", "rojanawichai"),  # จ then ช: j, then ch
            ("ชมจันทร์", "chomchan", "chomjan"),  # ช then จ (ทร์ silent)
            ("ใจดี", "chaidi", "jaidi"),  # จ alone: as _rule_j
            ("ชัยชนะ", "chaichana", "chaichana"),  # no จ
            ("จิตรชัยเดช", "chitchaidet", "jitchaidet"),  # final ช: no match, _rule_j
        ],
    )


def test_ee_by_letter_knows_the_i_of_oe():
    assert R._rule_ee("ดีเลิศ", "dilert") == "dilert"  # the rule counts เ-ิ's ิ, cannot match, no final ี
    assert R._rule_ee_by_letter("ดีเลิศ", "dilert") == "deelert"
    assert R._rule_ee_by_letter("เจริญคีรี", "jarernkhiri") == "jarernkheeree"
    assert R._rule_ee_by_letter("วิชัย", "wichai") == "wichai"
    assert R._rule_ee_by_letter("เอทิลีน", "ethilin") == "ethileen"  # เอ + ทิ: that ิ is an i


def test_aspirates_by_letter_beside_the_letters_that_keep_them():
    _rule(
        R._aspirates_by_letter,
        [
            ("พรมเผือก", "phromphueak", "promphueak"),  # พ -> p, ผ keeps ph
            ("ชนาธินาถ", "chanathinat", "chanatinat"),  # a final ถ writes no h: it keeps nothing
            ("ถาวรธรรม", "thawontham", "thawontam"),  # ถ keeps th, ธ -> t
            ("ณัฐพล", "natthaphon", "nattapon"),  # nothing keeps them: the aspirate rules
            ("ผลพูน", "phonphun", "phonpun"),
            ("ผกา", "phaka", "phaka"),  # no letter to make plain
            ("พยัคฆ", "phayakkha", "payakkha"),  # the last ฆ is read (kha), so it keeps its kh
            ("ผลเทพหิรัญ", "phonthephiran", "phontephiran"),  # th -> t; ph kept: the h of ห follows the p
        ],
    )
    # a final ถ no longer keeps every th in the alternative; the main spelling keeps its rule
    assert R.spelling_variants("ชนาธินาถ", "chanathinat")[:2] == ["Chanathinart", "Chanatinart"]


def test_a_hyphen_is_dropped_only_where_the_letters_read_the_same_without_it():
    assert R.without_hyphens("ua-phinyakun") == "uaphinyakun"  # a vowel, then a consonant
    assert R.without_hyphens("det-anan") == "detanan"  # a consonant, then a vowel
    for kept in ("ta-ek", "da-o", "cha-em", "waet-hiro", "thawi-ngoen", "kora-akkharin"):
        assert R.without_hyphens(kept) == kept  # taek, dao, chaem, waethiro, thawingoen read otherwise
    assert "Ua-pinyakun" in R.spelling_variants("เอื้ออภิญญกุล", "uea-phinyakun")
    assert "Uapinyakun" in R.spelling_variants("เอื้ออภิญญกุล", "uea-phinyakun")
    assert R.spelling_variants("ดาโอะ", "da-o") == ["Da-o"]


# Fingerprints of every table word's main spelling and accepted spellings as they were at commit 7cf1fbf,
# before the letter-by-letter and hyphen-free alternatives: those may only add spellings.
SPELLINGS_AT_7CF1FBF = {"main": "24ccbc0cef7eb4af", "all": "81e7bd67764d912e"}


def test_the_new_alternatives_leave_every_main_spelling_and_drop_no_spelling(monkeypatch):
    import hashlib

    def fingerprint(lines):
        return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]

    rows = sorted((row for row in read_csv(DEFAULT_TABLE) if R.base_spelling(row)), key=lambda r: r["word"])
    now = {row["word"]: R.spelling_variants(row["word"], R.base_spelling(row)) for row in rows}
    # without them: the letter-by-letter rules replaced by the main spelling's, hyphens kept
    monkeypatch.setattr(R, "BY_LETTER_RULES", R.SPELLING_RULES + R.ASPIRATE_RULES)
    monkeypatch.setattr(R, "without_hyphens", lambda spelling: spelling)
    before = {row["word"]: R.spelling_variants(row["word"], R.base_spelling(row)) for row in rows}
    assert fingerprint(f"{w},{now[w][0]}" for w in now) == SPELLINGS_AT_7CF1FBF["main"]
    assert fingerprint(f"{w},{'|'.join(before[w])}" for w in before) == SPELLINGS_AT_7CF1FBF["all"]
    assert all(set(before[w]) <= set(now[w]) for w in now)
    gained = [w for w in now if set(now[w]) - set(before[w])]
    assert len(gained) > 1_000 and {"โรจนวิชัย", "พรมเผือก", "ชนาธินาถ", "เอื้ออภิญญกุล"} <= set(gained)


def test_variants_put_the_main_spelling_first_and_keep_rtgs_last():
    variants = R.spelling_variants("ณัฐพล", "natthaphon")
    assert variants[0] == "Nattapon" and variants[-1] == "Natthaphon"
    assert {"Nattapol", "Nuttapon"} <= set(variants) and len(variants) == len(set(variants))
    assert R.spelling_variants("สมชาย", "somchai") == ["Somchai"]


def test_every_table_word_has_a_clean_main_spelling():
    for word in load_lexicon().words.values():
        assert all(R.ENGLISH_NAME.fullmatch(s) for s in word.spellings), word


# --- python -m labs romanize
# -------------------------------------------------------------------------------------


def _romanize(*args):
    return run_cli("romanize", *args)


def test_romanize_prints_csv_from_the_table():
    result = _romanize("สมชาย", "ใจดี กชพร")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "thai,spelling,alternatives",
        "สมชาย,Somchai,",
        "ใจดี,Jaidee,Chaidi",
        "กชพร,Kotchaporn,Kotchaphorn|Kotchaphon",
    ]


def test_romanize_spells_a_word_outside_the_table_live(tmp_path):
    word = "สมชายพร"
    assert word not in load_lexicon().words
    names = tmp_path / "names.txt"
    names.write_text(f"{word}\n", encoding="utf-8")
    result = _romanize("--file", str(names))
    assert result.returncode == 0, result.stderr
    base = R.base_spelling(dict(zip(R.ENGINES, (R.romanize_words([word], e)[0] for e in R.ENGINES))))
    expected = R.spelling_variants(word, base)
    assert result.stdout.splitlines()[1] == f"{word},{expected[0]},{'|'.join(expected[1:])}"


@pytest.mark.parametrize(
    "args, message",
    [
        (["Somchai"], "is not a Thai word"),
        (["สมชาย1"], "is not a Thai word"),
        ([], "no Thai words given"),
        (["--file", "/no/such/file.txt"], "cannot read"),
    ],
)
def test_romanize_bad_input_gets_one_line(args, message):
    result = _romanize(*args)
    assert result.returncode == 2 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_romanize_rejects_a_binary_file(tmp_path):
    binary = tmp_path / "names.txt"
    binary.write_bytes(b"\xff\xfe\x00\x81" * 10)
    result = _romanize("--file", str(binary))
    assert result.returncode == 2 and "not UTF-8" in result.stderr


def test_romanize_table_or_live_raises_input_errors_without_pythainlp():
    with pytest.raises(InputError):
        R.romanize_table_or_live([], {})
