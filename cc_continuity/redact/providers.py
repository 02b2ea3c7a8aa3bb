"""The exact formats: key material and each provider's documented token shapes.

Armoured keys (PEM, PuTTY, age), then cloud providers, code hosting and registries, chat, AI providers,
payments and SaaS, each from the vendor's own token documentation.  These come before every generic
rule in :mod:`.rules`' table and win over them: a match is named by its provider.  The list changes
when a vendor documents a new prefix; a rule's judge, where it has one, is beside it.
"""

import re

from .values import _random_token

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported
if TYPE_CHECKING:
    from collections.abc import Callable

    # A rule's spec, here and in :mod:`.rules`' generic rules: (kind, pattern, accept).
    Accept = Callable[[re.Match[str]], bool]  # does this match hold a secret?
    # A rule's kind: a name, or (group, {lower-cased group value: name} or a function of the match).
    Kind = str | tuple[str, dict[str, str] | Callable[[re.Match[str]], str]]

# A token starts and ends where its alphabet does.
_B = r"(?<![A-Za-z0-9_\-])"
_E = r"(?![A-Za-z0-9_\-])"
# An assignment operator as written in env files, YAML, JSON, TOML, code.
_SET = r"""["']?[ \t]*(?:=>|:=|=|:)[ \t]*"""


def _discord(m: re.Match[str]) -> bool:
    first = m.group(0).split(".", 1)[0]
    return any(c.isdigit() for c in first)


# (kind, pattern, accept) -- kind is a name, or (group, {group value: name}).
# Order is priority: when matches overlap, the earlier rule names the span.
_PROVIDER_SPECS: "list[tuple[Kind, str, Accept | None]]" = [  # group values are looked up lower-cased
    # --- armoured key material: swallows everything inside it --------------
    ("gcp-service-account-key", r'"private_key"\s*:\s*"(?P<s>-----BEGIN[^"]*)"?', None),
    # GCP docs, "Create and delete service account keys": the key file's private_key_id is 40 hex
    ("gcp-service-account-key", r"""\bprivate_key_id["']?[ \t]*[:=][ \t]*["']?(?P<s>[0-9a-f]{40})(?![0-9A-Za-z])""", None),
    (("label", {"rsa ": "rsa-private-key", "ec ": "ec-private-key", "dsa ": "dsa-private-key",
                "openssh ": "openssh-private-key", "pgp ": "pgp-private-key",
                "encrypted ": "encrypted-private-key", "": "private-key"}),  # "": any other label
     r"-----BEGIN (?P<label>(?:[A-Z0-9]+ )*)PRIVATE KEY(?: BLOCK)?-----"
     r"[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)", None),
    ("putty-private-key", r"PuTTY-User-Key-File-\d+:[\s\S]*?(?:Private-MAC:\s*[0-9a-fA-F]+|\Z)", None),
    ("age-secret-key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", None),
    # --- cloud providers ----------------------------------------------------
    ("aws-access-key-id",
     r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)[A-Z0-9]{16}(?![A-Z0-9])",
     None),
    ("aws-secret-access-key",
     r"(?i)(?<![A-Za-z0-9])(?:aws_?)?(?:secret_?access_?key|aws_?secret_?key)" + _SET
     + r"""["']?(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])""", None),
    ("aws-session-token",
     r"(?i)(?<![A-Za-z0-9])aws_?session_?token" + _SET + r"""["']?(?P<s>[A-Za-z0-9/+=]{100,})""", None),
    ("gcp-api-key", _B + r"AIza[0-9A-Za-z_\-]{35}" + _E, None),
    ("google-oauth-client-secret", _B + r"GOCSPX-[A-Za-z0-9_\-]{28}" + _E, None),
    ("google-oauth-access-token", _B + r"ya29\.[A-Za-z0-9_\-]{30,}", None),
    ("azure-storage-account-key", r"(?i)(?<![A-Za-z])AccountKey\s*=\s*(?P<s>[A-Za-z0-9+/]{40,}={0,2})", None),
    ("azure-shared-access-key", r"(?i)(?<![A-Za-z])SharedAccessKey\s*=\s*(?P<s>[A-Za-z0-9+/]{20,}={0,2})", None),
    ("azure-sas-token", r"(?i)[?&]sig=(?P<s>[A-Za-z0-9%+/]{30,}(?:=|%3D){0,2})", None),
    ("azure-ad-client-secret",
     r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.\-]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])", None),
    ("digitalocean-token", _B + r"do[por]_v1_[a-f0-9]{64}" + _E, None),
    ("heroku-api-key", _B + r"HRKU-[A-Za-z0-9_\-]{40,}" + _E, None),
    ("heroku-api-key",
     r"(?i)heroku[_\-]?api[_\-]?key" + _SET
     + r"""["']?(?P<s>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})""", None),
    ("datadog-key",
     r"(?i)(?:dd|datadog)[_\-]?(?:api|app|application)[_\-]?key" + _SET
     + r"""["']?(?P<s>[a-f0-9]{32,40})(?![a-f0-9])""", None),
    ("databricks-token", _B + r"dapi[a-f0-9]{32}(?:-\d+)?" + _E, None),
    # HashiCorp Vault docs, "Tokens": service hvs., batch hvb., recovery hvr.; before Vault 1.10 a service
    # token was "s." and 24 characters (the legacy form is taken only when it looks random).
    ("vault-token", _B + r"hv[sbr]\.[A-Za-z0-9_\-]{24,}", None),
    ("vault-token", r"(?<![\w.\-/])s\.[A-Za-z0-9]{24}(?![\w.\-/])", lambda m: _random_token(m.group()[2:])),
    # Doppler docs, "Auth Token Formats": dp.ct./dp.pt./dp.sa./dp.said./dp.scim./dp.audit. + 40-44 alphanumerics,
    # a service token dp.st.[<environment>.]...
    ("doppler-token",
     _B + r"dp\.(?:pt|st(?:\.[a-z0-9\-_]{2,35})?|sa|said|ct|scim|audit)\.[A-Za-z0-9]{40,44}" + _E, None),
    # HashiCorp Terraform docs, "API tokens": user/team/organization tokens <14 alphanumerics>.atlasv1.<60-70>
    ("terraform-cloud-token", r"(?<![A-Za-z0-9])[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_\-=]{60,70}(?![A-Za-z0-9])", None),
    ("tailscale-key", _B + r"tskey-[a-z]+-[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,}" + _E, None),
    # --- code hosting and package registries ------------------------------
    (("p", {"p": "github-pat", "o": "github-oauth-token", "u": "github-app-token",
            "s": "github-app-token", "r": "github-refresh-token"}),
     _B + r"gh(?P<p>[pousr])_[A-Za-z0-9]{36,251}" + _E, None),
    ("github-fine-grained-pat", _B + r"github_pat_[A-Za-z0-9_]{60,}" + _E, None),
    ("gitlab-pat", _B + r"glpat-[A-Za-z0-9_\-]{20,}(?:\.[A-Za-z0-9_\-]+)*" + _E, None),
    # GitLab docs, "Token overview" (token prefixes): deploy gldt-, runner glrt-/glrtr-, pipeline trigger glptt-,
    # CI/CD job glcbt-, OAuth app secret gloas-, incoming mail glimt-, agent glagent-, SCIM glsoat-, feature
    # flags glffct-, feed glft-, workspace glwt-; and the legacy runner registration token GR1348941...
    ("gitlab-token",
     _B + r"gl(?:dt|rtr|rt|ptt|cbt|oas|imt|agent|soat|ffct|ft|wt|cicdt)-[A-Za-z0-9_\-]{20,}(?:\.[A-Za-z0-9_\-]+)*"
     + _E, None),
    ("gitlab-token", _B + r"GR1348941[A-Za-z0-9_\-]{20,}" + _E, None),
    ("atlassian-api-token", _B + r"ATATT3[A-Za-z0-9_\-=]{50,}", None),
    ("npm-token", _B + r"npm_[A-Za-z0-9]{36}" + _E, None),
    ("pypi-token", _B + r"pypi-AgE[A-Za-z0-9_\-]{50,}" + _E, None),
    ("rubygems-api-key", _B + r"rubygems_[a-f0-9]{48}" + _E, None),
    # Docker docs, "Access tokens": personal dckr_pat_, organization dckr_oat_
    ("dockerhub-token", _B + r"dckr_(?:pat|oat)_[A-Za-z0-9_\-]{27,}" + _E, None),
    ("huggingface-token", _B + r"(?:hf_|api_org_)[A-Za-z0-9]{34,}" + _E, None),
    ("jfrog-token", _B + r"AKCp[A-Za-z0-9]{60,}" + _E, None),
    ("pulumi-token", _B + r"pul-[a-f0-9]{40}" + _E, None),
    ("figma-token", _B + r"figd_[A-Za-z0-9_\-]{40,}" + _E, None),
    ("notion-token", _B + r"(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{40,})" + _E, None),
    ("alibaba-access-key-id", r"(?<![A-Za-z0-9])LTAI[A-Za-z0-9]{12,20}(?![A-Za-z0-9])", None),
    ("facebook-access-token", _B + r"EAA[A-Za-z0-9]{6}[A-Za-z0-9]{80,}" + _E, None),
    # --- chat and push ------------------------------------------------------
    (("x", {"xoxb": "slack-bot-token", "xoxp": "slack-user-token", "xoxe.xoxb": "slack-config-token",
            "xoxe.xoxp": "slack-config-token", "": "slack-token"}),
     _B + r"(?P<x>xoxe\.xox[bp]|xox[abcdeoprs])-[0-9A-Za-z\-]{10,}" + _E, None),  # Slack docs, "Tokens"
    ("slack-app-token", _B + r"xapp-\d-[0-9A-Za-z\-]{20,}" + _E, None),
    ("slack-webhook", r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{20,}", None),
    ("discord-webhook",
     r"https://(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{40,}", None),
    ("discord-bot-token",
     r"(?<![A-Za-z0-9_\-.])[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}" + _E, _discord),
    ("telegram-bot-token", r"(?<![0-9])\d{8,10}:AA[A-Za-z0-9_\-]{33}" + _E, None),
    ("ntfy-token", _B + r"tk_[a-z0-9]{29}" + _E, None),
    # --- AI providers -------------------------------------------------------
    ("anthropic-api-key", _B + r"sk-ant-[A-Za-z0-9_\-]{32,}" + _E, None),
    ("openai-api-key", _B + r"sk-(?!ant-)(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{32,}" + _E, None),
    ("groq-api-key", _B + r"gsk_[A-Za-z0-9]{52}" + _E, None),
    ("replicate-token", _B + r"r8_[A-Za-z0-9]{37}" + _E, None),
    ("xai-api-key", _B + r"xai-[A-Za-z0-9]{70,}" + _E, None),
    ("perplexity-api-key", _B + r"pplx-[A-Za-z0-9]{40,}" + _E, None),
    # --- payments, mail, SaaS ----------------------------------------------
    ("stripe-secret-key", _B + r"sk_(?:live|test)_[A-Za-z0-9]{16,}" + _E, None),
    ("stripe-restricted-key", _B + r"rk_(?:live|test)_[A-Za-z0-9]{16,}" + _E, None),
    ("stripe-webhook-secret", _B + r"whsec_[A-Za-z0-9+/=]{24,}", None),
    ("square-token", _B + r"sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,}" + _E, None),
    # Square docs (ObtainToken reference): access tokens are 64 characters; production and sandbox ones start EAAA
    ("square-token", _B + r"EAAA[A-Za-z0-9_\-]{60}" + _E, None),
    ("shopify-token", _B + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _E, None),
    # Twilio docs: an Account SID is AC + 32 hex (error 21470), an API key SID SK + 32 hex; the auth token
    # (32 hex) and the API key secret (32 alphanumerics) have no prefix: taken beside their SID.
    ("twilio-api-key", r"(?<![A-Za-z0-9])SK[0-9a-fA-F]{32}(?![A-Za-z0-9])", None),
    ("twilio-api-key", r"(?<![A-Za-z0-9])SK[0-9a-fA-F]{32}(?![A-Za-z0-9])[^\n]{0,80}?(?:\n[^\n]{0,80}?)?"
     r"(?<![A-Za-z0-9])(?P<s>[A-Za-z0-9]{32})(?![A-Za-z0-9])", lambda m: _random_token(m.group("s"))),
    ("twilio-auth-token", r"(?<![A-Za-z0-9])AC[0-9a-f]{32}(?![A-Za-z0-9])[^\n]{0,80}?(?:\n[^\n]{0,80}?)?"
     r"(?<![A-Za-z0-9])(?P<s>[0-9a-f]{32})(?![A-Za-z0-9])", None),
    ("twilio-auth-token", r"(?i)twilio[_\-]?auth[_\-]?token" + _SET + r"""["']?(?P<s>[a-f0-9]{32})(?![a-f0-9])""",
     None),
    ("sendgrid-api-key", _B + r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + _E, None),
    ("mailgun-api-key", r"(?<![A-Za-z0-9])key-[0-9a-f]{32}(?![A-Za-z0-9])", None),
    ("mailchimp-api-key", r"(?<![A-Za-z0-9])[0-9a-f]{32}-us\d{1,2}(?![A-Za-z0-9])", None),
    ("postman-api-key", _B + r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}" + _E, None),
    ("linear-api-key", _B + r"lin_(?:api_[A-Za-z0-9]{40}|oauth_[a-f0-9]{64})" + _E, None),  # Linear API docs
    ("grafana-token", _B + r"(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,2})" + _E, None),
    ("sentry-token", _B + r"(?:sntrys_[A-Za-z0-9+/=_\-]{40,}|sntryu_[a-f0-9]{64})", None),
    # New Relic docs, "New Relic API keys": user key NRAK-, insert key NRII-, license key 36 hex + NRAL
    ("newrelic-api-key", _B + r"(?:NRAK-[A-Z0-9]{27}|NRII-[A-Za-z0-9_\-]{32})" + _E, None),
    ("newrelic-api-key", r"(?<![A-Za-z0-9])[a-f0-9]{36}NRAL(?![A-Za-z0-9])", None),
    ("resend-api-key", _B + r"re_[A-Za-z0-9]{8}_[A-Za-z0-9]{24}" + _E, None),
    ("cloudflare-origin-ca-key", _B + r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}" + _E, None),
    ("crates-io-token", _B + r"cio[A-Za-z0-9]{32}" + _E, None),
    ("sonarqube-token", _B + r"sq[upa]_[a-f0-9]{40}" + _E, None),
    ("dynatrace-token", _B + r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}" + _E, None),
    ("dropbox-token", _B + r"sl\.[A-Za-z0-9_\-]{120,}" + _E, None),
    ("asana-token", r"(?<![\w/])[12]/\d{12,20}(?:/\d{12,20})?:[a-f0-9]{32}" + _E, None),
    ("plaid-access-token", _B + r"access-(?:production|sandbox|development)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}"
     r"-[0-9a-f]{4}-[0-9a-f]{12}" + _E, None),
    ("shippo-token", _B + r"shippo_(?:live|test)_[a-f0-9]{40}" + _E, None),
    ("easypost-api-key", _B + r"EZ[AT]K[a-f0-9]{54}" + _E, None),
    ("tencent-secret-id", r"(?<![A-Za-z0-9])AKID[A-Za-z0-9]{32}(?![A-Za-z0-9])", None),
    ("ngrok-authtoken", r"(?i)(?:ngrok\b[^\n]{0,40}?\badd-authtoken|NGROK_AUTHTOKEN[\s=:]+)\s*['\"]?"
     r"(?P<s>[A-Za-z0-9_]{30,})", None),
    ("vault-unseal-key", r"(?i)\b(?:unseal|recovery) key(?: \d+)?\s*:\s*(?P<s>[A-Za-z0-9+/]{20,}={0,2})", None),
    ("jwt", _B + r"eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*" + _E, None),
    # --- issue 34: prefixed formats from each vendor's own token documentation ------
    ("mapbox-secret-token", _B + r"sk\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{20,}" + _E, None),  # Mapbox: sk. secret
    ("airtable-token", _B + r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}" + _E, None),  # Airtable: personal access tokens
    ("1password-service-account-token", _B + r"ops_eyJ[A-Za-z0-9+/=_\-]{100,}", None),  # 1Password: service accounts
    ("brevo-api-key", _B + r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}" + _E, None),  # Brevo (Sendinblue): API keys
    ("buildkite-token", _B + r"bkua_[a-f0-9]{40}" + _E, None),  # Buildkite: API access tokens
    ("contentful-token", _B + r"CFPAT-[A-Za-z0-9_\-]{43}" + _E, None),  # Contentful: personal access tokens
    ("supabase-token", _B + r"(?:sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_\-]{20,})" + _E, None),  # Supabase: access, secret keys
    ("planetscale-token", _B + r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_\-.=]{32,64}" + _E, None),  # PlanetScale
    ("netlify-token", _B + r"nfp_[A-Za-z0-9]{36}" + _E, None),  # Netlify: personal access tokens
    ("render-api-key", _B + r"rnd_[A-Za-z0-9]{32}" + _E, None),  # Render: API keys
    ("fly-token", _B + r"f[mo][12]_[A-Za-z0-9+/=_\-]{40,}", None),  # Fly.io: macaroon tokens (FlyV1 fm2_...)
    ("pinecone-api-key", _B + r"pcsk_[A-Za-z0-9]{5}_[A-Za-z0-9]{40,}" + _E, None),  # Pinecone: API keys
    ("nuget-api-key", r"(?<![A-Za-z0-9])oy2[a-z0-9]{43}(?![A-Za-z0-9])", None),  # NuGet.org: API keys
    ("bitbucket-app-password", r"(?<![A-Za-z0-9])ATBB[A-Za-z0-9_\-=]{32,}(?![A-Za-z0-9])", None),  # Bitbucket
    ("flutterwave-secret-key", _B + r"FLWSECK(?:_TEST)?-[a-f0-9]{32}-X" + _E, None),  # Flutterwave: secret keys
    ("google-oauth-refresh-token", r"(?<![A-Za-z0-9/])1//0[A-Za-z0-9_\-]{40,}" + _E, None),  # Google OAuth 2.0
    ("firebase-server-key", _B + r"AAAA[A-Za-z0-9_\-]{7}:APA91b[A-Za-z0-9_\-]{100,}" + _E, None),  # Firebase FCM
    ("hubspot-token", _B + r"pat-(?:na|eu|ap)\d-[0-9a-f]{8,9}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}" + _E,
     None),  # HubSpot docs, "Intro to auth": private app tokens pat-<region>-<uuid> (the docs mask 9 digits, not 8)
    ("clickup-token", _B + r"pk_\d{3,12}_[A-Z0-9]{32}" + _E, None),  # ClickUp: personal API tokens
    ("posthog-personal-key", _B + r"phx_[A-Za-z0-9]{35,}" + _E, None),  # PostHog docs: personal keys (phc_ public)
    ("langsmith-api-key", _B + r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}" + _E, None),  # LangSmith: API keys
    ("tavily-api-key", _B + r"tvly-(?:dev-|prod-)?[A-Za-z0-9]{32}" + _E, None),  # Tavily: API keys
    ("stytch-secret", _B + r"secret-(?:live|test)-[A-Za-z0-9_\-=]{36}" + _E, None),  # Stytch: project secrets
    ("honeycomb-api-key", _B + r"hc[ax]i[kc]_[A-Za-z0-9]{50,}" + _E, None),  # Honeycomb: ingest keys
    ("braintree-access-token", _B + r"access_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}" + _E,
     None),  # Braintree (PayPal): access tokens
    # --- key material and credentials in context --------------------------
    ("private-key",  # a DER body (PKCS#8 / PKCS#1 / SEC1) pasted without its armour lines
     r"(?<![A-Za-z0-9+/])(?:MII[A-Za-z0-9+/]{1,4}?(?:IBADANBgkqhkiG9w0BAQEFAASC|IBAAKCA)|MHcCAQEE"
     r"|MIG[A-Za-z0-9+/]{1,3}?AgEAMBMGByqGSM49|MC4CAQAwBQYDK2Vw|b3BlbnNzaC1rZXktdjE)"
     r"[A-Za-z0-9+/]{20,}={0,2}(?:(?:\\n|\s)+[A-Za-z0-9+/]{16,}={0,2})*", None),
    ("aws-secret-access-key",  # the bare 40-character secret next to its key id (CSV, prose, env dumps)
     r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])[^\n]{0,120}?(?:\n[^\n]{0,120}?){0,2}"
     r"(?<![A-Za-z0-9/+])(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])", lambda m: _random_token(m.group("s"))),
]
