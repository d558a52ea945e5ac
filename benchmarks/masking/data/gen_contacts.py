"""Phone and IBAN values (valid, or failing on purpose)."""

from __future__ import annotations

from collections.abc import Callable

from benchmarks.masking.data.gen_numbers import NumberValues
from benchmarks.masking.data.value_rules import (
    CA_AREAS,
    CN_AREAS,
    CN_MOBILE_PREFIXES,
    FULLWIDTH,
    IBAN_LEN,
    US_AREAS,
    _es_dc,
    _fr_rib_key,
    _it_cin,
    _no_check,
    _stdnum_iban_ok,
    iban_check_digits,
    iban_ok,
)


class ContactValues(NumberValues):
    """Numbers a person is called or paid at; cards, IDs and passports are inherited."""

    # ------------------------------------------------------------ phones
    def phone(self, kind: str, fmt: str = "") -> str:
        try:
            import phonenumbers  # noqa: F401

            have = True
        except ImportError:  # pragma: no cover
            have = False

        def one() -> str | None:
            v, region = self._phone_once(kind, fmt)
            if have:
                import phonenumbers

                p = phonenumbers.parse(v, region)
                if not phonenumbers.is_valid_number(p):
                    return None
            self.phone_region[v] = region
            return v

        def loop() -> str:
            for _ in range(500):
                v = one()
                if v:
                    return v
            raise AssertionError(kind)

        return self.unique(loop)

    def _phone_once(self, kind: str, fmt: str) -> tuple[str, str]:
        r, d = self.r, self.d
        if kind == "cn":
            p, a, b = r.choice(CN_MOBILE_PREFIXES), d(4), d(4)
            return {
                "plain": f"{p}{a}{b}",
                "sp": f"{p} {a} {b}",
                "dash": f"{p}-{a}-{b}",
                "p86sp": f"+86 {p} {a} {b}",
                "p86": f"+86{p}{a}{b}",
                "p86dash": f"+86-{p}-{a}-{b}",
                # added for the holdout split
                "0086": f"0086 {p} {a} {b}",
                "paren86": f"(+86) {p}-{a}-{b}",
                "s38": f"{p} {a}{b}",
                "p86nb": f"+86\u00a0{p}\u00a0{a}\u00a0{b}",
                # added for the seventh split
                "p86s": f"+86 {p}{a}{b}",
                # added for the eighth split
                "dot": f"{p}.{a}.{b}",
                "p86sd": f"+86 {p}-{a}-{b}",
                # added for the ninth split: full-width digits, +86- run together, and
                # 86 without the plus (as in a wa.me link)
                "fw": f"{p}{a}{b}".translate(FULLWIDTH),
                "p86nd": f"+86-{p}{a}{b}",
                "wa": f"86{p}{a}{b}",
                # added for the tenth split: 0086 run together (a contacts export)
                "0086nd": f"0086{p}{a}{b}",
                # added for the eleventh split: 86 without the plus, then spaces
                "86sp": f"86 {p} {a} {b}",
                # added for the twelfth split: the WHOIS style
                "p86dot": f"+86.{p}{a}{b}",
                # added for the thirteenth split: (+86) run together, 86- with dashes
                "paren86nd": f"(+86){p}{a}{b}",
                "86dash": f"86-{p}-{a}-{b}",
            }[fmt], "CN"
        if kind == "land":
            fmt, _, area = fmt.partition(":")
            area = area or r.choice(CN_AREAS)
            sub = r.choice("2345678") + d(7)
            return {
                "dash": f"{area}-{sub}",
                "paren": f"({area}) {sub[:4]} {sub[4:]}",
                "p86": f"+86 {area[1:]} {sub[:4]} {sub[4:]}",
                "sp": f"{area} {sub[:4]} {sub[4:]}",
                # added for the holdout split
                "p86dash": f"+86-{area[1:]}-{sub}",
                "plain": f"{area}{sub}",
                # added for the eighth split
                "paren0": f"({area}){sub}",
            }[fmt], "CN"
        if kind in ("us", "ca"):
            area = r.choice(US_AREAS if kind == "us" else CA_AREAS)
            line = "01" + d(2)
            return {
                "p1sp": f"+1 {area} 555 {line}",
                "paren": f"({area}) 555-{line}",
                "dash": f"{area}-555-{line}",
                "p1dash": f"+1-{area}-555-{line}",
                "dot": f"{area}.555.{line}",
                "": f"+1 {area} 555 {line}",
                # added for the holdout split
                "plain": f"+1{area}555{line}",
                "nat1": f"1 ({area}) 555-{line}",
                # added for the eighth split
                "p1paren": f"+1 ({area}) 555-{line}",
                # added for the ninth split
                "p1sd": f"+1 {area}-555-{line}",
                # added for the tenth split
                "n1dash": f"1-{area}-555-{line}",
                "sp": f"{area} 555 {line}",
                # added for the eleventh split: the WHOIS style
                "whois": f"+1.{area}555{line}",
            }[fmt], "US"
        if kind == "uk":
            if fmt == "land":
                return f"+44 20 7946 0{d(3)}", "GB"
            if fmt == "land0":
                return f"020 7946 0{d(3)}", "GB"
            if fmt == "mob0":  # added for the holdout split
                return f"07{r.choice(['911', '700', '400', '823', '412', '956'])} {d(6)}", "GB"
            if fmt == "p0":  # added for the eighth split
                return f"+44 (0)7{r.choice(['911', '700', '400', '823', '412'])} {d(6)}", "GB"
            if fmt == "e164":  # added for the fourteenth split
                return f"+447{r.choice(['911', '700', '400', '823', '412'])}{d(6)}", "GB"
            return f"+44 7{r.choice(['911', '700', '400', '823', '412', '956'])} {d(6)}", "GB"
        if kind == "de":
            if fmt == "mob0":  # added for the holdout split
                return f"0{r.choice(['151', '152', '160', '170', '176'])} {d(8)}", "DE"
            if fmt == "land0":
                return f"030 {r.choice('2345678')}{d(7)}", "DE"
            if fmt == "land":
                return f"+49 30 {d(8)}", "DE"
            if fmt == "p0":  # added for the eighth split
                return f"+49 (0){r.choice(['151', '160', '170', '176'])} {d(8)}", "DE"
            if fmt == "e164":  # added for the ninth split
                return f"+49{r.choice(['151', '160', '170', '176'])}{d(8)}", "DE"
            if fmt == "nd":  # added for the fourteenth split: national, run together
                return f"0{r.choice(['151', '160', '170', '176'])}{d(8)}", "DE"
            return f"+49 {r.choice(['151', '152', '160', '170', '176'])} {d(8)}", "DE"
        if kind == "jp":
            if fmt == "nat":  # added for the holdout split
                return f"0{r.choice(['90', '80', '70'])}-{d(4)}-{d(4)}", "JP"
            if fmt == "land":
                return f"+81 3-{d(4)}-{d(4)}", "JP"
            if fmt == "land0":  # added for the seventh split
                return f"03-{d(4)}-{d(4)}", "JP"
            return f"+81 {r.choice(['90', '80', '70'])}-{d(4)}-{d(4)}", "JP"
        if kind == "fr":
            if fmt == "dot":  # added for the holdout split
                return "07." + ".".join(d(2) for _ in range(4)), "FR"
            if fmt == "land":
                return "+33 1 " + " ".join(d(2) for _ in range(4)), "FR"
            if fmt == "nat":
                return "06 " + " ".join(d(2) for _ in range(4)), "FR"
            if fmt == "p0":  # added for the eighth split
                return "+33 (0)6 " + " ".join(d(2) for _ in range(4)), "FR"
            if fmt == "nd":  # added for the fourteenth split: national, run together
                return "0" + r.choice("67") + "".join(d(2) for _ in range(4)), "FR"
            return "+33 " + r.choice("67") + " " + " ".join(d(2) for _ in range(4)), "FR"
        if kind == "sg":
            if fmt == "nat":  # added for the holdout split
                return f"{r.choice('89')}{d(3)} {d(4)}", "SG"
            return f"+65 {r.choice('89')}{d(3)} {d(4)}", "SG"
        if kind == "hk":
            if fmt == "nat":  # added for the holdout split
                return f"{r.choice('569')}{d(3)} {d(4)}", "HK"
            return f"+852 {r.choice('5679')}{d(3)} {d(4)}", "HK"
        if kind == "au":
            if fmt == "mob":  # added for the holdout split
                return f"+61 4{d(2)} {d(3)} {d(3)}", "AU"
            if fmt == "mob0":
                return f"04{d(2)} {d(3)} {d(3)}", "AU"
            return f"+61 2 {r.choice('89')}{d(3)} {d(4)}", "AU"
        if kind == "kr":
            if fmt == "nat":  # added for the holdout split
                return f"010-{r.choice('2345678')}{d(3)}-{d(4)}", "KR"
            return f"+82 10-{r.choice('2345678')}{d(3)}-{d(4)}", "KR"
        if kind == "pt":
            return f"+351 9{r.choice('1236')}{d(1)} {d(3)} {d(3)}", "PT"
        if kind == "cz":
            return f"+420 {r.choice('67')}{r.choice('0237')}{d(1)} {d(3)} {d(3)}", "CZ"
        # added for the holdout split
        more: dict[str, Callable[[], tuple[str, str]]] = {
            "in": lambda: (f"+91 {r.choice('6789')}{d(4)} {d(5)}", "IN"),
            "in0": lambda: (f"0{r.choice('6789')}{d(4)} {d(5)}", "IN"),
            "br": lambda: (f"+55 11 9{d(4)}-{d(4)}", "BR"),
            "mx": lambda: (f"+52 55 {d(4)} {d(4)}", "MX"),
            "es": lambda: (f"+34 6{d(2)} {d(3)} {d(3)}", "ES"),
            "it": lambda: (f"+39 3{r.choice('2345')}{d(1)} {d(3)} {d(4)}", "IT"),
            "nl": lambda: (f"+31 6 {d(8)}", "NL"),
            "nl0": lambda: (f"06-{d(8)}", "NL"),
            "tw": lambda: (f"+886 9{d(2)} {d(3)} {d(3)}", "TW"),
            "tw0": lambda: (f"09{d(2)}-{d(3)}-{d(3)}", "TW"),
            "ru": lambda: (f"+7 9{d(2)} {d(3)}-{d(2)}-{d(2)}", "RU"),
            "ru8": lambda: (f"8 (9{d(2)}) {d(3)}-{d(2)}-{d(2)}", "RU"),
            "za": lambda: (f"+27 8{r.choice('234')} {d(3)} {d(4)}", "ZA"),
            "ae": lambda: (f"+971 5{r.choice('0256')} {d(3)} {d(4)}", "AE"),
            "ie": lambda: (f"+353 8{r.choice('35679')} {d(3)} {d(4)}", "IE"),
            "ch": lambda: (f"+41 7{r.choice('6789')} {d(3)} {d(2)} {d(2)}", "CH"),
            "se": lambda: (f"+46 70 {d(3)} {d(2)} {d(2)}", "SE"),
            "my": lambda: (f"+60 1{r.choice('2346789')}-{d(3)} {d(4)}", "MY"),
            "ng": lambda: (f"+234 80{r.choice('3678')} {d(3)} {d(4)}", "NG"),
            "pl": lambda: (f"+48 {r.choice('5678')}{d(2)} {d(3)} {d(3)}", "PL"),
            "mo": lambda: (f"+853 6{d(3)} {d(4)}", "MO"),
            "th": lambda: (f"+66 8{d(1)} {d(3)} {d(4)}", "TH"),
            "id": lambda: (f"+62 812-{d(4)}-{d(4)}", "ID"),
            "ph": lambda: (f"+63 917 {d(3)} {d(4)}", "PH"),
            "00": lambda: (f"0049 {r.choice(['151', '160', '176'])} {d(8)}", "CH"),
            # added for the seventh split
            "vn": lambda: (f"+84 9{d(2)} {d(3)} {d(3)}", "VN"),
            "tr": lambda: (f"+90 5{r.choice('0345')}{d(1)} {d(3)} {d(2)} {d(2)}", "TR"),
            "tr0": lambda: (f"0 5{r.choice('0345')}{d(1)} {d(3)} {d(2)} {d(2)}", "TR"),
            "ar": lambda: (f"+54 9 11 {d(4)}-{d(4)}", "AR"),
            "cl": lambda: (f"+56 9 {d(4)} {d(4)}", "CL"),
            "co": lambda: (f"+57 3{d(2)} {d(3)} {d(4)}", "CO"),
            "nz": lambda: (f"+64 21 {d(3)} {d(4)}", "NZ"),
            "nz0": lambda: (f"021 {d(3)} {d(4)}", "NZ"),
            "ke": lambda: (f"+254 7{d(2)} {d(3)} {d(3)}", "KE"),
            "il": lambda: (f"+972 5{r.choice('0234')}-{d(3)}-{d(4)}", "IL"),
            "ua": lambda: (
                f"+380 {r.choice(['50', '67', '68', '96', '97', '98', '63', '73', '93'])}"
                f" {d(3)} {d(2)} {d(2)}",
                "UA",
            ),
            "at": lambda: (f"+43 664 {d(7)}", "AT"),
            "be": lambda: (f"+32 4{r.choice('789')}{d(1)} {d(2)} {d(2)} {d(2)}", "BE"),
            "dk": lambda: (f"+45 {r.choice('2345')}{d(1)} {d(2)} {d(2)} {d(2)}", "DK"),
            "no": lambda: (f"+47 {r.choice('49')}{d(2)} {d(2)} {d(3)}", "NO"),
            "fi": lambda: (f"+358 40 {d(3)} {d(4)}", "FI"),
            "pk": lambda: (f"+92 3{d(2)} {d(7)}", "PK"),
            "hu": lambda: (f"+36 {r.choice(['20', '30', '70'])} {d(3)} {d(4)}", "HU"),
            "ro": lambda: (f"+40 7{r.choice('2345')}{d(1)} {d(3)} {d(3)}", "RO"),
            "kz": lambda: (f"+7 70{r.choice('0157')} {d(3)} {d(2)} {d(2)}", "KZ"),
            "gr": lambda: (f"+30 69{d(1)} {d(3)} {d(4)}", "GR"),
            "sn": lambda: (f"+221 7{r.choice('0678')} {d(3)} {d(2)} {d(2)}", "SN"),
            "gh": lambda: (f"+233 {r.choice(['24', '54', '55', '20', '50'])} {d(3)} {d(4)}", "GH"),
            "rs": lambda: (f"+381 6{r.choice('01234')} {d(3)} {d(4)}", "RS"),
            # added for the eighth split
            "eg": lambda: (f"+20 1{r.choice('0125')} {d(4)} {d(4)}", "EG"),
            "sa": lambda: (f"+966 5{r.choice('03456')} {d(3)} {d(4)}", "SA"),
            "ma": lambda: (f"+212 6{d(2)}-{d(6)}", "MA"),
            "pe": lambda: (f"+51 9{d(2)} {d(3)} {d(3)}", "PE"),
            "bd": lambda: (f"+880 1{r.choice('3789')}{d(2)}-{d(6)}", "BD"),
            "lk": lambda: (f"+94 7{r.choice('0125678')} {d(3)} {d(4)}", "LK"),
            "np": lambda: (f"+977 98{r.choice('0456')}-{d(7)}", "NP"),
            "lt": lambda: (f"+370 6{d(2)} {d(5)}", "LT"),
            "lv": lambda: (f"+371 2{d(3)} {d(4)}", "LV"),
            "ee": lambda: (f"+372 5{d(3)} {d(4)}", "EE"),
            "hr": lambda: (f"+385 9{r.choice('1258')} {d(3)} {d(4)}", "HR"),
            "si": lambda: (f"+386 {r.choice(['31', '40', '41', '51', '70'])} {d(3)} {d(3)}", "SI"),
            "bg": lambda: (f"+359 8{r.choice('789')} {d(3)} {d(4)}", "BG"),
            "is": lambda: (f"+354 {r.choice('678')}{d(2)} {d(4)}", "IS"),
            "lu": lambda: (f"+352 621 {d(3)} {d(3)}", "LU"),
            "mt": lambda: (f"+356 79{d(2)} {d(4)}", "MT"),
            "cy": lambda: (f"+357 9{r.choice('679')} {d(6)}", "CY"),
            "qa": lambda: (f"+974 {r.choice('3567')}{d(3)} {d(4)}", "QA"),
            "tz": lambda: (f"+255 7{r.choice('1345678')}{d(1)} {d(3)} {d(3)}", "TZ"),
            "ug": lambda: (f"+256 7{r.choice('0578')}{d(1)} {d(6)}", "UG"),
            "et": lambda: (f"+251 9{r.choice('123456789')} {d(3)} {d(4)}", "ET"),
            "uy": lambda: (f"+598 9{r.choice('1234589')} {d(3)} {d(3)}", "UY"),
            "ec": lambda: (f"+593 9{r.choice('6789')} {d(3)} {d(4)}", "EC"),
            "ir": lambda: (f"+98 91{d(1)} {d(3)} {d(4)}", "IR"),
            "mn": lambda: (f"+976 {r.choice('89')}{d(3)} {d(4)}", "MN"),
            "kh": lambda: (f"+855 {r.choice(['12', '17', '92', '96'])} {d(3)} {d(3)}", "KH"),
            "kr82": lambda: (f"+82-10-{r.choice('2345678')}{d(3)}-{d(4)}", "KR"),
            # added for the ninth split: national formats, and 00 prefixes dialled from China
            "ke0": lambda: (f"07{d(2)} {d(6)}", "KE"),
            "ng0": lambda: (f"080{r.choice('3678')} {d(3)} {d(4)}", "NG"),
            "za0": lambda: (f"08{r.choice('234')} {d(3)} {d(4)}", "ZA"),
            "ie0": lambda: (f"08{r.choice('35679')} {d(3)} {d(4)}", "IE"),
            "es0": lambda: (f"6{d(2)} {d(2)} {d(2)} {d(2)}", "ES"),
            "be0": lambda: (f"04{r.choice('789')}{d(1)} {d(2)} {d(2)} {d(2)}", "BE"),
            "ch0": lambda: (f"07{r.choice('6789')} {d(3)} {d(2)} {d(2)}", "CH"),
            "at0": lambda: (f"0664 {d(7)}", "AT"),
            "pl0": lambda: (f"{r.choice('5678')}{d(2)} {d(3)} {d(3)}", "PL"),
            "se0": lambda: (f"070-{d(3)} {d(2)} {d(2)}", "SE"),
            "ae0": lambda: (f"05{r.choice('0256')} {d(3)} {d(4)}", "AE"),
            "sa0": lambda: (f"05{r.choice('03456')} {d(3)} {d(4)}", "SA"),
            "eg0": lambda: (f"01{r.choice('0125')} {d(4)} {d(4)}", "EG"),
            "vn0": lambda: (f"09{d(1)} {d(3)} {d(4)}", "VN"),
            "id0": lambda: (f"0812-{d(4)}-{d(4)}", "ID"),
            "ph0": lambda: (f"0917 {d(3)} {d(4)}", "PH"),
            "br0": lambda: (f"(11) 9{d(4)}-{d(4)}", "BR"),
            "my0": lambda: (f"01{r.choice('2346789')}-{d(3)} {d(4)}", "MY"),
            "th0": lambda: (f"08{d(1)} {d(3)} {d(4)}", "TH"),
            "pk0": lambda: (f"03{d(2)} {d(7)}", "PK"),
            "it0": lambda: (f"3{r.choice('2345')}{d(1)} {d(3)} {d(4)}", "IT"),
            "uk00": lambda: (f"0044 7{r.choice(['911', '700', '400', '823'])} {d(6)}", "CN"),
            "fr00": lambda: (
                "0033 " + r.choice("67") + " " + " ".join(d(2) for _ in range(4)),
                "CN",
            ),
            # added for the tenth split: more national formats
            "no0": lambda: (f"{r.choice('49')}{d(2)} {d(2)} {d(3)}", "NO"),
            "co0": lambda: (f"3{d(2)} {d(3)} {d(4)}", "CO"),
            "ro0": lambda: (f"07{r.choice('2345')}{d(1)} {d(3)} {d(3)}", "RO"),
            # added for the eleventh split: more national formats
            "pt0": lambda: (f"9{r.choice('1236')}{d(1)} {d(3)} {d(3)}", "PT"),
            "gr0": lambda: (f"69{d(1)} {d(3)} {d(4)}", "GR"),
            "ua0": lambda: (
                f"0{r.choice(['50', '67', '68', '96', '97', '98', '63', '73', '93'])}"
                f" {d(3)} {d(2)} {d(2)}",
                "UA",
            ),
            "mx0": lambda: (f"55 {d(4)} {d(4)}", "MX"),
            # added for the twelfth split: a German slash, ten bare Indian digits, E.164
            # run together (JP, NG), Pakistani dashes, Bangladeshi, Brazilian and British
            # national formats
            "deslash": lambda: (f"0{r.choice(['151', '160', '170', '176'])}/{d(8)}", "DE"),
            "in10": lambda: (f"{r.choice('6789')}{d(9)}", "IN"),
            "jpe164": lambda: (f"+81{r.choice(['90', '80', '70'])}{d(8)}", "JP"),
            "ng234": lambda: (
                f"+234{r.choice(['803', '806', '813', '816', '703', '706', '810'])}{d(7)}",
                "NG",
            ),
            "pkdash": lambda: (f"+92-3{d(2)}-{d(7)}", "PK"),
            "bd0": lambda: (f"01{r.choice('3789')}{d(2)}-{d(6)}", "BD"),
            "brparen": lambda: (f"+55 (11) 9{d(4)}-{d(4)}", "BR"),
            "ukns": lambda: (f"07{r.choice(['911', '700', '400', '823'])}{d(6)}", "GB"),
            # added for the thirteenth split: more national and international formats
            "krsp": lambda: (f"010 {r.choice('2345678')}{d(3)} {d(4)}", "KR"),
            "jp0sp": lambda: (f"0{r.choice(['90', '80', '70'])} {d(4)} {d(4)}", "JP"),
            "th0dash": lambda: (f"08{r.choice('1256789')}-{d(3)}-{d(4)}", "TH"),
            "indash": lambda: (f"+91-{r.choice('6789')}{d(4)}-{d(5)}", "IN"),
            "pldash": lambda: (f"+48 {r.choice('5678')}{d(2)}-{d(3)}-{d(3)}", "PL"),
            "es34": lambda: (f"+346{d(8)}", "ES"),
            "hkdash": lambda: (f"+852-{r.choice('569')}{d(3)}-{d(4)}", "HK"),
            "twdash": lambda: (f"+886-9{d(2)}-{d(3)}-{d(3)}", "TW"),
        }
        if kind in more:
            return more[kind]()
        raise ValueError(kind)

    # ------------------------------------------------------------ IBAN
    def _bban(self, cc: str) -> str:
        d, r = self.d, self.r
        if cc == "DE":
            return d(8) + d(10)
        if cc == "GB":
            return r.choice(["NWBK", "BARC", "HBUK", "LOYD", "MIDL", "MONZ"]) + d(6) + d(8)
        if cc == "FR":
            bank, branch, acct = d(5), d(5), d(11)
            return bank + branch + acct + _fr_rib_key(bank, branch, acct)
        if cc == "NL":
            return r.choice(["ABNA", "INGB", "RABO", "TRIO", "KNAB", "SNSB"]) + d(10)
        if cc == "ES":
            bank, branch, acct = d(4), d(4), d(10)
            return bank + branch + _es_dc(bank, branch, acct) + acct
        if cc == "IT":
            rest = d(5) + d(5) + d(12)
            return _it_cin(rest) + rest
        if cc == "CH":
            return d(5) + d(12)
        if cc == "BE":
            first = d(10)
            chk = int(first) % 97 or 97
            return first + f"{chk:02d}"
        if cc == "AT":
            return d(16)
        if cc == "IE":
            return r.choice(["AIBK", "BOFI"]) + d(6) + d(8)
        if cc == "GR":
            return d(3) + d(4) + d(16)
        if cc == "SE":
            return d(20)
        if cc == "CZ":
            return d(20)
        if cc == "PT":
            return d(21)
        if cc == "DK":
            return d(14)
        if cc == "PL":
            return d(24)
        # added for the holdout split
        if cc in ("LU", "LT"):
            return d(3 if cc == "LU" else 5) + d(13 if cc == "LU" else 11)
        if cc == "FI":
            return d(14)
        if cc == "NO":
            for _ in range(100):
                first = d(10)
                c = _no_check(first)
                if c is not None:
                    return first + c
            raise AssertionError("NO")
        if cc == "AE":
            return d(3) + d(16)
        if cc == "SA":
            return d(2) + d(18)
        if cc == "TR":
            return d(5) + "0" + d(16)
        if cc == "RO":
            return r.choice(["BTRL", "RNCB", "BRDE", "INGB", "BACX"]) + d(16)
        if cc == "HR":
            return d(17)
        if cc == "SK":
            return d(20)
        # added for the seventh split
        if cc == "MT":
            return r.choice(["MALT", "VALL", "APSB"]) + d(5) + d(18)
        if cc == "CY":
            return d(3) + d(5) + d(16)
        if cc == "EE":
            return d(2) + d(14)
        if cc == "LV":
            return r.choice(["HABA", "UNLA", "RIKO"]) + d(13)
        if cc == "SI":
            return d(5) + d(8) + d(2)
        if cc == "HU":
            return d(3) + d(4) + d(1) + d(15) + d(1)
        if cc == "BG":
            return r.choice(["BNBG", "UNCR", "STSA"]) + d(4) + d(2) + d(8)
        if cc == "IS":
            return d(4) + d(2) + d(6) + d(10)
        if cc == "LI":
            return d(5) + d(12)
        if cc == "UA":
            return d(6) + d(19)
        if cc == "IL":
            return d(3) + d(3) + d(13)
        if cc == "QA":
            return r.choice(["QNBA", "DOHB", "CBQA"]) + d(21)
        if cc == "RS":
            return d(3) + d(13) + d(2)
        if cc == "BR":
            return d(8) + d(5) + d(10) + "C" + "1"
        if cc == "GE":
            return r.choice(["TB", "BG"]) + d(16)
        if cc == "KZ":
            return d(3) + d(13)
        if cc == "PK":
            return r.choice(["HABB", "MEZN", "UNIL"]) + d(16)
        if cc == "MC":
            bank, branch, acct = d(5), d(5), d(11)
            return bank + branch + acct + _fr_rib_key(bank, branch, acct)
        # added for the eighth split
        if cc in ("AD", "LB"):
            return d(24 if cc == "LB" else 20)
        if cc == "SM":
            rest = d(5) + d(5) + d(12)
            return _it_cin(rest) + rest
        if cc in ("JO", "KW", "BH", "AZ", "GI", "VG"):
            banks = {
                "JO": ["ARAB", "CBJO", "HBHO"],
                "KW": ["NBOK", "CBKU", "GULB"],
                "BH": ["NBOB", "BBKU", "AUBB"],
                "AZ": ["NABZ", "IBAZ", "AIIB"],
                "GI": ["NWBK", "GIBK"],
                "VG": ["VPVG"],
            }[cc]
            return r.choice(banks) + d(IBAN_LEN[cc] - 8)
        if cc in ("EG", "TN", "AL", "BA", "ME", "MK", "FO", "XK", "OM"):
            return d(IBAN_LEN[cc] - 4)
        if cc == "MU":
            return r.choice(["MCBL", "SBMM", "BOMM"]) + d(2) + d(2) + d(12) + "000MUR"
        if cc == "MD":
            return r.choice(["AG", "ML", "VI"]) + d(18)
        if cc == "CR":
            return "0" + d(17)
        if cc == "DO":
            return r.choice(["BAGR", "BPDO"]) + d(20)
        if cc == "SC":
            return r.choice(["SSCB", "MCBL"]) + d(2) + d(2) + d(16) + "SCR"
        if cc == "VA":
            return "001" + d(15)
        # added for the ninth split
        if cc in ("IQ", "SV", "GT", "PS", "BY", "NI", "YE"):
            banks = {
                "IQ": ["NBIQ", "RAFB", "AIBI"],
                "SV": ["CENR", "BAMC", "AGRI"],
                "GT": ["TRAJ", "BAGU", "INDL"],
                "PS": ["PALS", "ARAB", "QUDS"],
                "BY": ["NBRB", "AKBB", "ALFA"],
                "NI": ["BAPR", "BCCE", "LAFI"],
                "YE": ["CBYE", "IBYE"],
            }[cc]
            return r.choice(banks) + d(IBAN_LEN[cc] - 8)
        if cc == "RU":
            return "04" + d(7) + d(5) + d(15)
        if cc in ("TL", "LY", "ST", "MN"):
            return d(IBAN_LEN[cc] - 4)
        # added for the twelfth split
        if cc in ("MR", "SD", "SO", "DJ", "BI"):
            return d(IBAN_LEN[cc] - 4)
        if cc == "HN":
            return r.choice(["BACN", "CASO", "FICO", "ATLA"]) + d(20)
        # added for the thirteenth split
        if cc == "FK":
            return r.choice(["SC", "FI"]) + d(12)
        if cc == "GL":
            return d(14)
        if cc == "LC":
            return r.choice(["HEMM", "BOSL", "RBNK"]) + d(24)
        raise ValueError(cc)

    def iban(self, cc: str, fmt: str, bad: bool = False) -> str:
        def one() -> str | None:
            bban = self._bban(cc)
            chk = iban_check_digits(cc, bban)
            if bad:
                chk = f"{(int(chk) - 2 + self.r.randint(1, 96)) % 97 + 2:02d}"
            s = cc + chk + bban
            assert len(s) == IBAN_LEN[cc], (cc, len(s))
            assert iban_ok(s) != bad
            if not bad and not _stdnum_iban_ok(s):
                # python-stdnum also checks some national parts (a Belgian bank code
                # must exist): draw again. No dev/test/holdout value needed a redraw,
                # so this (added for the final split) leaves those files unchanged.
                return None
            if fmt in ("s", "l"):
                s = " ".join(s[i : i + 4] for i in range(0, len(s), 4))
            if fmt == "l":  # added for the ninth split: typed in lower case
                s = s.lower()
            return s

        return self.unique(one)
