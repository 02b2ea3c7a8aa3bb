"""Synthetic secrets of the right shape, for tests/test_redact.py.

Every value is fake: built at import time from a fixed filler so that no
complete credential-shaped literal sits in the repository (secret scanners on
push would rightly complain about one).  ``CORPUS`` entries are
``(kind, text, secret)``: ``secret`` is the part of ``text`` that must vanish,
``kind`` the name redaction must report.  ``INNOCENT`` is text that must pass
untouched.
"""

import base64

_FILL = "FAKE0123456789abcdefghijklmnopqrstuvwxyzEXAMPLEfakeQRSTUVWXYZ"
ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
HEX = "0123456789abcdef"
UPPER_NUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
LOWER_NUM = "abcdefghijklmnopqrstuvwxyz0123456789"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def fake(n, alphabet=ALNUM):
    """``n`` characters from ``alphabet``: the filler's letters that fit, then the alphabet itself."""
    pool = [c for c in _FILL if c in alphabet] + list(alphabet)
    return "".join(pool[i % len(pool)] for i in range(n))


def pem(label, lines=4):
    body = "\n".join(fake(64, B64) for _ in range(lines))
    return "-----BEGIN %sPRIVATE KEY-----\n%s\n-----END %sPRIVATE KEY-----" % (label, body, label)


def _entries():
    s = {}
    s["aws-access-key-id"] = "AKIA" + fake(16, UPPER_NUM)
    s["aws-secret-access-key"] = fake(40, B64)
    s["aws-session-token"] = fake(140, B64)
    s["gcp-api-key"] = "AIza" + fake(35, URLSAFE)
    s["google-oauth-client-secret"] = "GOCSPX-" + fake(28, URLSAFE)
    s["google-oauth-access-token"] = "ya29." + fake(60, URLSAFE)
    gcp_pem = "-----BEGIN PRIVATE KEY-----\\n" + fake(64, B64) + "\\n-----END PRIVATE KEY-----\\n"
    ssh = "-----BEGIN OPENSSH PRIVATE KEY-----\n%s\n-----END OPENSSH PRIVATE KEY-----" % fake(70, B64)
    pgp = "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n%s\n=" % fake(64, B64) + fake(4, B64) \
        + "\n-----END PGP PRIVATE KEY BLOCK-----"
    putty = ("PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: fake\nPublic-Lines: 2\n"
             + fake(64, B64) + "\nPrivate-Lines: 1\n" + fake(44, B64) + "\nPrivate-MAC: " + fake(64, HEX))
    basic = base64.b64encode(b"fakeuser:fake-pass-123").decode()
    u = fake(8, HEX) + "-" + fake(4, HEX) + "-4" + fake(3, HEX) + "-a" + fake(3, HEX) + "-" + fake(12, HEX)
    return [
        # cloud
        ("aws-access-key-id", "aws_access_key_id = %s", s["aws-access-key-id"]),
        ("aws-secret-access-key", "AWS_SECRET_ACCESS_KEY=%s", s["aws-secret-access-key"]),
        ("aws-session-token", "aws_session_token = %s", s["aws-session-token"]),
        ("gcp-api-key", "GET https://maps.googleapis.com/maps/api/geocode/json?key=%s&address=x", s["gcp-api-key"]),
        ("gcp-service-account-key",
         '{"type": "service_account", "private_key": "%s", "client_email": "x@fake.iam.gserviceaccount.com"}',
         gcp_pem),
        ("google-oauth-client-secret", '"client_secret": "%s"', s["google-oauth-client-secret"]),
        ("google-oauth-access-token", "access token %s expired", s["google-oauth-access-token"]),
        ("azure-storage-account-key",
         "DefaultEndpointsProtocol=https;AccountName=fakeacct;AccountKey=%s;EndpointSuffix=core.windows.net",
         fake(86, B64) + "=="),
        ("azure-shared-access-key",
         "Endpoint=sb://fake.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
         "SharedAccessKey=%s", fake(43, B64) + "="),
        ("azure-sas-token",
         "https://fakeacct.blob.core.windows.net/c/b.txt?sv=2022-11-02&sp=r&se=2030-01-01&sig=%s",
         fake(43, B64) + "%3D"),
        ("azure-ad-client-secret", "AZURE_CLIENT_SECRET set to %s", "abc8Q~" + fake(34, URLSAFE + "~.")),
        ("digitalocean-token", "doctl auth init -t %s", "dop_v1_" + fake(64, HEX)),
        ("heroku-api-key", "heroku token %s", "HRKU-AA" + fake(58, URLSAFE)),
        ("heroku-api-key", "HEROKU_API_KEY=%s", u),
        ("datadog-key", "DD_API_KEY=%s", fake(32, HEX)),
        ("databricks-token", "databricks token %s", "dapi" + fake(32, HEX)),
        ("vault-token", "export VAULT_TOKEN=%s", "hvs." + fake(90, URLSAFE)),
        ("doppler-token", "doppler %s", "dp.pt." + fake(43, ALNUM)),
        ("tailscale-key", "tailscale up --authkey %s", "tskey-auth-" + fake(12) + "-" + fake(30)),
        ("age-secret-key", "# age key\n%s\n", "AGE-SECRET-KEY-1" + fake(58, BECH32)),
        # code hosting and registries
        ("github-pat", "git clone https://x:%s@github.com/o/r", "ghp_" + fake(36)),
        ("github-oauth-token", "oauth %s", "gho_" + fake(36)),
        ("github-app-token", "installation token %s", "ghs_" + fake(36)),
        ("github-refresh-token", "refresh %s", "ghr_" + fake(76)),
        ("github-fine-grained-pat", "GH_TOKEN=%s", "github_pat_" + fake(22) + "_" + fake(59)),
        ("gitlab-pat", "PRIVATE-TOKEN: %s", "glpat-" + fake(20, URLSAFE)),
        ("gitlab-token", "gitlab-runner register --token %s", "glrt-" + fake(26, URLSAFE)),
        ("atlassian-api-token", "jira %s", "ATATT3xFfGF0" + fake(180, URLSAFE)),
        ("npm-token", "//registry.npmjs.org/:_authToken=%s", "npm_" + fake(36)),
        ("pypi-token", "password = %s", "pypi-AgEIcHlwaS5vcmc" + fake(60, URLSAFE)),
        ("rubygems-api-key", "GEM_HOST_API_KEY: %s", "rubygems_" + fake(48, HEX)),
        ("dockerhub-token", "docker login -p %s", "dckr_pat_" + fake(27, URLSAFE)),
        ("huggingface-token", "HF_TOKEN=%s", "hf_" + fake(34)),
        # chat and push
        ("slack-bot-token", "SLACK_BOT_TOKEN=%s", "xoxb-" + "1234567890-1234567890123-" + fake(24)),
        ("slack-user-token", "user token %s", "xoxp-" + "1234567890-1234567890-1234567890123-" + fake(32, HEX)),
        ("slack-config-token", "config token %s", "xoxe.xoxp-1-" + fake(140)),
        ("slack-token", "legacy workspace token %s", "xoxa-2-" + fake(40)),
        ("slack-app-token", "socket mode %s", "xapp-1-A0FAKE12345-1234567890123-" + fake(64, HEX)),
        ("slack-webhook", "curl -X POST %s -d '{}'", "https://hooks.slack.com/services/T00000000/B00000000/"
         + fake(24)),
        ("discord-webhook", "webhook %s", "https://discord.com/api/webhooks/123456789012345678/" + fake(68, URLSAFE)),
        ("discord-bot-token", "bot.run(%s)", "MTIzNDU2Nzg5MDEyMzQ1Njc4" + ".Gabc1d." + fake(38, URLSAFE)),
        ("telegram-bot-token", "https://api.telegram.org/bot%s/sendMessage", "123456789:AA" + fake(33, URLSAFE)),
        ("ntfy-token", "ntfy token %s", "tk_" + fake(29, LOWER_NUM)),
        # AI providers
        ("anthropic-api-key", "ANTHROPIC_API_KEY=%s", "sk-ant-api03-" + fake(93, URLSAFE) + "AA"),
        ("openai-api-key", "client = OpenAI(api_key=%s)", "sk-proj-" + fake(100, URLSAFE)),
        ("openai-api-key", "legacy %s", "sk-" + fake(20) + "T3BlbkFJ" + fake(20)),
        ("groq-api-key", "groq %s", "gsk_" + fake(52)),
        ("replicate-token", "REPLICATE %s", "r8_" + fake(37)),
        # payments, mail, SaaS
        ("stripe-secret-key", "stripe.api_key = %s", "sk_" + "live_" + fake(24)),
        ("stripe-restricted-key", "restricted %s", "rk_" + "live_" + fake(24)),
        ("stripe-webhook-secret", "endpoint secret %s", "whsec_" + fake(32)),
        ("square-token", "square %s", "sq0atp-" + fake(22, URLSAFE)),
        ("shopify-token", "X-Shopify-Access-Token: %s", "shpat_" + fake(32, HEX)),
        ("twilio-api-key", "twilio key %s", "SK" + fake(32, HEX)),
        ("twilio-auth-token", "TWILIO_AUTH_TOKEN=%s", fake(32, HEX)),
        ("sendgrid-api-key", "sendgrid %s", "SG." + fake(22, URLSAFE) + "." + fake(43, URLSAFE)),
        ("mailgun-api-key", "mailgun api:%s", "key-" + fake(32, HEX)),
        ("mailchimp-api-key", "mailchimp %s", fake(32, HEX) + "-us6"),
        ("postman-api-key", "postman %s", "PMAK-" + fake(24, HEX) + "-" + fake(34, HEX)),
        ("linear-api-key", "linear %s", "lin_api_" + fake(40)),
        ("grafana-token", "grafana %s", "glsa_" + fake(32) + "_" + fake(8, HEX)),
        ("sentry-token", "sentry %s", "sntryu_" + fake(64, HEX)),
        ("newrelic-api-key", "newrelic %s", "NRAK-" + fake(27, UPPER_NUM)),
        ("jwt", "cookie session=%s; Path=/",
         "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJmYWtlIiwibmFtZSI6IkZha2UifQ." + fake(43, URLSAFE)),
        # key material
        ("rsa-private-key", "key file:\n%s\nend", pem("RSA ")),
        ("ec-private-key", "%s", pem("EC ", 2)),
        ("dsa-private-key", "id_dsa:\n%s", pem("DSA ", 3)),
        ("encrypted-private-key", "%s\n", pem("ENCRYPTED ", 3)),
        ("openssh-private-key", "~/.ssh/id_ed25519:\n%s\n", ssh),
        ("pgp-private-key", "%s", pgp),
        ("private-key", "tls.key: |\n%s", pem("")),
        ("putty-private-key", "%s\n", putty),
        # generic shapes
        ("url-password", "DATABASE_URL=postgres://app:%s@db.internal:5432/app", "S3cr3t-Fake-Pw"),
        ("bearer-token", "curl -H 'Authorization: Bearer %s' https://api.example.com", fake(40, URLSAFE)),
        ("basic-auth", "Authorization: Basic %s", basic),
        ("bearer-token", "request failed (401) with bearer %s", fake(32, URLSAFE)),
        ("netrc-password", "machine api.example.com login fake password %s", "Fake-Pw-123"),
        ("password-assignment", "DB_PASSWORD=%s", "hunter2-fake-42"),
        ("password-assignment", "db:\n  password: %s\n", "Fak3Pa55word"),
        ("password-assignment", '{"user": "x", "password": "%s"}', "Fake!Pw#2024"),
        ("secret-assignment", "client_secret = '%s'", "fakeclientsecretvalue123"),
        ("secret-assignment", "API_KEY=%s", "abcd1234efgh5678"),
        ("secret-assignment", "X-Api-Key: %s", "0123fake4567key89"),
        ("secret-assignment", 'SECRET_KEY = "%s"', "django-insecure-fake%k9^2x"),
    ]


CORPUS = [(kind, template % secret, secret) for kind, template, secret in _entries()]

INNOCENT = [
    "The password reset flow sends a one-time token by email; the secret is never stored.",
    "Token: expired yesterday, regenerate it from the dashboard.",
    "Password: see the team vault.",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it (short 3f78685)",
    "image sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "session 550e8400-e29b-41d4-a716-446655440000 resumed",
    "read /home/user/.ssh/id_rsa.pub, ~/.aws/config and src/auth/token_store.py",
    "getAccessTokenFromRefreshToken calls AbstractSingletonProxyFactoryBean",
    "dGhpcyBpcyBqdXN0IGJhc2U2NCBub3QgYSBzZWNyZXQ is a base64 fixture name",
    "max_tokens: 4096\ntoken_count = 1234\ntokenizer = AutoTokenizer.from_pretrained('gpt2')",
    "def login(username: str, password: str) -> bool:",
    "password = getpass.getpass()",
    "token = os.environ['GITHUB_TOKEN']",
    "client = Client(api_key=api_key, secret=self.secret)",
    'headers = {"Authorization": f"Bearer {token}"}',
    "curl -H \"Authorization: Bearer $TOKEN\" https://api.example.com",
    "password: ${{ secrets.DB_PASSWORD }}",
    "DATABASE_URL=postgres://localhost:5432/app",
    "git@github.com:org/repo.git and https://github.com/org/repo/pull/12#discussion",
    "http://127.0.0.1:8080/health and https://user@example.com/path",
    "ctx 63% · demo-003 · rotation pending · host mbp",
    "refs/continuity/demo/cp-004 and sessions/003/ledger.jsonl",
    "The bearer of bad news arrived at the internationalization meeting.",
    "secret_key: ****\npassword=********",
    "Use scikit-learn (sk-learn) for the baseline.",
    "AKIA is the prefix of AWS access key ids; AIza starts Google API keys.",
    "call hf_hub_download and gh_token_helper from utils",
    '{"token": "string", "password": "<your password here>"}',
    "PWD=/home/user/project",
    'export OPENAI_API_KEY="$(pass show openai)"',
    "if token == expected_token: return True",
    "2024-05-01T12:00:00Z level=info msg=ok duration=12ms",
    "The key: value pairs in YAML are easy; api_key and secret are config fields.",
    "test_secret_assignment_is_masked passed in 0.12s",
    "see RFC 7519 for JWTs (eyJ... header) and PEM armour lines",
]
