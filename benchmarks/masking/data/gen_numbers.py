"""Card, resident ID and passport values (valid, or failing on purpose)."""

from __future__ import annotations

import datetime as dt

from benchmarks.masking.data.gen_base import GenBase
from benchmarks.masking.data.value_rules import (
    DIGITS,
    FULLWIDTH,
    RIC_REGIONS,
    UP_BINS,
    UPPER,
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
