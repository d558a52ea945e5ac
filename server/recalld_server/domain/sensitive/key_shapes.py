"""Keys and tokens by their vendors' published formats (the rules gitleaks uses).

A shape is enough on its own: these prefixes and lengths are not found in ordinary
text. Keys without a shape of their own are found by their words (key_context.py).
"""

from __future__ import annotations

import re

_TOKEN_CHARS = r"A-Za-z0-9_\-"
KNOWN_KEYS = re.compile(
    "|".join(
        (
            # OpenAI (sk-, sk-proj-, sk-svcacct-), Anthropic (sk-ant-), DeepSeek and others.
            rf"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9][{_TOKEN_CHARS}]{{19,}}",
            # Stripe secret and restricted keys.
            r"(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",
            # GitHub personal, OAuth, user, server and refresh tokens.
            r"(?<![A-Za-z0-9_])(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}",
            r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{30,}",
            r"(?<![A-Za-z0-9_-])glpat-[A-Za-z0-9_\-]{20,}",
            # AWS access key ids.
            r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA)[A-Z0-9]{16}(?![A-Za-z0-9])",
            # Slack tokens and incoming webhooks.
            r"(?<![A-Za-z0-9])xox[abposrec]-[A-Za-z0-9-]{10,}",
            r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}",
            # Google API keys.
            r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_\-]{35}(?![A-Za-z0-9_-])",
            # Hugging Face, npm, PyPI, SendGrid, Twilio-like.
            r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}",
            r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36,}",
            r"(?<![A-Za-z0-9_-])pypi-[A-Za-z0-9_\-]{50,}",
            r"(?<![A-Za-z0-9_])SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}",
            # Tencent Cloud SecretId, Telegram bot tokens, DigitalOcean, Azure-style.
            r"(?<![A-Za-z0-9])AKID[A-Za-z0-9]{32}(?![A-Za-z0-9])",
            # Aliyun AccessKey ids.
            r"(?<![A-Za-z0-9])LTAI[A-Za-z0-9]{12,30}(?![A-Za-z0-9])",
            r"(?<![0-9])[0-9]{8,10}:AA[A-Za-z0-9_-]{30,40}(?![A-Za-z0-9_-])",
            r"(?<![A-Za-z0-9_])do[opr]_v1_[a-f0-9]{64}",
            # Zhipu (BigModel) API keys: an id and a secret.
            r"(?<![A-Za-z0-9])[0-9a-f]{32}\.[A-Za-z0-9]{16}(?![A-Za-z0-9])",
            # JSON Web Tokens: a base64url JSON header ("{" encodes as "ey").
            r"(?<![A-Za-z0-9_.-])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
            # Mapbox secret tokens (a JWT-like body after "sk."; "pk." ones are public).
            r"(?<![A-Za-z0-9_.-])sk\.eyJ[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}",
            # Airtable personal access tokens, Mailgun, LangSmith, ElevenLabs, E2B.
            r"(?<![A-Za-z0-9])pat[A-Za-z0-9]{14}\.[a-f0-9]{64}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9_-])key-[0-9a-f]{32}(?![A-Za-z0-9_-])",
            r"(?<![A-Za-z0-9_])lsv2_(?:pt|sk)_[0-9a-f]{32}_[0-9a-f]{10}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9_])sk_[0-9a-f]{48}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9_])e2b_[0-9a-f]{40}(?![A-Za-z0-9])",
            # Discord bot tokens: the bot's id in base64, a timestamp, an HMAC.
            r"(?<![A-Za-z0-9_.-])[MNO][A-Za-z0-9]{23,27}\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,40}"
            r"(?![A-Za-z0-9_.-])",
            # HashiCorp Vault service, batch and recovery tokens.
            r"(?<![A-Za-z0-9_.-])hv[sbr]\.[A-Za-z0-9_-]{24,}(?![A-Za-z0-9_-])",
            # New Relic user keys, insert keys, browser tokens.
            r"(?<![A-Za-z0-9])(?:NRAK-[A-Z0-9]{27}|NRII-[A-Za-z0-9_-]{32}|NRJS-[a-f0-9]{19})"
            r"(?![A-Za-z0-9])",
            # Firebase Cloud Messaging legacy server keys.
            r"(?<![A-Za-z0-9_-])AAAA[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{100,}",
            # Fireworks AI, Firecrawl, Postman, Doppler.
            r"(?<![A-Za-z0-9_])fw_(?=[A-Za-z0-9]*[0-9])(?=[A-Za-z0-9]*[A-Z])[A-Za-z0-9]{20,}"
            r"(?![A-Za-z0-9_])",
            r"(?<![A-Za-z0-9_-])fc-[0-9a-f]{32}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9])PMAK-[0-9a-f]{24}-[0-9a-f]{34}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9_.])dp\.(?:st|sa|ct|pt|scim|audit)\.(?:[a-z0-9_-]{2,35}\.)?"
            r"[A-Za-z0-9]{40,44}(?![A-Za-z0-9])",
            # Mailchimp (a data centre suffix), Riot Games, Terraform Cloud, Asana,
            # Cloudflare origin CA keys, EasyPost.
            r"(?<![A-Za-z0-9])[0-9a-f]{32}-us[0-9]{1,2}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9])RGAPI-[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9])[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}",
            r"(?<![A-Za-z0-9/])[0-9]/[0-9]{13,20}(?:/[0-9]{13,20})?:[0-9a-f]{32}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9])v1\.0-[0-9a-f]{24}-[0-9a-f]{140,160}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9])EZ[AT]K[0-9A-Za-z]{54}(?![A-Za-z0-9])",
            # Shopify, Atlassian, Linear, Notion, Square, Sentry, Grafana, Pulumi,
            # Databricks, Dynatrace, PlanetScale, Supabase.
            r"(?<![A-Za-z0-9_])shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9])ATATT3[A-Za-z0-9_=-]{150,}",
            r"(?<![A-Za-z0-9_])lin_(?:api|oauth)_[A-Za-z0-9]{40}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9_])(?:secret_[A-Za-z0-9]{43}|ntn_[0-9]{11}[A-Za-z0-9]{35})(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9_-])sq0(?:atp|csp)-[0-9A-Za-z_-]{22,43}(?![A-Za-z0-9_-])",
            r"(?<![A-Za-z0-9_])sntr[ysu]s?_[A-Za-z0-9+/=_]{40,}",
            r"(?<![A-Za-z0-9_])(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,2})",
            r"(?<![A-Za-z0-9_-])pul-[a-f0-9]{40}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9])dapi[a-f0-9]{32}(?:-[0-9])?(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9])dt0[a-z][0-9]{2}\.[A-Z0-9]{24}\.[A-Z0-9]{64}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9_])pscale_(?:tkn|oauth)_[A-Za-z0-9=_.-]{32,64}",
            r"(?<![A-Za-z0-9_])sbp_[a-f0-9]{40}(?![A-Za-z0-9])",
            # Model providers: Replicate, Groq, xAI, Perplexity, OpenRouter's "sk-or-" is sk-.
            r"(?<![A-Za-z0-9_])r8_[A-Za-z0-9]{37}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9_])gsk_[A-Za-z0-9]{48,56}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9_-])(?:xai|pplx)-[A-Za-z0-9]{40,90}(?![A-Za-z0-9])",
            # Google OAuth access and refresh tokens; Azure storage account keys.
            r"(?<![A-Za-z0-9_.])ya29\.[0-9A-Za-z_-]{30,}",
            r"(?<![A-Za-z0-9_/])1//0[0-9A-Za-z_-]{30,}",
            r"(?i:AccountKey|SharedAccessKey)=[A-Za-z0-9+/]{40,}={0,2}",
            # Dropbox, Heroku, Figma, Stripe webhook secrets, Resend, Brevo, Contentful,
            # Bitbucket, Buildkite, SonarQube, JFrog, Docker Hub, NuGet, RubyGems,
            # crates.io, Shippo.
            r"(?<![A-Za-z0-9_.])sl\.[A-Za-z0-9_-]{120,}",
            r"(?<![A-Za-z0-9_-])HRKU-[A-Za-z0-9_-]{40,}",
            r"(?<![A-Za-z0-9_])figd_[A-Za-z0-9_-]{40}",
            r"(?<![A-Za-z0-9_])whsec_[A-Za-z0-9+/=]{32,}",
            r"(?<![A-Za-z0-9_])re_[A-Za-z0-9]{8}_[A-Za-z0-9]{24}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9_-])xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}",
            r"(?<![A-Za-z0-9_-])CFPAT-[A-Za-z0-9_-]{43}",
            r"(?<![A-Za-z0-9])ATBB[A-Za-z0-9_=.-]{32,}",
            r"(?<![A-Za-z0-9_])bkua_[a-f0-9]{40}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9_])sq[pau]_[a-f0-9]{40}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9])AKCp[A-Za-z0-9]{69}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9_])dckr_pat_[A-Za-z0-9_-]{27,}",
            r"(?<![A-Za-z0-9])oy2[a-z0-9]{43}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9_])rubygems_[a-f0-9]{48}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9])cio[A-Za-z0-9]{32}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9_])shippo_(?:live|test)_[a-f0-9]{40}(?![A-Za-z0-9])",
            # Yandex Cloud, Volcengine (字节 火山引擎) access keys.
            r"(?<![A-Za-z0-9_])y[0-3]_[A-Za-z0-9_-]{35,}",
            r"(?<![A-Za-z0-9])(?:AQVN|YC)[A-Za-z0-9_-]{35,38}(?![A-Za-z0-9_-])",
            r"(?<![A-Za-z0-9])AKLT[A-Za-z0-9_-]{40,}",
            # Hugging Face organisation tokens, Cerebras, RunPod, Coze (扣子), Dify,
            # ModelScope (魔搭), FastGPT.
            r"(?<![A-Za-z0-9_])api_org_[A-Za-z0-9]{30,}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9_-])csk-[a-z0-9]{40,60}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9_])rpa_[A-Z0-9]{40,}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9_])pat_[A-Za-z0-9]{60,70}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9_-])app-(?=[A-Za-z0-9]*[0-9])(?=[A-Za-z0-9]*[A-Z])(?=[A-Za-z0-9]*[a-z])"
            r"[A-Za-z0-9]{24}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9_-])ms-[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9_-])fastgpt-[A-Za-z0-9]{40,}(?![A-Za-z0-9])",
            # Secrets managers: Infisical service tokens, Bitwarden Secrets Manager access
            # tokens. X (Twitter) app bearer tokens; MailerSend; Convex deploy keys;
            # Intercom access tokens (base64 of "tok:…").
            r"(?<![A-Za-z0-9_.])st\.[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}\.[0-9a-f]{32}\.[0-9a-f]{32}",
            r"(?<![A-Za-z0-9.])0\.[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}\.[A-Za-z0-9]{20,}"
            r":[A-Za-z0-9+/=]{16,}",
            r"(?<![A-Za-z0-9])A{20,22}[A-Za-z0-9%]{30,}",
            r"(?<![A-Za-z0-9_.])mlsn\.[0-9a-f]{64}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9])(?:prod|dev|preview):[a-z0-9-]+\|[A-Za-z0-9+/=]{40,}",
            r"(?<![A-Za-z0-9+/])dG9rOj[A-Za-z0-9+/=]{40,}",
            # DeepL API keys (a UUID, then ":fx" on the free plan), Twitch chat tokens as
            # IRC's PASS takes them, Braintree access tokens, Roblox session cookies.
            r"(?<![A-Za-z0-9-])[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}:fx(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9_])oauth:[a-z0-9]{30}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9_])access_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}",
            r"_\|WARNING:-DO-NOT-SHARE-THIS\.[A-Za-z0-9.,:-]{0,160}\|_[0-9A-F]{100,}",
            # The Things Network API keys, Login with Amazon refresh tokens and client
            # secrets, Up Bank personal access tokens.
            r"(?<![A-Za-z0-9])NNSXS\.[A-Z0-9]{39}\.[A-Z0-9]{52,64}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9])Atzr\|[A-Za-z0-9_-]{100,}",
            r"(?<![A-Za-z0-9])amzn1\.oa2-cs\.v1\.[0-9a-f]{64}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9])up:yeah:[A-Za-z0-9]{100,}",
            # Ghost Admin API keys (an id, a colon, a hex secret); Unleash API tokens
            # ("project:environment." and 64 hex digits; "*:" for every project).
            r"(?<![A-Za-z0-9])[0-9a-f]{24}:[0-9a-f]{64}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9.])(?:[a-z0-9_-]{1,40})?:[a-z][a-z0-9_-]{0,30}\.[0-9a-f]{64}(?![0-9a-f])",
            # ntfy access tokens ("tk_" and 29 lower-case letters and digits); Cal.com API
            # keys ("cal_live_" or "cal_" and 32 hex digits).
            r"(?<![A-Za-z0-9_])tk_[a-z0-9]{29}(?![A-Za-z0-9])",
            r"(?<![A-Za-z0-9_])cal_(?:live_|test_)?[0-9a-f]{32}(?![A-Za-z0-9])",
            # HubSpot private-app tokens: "pat-", the data centre ("na1", "eu1"), a UUID.
            r"(?<![A-Za-z0-9_-])pat-(?:na|eu|ap)[0-9]-[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}"
            r"(?![A-Za-z0-9])",
        )
    )
)
