"""API keys and tokens of many vendors, JWTs and private keys in their formats."""

from __future__ import annotations

import base64
import datetime as dt
import json
import string
from collections.abc import Callable
from typing import ClassVar

from benchmarks.masking.data.gen_numbers import NumberValues
from benchmarks.masking.data.value_rules import (
    ALNUM,
    B32,
    B64,
    B64URL,
    DIGITS,
    HEX,
    LOWER,
    RIPPLE,
    UPPER,
)


class SecretValues(NumberValues):
    """Keys, tokens and private keys; the numbers' generators are inherited."""

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

    def key(self, kind: str) -> str:
        s, d, r = self.s, self.d, self.r
        table: dict[str, Callable[[], str]] = {
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
            # added for the ninth split: Databricks, Heroku (v2), Shopify custom app, Slack
            # config refresh, GitLab pipeline trigger and runner registration, Hugging Face
            # org, Pulumi, 1Password service account, Buildkite, CircleCI, Dynatrace,
            # Sourcegraph, Contentful, Prefect, Brevo, Plaid, Meta (Facebook) access tokens,
            # fal.ai, Grafana Cloud, Sentry org tokens, Cloudinary secrets, Azure SAS
            # signatures (URL-encoded), legacy Vault tokens, JFrog (API key, reference
            # token), NuGet, SonarQube, Intercom, X (Twitter) bearer tokens, DingTalk robot
            # signing secrets, Feishu tenant tokens, Cerebras, PlanetScale, MailerSend,
            # Clerk, LangSmith service keys, Stripe restricted test keys, LINE channel
            # tokens, Bitwarden Secrets Manager, Infisical, Convex deploy keys, RunPod,
            # Anyscale, Coze, Dify, FastGPT, ModelScope, WeCom corpsecret, DingTalk
            # AppSecret and JPush master secrets
            "databricks": lambda: "dapi" + s(HEX, 32),
            "heroku": lambda: "HRKU-AA" + s(B64URL, 58),
            "shpca": lambda: "shpca_" + s(HEX, 32),
            "xoxe": lambda: "xoxe.xoxp-1-" + s(UPPER + DIGITS, 164),
            "glptt": lambda: "glptt-" + s(HEX, 40),
            "glrunner": lambda: "GR1348941" + s(B64URL, 20),
            "hforg": lambda: "api_org_" + s(string.ascii_letters, 34),
            "pulumi": lambda: "pul-" + s(HEX, 40),
            "op_sa": lambda: "ops_eyJzaWduSW5BZGRyZXNzIjoi" + s(ALNUM, 280),
            "buildkite": lambda: "bkua_" + s(HEX, 40),
            "circleci": lambda: "CCIPAT_" + s(ALNUM, 22) + "_" + s(HEX, 40),
            "dynatrace": lambda: "dt0c01." + s(UPPER + DIGITS, 24) + "." + s(UPPER + DIGITS, 64),
            "sourcegraph": lambda: "sgp_" + s(HEX, 16) + "_" + s(HEX, 40),
            "contentful": lambda: "CFPAT-" + s(B64URL, 43),
            "prefect": lambda: "pnu_" + s(ALNUM, 36),
            "brevo": lambda: "xkeysib-" + s(HEX, 64) + "-" + s(ALNUM, 16),
            "plaid": lambda: (
                "access-production-"
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
            "fb": lambda: "EAA" + r.choice("BGIJ") + s(ALNUM, r.randint(150, 200)),
            "fal": lambda: (
                "-".join(
                    [
                        s(HEX, 8),
                        s(HEX, 4),
                        "4" + s(HEX, 3),
                        r.choice("89ab") + s(HEX, 3),
                        s(HEX, 12),
                    ]
                )
                + ":"
                + s(HEX, 32)
            ),
            "grafanacloud": lambda: "glc_eyJvIjoi" + s(ALNUM, 150) + "fQ==",
            "sentry_org": lambda: "sntrys_eyJpYXQiOjE3" + s(ALNUM, 140) + "_" + s(B64URL, 43),
            "cloudinary": lambda: s(B64URL, 27),
            "azsas": lambda: (
                (s(B64, 43) + "=").replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
            ),
            "vault_legacy": lambda: "s." + s(ALNUM, 24),
            "jfrog": lambda: "AKCp8" + s(ALNUM, 68),
            "jfrog_ref": lambda: "cmVmdGtuOjAxOjE3" + s(ALNUM, 48),
            "nuget": lambda: "oy2" + s(LOWER + DIGITS, 43),
            "sonar": lambda: r.choice(["squ_", "sqp_", "sqa_"]) + s(HEX, 40),
            "intercom": lambda: "dG9rOj" + s(B64, 54) + "=",
            "xbearer": lambda: "A" * 21 + s(ALNUM, 25) + "%3D" + s(ALNUM, 50),
            "dingsec": lambda: "SEC" + s(HEX, 64),
            "feishu_tat": lambda: "t-g10" + d(2) + s(ALNUM, 35),
            "cerebras": lambda: "csk-" + s(LOWER + DIGITS, 48),
            "pscale": lambda: "pscale_tkn_" + s(B64URL, 43),
            "mailersend": lambda: "mlsn." + s(HEX, 64),
            "clerk": lambda: "sk_live_" + s(ALNUM, 42),
            "lsv2_sk": lambda: "lsv2_sk_" + s(HEX, 32) + "_" + s(HEX, 10),
            "rk_test": lambda: "rk_test_" + s(ALNUM, 99),
            "line": lambda: s(B64, 171) + "=",
            "bws": lambda: (
                "0."
                + "-".join(
                    [
                        s(HEX, 8),
                        s(HEX, 4),
                        "4" + s(HEX, 3),
                        r.choice("89ab") + s(HEX, 3),
                        s(HEX, 12),
                    ]
                )
                + "."
                + s(ALNUM, 30)
                + ":"
                + s(B64, 22)
                + "=="
            ),
            "infisical": lambda: (
                "st."
                + "-".join(
                    [
                        s(HEX, 8),
                        s(HEX, 4),
                        "4" + s(HEX, 3),
                        r.choice("89ab") + s(HEX, 3),
                        s(HEX, 12),
                    ]
                )
                + "."
                + s(HEX, 32)
                + "."
                + s(HEX, 32)
            ),
            "convex": lambda: (
                "prod:"
                + r.choice(["happy", "quiet", "brave", "shiny", "tidy"])
                + "-"
                + r.choice(["otter", "heron", "lynx", "marten", "ibis"])
                + "-"
                + d(3)
                + "|eyJ2MiI6Ij"
                + s(ALNUM, 60)
                + "In0="
            ),
            "runpod": lambda: "rpa_" + s(UPPER + DIGITS, 46),
            "anyscale": lambda: "esecret_" + s(LOWER + DIGITS, 32),
            "coze": lambda: "pat_" + s(ALNUM, 64),
            "dify": lambda: "app-" + s(ALNUM, 24),
            "fastgpt": lambda: "fastgpt-" + s(ALNUM, 48),
            "modelscope": lambda: (
                "ms-"
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
            "wecom": lambda: s(B64URL, 43),
            "dingapp": lambda: s(B64URL, 64),
            "jpush": lambda: s(HEX, 24),
            # added for the tenth split: PostHog personal keys, LaunchDarkly server SDK keys,
            # Axiom, Apify, Backblaze B2 application keys, DigitalOcean Spaces (key and
            # secret), Scaleway access keys, Porkbun (API key and secret), Yandex Cloud API
            # keys, Deno Deploy and the Cloudflare Global API Key
            "phx": lambda: "phx_" + s(ALNUM, 43),
            "ldsdk": lambda: (
                "sdk-"
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
            "axiom": lambda: (
                "xaat-"
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
            "apify": lambda: "apify_api_" + s(ALNUM, 36),
            "b2app": lambda: "K005" + s(B64, 27),
            "dospaces": lambda: "DO00" + s(UPPER + DIGITS, 16),
            "dosecret": lambda: s(B64, 43),
            "scw": lambda: "SCW" + s(UPPER + DIGITS, 17),
            "porkbun_pk": lambda: "pk1_" + s(HEX, 64),
            "porkbun_sk": lambda: "sk1_" + s(HEX, 64),
            "yandex": lambda: "AQVN" + s(B64URL, 36),
            "deno": lambda: "ddp_" + s(ALNUM, 36),
            "cfglobal": lambda: s(HEX, 37),
            # added for the eleventh split: Claude Code OAuth tokens, Supabase secret keys,
            # Vercel Blob, DeepL (free), Home Assistant, Turso, the Roblox session cookie,
            # Twitch chat tokens, Canvas LMS, WooCommerce (consumer key and secret), Shopify
            # private apps, Square (application secret, access token), Braintree, Klaviyo
            # private keys, Harvest, Duffel, Pushover, ntfy, IFTTT webhooks, Midtrans,
            # Mercado Pago, Toss Payments, PAY.JP, YooKassa, Cal.com, Browserbase,
            # LlamaCloud, Alchemy, Statsig server secrets and CurseForge (shaped like a
            # bcrypt hash)
            "anthropic_oat": lambda: "sk-ant-oat01-" + s(B64URL, 93) + "AA",
            "sbsecret": lambda: "sb_secret_" + s(B64URL, 31),
            "vercelblob": lambda: "vercel_blob_rw_" + s(ALNUM, 16) + "_" + s(ALNUM, 30),
            "deepl": lambda: (
                "-".join(
                    [
                        s(HEX, 8),
                        s(HEX, 4),
                        "4" + s(HEX, 3),
                        r.choice("89ab") + s(HEX, 3),
                        s(HEX, 12),
                    ]
                )
                + ":fx"
            ),
            "hass": self._hass,
            "turso": self._turso,
            "roblosec": lambda: (
                "_|WARNING:-DO-NOT-SHARE-THIS.--Sharing-this-will-allow-someone-to-log-in-as-you"
                "-and-to-steal-your-ROBUX-and-items.|_" + s("0123456789ABCDEF", 480)
            ),
            "twitch": lambda: s(LOWER + DIGITS, 30),
            "canvas": lambda: str(r.randint(1000, 25000)) + "~" + s(ALNUM, 64),
            "woo_ck": lambda: "ck_" + s(HEX, 40),
            "woo_cs": lambda: "cs_" + s(HEX, 40),
            "shppa": lambda: "shppa_" + s(HEX, 32),
            "sq0csp": lambda: "sq0csp-" + s(B64URL, 43),
            "sq0atp": lambda: "sq0atp-" + s(B64URL, 22),
            "braintree": lambda: (
                "access_token$production$" + s(LOWER + DIGITS, 16) + "$" + s(HEX, 32)
            ),
            "klaviyo": lambda: "pk_" + s(HEX, 34),
            "harvest": lambda: d(7) + ".pt." + s(B64URL, 86),
            "duffel": lambda: "duffel_live_" + s(B64URL, 43),
            "pushover": lambda: "a" + s(LOWER + DIGITS, 29),
            "ntfy": lambda: "tk_" + s(LOWER + DIGITS, 29),
            "ifttt": lambda: s(B64URL, 22),
            "midtrans": lambda: "Mid-server-" + s(B64URL, 24),
            "mercadopago": lambda: "APP_USR-" + d(16) + "-" + d(6) + "-" + s(HEX, 32) + "-" + d(9),
            "toss": lambda: "live_sk_" + s(ALNUM, 28),
            "payjp": lambda: "sk_live_" + s(HEX, 48),
            "yookassa": lambda: "live_" + s(B64URL, 43),
            "calcom": lambda: "cal_live_" + s(HEX, 32),
            "browserbase": lambda: "bb_live_" + s(B64URL, 27),
            "llx": lambda: "llx-" + s(ALNUM, 48),
            "alchemy": lambda: s(B64URL, 32),
            "statsig": lambda: "secret-" + s(ALNUM, 43),
            "curseforge": lambda: "$2a$10$" + s("./" + ALNUM, 53),
            # added for the twelfth split: Samsara (fleet telematics), The Things Network
            # (LoRaWAN), Adafruit IO, Pterodactyl (application and client keys), Azure AI
            # services (84 characters), Elasticsearch encoded API keys, neptune.ai, Login
            # with Amazon (SP-API refresh token, client secret), eBay user tokens, Up Bank,
            # Telnyx, ClickUp, Typeform, Frame.io, ReadMe, Mandrill, Paddle, Zillow (legacy
            # ZWSID), Salesforce (session id, consumer secret), dbt Cloud, Alpaca, Baseten,
            # Lob, GoCardless, NCBI E-utilities, Vultr and Xendit
            "samsara": lambda: "samsara_api_" + s(ALNUM, 30),
            "ttn": lambda: "NNSXS." + s(B32, 39) + "." + s(B32, 52),
            "aio": lambda: "aio_" + s(ALNUM, 28),
            "ptla": lambda: "ptla_" + s(ALNUM, 43),
            "ptlc": lambda: "ptlc_" + s(ALNUM, 43),
            "azure_ai": lambda: (
                s(ALNUM, 52)
                + "JQQJ99"
                + r.choice(["BA", "BB", "BC", "BD", "BE", "BF"])
                + "AC"
                + s(ALNUM, 5)
                + "XJ3w3AAAAACOG"
                + s(ALNUM, 4)
            ),
            "elastic": lambda: base64.b64encode(
                (s(B64URL, 20) + ":" + s(B64URL, 22)).encode()
            ).decode(),
            "neptune": lambda: base64.b64encode(
                json.dumps(
                    {
                        "api_address": "https://app.neptune.ai",
                        "api_url": "https://app.neptune.ai",
                        "api_key": "-".join(
                            [
                                s(HEX, 8),
                                s(HEX, 4),
                                "4" + s(HEX, 3),
                                r.choice("89ab") + s(HEX, 3),
                                s(HEX, 12),
                            ]
                        ),
                    },
                    separators=(",", ":"),
                ).encode()
            ).decode(),
            "lwa_rt": lambda: "Atzr|IwEBI" + s(B64URL, 330),
            "lwa_cs": lambda: "amzn1.oa2-cs.v1." + s(HEX, 64),
            "ebay": lambda: (
                "v^1.1#i^1#"
                + r.choice(["p^3#r^1#I^3#f^0#", "r^1#p^3#f^0#I^3#", "I^3#p^3#r^0#f^0#"])
                + "t^H4sIAAAAAAAA/+"
                + s(B64, 340)
                + "="
            ),
            "upbank": lambda: "up:yeah:" + s(ALNUM, 128),
            "telnyx": lambda: "KEY" + s("0123456789ABCDEF", 32) + "_" + s(ALNUM, 22),
            "clickup": lambda: "pk_" + str(r.randint(10**6, 10**8)) + "_" + s(UPPER + DIGITS, 32),
            "typeform": lambda: "tfp_" + s(B64URL, 44) + "_" + s(ALNUM, 14),
            "frameio": lambda: "fio-u-" + s(B64URL, 64),
            "readme": lambda: "rdme_" + s(LOWER + DIGITS, 70),
            "mandrill": lambda: "md-" + s(B64URL, 22),
            "paddle": lambda: (
                "pdl_live_apikey_01"
                + s("0123456789abcdefghjkmnpqrstvwxyz", 24)
                + "_"
                + s(ALNUM, 22)
                + "_"
                + s(UPPER + DIGITS, 3)
            ),
            "zillow": lambda: "X1-ZWz1" + s(LOWER + DIGITS, 11) + "_" + s(LOWER + DIGITS, 5),
            "sfdc": lambda: "00D" + s(ALNUM, 12) + "!" + s(ALNUM + "._", 96),
            "sfcs": lambda: s("0123456789ABCDEF", 64),
            "dbtc": lambda: "dbtc_" + s(B64URL, 50),
            "alpaca": lambda: r.choice(["PK", "AK"]) + s(UPPER + DIGITS, 18),
            "baseten": lambda: s(ALNUM, 8) + "." + s(ALNUM, 32),
            "lob": lambda: "live_" + s(HEX, 35),
            "gocardless": lambda: "live_" + s(B64URL, 40),
            "ncbi": lambda: s(HEX, 36),
            "vultr": lambda: s(UPPER + DIGITS, 36),
            "xendit": lambda: "xnd_production_" + s(B64, 54) + "==",
            # added for the thirteenth split: monday.com, Calendly, Zoho (OAuth), Ghost Admin
            # API, Flagsmith server keys, Unleash, Tailscale (API and OAuth client), Plex,
            # Philips Hue application keys, Nexus Mods, Modrinth, Adobe client secrets,
            # ImageKit private keys, Bitget, HTX (Huobi), Volcengine secret keys, WeChat
            # access tokens, Infobip, Mailgun (new format), New Relic license keys, Miro,
            # Webex bot tokens, QuickBooks refresh tokens, Revolut Business, DigitalOcean
            # OAuth, GitLab OAuth application secrets, Sanity, Alibaba Cloud STS (AccessKeyId,
            # SecurityToken) and 80 hex characters (AbuseIPDB)
            "monday": self._monday,
            "calendly": self._calendly,
            "zoho": lambda: "1000." + s(HEX, 32) + "." + s(HEX, 32),
            "ghost": lambda: s(HEX, 24) + ":" + s(HEX, 64),
            "flagsmith": lambda: "ser." + s(ALNUM, 22),
            "unleash": lambda: (
                r.choice(["*", "default", "webshop"])
                + ":"
                + r.choice(["production", "development"])
                + "."
                + s(HEX, 64)
            ),
            "tskey_api": lambda: "tskey-api-" + s(ALNUM, 17) + "-" + s(ALNUM, 33),
            "tskey_client": lambda: "tskey-client-" + s(ALNUM, 17) + "-" + s(ALNUM, 33),
            "plex": lambda: s(B64URL, 20),
            "hue": lambda: s(ALNUM, 12) + "-" + s(ALNUM, 27),
            "nexusmods": lambda: s(B64, 54) + "==--" + s(B64, 16) + "--" + s(B64, 22) + "==",
            "modrinth": lambda: "mrp_" + s(ALNUM, 60),
            "adobe": lambda: "p8e-" + s(B64URL, 32),
            "imagekit": lambda: "private_" + s(B64, 27) + "=",
            "bitget": lambda: "bg_" + s(HEX, 32),
            "htx": lambda: (
                s(HEX, 8)
                + "-"
                + r.choice(["bg2hyw2dfg", "rfhfg2mkl3", "dqnh6tyngf", "ez2xc4vb6n", "mjlpdje3ld"])
                + "-"
                + s(HEX, 8)
                + "-"
                + s(HEX, 5)
            ),
            "volcsk": lambda: base64.b64encode(base64.b64encode(s(HEX, 32).encode())).decode(),
            "wxat": lambda: str(r.randint(70, 99)) + "_" + s(B64URL, 136),
            "infobip": lambda: s(HEX, 32) + "-" + self._uuid4(),
            "mailgun2": lambda: s(HEX, 32) + "-" + s(HEX, 8) + "-" + s(HEX, 8),
            "nrlicense": lambda: s(HEX, 36) + "NRAL",
            "miro": lambda: "eyJtaXJvLm9yaWdpbiI6ImV1MDEifQ_" + s(B64URL, 27),
            "webex": lambda: (
                s(ALNUM, 64) + "_" + r.choice(["PF84", "P0A1", "PE93"]) + "_" + self._uuid4()
            ),
            "qbo_refresh": lambda: (
                "AB11" + str(r.randint(1_780_000_000, 1_799_999_999)) + s(ALNUM, 36)
            ),
            "revolut": lambda: "oa_prod_" + s(B64URL, 43),
            "doo": lambda: "doo_v1_" + s(HEX, 64),
            "gloas": lambda: "gloas-" + s(HEX, 64),
            "sanity": lambda: "sk" + s(ALNUM, 180),
            "alists": lambda: "STS.NT" + s(ALNUM, 26),
            "alists_token": lambda: "CAIS" + s(B64, 420) + "=",
            "hex80": lambda: s(HEX, 80),
            # added for the fourteenth split: the Supabase service_role key
            "supaservice": self._supabase_service,
        }
        return self.unique(table[kind])

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
