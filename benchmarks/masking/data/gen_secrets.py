"""API keys and tokens of many vendors: the kinds added from the ninth split on, and key()."""

from __future__ import annotations

import base64
import json
import string
from collections.abc import Callable

from benchmarks.masking.data.gen_tokens import TokenValues
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


class SecretValues(TokenValues):
    """Keys, tokens and private keys; the numbers' generators are inherited."""

    def key(self, kind: str) -> str:
        table = {**self._older_vendor_keys(), **self._newer_vendor_keys()}
        return self.unique(table[kind])

    def _newer_vendor_keys(self) -> dict[str, Callable[[], str]]:
        """Key kinds by vendor, as added from the ninth split on."""
        s, d, r = self.s, self.d, self.r
        return {
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
