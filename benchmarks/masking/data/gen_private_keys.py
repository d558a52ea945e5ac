"""Private keys in their formats: PEM blocks, PuTTY and OpenSSH files, wallets' keys."""

from __future__ import annotations

import base64
import datetime as dt
import json
from typing import ClassVar

from benchmarks.masking.data.gen_contacts import ContactValues
from benchmarks.masking.data.value_rules import (
    B32,
    B64,
    B64URL,
    HEX,
    RIPPLE,
)


class PrivateKeyValues(ContactValues):
    """Private keys; the numbers' generators are inherited."""

    # ------------------------------------------------------------ PEM blocks
    PEM_TYPES: ClassVar[dict[str, tuple[str, str, int, int]]] = {
        "rsa": ("RSA PRIVATE KEY", "MIIEowIBAAKCAQEA", 64, 4),
        "ec": ("EC PRIVATE KEY", "MHcCAQEEI", 64, 3),
        "pkcs8": ("PRIVATE KEY", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ", 64, 4),
        "enc": ("ENCRYPTED PRIVATE KEY", "MIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQwwHAQI", 64, 4),
        "openssh": (
            "OPENSSH PRIVATE KEY",
            "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
            70,
            4,
        ),
        # added for the holdout split
        "dsa": ("DSA PRIVATE KEY", "MIIBuwIBAAKBgQ", 64, 4),
        "ec8": ("PRIVATE KEY", "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg", 64, 3),
        "opensshenc": (
            "OPENSSH PRIVATE KEY",
            "b3BlbnNzaC1rZXktdjEAAAAACmFlczI1Ni1jdHIAAAAGYmNyeXB0AAAAGAAAABB",
            70,
            5,
        ),
        # added for the ninth split: a P-384 SEC1 key and a 4096-bit PKCS#1 RSA key
        "ec384": ("EC PRIVATE KEY", "MIGkAgEBBDA", 64, 4),
        "rsa4096": ("RSA PRIVATE KEY", "MIIJKQIBAAKCAgEA", 64, 8),
        # added for the tenth split: an Apple .p8 key (APNs, App Store Connect) and a
        # cosign (Sigstore) encrypted key, whose body is base64 JSON
        "p8": ("PRIVATE KEY", "MIGTAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBHkwdwIBAQQg", 64, 4),
        "cosign": (
            "ENCRYPTED SIGSTORE PRIVATE KEY",
            "eyJrZGYiOnsibmFtZSI6InNjcnlwdCIsInBhcmFtcyI6eyJOIjo2NTUzNiwiciI6OCwicCI6MX0sInNhbHQiOiI",
            64,
            9,
        ),
        # added for the eleventh split: a secp256k1 SEC1 key (a crypto wallet's signer)
        "eck1": ("EC PRIVATE KEY", "MHQCAQEEI", 64, 3),
        # added for the thirteenth split: OpenSSH ECDSA and RSA keys, a P-521 SEC1 key and
        # a 3072-bit PKCS#1 RSA key
        "opensshec": (
            "OPENSSH PRIVATE KEY",
            "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAaAAAABNlY2RzYS1zaGEyLW5pc3RwMjU2AAAACG5pc3RwMjU2AAAAQQ",
            70,
            5,
        ),
        "opensshrsa": (
            "OPENSSH PRIVATE KEY",
            "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAABlwAAAAdzc2gtcnNhAAAAAwEAAQAAAYEA",
            70,
            12,
        ),
        "ec521": ("EC PRIVATE KEY", "MIHcAgEBBEIB", 64, 4),
        "rsa3072": ("RSA PRIVATE KEY", "MIIG5AIBAAKCAYEA", 64, 6),
    }

    def pem(self, spec: str) -> str:
        base, _, style = spec.partition("_")
        if base == "pgp":

            def one_pgp() -> str:
                body = (
                    ["lQOYBG" + self.s(B64, 58)]
                    + [self.s(B64, 64) for _ in range(2)]
                    + [self.s(B64, 30)]
                )
                return (
                    "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"
                    + "\n".join(body)
                    + "\n="
                    + self.s(B64, 4)
                    + "\n-----END PGP PRIVATE KEY BLOCK-----"
                )

            return self.unique(one_pgp)
        if base == "ed25519":  # added for the holdout split: one short body line

            def one_ed() -> str:
                body = "MC4CAQAwBQYDK2VwBCIEI" + self.s(B64, 27)
                return "-----BEGIN PRIVATE KEY-----\n" + body + "\n-----END PRIVATE KEY-----"

            return self.unique(one_ed)
        if base == "ppk":  # added for the seventh split: a PuTTY key file (not PEM)

            def one_ppk() -> str:
                pub = "AAAAC3NzaC1lZDI1NTE5AAAAI" + self.s(B64, 43)
                return (
                    "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: eddsa-key-"
                    + dt.date.fromordinal(
                        dt.date(2025, 1, 1).toordinal() + self.r.randint(0, 500)
                    ).strftime("%Y%m%d")
                    + "\nPublic-Lines: 2\n"
                    + pub[:64]
                    + "\n"
                    + pub[64:]
                    + "\nPrivate-Lines: 1\nAAAAI"
                    + self.s(B64, 43)
                    + "\nPrivate-MAC: "
                    + self.s(HEX, 64)
                )

            return self.unique(one_ppk)
        if base == "ppk2":  # added for the eighth split: a PuTTY v2 RSA key file

            def one_ppk2() -> str:
                pub = "AAAAB3NzaC1yc2EAAAADAQABAAABAQ" + self.s(B64, 342)
                priv = "AAABAQ" + self.s(B64, 854)
                pub_lines = [pub[i : i + 64] for i in range(0, len(pub), 64)]
                priv_lines = [priv[i : i + 64] for i in range(0, len(priv), 64)]
                return (
                    "PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\nComment: rsa-key-"
                    + dt.date.fromordinal(
                        dt.date(2019, 1, 1).toordinal() + self.r.randint(0, 1500)
                    ).strftime("%Y%m%d")
                    + f"\nPublic-Lines: {len(pub_lines)}\n"
                    + "\n".join(pub_lines)
                    + f"\nPrivate-Lines: {len(priv_lines)}\n"
                    + "\n".join(priv_lines)
                    + "\nPrivate-MAC: "
                    + self.s(HEX, 40)
                )

            return self.unique(one_ppk2)
        # added for the eighth split: keys that are not PEM blocks
        if base == "age":
            return self.unique(
                lambda: "AGE-SECRET-KEY-1" + self.s("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)
            )
        if base == "wgpriv":
            return self.unique(lambda: self.s(B64, 42) + self.r.choice("AEIMQUYcgkosw048") + "=")
        if base in ("ethpriv", "ethpriv0x"):
            return self.unique(lambda: ("0x" if base == "ethpriv0x" else "") + self.s(HEX, 64))
        if base == "wif":
            b58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
            return self.unique(lambda: self.r.choice("KL") + self.s(b58, 51))
        # added for the ninth split: more keys that are not PEM blocks (a Nostr nsec, a BIP32
        # xprv, a Solana key in base58 and as the id.json byte array, a Tezos edsk, the "d"
        # of a JWK), an X25519 PKCS#8 key, a whole PEM block base64-encoded (a Kubernetes
        # Secret's data), and an encrypted PuTTY v3 key file
        b58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
        if base == "nsec":
            return self.unique(lambda: "nsec1" + self.s("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58))
        if base == "xprv":
            return self.unique(lambda: "xprv9" + self.s(b58, 106))
        if base == "solb58":
            return self.unique(lambda: self.s(b58, self.r.choice([87, 88])))
        if base == "soljson":
            return self.unique(
                lambda: "[" + ",".join(str(self.r.randint(0, 255)) for _ in range(64)) + "]"
            )
        if base == "edsk":
            return self.unique(lambda: "edsk" + self.s(b58, 50))
        if base == "jwkd":
            return self.unique(lambda: self.s(B64URL, 43))
        if base == "x25519":
            return self.unique(
                lambda: (
                    "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VuBCIEI"
                    + self.s(B64, 27)
                    + "\n-----END PRIVATE KEY-----"
                )
            )
        if base == "pemb64":

            def one_b64() -> str:
                body = "MIIEpAIBAAKCAQEA" + self.s(B64, 64 * 3 + self.r.randint(12, 40))
                lines = [body[i : i + 64] for i in range(0, len(body), 64)]
                pem = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines)
                pem += "\n-----END RSA PRIVATE KEY-----\n"
                return base64.b64encode(pem.encode()).decode()

            return self.unique(one_b64)
        if base == "minisign":  # added for the tenth split: a minisign secret key line
            return self.unique(lambda: "RWRTY0Iy" + self.s(B64, 204))
        # added for the eleventh split: keys that are not PEM blocks (a Tor onion-service
        # secret key file base64-encoded, a Sui bech32 key, an Aptos AIP-80 key and an
        # uncompressed Bitcoin WIF key)
        if base == "torhs":
            head = b"== ed25519v1-secret: type0 ==\x00\x00\x00"
            return self.unique(
                lambda: base64.b64encode(
                    head + bytes(self.r.randrange(256) for _ in range(64))
                ).decode()
            )
        if base == "suipriv":
            return self.unique(
                lambda: "suiprivkey1" + self.s("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 59)
            )
        if base == "aptos":
            return self.unique(lambda: "ed25519-priv-0x" + self.s(HEX, 64))
        if base == "wif5":
            return self.unique(lambda: "5" + self.r.choice("HJK") + self.s(b58, 49))
        # added for the twelfth split: a cardano-cli signing key's cborHex (5820 and 32
        # bytes) and a Tendermint/CometBFT validator key (64 bytes, base64)
        if base == "cardano":
            return self.unique(lambda: "5820" + self.s(HEX, 64))
        if base == "tmval":
            return self.unique(
                lambda: base64.b64encode(bytes(self.r.randrange(256) for _ in range(64))).decode()
            )
        # added for the thirteenth split: an armored Cosmos keyring key, an SSH2 (Tectia)
        # encrypted key, a Stellar secret seed, an XRP family seed, an Avalanche key, a
        # NEAR key, a BIP84 zprv, a Lotus (Filecoin) wallet export and a PKCS#12 file in
        # base64
        if base == "tmarmor":

            def one_tmarmor() -> str:
                return (
                    "-----BEGIN TENDERMINT PRIVATE KEY-----\nkdf: bcrypt\nsalt: "
                    + self.s("0123456789ABCDEF", 32)
                    + "\ntype: secp256k1\n\n"
                    + self.s(B64, 64)
                    + "\n"
                    + self.s(B64, 12)
                    + "\n="
                    + self.s(B64, 4)
                    + "\n-----END TENDERMINT PRIVATE KEY-----"
                )

            return self.unique(one_tmarmor)
        if base == "ssh2":

            def one_ssh2() -> str:
                body = "P2/56wAAA" + self.s(B64, 70 * 5 + self.r.randint(10, 50))
                lines = [body[i : i + 70] for i in range(0, len(body), 70)]
                stamp = dt.date.fromordinal(
                    dt.date(2018, 1, 1).toordinal() + self.r.randint(0, 2500)
                ).strftime("%Y%m%d")
                return (
                    "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\n"
                    + f'Comment: "rsa-key-{stamp}"\n'
                    + "\n".join(lines)
                    + "\n---- END SSH2 ENCRYPTED PRIVATE KEY ----"
                )

            return self.unique(one_ssh2)
        if base == "stellar":
            return self.unique(lambda: "S" + self.s(B32, 55))
        if base == "xrpseed":
            return self.unique(lambda: "s" + self.s(RIPPLE, 28))
        if base == "avax":
            return self.unique(lambda: "PrivateKey-" + self.s(b58, 49))
        if base == "nearpriv":
            return self.unique(lambda: "ed25519:" + self.s(b58, 88))
        if base == "zprv":
            return self.unique(lambda: "zprvA" + self.s(b58, 106))
        if base == "filkey":
            return self.unique(
                lambda: (
                    json.dumps(
                        {
                            "Type": "secp256k1",
                            "PrivateKey": base64.b64encode(
                                bytes(self.r.randrange(256) for _ in range(32))
                            ).decode(),
                        },
                        separators=(",", ":"),
                    )
                    .encode()
                    .hex()
                )
            )
        if base == "p12b64":
            return self.unique(
                lambda: (
                    "MIIKaQIBAzCCCi8GCSqGSIb3DQEHAaCCCiAEggocMIIKGDCCBM8GCSqGSIb3DQEHBqCCBMAwggS8"
                    "AgEAMIIEtQYJKoZIhvcNAQcB" + self.s(B64, 640) + "="
                )
            )
        if base == "ppk3enc":

            def one_ppk3() -> str:
                pub = "AAAAC3NzaC1lZDI1NTE5AAAAI" + self.s(B64, 43)
                return (
                    "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: aes256-cbc\nComment: "
                    + self.r.choice(["work-laptop", "nas-admin", "jumphost"])
                    + "\nPublic-Lines: 2\n"
                    + pub[:64]
                    + "\n"
                    + pub[64:]
                    + "\nKey-Derivation: Argon2id\nArgon2-Memory: 8192\nArgon2-Passes: 13"
                    + "\nArgon2-Parallelism: 1\nArgon2-Salt: "
                    + self.s(HEX, 32)
                    + "\nPrivate-Lines: 1\n"
                    + self.s(B64, 64)
                    + "\nPrivate-MAC: "
                    + self.s(HEX, 64)
                )

            return self.unique(one_ppk3)
        if base == "rsaenc":  # added for the holdout split: legacy OpenSSL-encrypted RSA

            def one_rsaenc() -> str:
                body = self.s(B64, 64 * 4 + self.r.randint(10, 40))
                lines = [body[i : i + 64] for i in range(0, len(body), 64)]
                return (
                    "-----BEGIN RSA PRIVATE KEY-----\n"
                    "Proc-Type: 4,ENCRYPTED\n"
                    "DEK-Info: AES-256-CBC,"
                    + self.s("0123456789ABCDEF", 32)
                    + "\n\n"
                    + "\n".join(lines)
                    + "\n-----END RSA PRIVATE KEY-----"
                )

            return self.unique(one_rsaenc)
        label, prefix, width, nlines = self.PEM_TYPES[base]

        def one() -> str:
            total = width * (nlines - 1) + self.r.randint(12, 40)
            body = prefix + self.s(B64, total - len(prefix))
            if self.r.random() < 0.5:
                body = body[:-2] + "=="
            lines = [body[i : i + width] for i in range(0, len(body), width)]
            sep = {
                "": "\n",
                "esc": "\\n",
                "flat": " ",
                "indent": "\n  ",
                "indent4": "\n    ",
                "crlf": "\r\n",  # added for the holdout split
                "indent6": "\n      ",
                "quote": "\n> ",  # added for the seventh split: a quoted e-mail reply
                # added for the eighth split: newlines lost, HTML line breaks, tabs
                "join": "",
                "br": "<br>",
                "tab": "\n\t",
                # added for the ninth split: escaped CRLF (a Windows JSON dump), doubly
                # escaped newlines (JSON inside JSON), a reply quoted twice
                "escr": "\\r\\n",
                "dbl": "\\\\n",
                "bq": "\n>> ",
                # added for the tenth split: an empty line after every line (a rich-text paste)
                "nn": "\n\n",
                # added for the eleventh split: commented out in a config file or in code
                "hash": "\n# ",
                "slash": "\n// ",
                # added for the thirteenth split: concatenated string literals in source code,
                # and newlines as XML character references
                "concat": '\\n" +\n  "',
                "ent": "&#10;",
            }[style]
            return (
                f"-----BEGIN {label}-----" + sep + sep.join(lines) + sep + f"-----END {label}-----"
            )

        return self.unique(one)
