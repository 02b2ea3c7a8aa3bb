"""Issue 22: redaction against forms it was not written for.

``SECRETS``: ``(vendor, line, [secret, ...])``: a credential shaped as its vendor documents it
(prefix, alphabet, length; the values are random, from a fixed seed) and pasted the way people
paste it: env lines, shell commands, config files in many syntaxes, URLs, HTTP headers, JSON,
prose, other languages, wrapped lines.  ``BENIGN``: ordinary lines of a coding session that hold
no secret: pytest node ids, hashes, paths, identifiers, versions, log lines, prose about secrets.
Written for this corpus (issue 22); tests/redact/test_redact_unseen.py holds the bar.
"""

import base64
import random
import urllib.parse

_R = random.Random(22)
_AN = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def an(n, alphabet=_AN):
    return "".join(_R.choice(alphabet) for _ in range(n))


def hexs(n):
    return an(n, "0123456789abcdef")


def up(n):
    return an(n, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")


def b64(n):
    return an(n, _AN + "+/")


def uuid():
    return "%s-%s-%s-%s-%s" % (hexs(8), hexs(4), hexs(4), hexs(4), hexs(12))


S = []  # (vendor, line, [secrets])


def add(vendor, line, *secrets):
    S.append((vendor, line, list(secrets)))


# --- AWS ---------------------------------------------------------------------------
k, s = "AKIA" + up(16), b64(40)
add("aws", "export AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s" % (k, s), k, s)
add("aws", "[default]\naws_access_key_id = %s\naws_secret_access_key = %s" % (k, s), k, s)
add("aws", "aws configure set aws_secret_access_key '%s'" % s, s)
sig, cred = hexs(64), urllib.parse.quote("%s/20260101/us-east-1/s3/aws4_request" % k, safe="")
add("aws", "curl 'https://b.s3.amazonaws.com/x.tar?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=%s"
    "&X-Amz-Date=20260101T000000Z&X-Amz-Expires=3600&X-Amz-Signature=%s'" % (cred, sig), k, sig)
st = "IQoJb3JpZ2luX2VjE" + b64(180)
add("aws", '{"AccessKeyId": "ASIA%s", "SecretAccessKey": "%s", "SessionToken": "%s"}' % (up(16), s, st), s, st)
# --- GitHub ------------------------------------------------------------------------
t = "ghp_" + an(36)
add("github", "git clone https://x-access-token:%s@github.com/acme/app.git" % t, t)
add("github", "gh auth login --with-token <<< %s" % t, t)
t2 = "github_pat_" + an(22) + "_" + an(59)
add("github", "GITHUB_TOKEN: %s" % t2, t2)
t3 = "ghs_" + an(36)
add("github", "the installation token is\n%s" % t3, t3)
# --- GitLab ------------------------------------------------------------------------
t = "glpat-" + an(20, _AN + "_-")
add("gitlab", 'curl --header "PRIVATE-TOKEN: %s" https://gitlab.example.com/api/v4/projects' % t, t)
t = "glrt-" + an(20)
add("gitlab", "gitlab-runner register --token %s --url https://gitlab.com" % t, t)
t = "GR1348941" + an(20, _AN + "_-")
add("gitlab", "registration-token: %s" % t, t)
# --- Slack -------------------------------------------------------------------------
t = "xoxb-%d-%d-%s" % (_R.randrange(10**11, 10**12), _R.randrange(10**12, 10**13), an(24))
add("slack", "SLACK_BOT_TOKEN='%s'" % t, t)
w = "https://hooks.slack.com/services/T%s/B%s/%s" % (up(8), up(10), an(24))
add("slack", "webhook_url: %s" % w, w)
t = "xapp-1-A%s-%d-%s" % (up(10), _R.randrange(10**12, 10**13), hexs(64))
add("slack", "socket mode app-level token %s" % t, t)
# --- Stripe ------------------------------------------------------------------------
t = "sk_live_" + an(99)
add("stripe", "stripe.api_key = \"%s\"" % t, t)
t = "rk_live_" + an(99)
add("stripe", "curl https://api.stripe.com/v1/charges -u %s:" % t, t)
t = "whsec_" + an(32)
add("stripe", "STRIPE_WEBHOOK_SECRET=%s" % t, t)
# --- Twilio ------------------------------------------------------------------------
sid, tok = "AC" + hexs(32), hexs(32)
add("twilio", "curl -X POST https://api.twilio.com/2010-04-01/Accounts/%s/Messages.json -u %s:%s" % (sid, sid, tok), tok)
add("twilio", "TWILIO_AUTH_TOKEN=%s" % tok, tok)
k = "SK" + hexs(32)
add("twilio", "api key sid %s secret %s" % (k, an(32)), k)
# --- SendGrid / Mailgun / Mailchimp / Brevo / Postmark / Resend -------------------
t = "SG.%s.%s" % (an(22, _AN + "_-"), an(43, _AN + "_-"))
add("sendgrid", "-H 'Authorization: Bearer %s'" % t, t)
t = "key-" + hexs(32)
add("mailgun", "curl -s --user 'api:%s' https://api.mailgun.net/v3/mg.example.com/messages" % t, t)
t = "%s-%s-%s" % (hexs(32), hexs(8), hexs(8))
add("mailgun", "MAILGUN_API_KEY=%s" % t, t)
t = hexs(32) + "-us21"
add("mailchimp", "mailchimp.setConfig({apiKey: '%s', server: 'us21'})" % t, t)
t = "xkeysib-%s-%s" % (hexs(64), an(16))
add("brevo", "api-key: %s" % t, t)
t = uuid()
add("postmark", 'curl -H "X-Postmark-Server-Token: %s" https://api.postmarkapp.com/email' % t, t)
t = "re_" + an(8) + "_" + an(24)
add("resend", "const resend = new Resend('%s');" % t, t)
# --- Google ------------------------------------------------------------------------
t = "AIza" + an(35, _AN + "_-")
add("google", "https://maps.googleapis.com/maps/api/geocode/json?address=Paris&key=%s" % t, t)
t = "GOCSPX-" + an(28, _AN + "_-")
add("google", '"client_secret":"%s"' % t, t)
t = "1//0" + an(60, _AN + "_-")
add("google", "refresh_token=%s" % t, t)
t = "ya29.a0" + an(120, _AN + "_-")
add("google", "Authorization: Bearer %s" % t, t)
body = b64(64)
add("google", '"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC%s\\n-----END PRIVATE KEY-----\\n"' % body, body)
# --- Azure -------------------------------------------------------------------------
t = b64(86) + "=="
add("azure", "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=%s;EndpointSuffix=core.windows.net" % t, t)
t = an(3) + "8Q~" + an(34, _AN + "_~.-")
add("azure", "AZURE_CLIENT_SECRET=%s" % t, t)
t = an(52, "abcdefghijklmnopqrstuvwxyz234567")
add("azure-devops", "git clone https://pat:%s@dev.azure.com/acme/proj/_git/repo" % t, t)
t = urllib.parse.quote(b64(43) + "=", safe="")
add("azure", "https://acme.blob.core.windows.net/c/f.zip?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-31&sig=%s" % t, t)
t = b64(86) + "=="
add("azure", 'COSMOS_KEY = "%s"' % t, t)
# --- Heroku / DigitalOcean / Fly / Render / Netlify / Vercel ----------------------
t = "HRKU-" + an(60, _AN + "_-")
add("heroku", "heroku auth:token\n%s" % t, t)
t = uuid()
add("heroku", "HEROKU_API_KEY=%s" % t, t)
t = "dop_v1_" + hexs(64)
add("digitalocean", "doctl auth init --access-token %s" % t, t)
t = "FlyV1 fm2_" + an(180, _AN + "+/=")
add("fly", "FLY_API_TOKEN=\"%s\"" % t, t[6:])
t = "rnd_" + an(32)
add("render", "render.yaml api key: %s" % t, t)
t = "nfp_" + an(36)
add("netlify", "netlify deploy --auth %s --prod" % t, t)
t = an(24)
add("vercel", "vercel --token %s deploy" % t, t)
# --- Cloudflare --------------------------------------------------------------------
t = an(40, _AN + "_-")
add("cloudflare", 'curl -H "Authorization: Bearer %s" https://api.cloudflare.com/client/v4/user/tokens/verify' % t, t)
t = hexs(37)
add("cloudflare", "-H 'X-Auth-Key: %s' -H 'X-Auth-Email: ops@example.com'" % t, t)
t = "v1.0-%s-%s" % (hexs(24), hexs(146))
add("cloudflare", "origin_ca_key = %s" % t, t)
# --- HashiCorp ---------------------------------------------------------------------
keys = [b64(43) + "=" for _ in range(3)]
add("vault", "Unseal Key 1: %s\nUnseal Key 2: %s\nUnseal Key 3: %s" % tuple(keys), *keys)
t = "hvs." + an(90, _AN + "_-")
add("vault", "Initial Root Token: %s" % t, t)
t = "%s.atlasv1.%s" % (an(14), an(67))
add("terraform", 'credentials "app.terraform.io" { token = "%s" }' % t, t)
t = b64(44)
add("consul", "encrypt = \"%s\"" % t, t)
# --- AI providers ------------------------------------------------------------------
t = "sk-ant-api03-" + an(93, _AN + "_-") + "AA"
add("anthropic", "ANTHROPIC_API_KEY=%s claude -p hi" % t, t)
t = "sk-proj-" + an(156, _AN + "_-")
add("openai", "client = OpenAI(api_key=\"%s\")" % t, t)
t = "hf_" + an(34)
add("huggingface", "huggingface-cli login --token %s" % t, t)
t = an(40)
add("cohere", "co = cohere.Client('%s')" % t, t)
t = an(32)
add("mistral", "MISTRAL_API_KEY=%s" % t, t)
t = "gsk_" + an(52)
add("groq", "the key: %s" % t, t)
t = "pcsk_" + an(5) + "_" + an(60)
add("pinecone", "pc = Pinecone(api_key=\"%s\")" % t, t)
# --- Package registries ------------------------------------------------------------
t = "npm_" + an(36)
add("npm", "//registry.npmjs.org/:_authToken=%s" % t, t)
t = "pypi-AgEIcHlwaS5vcmc" + an(120, _AN + "_-")
add("pypi", "[pypi]\n  username = __token__\n  password = %s" % t, t)
t = "dckr_pat_" + an(27, _AN + "_-")
add("docker", "echo %s | docker login -u acme --password-stdin" % t, t)
t = "oy2" + an(43, "abcdefghijklmnopqrstuvwxyz0123456789")
add("nuget", "dotnet nuget push pkg.nupkg --api-key %s --source https://api.nuget.org/v3/index.json" % t, t)
t = "cio" + an(32)
add("crates.io", "cargo login %s" % t, t)
t = "rubygems_" + hexs(48)
add("rubygems", "GEM_HOST_API_KEY: %s" % t, t)
t = "CLOJARS_" + hexs(60)
add("clojars", "export CLOJARS_PASSWORD=%s" % t, t[8:])
t = "AKCp8" + an(68)
add("jfrog", "jf c add --access-token=%s" % t, t)
# --- Dev tools and SaaS ------------------------------------------------------------
t = "ATATT3xFfGF0" + an(180, _AN + "_-=")
add("atlassian", "curl -u me@example.com:%s https://acme.atlassian.net/rest/api/3/myself" % t, t)
t = "ATBB" + an(32)
add("bitbucket", "BITBUCKET_APP_PASSWORD=%s" % t, t)
t = "lin_api_" + an(40)
add("linear", "Authorization: %s" % t, t)
t = "ntn_" + an(46)
add("notion", "notion = Client(auth=\"%s\")" % t, t)
t = "pat%s.%s" % (an(14), hexs(64))
add("airtable", "AIRTABLE_TOKEN=%s" % t, t)
t = "PMAK-%s-%s" % (hexs(24), hexs(34))
add("postman", "postman login --with-api-key %s" % t, t)
t = "dapi" + hexs(32)
add("databricks", "databricks configure --token\nToken: %s" % t, t)
t = "glsa_%s_%s" % (an(32), hexs(8))
add("grafana", "GF_API_KEY=%s" % t, t)
t = "dp.st.prd." + an(43)
add("doppler", "doppler run --token %s -- npm start" % t, t)
t = "ops_eyJ" + an(200, _AN + "_-")
add("1password", "OP_SERVICE_ACCOUNT_TOKEN=%s op read op://vault/item/field" % t, t)
app, admin = up(10), hexs(32)
add("algolia", "const client = algoliasearch('%s', '%s');" % (app, admin), admin)
add("pusher", "pusher = Pusher(app_id='%d', key='%s', secret='%s', cluster='eu')" % (_R.randrange(10**6, 10**7), hexs(20), hexs(20)), S[-1][1].split("secret='")[1][:20] if False else "")
S.pop()
pk, ps = hexs(20), hexs(20)
add("pusher", "pusher = Pusher(app_id='1234567', key='%s', secret='%s', cluster='eu')" % (pk, ps), ps)
t = "00" + an(40, _AN + "_-")
add("okta", "Authorization: SSWS %s" % t, t)
t = "u+" + an(18, _AN + "_-")
add("pagerduty", "curl -H 'Authorization: Token token=%s' https://api.pagerduty.com/users" % t, t)
t = "squ_" + hexs(40)
add("sonarqube", "sonar-scanner -Dsonar.login=%s -Dsonar.host.url=https://sonar.example.com" % t, t)
t = "bkua_" + hexs(40)
add("buildkite", "BUILDKITE_API_TOKEN=%s" % t, t)
t = "CFPAT-" + an(43, _AN + "_-")
add("contentful", "contentful login --management-token %s" % t, t)
t = "dt0c01.%s.%s" % (up(24), up(64))
add("dynatrace", "Api-Token %s" % t, t)
t = "sntrys_eyJpYXQiOj" + an(120, _AN + "_-")
add("sentry", "SENTRY_AUTH_TOKEN=%s sentry-cli releases new 1.0" % t, t)
t = "NRAK-" + up(27)
add("newrelic", "NEW_RELIC_API_KEY: %s" % t, t)
t = hexs(36) + "NRAL"
add("newrelic", "license_key: %s" % t, t)
t = "hcaik_" + an(58)
add("honeycomb", "HONEYCOMB_API_KEY=%s" % t, t)
t = "sbp_" + hexs(40)
add("supabase", "supabase login --token %s" % t, t)
t = "pscale_pw_" + an(43, _AN + "_-")
add("planetscale", "mysql -h aws.connect.psdb.cloud -u acme -p%s" % t, t)
t = "sk." + "eyJ1IjoiYWNtZSIsImEiOiJ" + an(40) + "." + an(22)
add("mapbox", "MAPBOX_SECRET_TOKEN=%s" % t, t)
t = "sl." + an(130, _AN + "_-")
add("dropbox", "dbx = dropbox.Dropbox('%s')" % t, t)
t = "2/%d/%d:%s" % (_R.randrange(10**15, 10**16), _R.randrange(10**15, 10**16), hexs(32))
add("asana", "ASANA_PAT=%s" % t, t)
t = "2" + an(26) + "_" + an(21)
add("ngrok", "ngrok config add-authtoken %s" % t, t)
t = "tskey-auth-k%s-%s" % (an(10), an(33))
add("tailscale", "tailscale up --authkey=%s" % t, t)
t = "AAAA" + an(7, _AN + "_-") + ":APA91b" + an(134, _AN + "_-")
add("firebase", "FCM_SERVER_KEY=%s" % t, t)
t = "FLWSECK-%s-X" % hexs(32)
add("flutterwave", "FLW_SECRET_KEY=%s" % t, t)
t = "rzp_live_" + an(14)
add("razorpay", "key_id: rzp_live_%s key_secret: %s" % (an(14), an(24)), S and "")
S.pop()
ks = an(24)
add("razorpay", "razorpay.Client(auth=(\"rzp_live_%s\", \"%s\"))" % (an(14), ks), ks)
t = "access_token$production$%s$%s" % (an(16, "abcdefghijklmnopqrstuvwxyz0123456789"), hexs(32))
add("braintree", "BT_ACCESS_TOKEN=%s" % t, t)
t = "access-production-" + uuid()
add("plaid", 'plaid access_token "%s"' % t, t)
t = "shippo_live_" + hexs(40)
add("shippo", "Authorization: ShippoToken %s" % t, t)
t = "EZAK" + hexs(54)
add("easypost", "client = easypost.EasyPostClient(\"%s\")" % t, t)
t = "AKID" + an(32)
add("tencent", "TENCENTCLOUD_SECRET_ID=%s TENCENTCLOUD_SECRET_KEY=%s" % (t, an(32)), t)
t = "LTAI" + an(20)
add("alibaba", "aliyun configure set --access-key-id %s --access-key-secret %s" % (t, an(30)), t)
# --- Generic forms people paste ------------------------------------------------------
add("generic", "DB_PASSWORD='my long pass phrase 2024'", "my long pass phrase 2024")
add("generic", "password = 'Zq8v(T2k)Lm9'", "Zq8v(T2k)Lm9")
add("generic", "PASSWORD=$ecretPa55w0rd!", "$ecretPa55w0rd!")
add("mysql", "mysql -u root -p'Tr0ub4dor&3 x' shop", "Tr0ub4dor&3 x")
add("mysql", 'mysqldump -uroot -p"n0t so s3cret" --all-databases > all.sql', "n0t so s3cret")
add("sshpass", "sshpass -p 'c0rrect horse battery' ssh deploy@10.0.0.5", "c0rrect horse battery")
add("postgres", "PGPASSWORD='pa ss;word' psql -h db -U app", "pa ss;word")
add("django", "SECRET_KEY = 'django-insecure-%s'" % an(50, _AN + "!@#$%^&*(-_=+)"), "")
S[-1] = (S[-1][0], S[-1][1], [S[-1][1].split("'")[1]])
add("rails", "secret_key_base: %s" % hexs(128), "")
S[-1] = (S[-1][0], S[-1][1], [S[-1][1].split(": ")[1]])
add("flask", "app.config['SECRET_KEY'] = '%s'" % an(32), "")
S[-1] = (S[-1][0], S[-1][1], [S[-1][1].split("= '")[1][:-1]])
add("wordpress", "define( 'AUTH_KEY', '%s' );" % an(64, _AN + "!@#%^&*-_=+[]{}|;:<>,.?"), "")
S[-1] = (S[-1][0], S[-1][1], [S[-1][1].split("', '")[1][:-4]])
add("generic", "<password>%s</password>" % an(16), "")
S[-1] = (S[-1][0], S[-1][1], [S[-1][1][10:26]])
add("dotnet", "Server=db;Database=app;User Id=sa;Password=Y0ur$tr0ng!Pass;", "Y0ur$tr0ng!Pass")
add("spring", "spring.datasource.password=Wint3r-is-c0ming", "Wint3r-is-c0ming")
add("kubernetes", "kubectl create secret generic db --from-literal=password='s3cr3t pass 99'", "s3cr3t pass 99")
add("powershell", '$env:API_TOKEN = "%s"' % an(32), "")
S[-1] = (S[-1][0], S[-1][1], [S[-1][1].split('"')[1]])
add("fish", "set -x GITHUB_TOKEN %s" % ("ghp_" + an(36)), "")
S[-1] = (S[-1][0], S[-1][1], [S[-1][1].split()[-1]])
add("docker", '{"auths": {"registry.example.com": {"auth": "%s"}}}' % base64.b64encode(b"deploy:Hunter2-prod").decode(), "")
S[-1] = (S[-1][0], S[-1][1], [base64.b64encode(b"deploy:Hunter2-prod").decode()])
envline = base64.b64encode(b"STRIPE_SECRET=sk_live_" + an(24).encode()).decode()
add("base64", "echo %s | base64 -d >> .env" % envline, envline)
envline = base64.b64encode(b"DATABASE_PASSWORD=Plum-Tree-4471").decode()
add("base64", "data:\n  config: %s" % envline, envline)
key = b64(64)
add("pem", "MIIEpAIBAAKCAQEA%s\n%s\n%s" % (key, b64(64), b64(64)), key)
key = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW" + b64(40)
add("openssh", "here is the key body\n%s\n%s" % (key, b64(70)), key)
t = "ghp_" + an(36)
add("wrapped", "GITHUB_TOKEN=%s\\\n%s" % (t[:20], t[20:]), t[:20], t[20:])
t = an(48)
add("wrapped", "api_key: %s\n  %s" % (t[:24], t[24:]), t[:24], t[24:])
t = urllib.parse.quote("p@ss w0rd&more", safe="")
add("urlencoded", "curl -d 'username=admin&password=%s' https://example.com/login" % t, t)
t = an(32)
add("urlencoded", "https://api.example.com/v2/items?access_token=%s&page=2" % t, t)
t = urllib.parse.quote('{"client_secret":"%s"}' % an(30), safe="")
add("urlencoded", "GET /callback?state=%s HTTP/1.1" % t, t)
add("german", "Passwort: Sommer2024!", "Sommer2024!")
add("french", "mot de passe : Chat-Noir-88", "Chat-Noir-88")
add("chinese", "数据库密码：Qaz123wsx", "Qaz123wsx")
add("spanish", "contraseña: Gato_Azul_7", "Gato_Azul_7")
add("portuguese", "senha = Bananas#2025", "Bananas#2025")
add("russian", "пароль: Moskva_1147", "Moskva_1147")
add("japanese", "パスワード：Sakura-Hana-9", "Sakura-Hana-9")
add("korean", "비밀번호: Seoul!2023x", "Seoul!2023x")
add("dutch", "wachtwoord = Fiets-Molen-3", "Fiets-Molen-3")
add("polish", "hasło: Krakow_2024_x", "Krakow_2024_x")
add("italian", "la password è Pizza-Margherita-4", "Pizza-Margherita-4")
add("turkish", "şifre: Istanbul34!", "Istanbul34!")
add("german", "API-Schlüssel: %s" % an(32), "")
S[-1] = (S[-1][0], S[-1][1], [S[-1][1].split(": ")[1]])
add("chinese", "API密钥：%s" % an(32), "")
S[-1] = (S[-1][0], S[-1][1], [S[-1][1].split("：")[1]])
add("http", "Cookie: session=%s; theme=dark" % an(40), "")
S[-1] = (S[-1][0], S[-1][1], [S[-1][1].split("session=")[1].split(";")[0]])
add("http", "X-API-Key: %s" % an(32), "")
S[-1] = (S[-1][0], S[-1][1], [S[-1][1].split(": ")[1]])
add("redis", "redis-cli -u 'rediss://default:%s@redis.example.com:6380'" % an(32), "")
S[-1] = (S[-1][0], S[-1][1], [S[-1][1].split("default:")[1].split("@")[0]])
add("mongodb", "mongosh \"mongodb+srv://app:%s@cluster0.ab1cd.mongodb.net/shop\"" % "Xy!9 spaced", "")
S[-1] = (S[-1][0], S[-1][1], ["Xy!9 spaced"])
add("wireguard", "[Interface]\nPrivateKey = %s=" % b64(43), "")
S[-1] = (S[-1][0], S[-1][1], [S[-1][1].split("= ")[1]])
add("gh", "gh secret set DEPLOY_KEY --body \"%s\"" % an(40), "")
S[-1] = (S[-1][0], S[-1][1], [S[-1][1].split('"')[1]])
add("heroku", "heroku config:set API_SECRET=%s -a acme" % an(40), "")
S[-1] = (S[-1][0], S[-1][1], [S[-1][1].split("=")[1].split()[0]])
add("htpasswd", "htpasswd -b -c .htpasswd admin 'Adm1n pass!'", "Adm1n pass!")
add("openssl", "openssl pkcs12 -export -passout pass:'Exp0rt me' -out c.p12", "Exp0rt me")
add("keytool", 'keytool -genkey -storepass "St0re pass" -keystore k.jks', "St0re pass")
add("ldap", "ldapsearch -x -D cn=admin -w 'Ld@p pass 1' -b dc=acme", "Ld@p pass 1")

SECRETS = [(v, line, secrets) for v, line, secrets in S]

# --- benign lines ------------------------------------------------------------------
B = []
_WORDS = ("token auth session secret password key cred refresh expired invalid rotate cache user login "
          "api client header cookie signature hash digest parse load save build handle").split()
for i in range(120):
    a, b, c = _R.sample(_WORDS, 3)
    B.append("tests/test_%s.py::Test%s%s::test_%s_%s_%s" % (a, b.title(), c.title(), a, b, c))
    B.append("tests/test_%s_%s.py::test_%s[%s-%d]" % (a, b, c, _R.choice(["utf8", "ascii", "none", "big"]), i))
for i in range(60):
    B.append("commit %s" % hexs(40))
    B.append("sha256:%s  dist/app-%d.%d.%d.tar.gz" % (hexs(64), i % 5, i % 13, i))
    B.append("integrity sha512-%s==" % b64(86))
for i in range(40):
    a, b = _R.sample(_WORDS, 2)
    B.append("src/%s/%s_%s.py:%d: def %s_%s(self, %s_id: int) -> None:" % (a, a, b, i + 10, a, b, b))
    B.append("const %s%s = await get%s%s(req.params.id);" % (a, b.title(), a.title(), b.title()))
    B.append("%s_%s_count = len(%s_%ss)" % (a, b, a, b))
    B.append("/home/dev/project/node_modules/@types/%s-%s/index.d.ts" % (a, b))
for i in range(30):
    B.append("request_id=%s status=200 duration_ms=%d" % (uuid(), _R.randrange(1, 900)))
    B.append("docker pull ghcr.io/acme/app@sha256:%s" % hexs(64))
    B.append("image: registry.example.com/team/service:v%d.%d.%d" % (i % 4, i % 10, i))
B += [
    "The token expired, so the client refreshes it before retrying.",
    "password: required (see docs/auth.md)",
    "TOKEN_TTL_SECONDS=3600",
    "MAX_TOKENS=4096",
    "export PASSWORD_FILE=/run/secrets/db_password",
    "api_key = os.environ['API_KEY']",
    "password = getpass.getpass()",
    "token = request.headers.get('Authorization')",
    'secret_key = settings.SECRET_KEY',
    "--password-stdin reads the password from standard input",
    "auth_token: ${{ secrets.AUTH_TOKEN }}",
    "DB_PASSWORD=${DB_PASSWORD:?must be set}",
    "curl -u \"$USER:$TOKEN\" https://api.example.com",
    "mysql -u root -p shop",
    "sshpass -f ~/.pw ssh host",
    "git log --oneline -n 20 -- src/auth/token.py",
    "Passwort vergessen? Klicken Sie hier.",
    "mot de passe oublié",
    "密码错误，请重试",
    "UUID 550e8400-e29b-41d4-a716-446655440000 not found",
    "python3 -m pytest -q tests/test_session.py -k 'token and not slow'",
    "ERROR tests/test_api.py::TestAuth::test_token_refresh_expired - AssertionError",
    "FAILED tests/test_login.py::test_password_reset[email-valid] - KeyError: 'token'",
    "npm ERR! code E401 Unable to authenticate, need: Basic realm=\"GitHub Package Registry\"",
    "Set the secret in your CI settings, never in the repository.",
    "const password = useRef<HTMLInputElement>(null);",
    "if token is None: raise AuthError('missing token')",
    "SESSION_COOKIE_SECURE = True",
    "JWT_ALGORITHM = 'HS256'",
    "auth_method: oauth2",
    "password_hash = bcrypt.hashpw(pw, bcrypt.gensalt())",
    "redis://localhost:6379/0",
    "postgresql://app@localhost:5432/app",
    "https://example.com/search?q=token+rotation&page=2",
    "https://example.com/docs?section=api-keys#rotate",
    "echo SGVsbG8sIHdvcmxkIQ== | base64 -d",
    "Content-Type: application/json; charset=utf-8",
    "Accept-Encoding: gzip, deflate, br",
    "tsc --noEmit -p tsconfig.json",
    "ruff check cc_continuity tests bench",
    "kubectl get secret db -o jsonpath='{.data.password}'",
    "aws sts get-caller-identity --profile prod",
    "gh auth status",
    "ssh-keygen -t ed25519 -C dev@example.com",
    "The API key lives in 1Password under 'Stripe prod'.",
    "Rotate the Slack bot token every 90 days.",
    "version: 2.1.332 (build 20261101)",
    "node_modules/.bin/claude --version",
    "AbstractSingletonProxyFactoryBean.getObject()",
    "gpt-4o-mini-2024-07-18 returned 429",
    "session_id=2b1e4c3a-9f7d-4e2b-8a6c-1d3f5e7a9b0c turn=17",
    "sk_test placeholder: replace with your own key",
    "AWS_REGION=eu-west-1",
    "tokenizer = AutoTokenizer.from_pretrained('bert-base-uncased')",
    "secretsmanager:GetSecretValue is denied",
    "password must be at least 12 characters long",
    "clé API manquante",
    "la contraseña es incorrecta",
    "API密钥无效",
]
BENIGN = B
