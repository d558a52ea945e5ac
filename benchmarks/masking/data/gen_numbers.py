"""Card, resident ID, passport, phone and IBAN values (valid, or failing on purpose)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from benchmarks.masking.data.gen_base import GenBase
from benchmarks.masking.data.value_rules import (
    CA_AREAS,
    CN_AREAS,
    CN_MOBILE_PREFIXES,
    DIGITS,
    FULLWIDTH,
    IBAN_LEN,
    RIC_REGIONS,
    UP_BINS,
    UPPER,
    US_AREAS,
    _es_dc,
    _fr_rib_key,
    _it_cin,
    _no_check,
    _stdnum_iban_ok,
    iban_check_digits,
    iban_ok,
    luhn_complete,
    luhn_ok,
    ric_check_char,
)


class NumberValues(GenBase):
    """Numbers a person is identified or paid by."""

    # ------------------------------------------------------------ cards
    def card_digits(self, brand: str) -> str:
        r = self.r
        if brand == "visa":
            return luhn_complete("4" + self.d(14))
        if brand == "visa13":
            return luhn_complete("4" + self.d(11))
        if brand == "mc":
            return luhn_complete("5" + r.choice("12345") + self.d(13))
        if brand == "mc2":
            return luhn_complete(str(r.randint(2221, 2720)) + self.d(11))
        if brand == "amex":
            return luhn_complete(r.choice(["34", "37"]) + self.d(12))
        if brand == "up16":
            return luhn_complete(r.choice(UP_BINS) + self.d(9))
        if brand == "up19":
            return luhn_complete(r.choice(UP_BINS) + self.d(12))
        if brand == "jcb":
            return luhn_complete(str(r.randint(3528, 3589)) + self.d(11))
        if brand == "disc":
            return luhn_complete("6011" + self.d(11))
        # added for the seventh split: Mir (2200-2204) and 14-digit Diners Club
        if brand == "mir":
            return luhn_complete("220" + r.choice("01234") + self.d(11))
        if brand == "diners":
            return luhn_complete("36" + self.d(11))
        # added for the eighth split: Discover 65, Maestro, RuPay and Troy, 16 digits each
        if brand == "disc65":
            return luhn_complete("65" + self.d(13))
        if brand == "maestro":
            return luhn_complete(r.choice(["5018", "5020", "5038", "6759"]) + self.d(11))
        if brand == "rupay":
            return luhn_complete(r.choice(["6521", "6522", "6070", "6080"]) + self.d(11))
        if brand == "troy":
            return luhn_complete("9792" + self.d(11))
        # added for the ninth split: Elo and Hipercard (Brazil), Dankort, 19-digit Verve
        # (Nigeria) and 15-digit UATP (airline) cards
        if brand == "elo":
            return luhn_complete(r.choice(["636368", "504175", "438935", "451416"]) + self.d(9))
        if brand == "hiper":
            return luhn_complete("606282" + self.d(9))
        if brand == "dankort":
            return luhn_complete("5019" + self.d(11))
        if brand == "verve":
            return luhn_complete(r.choice(["506099", "506105", "506118"]) + self.d(12))
        if brand == "uatp":
            return luhn_complete("1" + r.choice("23456789") + self.d(12))
        # added for the eleventh split: NAPAS (Vietnam), mada (Saudi Arabia), UzCard and
        # Humo (Uzbekistan), 16 digits each
        if brand == "napas":
            return luhn_complete("9704" + r.choice(["05", "15", "18", "22", "36"]) + self.d(9))
        if brand == "mada":
            return luhn_complete(r.choice(["588845", "588848", "968208", "968211"]) + self.d(9))
        if brand == "uzcard":
            return luhn_complete("8600" + self.d(11))
        if brand == "humo":
            return luhn_complete("9860" + self.d(11))
        # added for the twelfth split: Meeza (Egypt), 17-digit Bancontact (Belgium),
        # Belkart (Belarus) and Cabal (Argentina), the others 16 digits
        if brand == "meeza":
            return luhn_complete(r.choice(["507803", "507808", "507809", "507810"]) + self.d(9))
        if brand == "bancontact":
            return luhn_complete("6703" + self.d(12))
        if brand == "belkart":
            return luhn_complete("9112" + self.d(11))
        if brand == "cabal":
            return luhn_complete(r.choice(["604201", "589657"]) + self.d(9))
        # added for the thirteenth split: GPN (Indonesia), Prostir (Ukraine), Shetab (Iran)
        # and Naranja (Argentina), 16 digits each
        if brand == "gpn":
            return luhn_complete("9360" + r.choice(["0008", "0009", "0011", "0013"]) + self.d(7))
        if brand == "prostir":
            return luhn_complete("9804" + self.d(11))
        if brand == "shetab":
            return luhn_complete(
                r.choice(["603799", "610433", "589210", "627353", "622106"]) + self.d(9)
            )
        if brand == "naranja":
            return luhn_complete("589562" + self.d(9))
        raise ValueError(brand)

    def card(self, brand: str, fmt: str) -> str:
        # nb (no-break spaces) and the 14-digit 4-6-4 grouping were added for the seventh split
        # s4 (spaces every four digits, whatever the brand) was added for the eighth split
        # fw (full-width digits, no separator) was added for the fourteenth split
        sep = {"s": " ", "d": "-", "n": "", "nb": "\u00a0", "s4": " ", "fw": ""}[fmt]

        def one() -> str:
            num = self.card_digits(brand)
            if fmt == "fw":
                return num.translate(FULLWIDTH)
            sizes = {
                13: [4, 4, 5],
                14: [4, 6, 4],
                15: [4, 6, 5],
                16: [4, 4, 4, 4],
                17: [4, 4, 4, 4, 1],  # added for the twelfth split (Bancontact)
                19: [4, 4, 4, 4, 3],
            }[len(num)]
            if fmt == "s4":
                sizes = [4] * (len(num) // 4) + ([len(num) % 4] if len(num) % 4 else [])
            return self.group(num, sizes, sep) if sep else num

        return self.unique(one)

    def card_fail(self, brand: str, fmt: str) -> str:
        def one() -> str:
            num = self.card_digits(brand)
            bad = str((int(num[-1]) + self.r.randint(1, 9)) % 10)
            num = num[:-1] + bad
            assert not luhn_ok(num)
            sep = {"s": " ", "d": "-", "n": ""}[fmt]
            return self.group(num, [4, 4, 4, 4], sep) if sep and len(num) == 16 else num

        return self.unique(one)

    def imei(self) -> str:
        return self.unique(
            lambda: luhn_complete(
                self.r.choice(["35209900", "35332510", "86891204", "35847631"]) + self.d(6)
            )
        )

    # ------------------------------------------------------------ Chinese resident ID
    def _region_birth(self, kid: bool = False, elder: bool = False) -> str:
        region = self.r.choice(sorted(RIC_REGIONS))
        start = dt.date(RIC_REGIONS[region], 1, 1).toordinal()
        end = dt.date(2006, 12, 31).toordinal()
        if kid:  # added for the eighth split: children born 2010-2022
            start, end = dt.date(2010, 1, 1).toordinal(), dt.date(2022, 12, 31).toordinal()
        if elder:  # added for the ninth split: born 1952-1962, in a region known since 1952
            region = self.r.choice(sorted(k for k, y in RIC_REGIONS.items() if y <= 1952))
            start, end = dt.date(1952, 1, 1).toordinal(), dt.date(1962, 12, 31).toordinal()
        return region + dt.date.fromordinal(self.r.randint(start, end)).strftime("%Y%m%d")

    def ric(self, mode: str = "") -> str:
        def one() -> str:
            for _ in range(500):
                first = self._region_birth(kid=mode == "kid", elder=mode == "elder") + self.d(3)
                c = ric_check_char(first)
                if mode.upper() == "X" and c != "X":
                    continue
                if mode in ("", "kid", "elder", "dash", "fw") and c == "X":
                    # keep X for the explicit cases
                    continue
                v = first + c
                if mode == "x":
                    v = v.lower()
                if mode == "sp":
                    v = v[:6] + " " + v[6:14] + " " + v[14:]
                if mode == "dash":  # added for the ninth split: 6-8-4 groups with dashes
                    v = v[:6] + "-" + v[6:14] + "-" + v[14:]
                if mode == "fw":  # added for the fourteenth split: full-width digits
                    v = v.translate(FULLWIDTH)
                return v
            raise AssertionError

        return self.unique(one)

    def ric15(self) -> str:
        """A first-generation 15-digit resident ID (added for the ninth split): region,
        YYMMDD birth date and a 3-digit sequence, no check character."""

        def one() -> str:
            region = self.r.choice(sorted(k for k, y in RIC_REGIONS.items() if y <= 1983))
            start, end = dt.date(1935, 1, 1).toordinal(), dt.date(1980, 12, 31).toordinal()
            birth = dt.date.fromordinal(self.r.randint(start, end)).strftime("%y%m%d")
            return region + birth + self.d(3)

        return self.unique(one)

    def ric_bad_check(self) -> str:
        def one() -> str:
            first = self._region_birth() + self.d(3)
            good = ric_check_char(first)
            bad = self.r.choice([c for c in "0123456789" if c != good and not luhn_ok(first + c)])
            return first + bad

        return self.unique(one)

    def ric_bad_date(self) -> str:
        def one() -> str | None:
            y = self.r.randint(1960, 2004)
            md = self.r.choice(["1301", "0230", "1131", "0431", "0000", "1500", "0932", "0229"])
            if md == "0229" and y % 4 == 0:
                md = "0230"
            first = self.r.choice(sorted(RIC_REGIONS)) + str(y) + md + self.d(3)
            v = first + ric_check_char(first)
            return None if luhn_ok(v) else v

        return self.unique(one)

    # ------------------------------------------------------------ passports
    def passport(self, kind: str) -> str:
        r = self.r
        L = "ABCDEFGHJKLMNPQRSTUVWXYZ"

        def one() -> str:
            if kind == "cnE":
                return "E" + r.choice("123456789") + self.d(7)
            if kind == "cnEA":
                return "E" + r.choice("ABCDEFGHJKLMN") + self.d(7)
            if kind == "cnG":
                return "G" + r.choice("3456789") + self.d(7)
            if kind in ("us", "uk"):
                return r.choice("12345678") + self.d(8)
            if kind == "de":
                return r.choice("CFGHJK") + self.s("CFGHJKLMNPRTVWXYZ0123456789", 8)
            if kind == "jp":
                return r.choice(["T", "M"]) + r.choice("KRSZHE") + self.d(7)
            if kind == "hk":
                return r.choice("KH") + self.d(8)
            if kind == "ca":
                return self.s(L, 2) + self.d(6)
            if kind == "in":
                return r.choice("JKLMNPRSTUVWZ") + self.d(7)
            if kind == "fr":
                return self.d(2) + self.s(L, 2) + self.d(5)
            if kind == "kr":
                return "M" + self.d(8)
            if kind == "es":
                return self.s(L, 3) + self.d(6)
            if kind == "ng":
                return "A" + self.d(8)
            if kind == "pt":
                return r.choice("CNP") + self.d(6)
            if kind == "gr":
                return self.s(L, 2) + self.d(7)
            # added for the holdout split
            if kind in ("it", "pl", "ie"):
                return self.s(L, 2) + self.d(7)
            if kind == "au":
                return r.choice("PNRE") + r.choice(L) + self.d(7)
            if kind == "br":
                return self.s(L, 2) + self.d(6)
            if kind == "mx":
                return r.choice("GN") + self.d(8)
            if kind == "ru":
                return r.choice("1234567") + self.d(8)
            if kind == "tw":
                return "3" + self.d(8)
            if kind == "sg":
                return r.choice("EK") + self.d(7) + r.choice(UPPER)
            if kind in ("ch", "vn"):
                return r.choice("XS" if kind == "ch" else "BC") + self.d(7)
            if kind == "nl":
                nl = "ABCDEFGHIJKLMNPQRSTUVWXYZ"
                return self.s(nl, 2) + self.s(nl + DIGITS, 6) + self.d(1)
            # added for the seventh split
            if kind in ("se", "cz", "il"):
                return r.choice("123456789") + self.d(7)
            if kind == "dk":
                return r.choice("12") + self.d(8)
            if kind in ("fi", "th", "pk"):
                return self.s(L, 2) + self.d(7)
            if kind in ("at", "id"):
                return r.choice("PUXC" if kind == "at" else "ABCX") + self.d(7)
            if kind in ("be", "ua", "nz"):
                return self.s(L, 2) + self.d(6)
            if kind == "tr":
                return "U" + self.d(8)
            if kind in ("my", "za"):
                return "A" + self.d(8)
            if kind == "ar":
                return "AA" + r.choice("ABCDEFG") + self.d(6)
            if kind == "ph":
                return "P" + self.d(7) + r.choice(L)
            if kind == "hu":
                return self.s(L, 2) + self.d(r.choice([6, 7]))
            if kind == "kz":
                return "N" + self.d(8)
            # added for the eighth split
            if kind == "cnP":  # Chinese service and public-affairs passports
                return r.choice(["PE", "SE"]) + self.d(7)
            if kind in ("lt", "ro"):
                return self.d(8)
            if kind in ("hr", "bg", "pe"):
                return r.choice("123456789") + self.d(8)
            if kind in ("lv", "bd", "ma"):
                return self.s(L, 2) + self.d(7)
            if kind == "si":
                return "P" + r.choice("ABC") + self.d(7)
            if kind == "eg":
                return "A" + self.d(8)
            if kind == "ir":
                return r.choice("KXY") + self.d(8)
            if kind in ("lk", "mn", "is", "ee"):
                return {"lk": "N", "mn": "E", "is": "A", "ee": "K"}[kind] + self.d(7)
            if kind == "sa":
                return r.choice(L) + self.d(7)
            if kind == "ke":
                return "AK" + self.d(7)
            if kind == "gh":
                return "G" + self.d(7)
            if kind == "cl":
                return r.choice("FP") + self.d(8)
            if kind in ("co", "lu"):
                return self.s(L, 2) + self.d(6)
            if kind == "mo":
                return "M" + r.choice("AB") + self.d(7)
            # added for the ninth split
            if kind == "cnD":  # Chinese diplomatic passports
                return "DE" + self.d(7)
            if kind == "usA":  # US next-generation passport books: a letter, then 8 digits
                return r.choice("AZ") + self.d(8)
            if kind in ("sk", "uz", "np", "et"):
                return {"sk": self.s(L, 2), "uz": "FA", "np": "PA", "et": "EP"}[kind] + self.d(7)
            if kind in ("ae", "qa", "ec", "kh"):
                return {"ae": r.choice(L), "qa": "A", "ec": "A", "kh": "N"}[kind] + self.d(7)
            if kind in ("ug", "az"):
                return {"ug": "A", "az": "C"}[kind] + self.d(8)
            if kind == "tz":
                return "TAE" + self.d(6)
            if kind == "ge":
                return self.d(2) + self.s(L, 2) + self.d(5)
            if kind == "ve":
                return r.choice("123456789") + self.d(8)
            if kind == "uy":
                return "C" + self.d(6)
            # added for the tenth split
            if kind in ("by", "am", "kg"):
                two = {"by": ["MP", "MC", "KH"], "am": ["AR", "AT"], "kg": ["AC"]}
                return r.choice(two[kind]) + self.d(7)
            if kind in ("mm", "zm", "rw", "lb"):
                two = {"mm": ["MA", "MB", "MC"], "zm": ["ZN"], "rw": ["PC"], "lb": ["LR"]}
                return r.choice(two[kind]) + self.d(7 if kind == "lb" else 6)
            if kind == "rs":
                return "0" + self.d(8)
            if kind in ("ba", "af"):
                return {"ba": r.choice("ABC"), "af": "P"}[kind] + self.d(7)
            # added for the eleventh split
            if kind in ("dz", "cr"):
                return r.choice("123456789") + self.d(8)
            if kind == "cy":
                return "K" + self.d(8)
            if kind == "ci":
                return self.d(2) + "A" + r.choice("BCDE") + self.d(5)
            if kind in ("zw", "al"):
                two = {"zw": ["FN", "DN"], "al": ["BA", "BB"]}
                return r.choice(two[kind]) + self.d(6 if kind == "zw" else 7)
            if kind in ("mk", "jo"):
                return {"mk": "M", "jo": r.choice("NRT")}[kind] + self.d(7)
            # added for the twelfth split
            if kind in ("iq", "sv"):
                return "A" + self.d(8)
            if kind == "md":
                return r.choice(["AB", "BA"]) + self.d(7)
            if kind in ("jm", "tm", "la", "mu"):
                return {"jm": "A", "tm": "A", "la": "P", "mu": r.choice(L)}[kind] + self.d(7)
            if kind == "tj":
                return "4" + self.d(8)
            # added for the thirteenth split
            if kind in ("pa", "do"):
                return {"pa": "PA", "do": r.choice(["SC", "RD"])}[kind] + self.d(7)
            if kind in ("xk", "sn"):
                return {"xk": "P", "sn": "A"}[kind] + self.d(8)
            if kind == "tt":
                return "T" + r.choice("ABC") + self.d(6)
            if kind == "me":
                return self.d(8)
            raise ValueError(kind)

        return self.unique(one)

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
