"""Ordinary multi-line text that looks like the shapes issue 34 masks: none of it may change.

GitHub workflows with heredocs, Compose and Kubernetes manifests, Helm values, Terraform
heredocs, Ansible vault blocks, Dockerfiles, Go raw strings, Python triple-quoted strings, lock
files, JSON arrays of names and templates, JWKS public keys, Markdown notes, XML settings and SAML
metadata -- written for tests/redact/test_redact_multiline.py (the second round of issue 34).
"""

BENIGN = [
# GitHub workflow with heredocs, run blocks, matrix lists, secrets refs
"""name: ci
on:
  push:
    branches: [main]
jobs:
  test:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        python:
          - "3.11"
          - "3.12"
    steps:
      - uses: actions/checkout@b4ffde65f46336ab88eb53be808477a3936bae11 # v4.1.1
      - uses: actions/setup-python@0a5c61591373683505ea898e09a3ea4f39ef2b9c
        with:
          python-version: ${{ matrix.python }}
      - name: write config
        run: |
          cat > config.toml <<EOF
          [server]
          port = 8080
          EOF
          cat > ~/.npmrc <<'EOF'
          //registry.npmjs.org/:_authToken=${NPM_TOKEN}
          EOF
      - name: test
        env:
          GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}
        run: >
          pytest -q
          --cov=src
""",
# docker-compose
"""services:
  db:
    image: postgres:16@sha256:4aea012537edfad80f98d870a36e6b90b4c09b27be7f4b4759d72db863baeebb
    environment:
      POSTGRES_PASSWORD_FILE: /run/secrets/db_password
    secrets:
      - db_password
    healthcheck:
      test:
        - CMD-SHELL
        - pg_isready -U postgres
secrets:
  db_password:
    file: ./secrets/db_password.txt
""",
# k8s deployment + configmap
"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  annotations:
    checksum/config: 8f3a1c2b9d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4
spec:
  template:
    spec:
      containers:
        - name: api
          image: ghcr.io/acme/api:1.4.2
          args:
            - --config
            - /etc/api/config.yaml
          env:
            - name: API_TOKEN
              valueFrom:
                secretKeyRef:
                  name: api
                  key: token
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: api
data:
  config.yaml: |
    log_level: info
    feature_flags:
      - new-ui
      - fast-path
  build_id:
    20240501.3
""",
# Helm values
"""image:
  repository: ghcr.io/acme/web
  tag: "2.3.1"
podAnnotations:
  prometheus.io/scrape: "true"
resources:
  limits:
    cpu: 500m
    memory: 512Mi
auth:
  existingSecret: web-auth
  secretKeys:
    userKey: user
extraEnv: |
  - name: TZ
    value: UTC
tolerations: []
nodeSelector:
  kubernetes.io/os: linux
""",
# Terraform with heredocs
'''resource "aws_iam_policy" "ci" {
  name   = "ci"
  policy = <<EOF
{
  "Version": "2012-10-17",
  "Statement": [{"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": "*"}]
}
EOF
}

resource "aws_instance" "web" {
  ami           = "ami-0c55b159cbfafe1f0"
  instance_type = "t3.micro"
  user_data     = <<-EOT
    #!/bin/bash
    yum install -y nginx
    systemctl start nginx
  EOT
}

variable "tags" {
  default = <<EOT
team=platform
EOT
}
''',
# Ansible
"""- hosts: web
  vars:
    db_password: !vault |
      $ANSIBLE_VAULT;1.1;AES256
      62313365396662343061393464336163383764373764613633653634306231386433626436623361
      6134333665353966363534333632666535333761666131620a663537646436643839616531643561
    packages:
      - nginx
      - python3-psycopg2
  tasks:
    - name: install
      apt:
        name: "{{ packages }}"
        state: present
    - name: template
      template:
        src: app.conf.j2
        dest: /etc/app/app.conf
""",
# Dockerfile with GPG keys and ENV continuation
"""FROM debian:bookworm-slim
ENV GPG_KEY=A035C8C19219BA821ECEA86B64E628F8D684696D \\
    PYTHON_VERSION=3.11.9 \\
    PATH=/usr/local/bin:$PATH
ENV SHA256=\\
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
RUN set -eux; \\
    gpg --batch --keyserver hkps://keys.openpgp.org --recv-keys "$GPG_KEY"; \\
    cat > /etc/apt/apt.conf.d/99retries <<'EOF'
Acquire::Retries "3";
EOF
ARG BUILD_DATE
LABEL org.opencontainers.image.revision=\\
  "9f2c1e7a3b5d8f0a2c4e6b8d0f1a3c5e7b9d1f3a"
""",
# Go with raw strings
'''package db

const schema = `
CREATE TABLE users (
    id SERIAL PRIMARY KEY,
    email TEXT NOT NULL
);
`

var usage = `
Usage: tool [flags]
`

var goldenHash = `
9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
`

var route = `
/api/v2/users/{id}
`
''',
# Python with triple-quoted strings
'''QUERY = """
SELECT id, name
FROM users
WHERE active
"""

HELP = """
Usage: prog [options]
"""

PATTERN = r"""
^(?P<name>[A-Za-z_][A-Za-z0-9_]*)$
"""

VERSION = """
3.11.9
"""

MODULE = """
cc_continuity.redact
"""
''',
# TOML / lock files
'''[tool.poetry]
name = "acme"
version = "0.1.0"

[tool.poetry.dependencies]
python = "^3.11"

[[package]]
name = "requests"
version = "2.31.0"
files = [
    {file = "requests-2.31.0-py3-none-any.whl", hash = "sha256:58cd2187c01e70e6e26505bca751777aa9f2ee0b7f4300988b709f44e013003f"},
]

[metadata]
content-hash = "3f1d2b4e6c8a0f9e7d5c3b1a2f4e6d8c0b9a7f5e3d1c2b4a6f8e0d9c7b5a3f1e"
description = """
A small library.
"""
''',
# Cargo.lock
'''[[package]]
name = "serde"
version = "1.0.197"
source = "registry+https://github.com/rust-lang/crates.io-index"
checksum = "3fb1c873e1b9b056a4dc4c0c198b24c3ffa059243875552b2bd0933b1aee4ce2"
dependencies = [
 "serde_derive",
]
''',
# package.json / tsconfig / JSON arrays
'''{
  "name": "web",
  "version": "1.2.3",
  "keywords": [
    "auth",
    "token",
    "oauth2"
  ],
  "files": [
    "dist/index.js",
    "dist/index.d.ts"
  ],
  "scripts": {
    "build": "tsc -p ."
  },
  "tokens": [
    "<s>",
    "</s>",
    "[CLS]",
    "\\u0120the",
    "##ing",
    "Hello2World"
  ],
  "api_keys": [
    "${API_KEY_PRIMARY}",
    "{{ .Values.apiKey }}"
  ],
  "hashes": [
    "sha512-2XjRVtArq3VlV7BaxFQ4YUq1bE0ZCtGmwW2Yzx6Fgq1U7gmGi7jkTJYX0QHcE5U3Fj0xhvqXEZoB1jL7vQ8Kgw=="
  ]
}
''',
# JWKS (public keys)
'''{"keys": [
  {"kty": "RSA", "kid": "2024-05", "use": "sig", "alg": "RS256",
   "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw",
   "e": "AQAB"}
]}
''',
# Markdown notes / handoff prose
"""## Decisions
- token: the refresh flow
  moved to src/auth.py
- Passwords:
  - rotation
  - expiry
Token:
  expired 2 days ago, see the runbook

API keys:
- stored in Vault under kv/app
- rotated monthly

Password:
See the team vault.

Tokens:
- access
- refresh

Signing keys:
- ed25519
- rsa-4096
""",
# shell script with heredocs
"""#!/bin/sh
cat <<EOF > /etc/motd
Welcome to build-host-42
EOF
cat > ~/.ssh/config <<'EOF'
Host github.com
  IdentityFile ~/.ssh/id_ed25519
EOF
tee /etc/app/token.env >/dev/null <<EOF
API_TOKEN=${API_TOKEN}
EOF
kubectl apply -f - <<EOF
apiVersion: v1
kind: Namespace
metadata:
  name: demo
EOF
cat > notes/token-rotation.md <<EOF
# Token rotation
Rotate every 90 days.
Step2Done
EOF
sqlite3 app.db <<SQL
SELECT count(*) FROM sessions;
SQL
""",
# XML config
"""<?xml version="1.0"?>
<settings>
  <servers>
    <server>
      <id>releases</id>
      <username>deployer</username>
      <password>${env.RELEASES_PASSWORD}</password>
    </server>
    <server>
      <id>snapshots</id>
      <password>${env.SNAPSHOT_PASSWORD}</password>
    </server>
  </servers>
  <profiles>
    <profile>
      <id>ci</id>
      <properties>
        <sonar.token>${env.SONAR_TOKEN}</sonar.token>
        <build.number>20240501</build.number>
        <git.commit>9f2c1e7a3b5d8f0a2c4e6b8d0f1a3c5e7b9d1f3a</git.commit>
      </properties>
    </profile>
  </profiles>
</settings>
""",
# SAML metadata
"""<md:EntityDescriptor entityID="https://idp.example.com">
  <md:IDPSSODescriptor>
    <md:KeyDescriptor use="signing">
      <ds:KeyInfo>
        <ds:X509Data>
          <ds:X509Certificate>
            MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ
            RTESMBAGA1UEChMJQmFsdGltb3JlMRMwEQYDVQQLEwpDeWJlclRydXN0MSIwIAYD
          </ds:X509Certificate>
        </ds:X509Data>
      </ds:KeyInfo>
    </md:KeyDescriptor>
    <md:NameIDFormat>
      urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress
    </md:NameIDFormat>
  </md:IDPSSODescriptor>
</md:EntityDescriptor>
""",
# Android / .NET XML
"""<resources>
    <string name="password_hint">Enter your password</string>
    <string name="token_expired">Your session token has expired</string>
</resources>
<configuration>
  <appSettings>
    <add key="ApiBaseUrl" value="https://api.example.com" />
  </appSettings>
  <Token>
    Bearer
  </Token>
  <Password>
    required
  </Password>
</configuration>
""",
# K8s secret with templates only (Helm)
"""apiVersion: v1
kind: Secret
metadata:
  name: {{ include "app.fullname" . }}
type: Opaque
data:
  password: {{ .Values.password | b64enc | quote }}
  token: {{ required "token" .Values.token | b64enc }}
stringData:
  url: "{{ .Values.url }}"
""",
# YAML with neutral block scalars of ordinary text / ids
"""description: >
  A service that handles
  user sessions.
build:
  commit: |
    9f2c1e7a3b5d8f0a2c4e6b8d0f1a3c5e7b9d1f3a
  image: >-
    ghcr.io/acme/api:1.4.2
  region:
    eu-west-1
  cluster_id:
    c-7Hq2Lm9Xp4
  artifact: |
    dist/App2Bundle.tar.gz
  labels:
    - team-platform
    - tier-backend
  entrypoint:
    - /bin/sh
    - -c
version: |
  1.4.2
""",
# OpenAPI fragment
"""components:
  securitySchemes:
    bearerAuth:
      type: http
      scheme: bearer
      bearerFormat: JWT
    apiKey:
      type: apiKey
      in: header
      name: X-API-Key
  schemas:
    Token:
      type: object
      required:
        - access_token
        - expires_in
      properties:
        access_token:
          type: string
          example: eyJhbGciOiJIUzI1NiJ9.example.signature
""",
# .env with multi-line quoted ordinary values
'''APP_NAME="Acme
Portal"
GREETING='Hello,
world'
ALLOWED_HOSTS="localhost
example.com"
''',
# Python code with sequences/arrays, format strings
'''TOKEN_TYPES = [
    "access_token",
    "refresh_token",
]
PASSWORD_FIELDS = ("password", "password_confirm")
secret_names = [
    "DB_PASSWORD",
    "API_TOKEN",
]
api_keys = [
    os.environ["PRIMARY_KEY"],
    os.environ["SECONDARY_KEY"],
]
''',
]
