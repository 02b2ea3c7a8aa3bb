"""Synthetic secrets of the right shape, for tests/redact/test_redact.py.

Every value is fake: built at import time from a fixed filler so that no
complete credential-shaped literal sits in the repository (secret scanners on
push would rightly complain about one).  ``CORPUS`` entries are
``(kind, text, secret)``: ``secret`` is the part of ``text`` that must vanish,
``kind`` the name redaction must report.  ``INNOCENT`` is text that must pass
untouched.

``UNSEEN`` (issue 10) holds credential *forms* -- how people actually write a
password or token into an env file, a command line, a config snippet or a chat
message -- rather than provider formats: each is ``(form, text, secret)`` and only
requires that the secret is gone.  ``HARMLESS`` is ordinary developer text full
of hash-, id-, path- and version-shaped strings next to words like "token" and
"password": none of it may change.
"""

import base64
import hashlib

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
        ("jfrog-token", "artifactory %s", "AKCp" + fake(69)),
        ("pulumi-token", "pulumi login with %s", "pul-" + fake(40, HEX)),
        ("figma-token", "figma %s", "figd_" + fake(40, URLSAFE)),
        ("notion-token", "notion integration %s", "ntn_" + fake(46)),
        ("alibaba-access-key-id", "aliyun configure --access-key-id %s", "LTAI" + fake(20)),
        ("facebook-access-token", "graph api %s", "EAACEdEose0cBA" + fake(120)),
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
        ("xai-api-key", "grok %s", "xai-" + fake(80)),
        ("perplexity-api-key", "pplx %s", "pplx-" + fake(48)),
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
        ("pgpass-password", "db.internal:5432:app:alice:%s", "Fake-Pgpass-77"),
        ("cli-password", "mysql -h db -u root -p%s app < dump.sql", "FakeMy5ql!"),
        ("secret-flag", "deploy --api-token %s --env prod", "Fake" + fake(28)),
        ("secret-in-context", "the staging API key is %s, rotate it monthly", fake(32)),
        ("password-in-prose", "the root password is %s, keep it safe", "Fake-R00t-pw"),
        # issue 22
        ("resend-api-key", "new Resend('%s')", "re_" + fake(8) + "_" + fake(24)),
        ("cloudflare-origin-ca-key", "origin key %s", "v1.0-" + fake(24, HEX) + "-" + fake(146, HEX)),
        ("crates-io-token", "cargo login %s", "cio" + fake(32)),
        ("sonarqube-token", "sonar %s", "squ_" + fake(40, HEX)),
        ("dynatrace-token", "Api-Token %s", "dt0c01." + fake(24, UPPER_NUM) + "." + fake(64, UPPER_NUM)),
        ("dropbox-token", "dropbox %s", "sl." + fake(130)),
        ("asana-token", "asana %s", "2/" + "1" * 16 + "/" + "2" * 16 + ":" + fake(32, HEX)),
        ("plaid-access-token", "plaid %s", "access-sandbox-" + "-".join(fake(n, HEX) for n in (8, 4, 4, 4, 12))),
        ("shippo-token", "shippo %s", "shippo_test_" + fake(40, HEX)),
        ("easypost-api-key", "easypost %s", "EZTK" + fake(54, HEX)),
        ("tencent-secret-id", "tencent %s", "AKID" + fake(32)),
        ("ngrok-authtoken", "ngrok config add-authtoken %s", "2" + fake(26) + "_" + fake(21)),
        ("vault-unseal-key", "Unseal Key 1: %s", fake(43) + "="),
        ("base64-secret", "echo %s | base64 -d", base64.b64encode(b"API_TOKEN=" + fake(32).encode()).decode()),
        ("url-encoded-secret", "GET /cb?state=%s HTTP/1.1",
         "%7B%22client_secret%22%3A%22" + fake(30) + "%22%7D"),
        # issue 34: vendor formats, query strings, workflow masks, random values under neutral names
        ("terraform-cloud-token", "TF_VALUE=%s", fake(14) + ".atlasv1." + fake(67, URLSAFE)),
        ("mapbox-secret-token", "mapbox %s", "sk.eyJ1IjoiZmFrZSIsImEiOiJ" + fake(20) + "." + fake(22, URLSAFE)),
        ("airtable-token", "airtable %s", "pat" + fake(14) + "." + fake(64, HEX)),
        ("1password-service-account-token", "op %s", "ops_eyJ" + fake(150, URLSAFE)),
        ("brevo-api-key", "brevo %s", "xkeysib-" + fake(64, HEX) + "-" + fake(16)),
        ("buildkite-token", "buildkite %s", "bkua_" + fake(40, HEX)),
        ("contentful-token", "contentful %s", "CFPAT-" + fake(43, URLSAFE)),
        ("supabase-token", "supabase %s", "sbp_" + fake(40, HEX)),
        ("planetscale-token", "pscale %s", "pscale_tkn_" + fake(43, URLSAFE)),
        ("netlify-token", "netlify %s", "nfp_" + fake(36)),
        ("render-api-key", "render %s", "rnd_" + fake(32)),
        ("fly-token", "fly %s", "fm2_" + fake(120, URLSAFE)),
        ("pinecone-api-key", "pinecone %s", "pcsk_" + fake(5) + "_" + fake(62)),
        ("nuget-api-key", "nuget push %s", "oy2" + fake(43, LOWER_NUM)),
        ("bitbucket-app-password", "bitbucket %s", "ATBB" + fake(32)),
        ("flutterwave-secret-key", "flw %s", "FLWSECK-" + fake(32, HEX) + "-X"),
        ("google-oauth-refresh-token", "refresh %s", "1//0" + fake(60, URLSAFE)),
        ("firebase-server-key", "fcm %s", "AAAA" + fake(7, URLSAFE) + ":APA91b" + fake(134, URLSAFE)),
        ("hubspot-token", "hubspot %s", "pat-na1-" + "-".join(fake(n, HEX) for n in (8, 4, 4, 4, 12))),
        ("clickup-token", "clickup %s", "pk_12345678_" + fake(32, UPPER_NUM)),
        ("posthog-personal-key", "posthog %s", "phx_" + fake(43)),
        ("langsmith-api-key", "langsmith %s", "lsv2_pt_" + fake(32, HEX) + "_" + fake(10, HEX)),
        ("tavily-api-key", "tavily %s", "tvly-" + fake(32)),
        ("stytch-secret", "stytch %s", "secret-live-" + fake(36)),
        ("honeycomb-api-key", "honeycomb %s", "hcaik_" + fake(58)),
        ("braintree-access-token", "braintree %s",
         "access_token$production$" + fake(16, LOWER_NUM) + "$" + fake(32, HEX)),
        ("url-query-secret", "open https://app.example.com/cb?code=%s&state=xyz", "4/0A" + fake(40, URLSAFE)),
        ("github-actions-mask", 'echo "::add-mask::%s"', "Fake-" + fake(20)),
        # (the filler is an alphabet, which the rule rightly takes for no secret: a digest's base64 instead)
        ("high-entropy-value", 'const conn = "%s";', base64.b64encode(hashlib.sha512(b"fake").digest()).decode()),
        # issue 34, held-out corpus 1: the data of a Kubernetes Secret, whatever its keys are called
        ("kubernetes-secret", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app\ndata:\n  a: %s\n",
         base64.b64encode(b"fake " + fake(20).encode()).decode()),
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


def _unseen():
    pw = "Xk9-fake-Pw!"     # a typical human password
    tok = fake(32)           # a typical machine token (base62)
    aws_secret = fake(40, B64)
    b64auth = base64.b64encode(b"alice:" + pw.encode()).decode()
    der = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC" + fake(64, B64)
    return [
        ("aws secret beside its key id", "AKIA%s %s" % (fake(16, UPPER_NUM), "%s"), aws_secret),
        ("aws credentials csv", "User name,Access key ID,Secret access key\nci,AKIA%s,%s\n" % (fake(16, UPPER_NUM), "%s"),
         aws_secret),
        ("DB_PASS env line", "DB_PASS=%s", pw),
        ("PW env line", "PW=%s", "hunter2x"),
        ("plain-word env password", "ADMIN_PASSWD=%s", "letmeinplease"),
        ("ODBC connection string", "Driver={ODBC Driver 18};Server=db;Uid=sa;Pwd=%s;Encrypt=yes", pw),
        ("mysql -p attached", "mysql -uroot -p%s shop", pw),
        ("mysqldump -p", "mysqldump -u backup -p%s --all-databases > all.sql", pw),
        ("--password X", "mongosh --username admin --password %s", pw),
        ("--password=X", "wget --http-password=%s https://files.example.com/x", pw),
        ("curl -u user:pass", "curl -u alice:%s https://api.example.com/v1/me", pw),
        ("curl --user", "curl --user 'alice:%s' https://api.example.com", pw),
        ("sshpass -p", "sshpass -p '%s' ssh root@10.0.0.7", pw),
        ("user:pass@host, no scheme", "connect to alice:%s@db.internal:5432/app", pw),
        (".pgpass line", "# ~/.pgpass\n*:*:*:postgres:%s\n", pw),
        ("docker config auth", '{"auths": {"https://index.docker.io/v1/": {"auth": "%s"}}}', b64auth),
        (".npmrc _auth", "registry=https://npm.example.com/\n_auth=%s\nalways-auth=true", b64auth),
        (".npmrc _password", "//npm.example.com/:_password=%s", base64.b64encode(pw.encode()).decode()),
        ("Hugging Face org token", "huggingface org token %s", "api_org_" + fake(34)),
        ("GCP key body without armour", "private key body:\n%s\n", der),
        ("MYSQL_PWD export", "export MYSQL_PWD=%s", pw),
        ("PGPASSWORD prefix", "PGPASSWORD=%s psql -h db -U app", pw),
        ("redis-cli -a", "redis-cli -h cache -a %s ping", pw),
        ("docker login -p", "docker login -u alice -p %s registry.example.com", pw),
        ("oc login -p", "oc login https://api.cluster:6443 -u admin -p %s", pw),
        ("openssl pass:", "openssl enc -aes-256-cbc -pass pass:%s -in a -out b", pw),
        ("zip -P", "zip -P %s backup.zip notes.txt", pw),
        ("keytool -storepass", "keytool -list -keystore app.jks -storepass %s", pw),
        ("ldapsearch -w", "ldapsearch -x -D cn=admin,dc=ex -w %s -b dc=ex", pw),
        ("smbclient user%pass", "smbclient //srv/share -U alice%%%s", pw),
        ("YAML db_pass", "database:\n  db_pass: %s\n", pw),
        ("camelCase JSON secret", '{"clientSecret": "%s"}', tok),
        ("JS apiKey constant", 'const apiKey = "%s";', tok),
        ("prose: password is", "the wifi password is %s by the way", pw),
        ("prose: API token", "my API token: %s", tok),
        ("prose: aws secret", "aws secret %s", aws_secret),
        ("X-Auth-Token header", "X-Auth-Token: %s", tok),
        ("cookie session id", "Cookie: theme=dark; sessionid=%s", tok),
        ("gpg --passphrase", "gpg --batch --passphrase %s -d secrets.gpg", pw),
        ("auth_token yaml quoted", 'auth_token: "%s"', tok),
        ("SECRET env", "SECRET=%s", tok),
        ("private_key quoted", "private_key = '%s'", tok),
        ("AccessKeySecret", "AccessKeySecret: %s", fake(30)),
        ("xai key", "XAI %s", "xai-" + fake(80)),
        ("old-style 40-hex GitHub token", "export GITHUB_TOKEN=%s", fake(40, HEX)),
        ("k8s secret data", "data:\n  password: %s\n", base64.b64encode(pw.encode()).decode()),
        ("requests auth tuple", 'requests.get(url, auth=("alice", "%s"))', pw),
        ("libpq keyword string", 'psql "host=db user=alice password=%s dbname=app"', pw),
        ("JDBC query string", "jdbc:mysql://db:3306/app?user=alice&password=%s&ssl=true", pw),
        ("Java system property", "java -Djavax.net.ssl.keyStorePassword=%s -jar app.jar", pw),
        ("docker -e", "docker run -e POSTGRES_PASSWORD=%s postgres:16", pw),
        ("azure storage key env", "AZURE_STORAGE_KEY=%s", fake(86, B64) + "=="),
        ("netrc default", "default login alice password %s", pw),
        ("TOML secret", 'token = "%s"', tok),
        ("ini password", "[db]\npassword = %s\n", pw),
        ("passphrase quoted", 'SSH_PASSPHRASE="%s"', pw),
        ("dotenv quoted", "API_SECRET='%s'", tok),
        ("env with export and spaces", "export  STRIPE_KEY = %s", fake(24)),
        ("cli --token", "gh auth login --with-token --token %s", tok),
        ("cli --secret=", "vault write auth/approle --secret=%s", tok),
        ("bearer in prose", "use bearer %s for the staging API", tok),
        ("pass in url query", "https://example.com/login?user=alice&pass=%s", pw),
    ]


UNSEEN = [(form, template % secret, secret) for form, template, secret in _unseen()]

HARMLESS = INNOCENT + [
    # hashes and ids, some right beside secret words
    "fixed the token refresh in 3f786850e387550fdab836ed7e6dc881de23001b",
    "password reset lands in commit 9fceb02 (see 9fceb02d0ae598e95dc970b74767f19372d61af8)",
    "request_id=550e8400-e29b-41d4-a716-446655440000 token_id: 6ba7b810-9dad-11d1-80b4-00c04fd430c8",
    "session_id: 6ba7b811-9dad-11d1-80b4-00c04fd430c8 resumed after /clear",
    "nginx:1.25.3@sha256:0d17b565c37bcbd895e9d92315a05c1c3c9a29f762b011a10c54a66cd53c9b31",
    '"integrity": "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg=="',
    "host key fingerprint is SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s (ED25519)",
    "etag W/\"5e15153d-120f\" and md5 d41d8cd98f00b204e9800998ecf8427e",
    "refs/continuity/proj-1a2b3c4d5e/cp-001-2 and refs/heads/feature/token-refresh",
    "git rev-parse HEAD -> 1dc1125a7e0b9f3c4d5e6f708192a3b4c5d6e7f8",
    # versions
    "python 3.11.7, node v20.11.1, claude-code 2.1.328, numpy==1.26.4, ruff>=0.4.1,<0.5",
    'package.json: "version": "0.1.0", "engines": {"node": ">=18.17.0"}',
    "upgraded auth library from 2.3.1 to 3.0.0-rc.1+build.20240501",
    "model claude-sonnet-4-5-20250929 with max_tokens=8192 and token_budget: 200000",
    # paths
    "/usr/local/bin/python3.11 -S ~/.claude-continuity/app/cc_continuity/hookmain.py PreToolUse",
    "~/.claude/projects/-home-user-proj/a1a1a1a1-0000-4000-8000-000000000001.jsonl",
    r"C:\Users\alice\AppData\Roaming\npm\node_modules",
    "edited src/auth/password_reset.py and tests/test_token_refresh.py",
    "PASSWORD_FILE=/run/secrets/db_password and TOKEN_PATH=~/.config/gh/hosts.yml",
    "password_file: /etc/app/db.pass",
    # code that names secrets without holding one
    "def check_password(password: str) -> bool:",
    'token = request.headers.get("X-Token")',
    "self.api_key = api_key",
    "password_hash = bcrypt.hashpw(pw, salt)",
    "PASSWORD_MIN_LENGTH = 12\nTOKEN_TTL_SECONDS = 3600\nMAX_TOKENS=100000",
    "token_limit=100000 token_count=4096 total_tokens: 123456",
    "connect(host=host, user=user, password=password)",
    "login(password=args.password, token=self.token)",
    "export DB_PASSWORD=$(vault kv get -field=pw db)",
    'const apiKey = process.env.API_KEY ?? "";',
    "secret_name: db-credentials\nauth_type: oauth2\nauth_method: token",
    "--password-stdin < pw.txt; docker login --password-stdin registry.example.com",
    "cc-continuity --max-tokens 4096 --token-file ~/.ntfy-token --secret-name prod-db",
    "mysql -u root -p shop   # prompts for the password",
    "curl -u alice https://api.example.com   # prompts",
    "ssh -p 2222 alice@host; scp -P 2222 notes.txt alice@host:/tmp/",
    "docker run -p 8080:80 -v /srv:/srv nginx; mkdir -p /tmp/x; python -m pytest -p no:cacheprovider",
    "zip -r out.zip src/ && unzip -o out.zip -d /tmp/x",
    "git@github.com:org/repo.git, alice@example.com, mailto:alice@example.com, Alice <alice@example.com>",
    "meeting at 10:30@office, retry at 12:45@home",
    "10.0.0.7:5432, [::1]:8080, localhost:3000/api, db.internal:5432",
    "alice:x:1000:1000:Alice,,,:/home/alice:/bin/bash",
    "2026-11-30T00:04:39.569Z INFO token refreshed for user 42 in 12ms",
    "HTTP 401 Unauthorized: invalid or expired token (request 7f3a9c)",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    "Merge pull request #42 from alice/fix-token-refresh",
    "the API key rotation ticket is OPS-1234; secret santa is on 2024-12-20",
    "The access key id starts with AKIA and the secret key is 40 characters long.",
    "see AbstractSingletonProxyFactoryBean and OAuth2AuthorizationCodeGrantFilter",
    "tokenizer = AutoTokenizer.from_pretrained('bert-base-uncased')",
    "our password policy: at least 12 characters, one digit",
    "public_key = load_pem_public_key(data)",
    "ctx 63% ▮▮▮▯▯ rotate · proj-003 · ✎ writing handoff",
    "Continuing from cp-004 (proj-005).",
    "| `snapshot_max_file_bytes` | 10485760 |",
    "keyboard shortcut: ctrl+shift+p; bypass=false; compass heading 270",
    "auth: required\ntoken: expired\npassword: see the team vault",
    "api_version=2024-06-01 secret_version: 3 key_size=4096",
]
