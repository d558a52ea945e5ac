"""JWTs, and the API keys and tokens of the vendors the first splits used."""

from __future__ import annotations

import base64
import datetime as dt
import json
import string
from collections.abc import Callable

from benchmarks.masking.data.gen_private_keys import PrivateKeyValues
from benchmarks.masking.data.value_rules import (
    ALNUM,
    B32,
    B64,
    B64URL,
    DIGITS,
    HEX,
    LOWER,
    UPPER,
)


class TokenValues(PrivateKeyValues):
    """JWTs and the vendor keys of dev to the eighth split; private keys are inherited."""

    # ------------------------------------------------------------ API keys and tokens
    def _jwt(self) -> str:
        r = self.r
        alg = r.choice(["HS256", "ES256", "HS512"])
        header = {"alg": alg, "typ": "JWT"}
        now = r.randint(1_730_000_000, 1_770_000_000)
        payload = {
            "sub": "usr_" + self.s(LOWER + DIGITS, 10),
            "iat": now,
            "exp": now + r.choice([900, 3600, 86400]),
        }
        if r.random() < 0.5:
            payload["scope"] = r.choice(["memories:read memories:write", "admin", "read"])

        def enc(b: bytes) -> str:
            return base64.urlsafe_b64encode(b).rstrip(b"=").decode()

        sig_len = {"HS256": 32, "ES256": 64, "HS512": 64}[alg]
        sig = bytes(r.randrange(256) for _ in range(sig_len))
        return ".".join(
            [
                enc(json.dumps(header, separators=(",", ":")).encode()),
                enc(json.dumps(payload, separators=(",", ":")).encode()),
                enc(sig),
            ]
        )

    def _jwt_rs(self) -> str:
        """An RS256 JWT with issuer/audience claims (added for the holdout split)."""
        r = self.r

        def enc(b: bytes) -> str:
            return base64.urlsafe_b64encode(b).rstrip(b"=").decode()

        now = r.randint(1_735_000_000, 1_775_000_000)
        header = {"alg": "RS256", "kid": self.s(HEX, 8), "typ": "JWT"}
        payload = {
            "iss": r.choice(["https://auth.tallowpay.dev", "https://sso.brackenridge.io"]),
            "aud": r.choice(["notes-api", "ledger", "agent-gateway"]),
            "sub": self.d(9),
            "iat": now,
            "exp": now + r.choice([600, 7200]),
        }
        sig = bytes(r.randrange(256) for _ in range(256))
        return ".".join(
            [
                enc(json.dumps(header, separators=(",", ":")).encode()),
                enc(json.dumps(payload, separators=(",", ":")).encode()),
                enc(sig),
            ]
        )

    def _supabase_anon(self) -> str:
        """A Supabase anon JWT, public by design (added for the ninth split)."""
        r = self.r

        def enc(b: bytes) -> str:
            return base64.urlsafe_b64encode(b).rstrip(b"=").decode()

        now = r.randint(1_700_000_000, 1_760_000_000)
        header = {"alg": "HS256", "typ": "JWT"}
        payload = {
            "iss": "supabase",
            "ref": self.s(LOWER, 20),
            "role": "anon",
            "iat": now,
            "exp": now + 315_360_000,
        }
        sig = bytes(r.randrange(256) for _ in range(32))
        return ".".join(
            [
                enc(json.dumps(header, separators=(",", ":")).encode()),
                enc(json.dumps(payload, separators=(",", ":")).encode()),
                enc(sig),
            ]
        )

    def _supabase_service(self) -> str:
        """A Supabase service_role JWT, a server secret (added for the fourteenth split)."""
        now = self.r.randint(1_700_000_000, 1_770_000_000)
        payload = {
            "iss": "supabase",
            "ref": self.s(LOWER, 20),
            "role": "service_role",
            "iat": now,
            "exp": now + 315_360_000,
        }
        return self._jwt_plain({"alg": "HS256", "typ": "JWT"}, payload, 32)

    def _jwt_plain(self, header: dict[str, str], payload: dict[str, object], sig_len: int) -> str:
        """A JWT from a header, a payload and random signature bytes (eleventh split)."""

        def enc(b: bytes) -> str:
            return base64.urlsafe_b64encode(b).rstrip(b"=").decode()

        sig = bytes(self.r.randrange(256) for _ in range(sig_len))
        return ".".join(
            [
                enc(json.dumps(header, separators=(",", ":")).encode()),
                enc(json.dumps(payload, separators=(",", ":")).encode()),
                enc(sig),
            ]
        )

    def _hass(self) -> str:
        """A Home Assistant long-lived access token (added for the eleventh split)."""
        now = self.r.randint(1_700_000_000, 1_770_000_000)
        payload = {"iss": self.s(HEX, 32), "iat": now, "exp": now + 315_360_000}
        return self._jwt_plain({"alg": "HS256", "typ": "JWT"}, payload, 32)

    def _turso(self) -> str:
        """A Turso database auth token, an EdDSA JWT (added for the eleventh split)."""
        now = self.r.randint(1_720_000_000, 1_770_000_000)
        uid = "-".join([self.s(HEX, 8), self.s(HEX, 4), self.s(HEX, 4), self.s(HEX, 4)])
        payload = {"a": "rw", "iat": now, "id": uid + "-" + self.s(HEX, 12)}
        return self._jwt_plain({"alg": "EdDSA", "typ": "JWT"}, payload, 64)

    def _uuid4(self) -> str:
        """A random version-4 UUID (added for the thirteenth split)."""
        s = self.s
        return "-".join(
            [s(HEX, 8), s(HEX, 4), "4" + s(HEX, 3), self.r.choice("89ab") + s(HEX, 3), s(HEX, 12)]
        )

    def _monday(self) -> str:
        """A monday.com personal API token, an HS256 JWT (added for the thirteenth split)."""
        r = self.r
        issued = dt.datetime.fromtimestamp(r.randint(1_735_000_000, 1_775_000_000), dt.UTC)
        payload = {
            "tid": r.randint(300_000_000, 520_000_000),
            "aai": r.randint(10, 99),
            "uid": r.randint(40_000_000, 75_000_000),
            "iad": issued.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "per": "me:write",
            "actid": r.randint(10_000_000, 30_000_000),
            "rgn": r.choice(["use1", "euc1", "apse2"]),
        }
        return self._jwt_plain({"alg": "HS256"}, payload, 32)

    def _calendly(self) -> str:
        """A Calendly personal access token, an ES256 JWT (added for the thirteenth split)."""
        payload = {
            "iss": "https://auth.calendly.com",
            "iat": self.r.randint(1_735_000_000, 1_775_000_000),
            "jti": self._uuid4(),
            "user_uuid": self._uuid4(),
        }
        return self._jwt_plain({"kid": self.s(HEX, 64), "typ": "PAT", "alg": "ES256"}, payload, 64)

    def _older_vendor_keys(self) -> dict[str, Callable[[], str]]:
        """Key kinds by vendor, as added for dev to the eighth split."""
        s, d, r = self.s, self.d, self.r
        return {
            "openai": lambda: "sk-" + s(ALNUM, 20) + "T3BlbkFJ" + s(ALNUM, 20),
            "openai_proj": lambda: "sk-proj-" + s(B64URL, 64) + "T3BlbkFJ" + s(B64URL, 64),
            "dsk": lambda: "sk-" + s(HEX, 32),
            "anthropic": lambda: "sk-ant-api03-" + s(B64URL, 93) + "AA",
            "ghp": lambda: "ghp_" + s(ALNUM, 36),
            "gho": lambda: "gho_" + s(ALNUM, 36),
            "ghpat": lambda: "github_pat_11" + s(UPPER + DIGITS, 20) + "_" + s(ALNUM, 59),
            "akia": lambda: "AKIA" + s(B32, 16),
            "awssecret": lambda: s(B64, 40),
            "xoxb": lambda: "xoxb-" + d(11) + "-" + d(13) + "-" + s(ALNUM, 24),
            "xoxp": lambda: "xoxp-" + d(11) + "-" + d(11) + "-" + d(13) + "-" + s(HEX, 32),
            "stripe_sk": lambda: "sk_live_" + s(ALNUM, r.choice([24, 99])),
            "stripe_rk": lambda: "rk_live_" + s(ALNUM, r.choice([24, 99])),
            "google": lambda: "AIza" + s(B64URL, 35),
            "jwt": self._jwt,
            "bearer": lambda: s(B64URL, r.choice([40, 43, 64])),
            "hex32": lambda: s(HEX, 32),
            "hex40": lambda: s(HEX, 40),
            "hex64": lambda: s(HEX, 64),
            "alnum32": lambda: s(ALNUM, 32),
            "alnum40": lambda: s(ALNUM, 40),
            "hf": lambda: "hf_" + s(string.ascii_letters, 34),
            "npm": lambda: "npm_" + s(ALNUM, 36),
            "glpat": lambda: "glpat-" + s(B64URL, 20),
            "whsec": lambda: "whsec_" + s(ALNUM, 32),
            "sendgrid": lambda: "SG." + s(B64URL, 22) + "." + s(B64URL, 43),
            "ltai": lambda: "LTAI5t" + s(ALNUM, 18),
            "alisecret": lambda: s(ALNUM, 30),
            "akid": lambda: "AKID" + s(ALNUM, 32),
            "tcsecret": lambda: s(ALNUM, 32),
            # added for the holdout split
            "openai_svc": lambda: "sk-svcacct-" + s(B64URL, 64) + "T3BlbkFJ" + s(B64URL, 64),
            "anthropic_admin": lambda: "sk-ant-admin01-" + s(B64URL, 93) + "AA",
            "ghs": lambda: "ghs_" + s(ALNUM, 36),
            "ghu": lambda: "ghu_" + s(ALNUM, 36),
            "ghr": lambda: "ghr_" + s(ALNUM, 36),
            "gldt": lambda: "gldt-" + s(B64URL, 20),
            "glrt": lambda: "glrt-" + s(B64URL, 20),
            "asia": lambda: "ASIA" + s(B32, 16),
            "awssession": lambda: "IQoJb3JpZ2luX2VjE" + s(B64, 300) + "=",
            "xapp": lambda: "xapp-1-A" + s(UPPER + DIGITS, 10) + "-" + d(13) + "-" + s(HEX, 64),
            "gocspx": lambda: "GOCSPX-" + s(B64URL, 28),
            "ya29": lambda: "ya29.a0" + s(B64URL, 160),
            "azure_storage": lambda: s(B64, 86) + "==",
            "azure_ad": lambda: s(ALNUM, 3) + "8Q~" + s(ALNUM + "_~.-", 34),
            "twilio_sk": lambda: "SK" + s(HEX, 32),
            "mailgun": lambda: "key-" + s(HEX, 32),
            "dop": lambda: "dop_v1_" + s(HEX, 64),
            "discord": lambda: "MT" + s(ALNUM, 24) + "." + s(B64URL, 6) + "." + s(B64URL, 38),
            "telegram": lambda: (
                str(r.randint(5_000_000_000, 7_999_999_999)) + ":AA" + s(B64URL, 33)
            ),
            "shpat": lambda: "shpat_" + s(HEX, 32),
            "gsk": lambda: "gsk_" + s(ALNUM, 52),
            "r8": lambda: "r8_" + s(ALNUM, 37),
            "pplx": lambda: "pplx-" + s(ALNUM, 48),
            "ntn": lambda: "ntn_" + s(ALNUM, 46),
            "linear": lambda: "lin_api_" + s(ALNUM, 40),
            "dckr": lambda: "dckr_pat_" + s(B64URL, 27),
            "pypi": lambda: "pypi-AgEIcHlwaS5vcmc" + s(B64URL, 160),
            "zhipu": lambda: s(HEX, 32) + "." + s(ALNUM, 16),
            "moonshot": lambda: "sk-" + s(ALNUM, 48),
            "cf": lambda: s(B64URL, 40),
            "b64_32": lambda: s(B64, 43) + "=",
            "b64_48": lambda: s(B64, 64),
            "aklt": lambda: "AKLT" + s(B64URL, 40),
            "jwt_rs": self._jwt_rs,
            # added for the fresh split: Baidu Qianfan v2 and Baidu AI Cloud API keys
            "qianfan": lambda: "bce-v3/ALTAK-" + s(ALNUM, 21) + "/" + s(HEX, 40),
            "baidu_ak": lambda: s(ALNUM, 24),
            # added for the sixth split: OpenRouter, xAI, Tavily, LangSmith, Airtable,
            # Supabase and SiliconFlow keys
            "openrouter": lambda: "sk-or-v1-" + s(HEX, 64),
            "xai": lambda: "xai-" + s(ALNUM, 80),
            "tavily": lambda: "tvly-" + s(ALNUM, 32),
            "langsmith": lambda: "lsv2_pt_" + s(HEX, 32) + "_" + s(HEX, 10),
            "airtable": lambda: "pat" + s(ALNUM, 14) + "." + s(HEX, 64),
            "supabase": lambda: "sbp_" + s(HEX, 40),
            "siliconflow": lambda: "sk-" + s(LOWER, 48),
            # added for the seventh split: ElevenLabs, Resend, Pinecone, Firecrawl, E2B,
            # Grafana, New Relic, Figma, HashiCorp Vault, Doppler, Postman, Neon, Paystack,
            # Flutterwave, Square, Atlassian, Mapbox (secret), Jina, Voyage, Brave Search,
            # Fireworks, Sentry, Netlify, Render, RubyGems, crates.io, HubSpot, Okta, FCM,
            # UUID-shaped keys (Volcengine Ark, WeCom and Feishu webhooks) and 24 letters
            "elevenlabs": lambda: "sk_" + s(HEX, 48),
            "resend": lambda: "re_" + s(ALNUM, 8) + "_" + s(ALNUM, 24),
            "pinecone": lambda: "pcsk_" + s(ALNUM, 6) + "_" + s(ALNUM, 63),
            "firecrawl": lambda: "fc-" + s(HEX, 32),
            "e2b": lambda: "e2b_" + s(HEX, 40),
            "grafana": lambda: "glsa_" + s(ALNUM, 32) + "_" + s(HEX, 8),
            "newrelic": lambda: "NRAK-" + s(UPPER + DIGITS, 27),
            "figma": lambda: "figd_" + s(B64URL, 40),
            "vault": lambda: "hvs." + s(ALNUM, 24),
            "doppler": lambda: "dp.st." + r.choice(["prd", "dev", "stg"]) + "." + s(ALNUM, 40),
            "postman": lambda: "PMAK-" + s(HEX, 24) + "-" + s(HEX, 34),
            "neon": lambda: "napi_" + s(LOWER + DIGITS, 64),
            "paystack": lambda: "sk_live_" + s(HEX, 40),
            "flutterwave": lambda: "FLWSECK-" + s(HEX, 32) + "-X",
            "square": lambda: "EAAA" + s(B64URL, 60),
            "atlassian": lambda: "ATATT3xFfGF0" + s(B64URL, 180) + "=" + s("0123456789ABCDEF", 8),
            "mapbox_sk": lambda: "sk.eyJ1Ijoi" + s(B64URL, 60) + "." + s(B64URL, 22),
            "jina": lambda: "jina_" + s(HEX, 32) + s(ALNUM, 28),
            "voyage": lambda: "pa-" + s(B64URL, 43),
            "brave": lambda: "BSA" + s(ALNUM, 28),
            "fireworks": lambda: "fw_" + s(ALNUM, 24),
            "sentry": lambda: "sntryu_" + s(HEX, 64),
            "netlify": lambda: "nfp_" + s(ALNUM, 40),
            "render": lambda: "rnd_" + s(ALNUM, 32),
            "rubygems": lambda: "rubygems_" + s(HEX, 48),
            "cratesio": lambda: "cio" + s(ALNUM, 32),
            "hubspot": lambda: (
                "pat-na1-" + "-".join([s(HEX, 8), s(HEX, 4), s(HEX, 4), s(HEX, 4), s(HEX, 12)])
            ),
            "okta": lambda: "00" + s(B64URL, 40),
            "fcm": lambda: "AAAA" + s(B64URL, 7) + ":APA91b" + s(B64URL, 134),
            "uuidkey": lambda: "-".join(
                [s(HEX, 8), s(HEX, 4), "4" + s(HEX, 3), r.choice("89ab") + s(HEX, 3), s(HEX, 12)]
            ),
            "alnum24": lambda: s(ALNUM, 24),
            # added for the eighth split: Together, Cloudflare (origin CA key, tunnel token),
            # Shopify shared secret, Stripe test keys, Discord webhook tokens, Mailchimp,
            # PagerDuty, Terraform Cloud, Fly.io, Notion (old), Asana, Trello, Dropbox,
            # stream keys (Twitch, YouTube), Steam, Riot, 64 letters and digits (exchange
            # keys), Etherscan, Tailscale, ngrok, Huawei Cloud AK, Bitbucket, Azure DevOps,
            # Langfuse, Modal, Mollie, PayPal, Shippo, EasyPost, Tencent Maps, 56 base64
            # (Kraken), 32 lower case (Tuya), OpenAI admin keys and Google refresh tokens
            "together": lambda: "tgp_v1_" + s(B64URL, 43),
            "cf_origin": lambda: "v1.0-" + s(HEX, 24) + "-" + s(HEX, 146),
            "shpss": lambda: "shpss_" + s(HEX, 32),
            "stripe_test": lambda: "sk_test_" + s(ALNUM, r.choice([24, 99])),
            "discordhook": lambda: s(B64URL, 68),
            "mailchimp": lambda: s(HEX, 32) + "-us" + str(r.randint(2, 21)),
            "pagerduty": lambda: "u+" + s(ALNUM + "_-", 18),
            "tfc": lambda: s(ALNUM, 14) + ".atlasv1." + s(ALNUM, 67),
            "flyio": lambda: "fm2_lJPE" + s(B64, 180),
            "notion_old": lambda: "secret_" + s(ALNUM, 43),
            "asana": lambda: "2/" + d(16) + "/" + d(16) + ":" + s(HEX, 32),
            "trello": lambda: "ATTA" + s(HEX, 64) + s("0123456789ABCDEF", 8),
            "dropbox": lambda: "sl.B" + s(B64URL, 134),
            "twitch_stream": lambda: "live_" + d(9) + "_" + s(ALNUM, 30),
            "ytstream": lambda: "-".join(s(LOWER + DIGITS, 4) for _ in range(5)),
            "steam": lambda: s("0123456789ABCDEF", 32),
            "riot": lambda: (
                "RGAPI-"
                + "-".join(
                    [
                        s(HEX, 8),
                        s(HEX, 4),
                        "4" + s(HEX, 3),
                        r.choice("89ab") + s(HEX, 3),
                        s(HEX, 12),
                    ]
                )
            ),
            "alnum64": lambda: s(ALNUM, 64),
            "etherscan": lambda: s(UPPER + DIGITS, 34),
            "tailscale": lambda: "tskey-auth-" + s(ALNUM, 17) + "-" + s(ALNUM, 33),
            "ngrok": lambda: "2" + s(ALNUM, 26) + "_" + s(ALNUM, 21),
            "cftunnel": lambda: "eyJhIjoi" + s(B64, 180),
            "hwak": lambda: s(UPPER + DIGITS, 20),
            "atbb": lambda: "ATBB" + s(ALNUM, 28) + s("0123456789ABCDEF", 8),
            "azdo": lambda: s(LOWER + "234567", 52),
            "langfuse": lambda: (
                "sk-lf-"
                + "-".join(
                    [
                        s(HEX, 8),
                        s(HEX, 4),
                        "4" + s(HEX, 3),
                        r.choice("89ab") + s(HEX, 3),
                        s(HEX, 12),
                    ]
                )
            ),
            "modal": lambda: "as-" + s(ALNUM, 22),
            "mollie": lambda: "live_" + s(ALNUM, 30),
            "paypal": lambda: "E" + s(B64URL, 79),
            "shippo": lambda: "shippo_live_" + s(HEX, 40),
            "easypost": lambda: "EZAK" + s(HEX, 54),
            "qqmap": lambda: "-".join(s(UPPER + DIGITS, 5) for _ in range(6)),
            "b64_56": lambda: s(B64, 56),
            "lower32": lambda: s(LOWER + DIGITS, 32),
            "openai_admin": lambda: "sk-admin-" + s(B64URL, 64) + "T3BlbkFJ" + s(B64URL, 64),
            "grefresh": lambda: "1//0" + s(B64URL, 99),
        }
