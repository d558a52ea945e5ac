"""Values that look sensitive and are not: the hard negatives' generators."""

from __future__ import annotations

import base64
from collections.abc import Callable

from benchmarks.masking.data.gen_secrets import SecretValues
from benchmarks.masking.data.value_rules import (
    ALNUM,
    B32,
    B58,
    B64,
    B64URL,
    DIGITS,
    HEX,
    LOWER,
    RIPPLE,
    UPPER,
    luhn_ok,
    ric_ok,
)


class Gen(SecretValues):
    """Draws unique values from a seeded RNG. ``used`` is shared between files."""

    # ------------------------------------------------------------ non-sensitive look-alikes
    def _snowflake(self) -> str:
        """An 18-digit Discord id that passes neither Luhn nor the resident-ID check
        (added for the eleventh split)."""
        while True:
            v = str(self.r.randint(10**17, 14 * 10**17))
            if not luhn_ok(v) and not ric_ok(v):
                return v

    def _alipay_appid(self) -> str:
        """A 16-digit Alipay app id that is not Luhn-valid (added for the thirteenth split)."""
        while True:
            v = "2021" + self.d(12)
            if not luhn_ok(v):
                return v

    def _tborder(self) -> str:
        """A 19-digit Taobao order number that is not Luhn-valid (added for the fourteenth
        split)."""
        while True:
            v = self.r.choice("1234") + self.d(18)
            if not luhn_ok(v):
                return v

    def _sfwaybill(self) -> str:
        """An SF Express waybill number, SF and 13 digits that are not Luhn-valid (added
        for the fourteenth split)."""
        while True:
            v = "SF" + self.r.choice("13") + self.d(12)
            if not luhn_ok(v[2:]):
                return v

    def _ytwaybill(self) -> str:
        """A YTO Express waybill number, YT and 13 digits that are not Luhn-valid (added
        for the fifteenth split)."""
        while True:
            v = "YT" + self.r.choice("3456789") + self.d(12)
            if not luhn_ok(v[2:]):
                return v

    def _jdorder(self) -> str:
        """A 12-digit JD.com order number (added for the fifteenth split)."""
        return self.r.choice("23") + self.d(11)

    def neg(self, kind: str) -> str:
        s = self.s
        if kind.startswith("b64="):
            return base64.b64encode(kind[4:].encode()).decode()
        table: dict[str, Callable[[], str]] = {
            "sha7": lambda: s(HEX, 7),
            "sha1": lambda: s(HEX, 40),
            "sha256": lambda: s(HEX, 64),
            "digest": lambda: "sha256:" + s(HEX, 64),
            "hex32": lambda: s(HEX, 32),
            "hex16": lambda: s(HEX, 16),
            "trace": lambda: s(HEX, 32),
            "uuid": lambda: "-".join(
                [
                    s(HEX, 8),
                    s(HEX, 4),
                    "4" + s(HEX, 3),
                    self.r.choice("89ab") + s(HEX, 3),
                    s(HEX, 12),
                ]
            ),
            "idbad": self.ric_bad_check,
            "iddate": self.ric_bad_date,
            "imei": self.imei,
            "pub": lambda: (
                "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA"
                + s(B64, 20)
                + "\n"
                + s(B64, 64)
                + "\n"
                + s(B64, 58)
                + "IDAQAB\n-----END PUBLIC KEY-----"
            ),
            "cert": lambda: (
                "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE"
                + s(B64, 44)
                + "\n"
                + s(B64, 64)
                + "\n"
                + s(B64, 40)
                + "\n-----END CERTIFICATE-----"
            ),
            "csr": lambda: (
                "-----BEGIN CERTIFICATE REQUEST-----\nMIICvDCCAaQCAQAwdzELMAkGA1UEBhMC"
                + s(B64, 32)
                + "\n"
                + s(B64, 64)
                + "\n"
                + s(B64, 36)
                + "\n-----END CERTIFICATE REQUEST-----"
            ),
            # added for the holdout split
            "sri": lambda: "sha384-" + s(B64, 64),
            "npmint": lambda: "sha512-" + s(B64, 86) + "==",
            "sshfp": lambda: "SHA256:" + s(B64, 43),
            "sshrsa": lambda: (
                "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ" + s(B64, 200) + " deploy@" + s(LOWER, 6)
            ),
            "pgppub": lambda: (
                "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQINBG"
                + s(B64, 58)
                + "\n"
                + s(B64, 64)
                + "\n"
                + s(B64, 40)
                + "\n="
                + s(B64, 4)
                + "\n-----END PGP PUBLIC KEY BLOCK-----"
            ),
            "agepub": lambda: "age1" + s("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58),
            "eth": lambda: "0x" + s(HEX, 40),
            "oid": lambda: s(HEX, 24),
            "datauri": lambda: "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA" + s(B64, 96) + "=",
            "datajpg": lambda: "data:image/jpeg;base64,/9j/4AAQSkZJRgABAQAAAQABAAD" + s(B64, 120),
            "ulid": lambda: "01J" + s("0123456789ABCDEFGHJKMNPQRSTVWXYZ", 23),
            "gpgfpr": lambda: " ".join(s("0123456789ABCDEF", 4) for _ in range(10)),
            "nonce": lambda: s(B64, 22) + "==",
            "cid": lambda: "bafybei" + s("abcdefghijklmnopqrstuvwxyz234567", 52),
            "jwkn": lambda: s(B64URL, 342),
            "sha512": lambda: s(HEX, 128),
            "sshpub": lambda: (
                "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + s(B64, 43) + " ci@build-" + self.d(2)
            ),
            # added for the seventh split
            "bcrypt": lambda: "$2b$12$" + s("./" + ALNUM, 53),
            "argon2": lambda: "$argon2id$v=19$m=65536,t=3,p=4$" + s(B64, 22) + "$" + s(B64, 43),
            "ksuid": lambda: s(ALNUM, 27),
            "ethtx": lambda: "0x" + s(HEX, 64),
            "wgpub": lambda: s(B64, 42) + self.r.choice("AEIMQUYcgkosw048") + "=",
            "ecdsapub": lambda: (
                "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBB"
                + s(B64, 88)
                + "= "
                + s(LOWER, 5)
                + "@laptop"
            ),
            "nanoid": lambda: s(B64URL, 21),
            # added for the eighth split
            "pklive": lambda: "pk_live_" + s(ALNUM, 24),
            "lfpub": lambda: (
                "pk-lf-"
                + "-".join(
                    [
                        s(HEX, 8),
                        s(HEX, 4),
                        "4" + s(HEX, 3),
                        self.r.choice("89ab") + s(HEX, 3),
                        s(HEX, 12),
                    ]
                )
            ),
            "wxappid": lambda: "wx" + s(HEX, 16),
            "twsid": lambda: "AC" + s(HEX, 32),
            "btcaddr": lambda: "bc1q" + s("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 38),
            "xpub": lambda: (
                "xpub6" + s("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz", 106)
            ),
            "npub": lambda: "npub1" + s("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58),
            "vin": lambda: s("ABCDEFGHJKLMNPRSTUVWXYZ0123456789", 17),
            "iccid": lambda: "8986" + self.d(16),
            "md5crypt": lambda: "$1$" + s(ALNUM, 8) + "$" + s("./" + ALNUM, 22),
            "sha512crypt": lambda: "$6$" + s(ALNUM, 16) + "$" + s("./" + ALNUM, 86),
            "pbkdf2": lambda: "pbkdf2_sha256$870000$" + s(ALNUM, 22) + "$" + s(B64, 43) + "=",
            "recaptcha": lambda: "6L" + s(B64URL, 38),
            "mapboxpk": lambda: "pk.eyJ1Ijoi" + s(B64URL, 60) + "." + s(B64URL, 22),
            # added for the ninth split
            "sshmd5": lambda: ":".join(s(HEX, 2) for _ in range(16)),
            "uuid7": lambda: (
                "019"
                + s(HEX, 5)
                + "-"
                + s(HEX, 4)
                + "-7"
                + s(HEX, 3)
                + "-"
                + self.r.choice("89ab")
                + s(HEX, 3)
                + "-"
                + s(HEX, 12)
            ),
            "cfray": lambda: s(HEX, 16) + "-" + self.r.choice(["SJC", "FRA", "HKG", "NRT", "LHR"]),
            "stripepi": lambda: "pi_3" + s(ALNUM, 23),
            "stripecus": lambda: "cus_" + s(ALNUM, 14),
            "chatcmpl": lambda: "chatcmpl-" + s(ALNUM, 29),
            "oaifile": lambda: "file-" + s(ALNUM, 22),
            "anthmsg": lambda: "msg_01" + s(ALNUM, 22),
            "anthreq": lambda: "req_011C" + s(ALNUM, 20),
            "gosum": lambda: "h1:" + s(B64, 43) + "=",
            "nixhash": lambda: s("0123456789abcdfghijklmnpqrsvwxyz", 32),
            "yescrypt": lambda: "$y$j9T$" + s("./" + ALNUM, 22) + "$" + s("./" + ALNUM, 43),
            "ssha": lambda: "{SSHA}" + s(B64, 38) + "==",
            "mysqlhash": lambda: "*" + s("0123456789ABCDEF", 40),
            "sha384": lambda: s(HEX, 96),
            "soladdr": lambda: s("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz", 44),
            "soltx": lambda: s("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz", 88),
            "ethsig": lambda: "0x" + s(HEX, 130),
            "keygrip": lambda: s("0123456789ABCDEF", 40),
            "datawebp": lambda: "data:image/webp;base64,UklGR" + s(B64, 100),
            "supaanon": self._supabase_anon,
            "b64u43": lambda: s(B64URL, 43),
            # added for the tenth split: public keys and ids (PostHog project keys, Stripe
            # publishable test keys, Razorpay key ids, Google OAuth client ids, Turnstile site
            # keys, VAPID public keys, Firebase app ids), a Tron address, short container ids,
            # Stripe charge and event ids, and Apache and SHA-256 crypt hashes
            "phc": lambda: "phc_" + s(ALNUM, 43),
            "pktest": lambda: "pk_test_" + s(ALNUM, 24),
            "rzpkey": lambda: "rzp_live_" + s(ALNUM, 14),
            "gclientid": lambda: (
                self.d(12) + "-" + s(LOWER + DIGITS, 32) + ".apps.googleusercontent.com"
            ),
            "turnstile": lambda: "0x4AAAAAAA" + s(B64URL, 12),
            "vapidpub": lambda: "B" + s(B64URL, 86),
            "fbappid": lambda: "1:" + self.d(12) + ":web:" + s(HEX, 22),
            "tronaddr": lambda: (
                "T" + s("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz", 33)
            ),
            "hex12": lambda: s(HEX, 12),
            "stripech": lambda: "ch_3" + s(ALNUM, 23),
            "stripeevt": lambda: "evt_1" + s(ALNUM, 23),
            "apr1": lambda: "$apr1$" + s("./" + ALNUM, 8) + "$" + s("./" + ALNUM, 22),
            "sha256crypt": lambda: "$5$" + s("./" + ALNUM, 16) + "$" + s("./" + ALNUM, 43),
            # added for the eleventh split: public keys and ids (Supabase publishable keys,
            # Statsig client keys, an OpenAI organization id), an Android signing-certificate
            # fingerprint, a CloudFront request id, a Stripe subscription id, a Twilio
            # message SID, a Discord snowflake, an onion address, a legacy Bitcoin address,
            # and base64 of a PDF and of a zip (xlsx) attachment
            "sbpub": lambda: "sb_publishable_" + s(B64URL, 31),
            "statsigclient": lambda: "client-" + s(ALNUM, 43),
            "oaiorg": lambda: "org-" + s(ALNUM, 24),
            "sha1fp": lambda: ":".join(s("0123456789ABCDEF", 2) for _ in range(20)),
            "amzcfid": lambda: s(B64URL, 54) + "==",
            "stripesub": lambda: "sub_1" + s(ALNUM, 23),
            "twmsg": lambda: "SM" + s(HEX, 32),
            "snowflake": self._snowflake,
            "onion": lambda: s("abcdefghijklmnopqrstuvwxyz234567", 55) + "d.onion",
            "btclegacy": lambda: (
                "1" + s("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz", 33)
            ),
            "pdfb64": lambda: "JVBERi0xLjcKJeLjz9MK" + s(B64, 120),
            "zipb64": lambda: "UEsDBBQABgAIAAAAIQ" + s(B64, 120),
            # added for the twelfth split: a cardano-cli verification key's cborHex (public),
            # a LoRaWAN DevEUI, a Salesforce record id, an Amazon ASIN, a W&B run id, Cosmos
            # and Taproot addresses, and a validator's public key (base64 of 32 bytes)
            "cardanovkey": lambda: "5820" + s(HEX, 64),
            "deveui": lambda: s("0123456789ABCDEF", 16),
            "sfrecid": lambda: self.r.choice(["001", "003", "006"]) + "5g0000" + s(ALNUM, 9),
            "asin": lambda: "B0" + s(UPPER + DIGITS, 8),
            "wandbrun": lambda: s(LOWER + DIGITS, 8),
            "cosmosaddr": lambda: "cosmos1" + s("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 38),
            "taproot": lambda: "bc1p" + s("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58),
            "tmpub": lambda: base64.b64encode(
                bytes(self.r.randrange(256) for _ in range(32))
            ).decode(),
            # added for the thirteenth split: public keys and addresses (NEAR, Stellar, XRP,
            # Avalanche, a BIP84 zpub, a Tailscale node key), app and user ids (Feishu app id,
            # DingTalk AppKey, WeChat openid, an Alipay app id, an Oracle Cloud OCID, a
            # Flagsmith client-side key, a Vercel deployment id), a Lightning invoice and an
            # IPFS v0 CID
            "nearpub": lambda: "ed25519:" + s(B58, 44),
            "stellarpub": lambda: "G" + s(B32, 55),
            "xrpaddr": lambda: "r" + s(RIPPLE, 33),
            "avaxaddr": lambda: "X-avax1" + s("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 38),
            "zpub": lambda: "zpub6" + s(B58, 106),
            "tsnodekey": lambda: "nodekey:" + s(HEX, 64),
            "feishuappid": lambda: "cli_" + s(HEX, 16),
            "dingappkey": lambda: "ding" + s(LOWER + DIGITS, 16),
            "wxopenid": lambda: "o" + s(B64URL, 27),
            "alipayappid": self._alipay_appid,
            "ocid": lambda: "ocid1.instance.oc1.ap-tokyo-1." + s(LOWER + DIGITS, 60),
            "flagsmithclient": lambda: s(ALNUM, 22),
            "verceldpl": lambda: "dpl_" + s(ALNUM, 28),
            "lninvoice": lambda: (
                "lnbc"
                + self.r.choice(["10u", "250u", "1m", "50u"])
                + "1p"
                + s("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 180)
            ),
            "cidv0": lambda: "Qm" + s(B58, 44),
            # added for the fourteenth split: a Taobao order number and an SF Express waybill
            "tborder": self._tborder,
            "sfwaybill": self._sfwaybill,
            # added for the fifteenth split: a YTO Express waybill and a JD.com order number
            "ytwaybill": self._ytwaybill,
            "jdorder": self._jdorder,
        }
        if kind.startswith("cardfail"):
            _, brand, fmt = kind.split(":")
            return self.card_fail(brand, fmt)
        if kind.startswith("ibanbad"):
            _, cc, fmt = kind.split(":")
            return self.iban(cc, fmt, bad=True)
        if kind.startswith("pemfake"):  # added for the holdout split: a PEM frame, no key
            _, label, body = kind.split(":", 2)
            return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"
        if kind in ("idbad", "iddate", "imei"):
            return table[kind]()  # these draw unique values themselves
        return self.unique(table[kind])
