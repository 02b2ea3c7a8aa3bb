"""A second held-out corpus for the secret redactor, written blind.

Written without opening cc_continuity/redact.py, tests/test_redact*.py, the other files under tests/data/ or
docs/SECURITY.md: nothing here was shaped to fit the rules, and nothing was checked against them.  Pure data,
standard library only; nothing in this module runs a redactor.

Where the formats come from: vendor documentation and public pages found with the ``search`` tool, corpora
"docs" and "pages".  Among them:

- Sentry, "Token and Credential Formats" (docs.sentry.io/security-legal-pii/security/token-formats/): user tokens
  ``sntryu_`` + 64 hex, organisation tokens ``sntrys_<base64 JSON>_<secret>``; DSNs ``https://<key>@o<org>.ingest...``.
- Replicate, "API tokens": 40-character strings that always start with ``r8_``.
- CircleCI changelog, "New format for API Access Tokens": ``CCIPAT_``/``CCIPRJ_`` + base58 UUID + ``_`` + 40 hex.
- Netlify forum, "Change to the Netlify authentication token format": ``nfp_`` personal tokens, 40 characters.
- Vercel changelog, "Introducing new token formats and secret scanning": ``vcp_``/``vci_``/``vca_``/``vcr_``/``vck_``
  (a scanner rule describes the tail as 6 characters of base62(CRC32(body)); computed that way here).
- GitLab merge request adding a Heroku validity check: Heroku API keys start ``HRKU-``.
- Okta, "Create an API token": ``Authorization: SSWS 00...``.
- Microsoft Purview sensitive-information types: Entra client secrets (40 characters, ``...8Q~...``), Google API
  keys (``AIza`` + 35); Google Cloud "Manage API keys".
- JFrog, "Understanding Identity Tokens": reference tokens ``cmVmd`` + 59 alphanumerics; Artifactory API keys.
- AWS Secrets Manager, SonarQube rotation: tokens start ``squ_``, ``sqa_`` or ``sqp_``.
- Anthropic Admin API integration guides: admin keys start ``sk-ant-admin01-``.
- Notion (``ntn_``, legacy ``secret_``), Figma (``X-Figma-Token``, ``figd_``), Groq (``gsk_``), Perplexity
  (``pplx-`` + 48), Pinecone (``pcsk_``), Render (``rnd_``): vendor pages and scanner rule documentation.
- Postmark API overview (``X-Postmark-Server-Token``, UUID-shaped), Mailchimp key data-centre suffix (``-us6``),
  Intercom access tokens, Zendesk ``email/token:TOKEN``, Asana personal access tokens, Twitch, Auth0, Cohere, Mistral.
- Supabase "API keys" (``sb_secret_``, ``sb_publishable_``, legacy ``service_role`` JWTs); Fly.io "Access tokens"
  (macaroons, ``FlyV1 fm2_...``); Railway public API (account, workspace and UUID project tokens).
- Telegram BotFather tokens (``<digits>:AA...``); Discord bot tokens (base64 user id . timestamp . HMAC).
- Azure SAS URIs (``sv``, ``sr``, ``sp``, ``se``, ``sig``) and storage connection strings; AWS STS session tokens.
- age (Crypt::Age::Keys): ``AGE-SECRET-KEY-1`` + bech32, upper case; public recipients ``age1...``.
- Weights & Biases: legacy keys are 40 characters.

Every token, password and key body here was drawn at random by a throwaway script (kept outside the repository)
in the documented shape: prefix, alphabet, length, and where a checksum is documented (bech32 for age, base62
CRC32 for Vercel) a valid one.  None is a real credential and none is copied from documentation or a page.

MULTILINE: ``(shape, text, secrets)``.  ``text`` is a multi-line snippet of a file people paste into handoffs;
``secrets`` are the exact strings that must not survive redaction.  Tags in ``shape``: ``[next-line]`` the value
starts on a line after its key; ``[spans]`` the value runs over several lines, and ``secrets`` then lists each
line's piece (each piece on its own must not survive); ``[neutral]`` the key carries no secret-sounding word.

VENDOR: ``(vendor, line, secrets)``, one line each, in the vendor's documented format and varied contexts.

BENIGN: strings that look like secrets and are not (public keys, hashes, digests, identifiers, references,
placeholders); each must come out unchanged.
"""


MULTILINE = [
    (
        'docker-compose map-form environment, folded scalar, value on the next line [next-line] [neutral]',
        (
            'services:\n'
            '  worker:\n'
            '    image: ghcr.io/acme/worker:2.14.1\n'
            '    environment:\n'
            '      QUEUE_URL: redis://cache:6379/2\n'
            '      VALUE: >-\n'
            '        xwIlJpyv-2kjZguNBeFEcvNdTg0YfZpbL4la_qsr\n'
            '    restart: unless-stopped\n'
        ),
        [
            'xwIlJpyv-2kjZguNBeFEcvNdTg0YfZpbL4la_qsr',
        ],
    ),
    (
        'docker-compose list-form environment, double-quoted item broken with an escaped newline [spans] [neutral]',
        (
            'services:\n'
            '  api:\n'
            '    build: .\n'
            '    environment:\n'
            '      - "LOG_LEVEL=info"\n'
            '      - "ITEM=sk-proj-rnfLpZkauVNhe3ylVeeEccBajBET6-YClOt--LfqQ-DEuL4bouLAXnBZAXS5M7sMl2kvzhThqv\\\n'
            '        T3BlbkFJggZuu_9Cx-btGorOXsad6w-NNVs3K4NqPKd0Kh7QDTvWnH8GN-zEbnGcZ6o6FaVaJKHKbb-Le3"\n'
            '      - "PORT=8080"\n'
        ),
        [
            'sk-proj-rnfLpZkauVNhe3ylVeeEccBajBET6-YClOt--LfqQ-DEuL4bouLAXnBZAXS5M7sMl2kvzhThqv',
            'T3BlbkFJggZuu_9Cx-btGorOXsad6w-NNVs3K4NqPKd0Kh7QDTvWnH8GN-zEbnGcZ6o6FaVaJKHKbb-Le3',
        ],
    ),
    (
        'docker-compose command list, the value is the list item after its flag [next-line] [neutral]',
        (
            'services:\n'
            '  exporter:\n'
            '    image: quay.io/acme/exporter:0.9.3\n'
            '    command:\n'
            '      - "--metrics-port=9102"\n'
            '      - "--arg"\n'
            '      - "YFG8INu.zQb~HEDF7gga_W~F4CGR"\n'
        ),
        [
            'YFG8INu.zQb~HEDF7gga_W~F4CGR',
        ],
    ),
    (
        'docker-compose folded command, --requirepass wrapped onto the second line [next-line]',
        (
            'services:\n'
            '  cache:\n'
            '    image: redis:7.2-alpine\n'
            '    command: >\n'
            '      redis-server --appendonly yes\n'
            '      --requirepass Iq0aVkHzNZ9P*v-.s45untJj\n'
            '    ports:\n'
            '      - "6379:6379"\n'
        ),
        [
            'Iq0aVkHzNZ9P*v-.s45untJj',
        ],
    ),
    (
        'GitHub Actions job env:, folded scalar under a one-letter key [next-line] [neutral]',
        (
            'jobs:\n'
            '  deploy:\n'
            '    runs-on: ubuntu-latest\n'
            '    env:\n'
            '      NODE_ENV: production\n'
            '      A: >-\n'
            '        vcp_Wnz_iy4f4ntcXqdH-PqWHEMfoMknDdHLeQMKWevQwJsDRegU-N1Um1up\n'
            '    steps:\n'
            '      - uses: actions/checkout@v4\n'
        ),
        [
            'vcp_Wnz_iy4f4ntcXqdH-PqWHEMfoMknDdHLeQMKWevQwJsDRegU-N1Um1up',
        ],
    ),
    (
        "GitHub Actions step with:, literal block under 'arg' [next-line] [neutral]",
        (
            '      - name: Publish preview\n'
            '        uses: acme/deploy-action@v4\n'
            '        with:\n'
            '          environment: staging\n'
            '          arg: |\n'
            '            nfp_VnGmx3RSHhLpWM2Qkd9ztWTmwt58evVqZ7Qr\n'
            '          site-id: 6f1d0c1e-preview\n'
        ),
        [
            'nfp_VnGmx3RSHhLpWM2Qkd9ztWTmwt58evVqZ7Qr',
        ],
    ),
    (
        'GitHub Actions run: curl wrapped with backslashes, API key header on a continuation line [next-line]',
        (
            '      - name: Notify release\n'
            '        run: |\n'
            '          curl -fsS -X POST https://hooks.example.net/deploy \\\n'
            '            -H "Content-Type: application/json" \\\n'
            '            -H "X-Api-Key: ZW6ZqR4rZpS2oJOVvBP4HnL4jTUHLBhVKcndQVTyzDVVgyVU" \\\n'
            '            -d \'{"ref": "${{ github.sha }}"}\'\n'
        ),
        [
            'ZW6ZqR4rZpS2oJOVvBP4HnL4jTUHLBhVKcndQVTyzDVVgyVU',
        ],
    ),
    (
        "Helm values.yaml, folded scalar under 's' [next-line] [neutral]",
        (
            'global:\n'
            '  imageRegistry: registry.example.net\n'
            'auth:\n'
            '  enabled: true\n'
            '  existingSecret: ""\n'
            '  s: >-\n'
            '    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\n'
            'resources:\n'
            '  limits:\n'
            '    memory: 512Mi\n'
        ),
        [
            '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',
        ],
    ),
    (
        'Helm values.yaml extraEnv list, value: on the line after name: [next-line] [neutral]',
        (
            'extraEnv:\n'
            '  - name: LOG_FORMAT\n'
            '    value: json\n'
            '  - name: DATA\n'
            '    value: >-\n'
            '      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\n'
        ),
        [
            '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',
        ],
    ),
    (
        "Ansible group_vars, folded scalar under 'item' [next-line] [neutral]",
        (
            '---\n'
            'app_user: deploy\n'
            'app_port: 8443\n'
            'item: >\n'
            '  w9pbr7ypzQn2W2aKqOQ1yCscdfnHY2qX\n'
            'app_release: "2025.03.1"\n'
        ),
        [
            'w9pbr7ypzQn2W2aKqOQ1yCscdfnHY2qX',
        ],
    ),
    (
        'Ansible task environment:, DB password folded onto the next line [next-line]',
        (
            '- name: Run database migrations\n'
            '  ansible.builtin.command: /opt/ledger/bin/migrate --apply\n'
            '  environment:\n'
            '    DB_HOST: pg-primary.internal\n'
            '    DB_PASSWORD: >-\n'
            '      S?8=1mJi.uR.0^8F_t+^+nsq37\n'
            '  become_user: ledger\n'
        ),
        [
            'S?8=1mJi.uR.0^8F_t+^+nsq37',
        ],
    ),
    (
        "Kubernetes Secret stringData, literal block under 'data' [next-line] [neutral]",
        (
            'apiVersion: v1\n'
            'kind: Secret\n'
            'metadata:\n'
            '  name: api-creds\n'
            '  namespace: payments\n'
            'type: Opaque\n'
            'stringData:\n'
            '  data: |\n'
            '    kolkzmgFPlXFn8ZMW7DI5HO4rkNIdKmFXgjB5EWc7bZv\n'
        ),
        [
            'kolkzmgFPlXFn8ZMW7DI5HO4rkNIdKmFXgjB5EWc7bZv',
        ],
    ),
    (
        "Kubernetes Secret stringData holding a config file, plain scalar on the line after 'v:' [next-line] [neutral]",
        (
            'apiVersion: v1\n'
            'kind: Secret\n'
            'metadata:\n'
            '  name: upstream-config\n'
            'stringData:\n'
            '  config.yaml: |\n'
            '    upstream:\n'
            '      url: https://api.example.net\n'
            '      v:\n'
            '        r8_pxIzExQrr694euvQ9lULtrXnVKCs2dAQpXSCB\n'
            '      timeout: 30s\n'
        ),
        [
            'r8_pxIzExQrr694euvQ9lULtrXnVKCs2dAQpXSCB',
        ],
    ),
    (
        'GitLab CI variables, expanded form: value: on the line after the variable name [next-line] [neutral]',
        (
            'variables:\n'
            '  GIT_DEPTH: "20"\n'
            '  DATA:\n'
            '    value: "MyGO5b5Yy17VPb1op4uh"\n'
            '    description: "uploads to the artefact store"\n'
        ),
        [
            'MyGO5b5Yy17VPb1op4uh',
        ],
    ),
    (
        'CloudFormation parameter, NoEcho default folded onto the next line [next-line] [neutral]',
        (
            'Parameters:\n'
            '  Arg:\n'
            '    Type: String\n'
            '    NoEcho: true\n'
            '    Default: >-\n'
            '      w1CgGo*dHhFK!vueYbRZA!rs*H9J7A\n'
            'Resources:\n'
            '  Queue:\n'
            '    Type: AWS::SQS::Queue\n'
        ),
        [
            'w1CgGo*dHhFK!vueYbRZA!rs*H9J7A',
        ],
    ),
    (
        'YAML list under a neutral key, each item a token [next-line] [neutral]',
        (
            'fallback:\n'
            '  items:\n'
            '    - 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\n'
            '    - 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\n'
            '  strategy: round-robin\n'
        ),
        [
            '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',
            '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',
        ],
    ),
    (
        'Spring Boot application.yml, datasource password folded [next-line]',
        (
            'spring:\n'
            '  datasource:\n'
            '    url: jdbc:postgresql://pg-primary.internal:5432/orders\n'
            '    username: orders_app\n'
            '    password: >-\n'
            '      2ulTUas0Z!d25AxHIP.7AP\n'
        ),
        [
            '2ulTUas0Z!d25AxHIP.7AP',
        ],
    ),
    (
        "Terraform .tfvars heredoc under 'a' [next-line] [neutral]",
        (
            'region      = "eu-west-1"\n'
            'environment = "prod"\n'
            'a = <<EOT\n'
            '00RRxR_a0TXrMHRHpd312w8g_WQbIM1fPUC_QVjsv2\n'
            'EOT\n'
        ),
        [
            '00RRxR_a0TXrMHRHpd312w8g_WQbIM1fPUC_QVjsv2',
        ],
    ),
    (
        'Terraform resource, data map entry as an indented heredoc [next-line] [neutral]',
        (
            'resource "kubernetes_secret" "app" {\n'
            '  metadata {\n'
            '    name      = "app"\n'
            '    namespace = "web"\n'
            '  }\n'
            '  data = {\n'
            '    arg = <<-EOT\n'
            '      3cfe49e1f02c68e1fbb7d485f1f6788d2cfefbf6d260ac09dc5914b74438cc04\n'
            '    EOT\n'
            '  }\n'
            '}\n'
        ),
        [
            '3cfe49e1f02c68e1fbb7d485f1f6788d2cfefbf6d260ac09dc5914b74438cc04',
        ],
    ),
    (
        'Terraform .tfvars list: the values sit on the lines after the key [next-line] [neutral]',
        (
            'items = [\n'
            '  "zuLTC263Hhq0kkese0LlZ30FrSlM95sU",\n'
            '  "VEwyCNpYK7Qz6aQXJcy0SKr8aJXsJhap",\n'
            ']\n'
            'replicas = 3\n'
        ),
        [
            'zuLTC263Hhq0kkese0LlZ30FrSlM95sU',
            'VEwyCNpYK7Qz6aQXJcy0SKr8aJXsJhap',
        ],
    ),
    (
        'Vault seal stanza in HCL, token as a heredoc [next-line]',
        (
            'seal "transit" {\n'
            '  address    = "https://vault.example.net:8200"\n'
            '  key_name   = "autounseal"\n'
            '  mount_path = "transit/"\n'
            '  token      = <<EOT\n'
            'hvs.KpCdZL0pvNvcluavGCafqUmL\n'
            'EOT\n'
            '}\n'
        ),
        [
            'hvs.KpCdZL0pvNvcluavGCafqUmL',
        ],
    ),
    (
        '.npmrc pasted from a narrow terminal: the auth token wrapped onto the next line [next-line]',
        (
            'registry=https://registry.npmjs.org/\n'
            '//registry.npmjs.org/:_authToken=\n'
            'npm_BdCANXXZoiaoScqRa2ILKo11W05MtpobG8AV\n'
            'always-auth=true\n'
        ),
        [
            'npm_BdCANXXZoiaoScqRa2ILKo11W05MtpobG8AV',
        ],
    ),
    (
        ".pypirc, 'password =' with the API token on the continuation line [next-line]",
        (
            '[distutils]\n'
            'index-servers =\n'
            '    pypi\n'
            '    internal\n'
            '\n'
            '[pypi]\n'
            'username = __token__\n'
            'password =\n'
            '    pypi-AgEIcHlwaS5vcmcI7fJ5nwwBSBFJ-HW4NEVvH7cNqn_IESpMgs-eyTbyBxDmQdoIzJc_Bpmons2Bp9Cyoi_pMCET0bazGY9pQtGGNGDJNy7MgSxwvyg_lwONmzZ0uQNdfHBJ53XRxCjsN5hB7FrwsosbTaAY-DDiqNofkeiov-O69y6\n'
        ),
        [
            'pypi-AgEIcHlwaS5vcmcI7fJ5nwwBSBFJ-HW4NEVvH7cNqn_IESpMgs-eyTbyBxDmQdoIzJc_Bpmons2Bp9Cyoi_pMCET0bazGY9pQtGGNGDJNy7MgSxwvyg_lwONmzZ0uQNdfHBJ53XRxCjsN5hB7FrwsosbTaAY-DDiqNofkeiov-O69y6',
        ],
    ),
    (
        '.pypirc private index, password on an indented continuation line [next-line]',
        (
            '[internal]\n'
            'repository = https://pkgs.example.net/pypi/\n'
            'username = ci-bot\n'
            'password =\n'
            '    Od-hmxPR1AVeTfW1bvPo-%K6\n'
        ),
        [
            'Od-hmxPR1AVeTfW1bvPo-%K6',
        ],
    ),
    (
        'pip.conf, index-url with embedded credentials on the continuation line [next-line] [neutral]',
        (
            '[global]\n'
            'timeout = 60\n'
            'index-url =\n'
            '    https://build:MVZHRSHD0Zb09dg48Wo4e3Qf@pkgs.example.net/simple/\n'
            'extra-index-url = https://pypi.org/simple\n'
        ),
        [
            'MVZHRSHD0Zb09dg48Wo4e3Qf',
        ],
    ),
    (
        'Java .properties, value after a trailing backslash [next-line] [neutral]',
        (
            'app.name=ledger\n'
            'app.remote.url=https://api.example.net\n'
            'app.remote.value=\\\n'
            '    q2FIutua5hzqHblYpCo3tBYiHuvY0ZeXeoOT3GGJ\n'
            'app.remote.timeout=30\n'
        ),
        [
            'q2FIutua5hzqHblYpCo3tBYiHuvY0ZeXeoOT3GGJ',
        ],
    ),
    (
        'Java .properties, value split across two lines with a backslash continuation [spans] [neutral]',
        (
            '# generated by setup.sh\n'
            'service.item=eG56Rs3xjlY-aV0pQPsyg2fa\\\n'
            '             WidfX1FfNl1OIkBAqhUtnoQN\n'
            'service.retries=5\n'
        ),
        [
            'eG56Rs3xjlY-aV0pQPsyg2fa',
            'WidfX1FfNl1OIkBAqhUtnoQN',
        ],
    ),
    (
        'INI file, value on an indented continuation line [next-line] [neutral]',
        (
            '[upstream]\n'
            'host = api.example.net\n'
            'port = 443\n'
            'value =\n'
            '    2/6811271500444091/2222632914700282:d7c1909ecc169da76fc112d38cac561d\n'
        ),
        [
            '2/6811271500444091/2222632914700282:d7c1909ecc169da76fc112d38cac561d',
        ],
    ),
    (
        'JSON config, value on the line after its key [next-line] [neutral]',
        (
            '{\n'
            '  "endpoint": "https://api.example.net/v2",\n'
            '  "item":\n'
            '    "_mnEAjZINDLjSHMvwYjV6-biN833ZNkzaSlo",\n'
            '  "retries": 3\n'
            '}\n'
        ),
        [
            '_mnEAjZINDLjSHMvwYjV6-biN833ZNkzaSlo',
        ],
    ),
    (
        'JSON config, token inside an array on the lines below its key [next-line] [neutral]',
        (
            '{\n'
            '  "profiles": {\n'
            '    "ci": {\n'
            '      "region": "eu-central-1",\n'
            '      "data": [\n'
            '        "AIzaSySMEpGk3YYaTxkkhcxrwiYcWQyuso9-ql2"\n'
            '      ]\n'
            '    }\n'
            '  }\n'
            '}\n'
        ),
        [
            'AIzaSySMEpGk3YYaTxkkhcxrwiYcWQyuso9-ql2',
        ],
    ),
    (
        "TOML multi-line basic string under 's' [next-line] [neutral]",
        (
            '[service]\n'
            'url = "https://api.example.net"\n'
            's = """\n'
            '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"""\n'
        ),
        [
            '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',
        ],
    ),
    (
        'TOML multi-line basic string with line-ending backslashes, value split in two [spans] [neutral]',
        (
            '[client]\n'
            'name = "reporting"\n'
            'key = """\\\n'
            '    gFTIBKR540BMwQxjYfRoxxcRP4TA\\\n'
            '    6g5rB6SYdlDs9fyM4fas0aReI826\\\n'
            '    """\n'
        ),
        [
            'gFTIBKR540BMwQxjYfRoxxcRP4TA',
            '6g5rB6SYdlDs9fyM4fas0aReI826',
        ],
    ),
    (
        'XML appSettings, value attribute on the line after key= [next-line] [neutral]',
        (
            '<appSettings>\n'
            '  <add key="Environment" value="Production" />\n'
            '  <add key="value"\n'
            '       value="XiC_9j?%U?c3~Wp9rnc56qlcosCA?BXl" />\n'
            '</appSettings>\n'
        ),
        [
            'XiC_9j?%U?c3~Wp9rnc56qlcosCA?BXl',
        ],
    ),
    (
        'nginx config, header value on the line after the directive [next-line] [neutral]',
        (
            'location /upstream/ {\n'
            '    proxy_pass https://backend.internal:8443;\n'
            '    proxy_set_header X-Item\n'
            '        "CFGfmxNfp3YkHenZm068Jotcjn47zJGUg8enstUd";\n'
            '}\n'
        ),
        [
            'CFGfmxNfp3YkHenZm068Jotcjn47zJGUg8enstUd',
        ],
    ),
    (
        'shell export, value after a backslash-newline [next-line] [neutral]',
        (
            '#!/usr/bin/env bash\n'
            'set -euo pipefail\n'
            'export A=\\\n'
            'figd_gIIR5Lr2zSXl39q0E2owqmzE9TUjBh3mEN5r-bR5\n'
            'exec ./bin/sync --once\n'
        ),
        [
            'figd_gIIR5Lr2zSXl39q0E2owqmzE9TUjBh3mEN5r-bR5',
        ],
    ),
    (
        'shell export, double-quoted value split by a backslash-newline [spans] [neutral]',
        (
            'export DATA="sk-ant-api03-9QQYgxgHhm4osa1zYehGfU8CJHOOXTUrMF66t7u3T\\\n'
            'lMj4lIbnWe4GrisjQ-BZQxU_obrTgNxCz-RXnSQjOVxoMSWbF8JdAA"\n'
            'python3 run_eval.py --model claude\n'
        ),
        [
            'sk-ant-api03-9QQYgxgHhm4osa1zYehGfU8CJHOOXTUrMF66t7u3T',
            'lMj4lIbnWe4GrisjQ-BZQxU_obrTgNxCz-RXnSQjOVxoMSWbF8JdAA',
        ],
    ),
    (
        'curl wrapped with backslashes, Bearer token on a continuation line [next-line]',
        (
            'curl -sS https://api.example.net/v1/reports \\\n'
            "  -H 'Accept: application/json' \\\n"
            '  -H "Authorization: Bearer HRKU-AA6zmjmb-Pr-Sp_Nbo_6CDvsnDFrkiYpOd0CSmm5Mvd8lF3Vn2TbbPn35LGU" \\\n'
            '  --compressed\n'
        ),
        [
            'HRKU-AA6zmjmb-Pr-Sp_Nbo_6CDvsnDFrkiYpOd0CSmm5Mvd8lF3Vn2TbbPn35LGU',
        ],
    ),
    (
        'curl wrapped, basic-auth user:password on a continuation line [next-line]',
        (
            'curl --fail \\\n'
            '  -u deploy-bot:3?4I!UxZGvfbAAQghXym \\\n'
            '  -T build.tar.gz https://artifacts.example.net/upload/\n'
        ),
        [
            '3?4I!UxZGvfbAAQghXym',
        ],
    ),
    (
        'curl wrapped, OAuth client secret posted on the last continuation line [next-line]',
        (
            'curl -X POST https://login.example.net/oauth/token \\\n'
            '  -d grant_type=client_credentials \\\n'
            '  -d client_id=reporting-svc \\\n'
            '  -d client_secret=oZiU3NeNYk4JNc-xLFXzgEdCF3Fi_mzrtnlkEem9OH16tbWG54hrLNjBEDoI0uyl\n'
        ),
        [
            'oZiU3NeNYk4JNc-xLFXzgEdCF3Fi_mzrtnlkEem9OH16tbWG54hrLNjBEDoI0uyl',
        ],
    ),
    (
        'curl wrapped, --data-urlencode of a neutral form field on a continuation line [next-line] [neutral]',
        (
            'curl -s https://relay.example.net/v1/send \\\n'
            '  --data-urlencode "to=ops@example.net" \\\n'
            '  --data-urlencode "s=dglyvka3kuc2bcyzy05ex6taxsk8wjhv"\n'
        ),
        [
            'dglyvka3kuc2bcyzy05ex6taxsk8wjhv',
        ],
    ),
    (
        'kubectl create secret wrapped with backslashes, literal on a continuation line [next-line] [neutral]',
        (
            'kubectl -n payments create secret generic gateway \\\n'
            '  --from-literal=arg=Lof2xGbM1ktfZvgj4BMqOOLt8d3R \\\n'
            '  --dry-run=client -o yaml | kubectl apply -f -\n'
        ),
        [
            'Lof2xGbM1ktfZvgj4BMqOOLt8d3R',
        ],
    ),
    (
        'Dockerfile ENV in the old space form, value after a backslash-newline [next-line] [neutral]',
        (
            'FROM python:3.11-slim\n'
            'ENV PIP_NO_CACHE_DIR=1\n'
            'ENV ITEM \\\n'
            '    CCIPRJ_AMBBTdEmqLzkertypwwExN_6f62a8c71ff5b452b62d1ac7bb376e09d2b160e8\n'
            'COPY . /app\n'
        ),
        [
            'CCIPRJ_AMBBTdEmqLzkertypwwExN_6f62a8c71ff5b452b62d1ac7bb376e09d2b160e8',
        ],
    ),
    (
        'Makefile variable, value after a backslash-newline [next-line] [neutral]',
        (
            'DEPLOY_HOST := deploy.example.net\n'
            'DATA := \\\n'
            '\tZ5SsqX61l7yjpbqRZ8PpPXQBj2aMmgIUkTUpwJ3O\n'
            '\n'
            'deploy:\n'
            '\t./scripts/deploy.sh $(DEPLOY_HOST)\n'
        ),
        [
            'Z5SsqX61l7yjpbqRZ8PpPXQBj2aMmgIUkTUpwJ3O',
        ],
    ),
    (
        "PowerShell hashtable, value on the line after '=' [next-line] [neutral]",
        (
            '$headers = @{\n'
            '    "Accept"  = "application/json"\n'
            '    "X-Value" =\n'
            '        "850986c25187adebfdee2d679b1d5beb"\n'
            '}\n'
            'Invoke-RestMethod -Uri $uri -Headers $headers\n'
        ),
        [
            '850986c25187adebfdee2d679b1d5beb',
        ],
    ),
    (
        'Python dict, string on the line after its key [next-line] [neutral]',
        (
            'CONFIG = {\n'
            '    "endpoint": "https://api.example.net",\n'
            '    "s":\n'
            '        "pcsk_sCdDih_S9kpXMy84vovAozBRZD5Qq0skp3tXgYxpbguw2xGptgkiY1j3Mf2TrUxp9Rio2o",\n'
            '    "timeout": 10,\n'
            '}\n'
        ),
        [
            'pcsk_sCdDih_S9kpXMy84vovAozBRZD5Qq0skp3tXgYxpbguw2xGptgkiY1j3Mf2TrUxp9Rio2o',
        ],
    ),
    (
        'Python call, keyword value built from implicitly concatenated lines [spans] [neutral]',
        (
            'client = Client(\n'
            '    base_url="https://api.example.net",\n'
            '    arg=(\n'
            '        "bqtbxDqYoh5EkANXXfCtialICZPz1IUY"\n'
            '        "3oGrZPISvI9l3XqFYjz9P-HR4siGqomR"\n'
            '    ),\n'
            ')\n'
        ),
        [
            'bqtbxDqYoh5EkANXXfCtialICZPz1IUY',
            '3oGrZPISvI9l3XqFYjz9P-HR4siGqomR',
        ],
    ),
    (
        'Python os.environ assignment with a backslash continuation [next-line] [neutral]',
        (
            'import os\n'
            '\n'
            'os.environ["ITEM"] = \\\n'
            '    "7529878048:AAyZliZAvcLZOOkCg1kTXdjY1KANp5RjjcT"\n'
        ),
        [
            '7529878048:AAyZliZAvcLZOOkCg1kTXdjY1KANp5RjjcT',
        ],
    ),
    (
        'JavaScript object, string on the line after the property [next-line] [neutral]',
        (
            'module.exports = {\n'
            '  region: "eu-central-1",\n'
            '  item:\n'
            '    "jC_hhDvEYSqWqvdjDt0KUAz9Xzo4eqcO1R_NKfNHDYh",\n'
            '};\n'
        ),
        [
            'jC_hhDvEYSqWqvdjDt0KUAz9Xzo4eqcO1R_NKfNHDYh',
        ],
    ),
    (
        'JavaScript template literal spanning two lines [spans] [neutral]',
        (
            'const value = `Bk8YmumWAMab62zrPMmIQQpuCqg9Q1\n'
            'pju7utqILmVJrbJti8GTtSOFuaURvm`;\n'
            'export default value;\n'
        ),
        [
            'Bk8YmumWAMab62zrPMmIQQpuCqg9Q1',
            'pju7utqILmVJrbJti8GTtSOFuaURvm',
        ],
    ),
    (
        'Ruby squiggly heredoc [next-line] [neutral]',
        (
            'V = <<~TXT.strip\n'
            '  AKCp8q8IEgmZU7EgWfpgf9MzbhYWWo4GenwCiM082kllmhtc4spoMTcJB9zODFvcdjDJvEHXo\n'
            'TXT\n'
            'Client.new(token: V)\n'
        ),
        [
            'AKCp8q8IEgmZU7EgWfpgf9MzbhYWWo4GenwCiM082kllmhtc4spoMTcJB9zODFvcdjDJvEHXo',
        ],
    ),
    (
        'Go raw string literal spanning lines [next-line] [neutral]',
        (
            'package config\n'
            '\n'
            'var blob = `\n'
            'cmVmdGtuOjAxOjE4Njc0MjM3Nzk6ZzJnYUxDRVNSNEgxQ0pQbk1tbm9BUmJ6U0hK\n'
            '`\n'
        ),
        [
            'cmVmdGtuOjAxOjE4Njc0MjM3Nzk6ZzJnYUxDRVNSNEgxQ0pQbk1tbm9BUmJ6U0hK',
        ],
    ),
    (
        'MySQL CREATE USER, password on the line after IDENTIFIED BY [next-line]',
        (
            "CREATE USER 'report_ro'@'%'\n"
            '  IDENTIFIED BY\n'
            "  'GD5vPa*V~EM2SFIDw^qL';\n"
            "GRANT SELECT ON analytics.* TO 'report_ro'@'%';\n"
        ),
        [
            'GD5vPa*V~EM2SFIDw^qL',
        ],
    ),
    (
        'PostgreSQL CREATE ROLE, PASSWORD on its own line and the value below it [next-line]',
        (
            'CREATE ROLE etl_writer WITH LOGIN\n'
            '  PASSWORD\n'
            "    '~dgmKwBL~Tz+rW!1sqtE2kmn'\n"
            "  VALID UNTIL '2026-12-31';\n"
        ),
        [
            '~dgmKwBL~Tz+rW!1sqtE2kmn',
        ],
    ),
    (
        "SQL Server CREATE LOGIN, value on the line after 'WITH PASSWORD =' [next-line]",
        (
            'CREATE LOGIN svc_batch\n'
            'WITH PASSWORD =\n'
            "  N'=lTPK~M2d6DYBGS0u?Ktv0',\n"
            '  CHECK_POLICY = ON;\n'
        ),
        [
            '=lTPK~M2d6DYBGS0u?Ktv0',
        ],
    ),
    (
        'YAML folded connection URL with the password inside [next-line] [neutral]',
        (
            'database:\n'
            '  pool: 10\n'
            '  url: >-\n'
            '    postgres://ledger_app:ZQe55yNZ679bzvXMXFPAULLi@pg-primary.internal:5432/ledger?sslmode=require\n'
        ),
        [
            'ZQe55yNZ679bzvXMXFPAULLi',
        ],
    ),
    (
        'Python DSN split over implicitly concatenated lines, password alone on the middle line [spans] [neutral]',
        (
            'DSN = (\n'
            '    "postgresql://svc_reports:"\n'
            '    "9-txXA1BIjlF-_a77L1f"\n'
            '    "@10.20.4.17:5432/reports"\n'
            ')\n'
        ),
        [
            '9-txXA1BIjlF-_a77L1f',
        ],
    ),
    (
        'Go connection string concatenated over lines, password on the second line [spans] [neutral]',
        (
            'uri := "mongodb+srv://ingest:" +\n'
            '\t"6fsE1GBpqg5LcNCBv4" +\n'
            '\t"@cluster0.q7w3r.mongodb.net/?retryWrites=true&w=majority"\n'
        ),
        [
            '6fsE1GBpqg5LcNCBv4',
        ],
    ),
    (
        'debug log: a JWT wrapped by the terminal over three lines [spans]',
        (
            '2025-03-02T10:14:07Z DEBUG http: > GET /v1/me HTTP/1.1\n'
            '2025-03-02T10:14:07Z DEBUG http: > Authorization: Bearer eyJhbGciOiJSUzI1NiIsImtpZCI6IlRLZFNzVjd0akxsaVRacVMiLCJ0eXAiOiJKV1QifQ.eyJzdWIiOiJlNGRhNjBiZS0xYjA4LTRkZmEtYTA2YS05ZmY0NTliMzMwZWUiLCJvcmciOiJhY21lIiwic2NvcGUiOiJyZWFkIHdyaXRlIiwiaW\n'
            'F0IjoxNzQxOTcwOTg5fQ.Kr9OXYl-HP_MjAXDWrSGP67A71RWmNaxGwMDzdqmrzf2JTFMlPmEk4Wnk4Dl__eLxQNKIyYOFc2DxlS2iiTCg64AL0SVDMfYzhDqWgv6NGtRe1J2TnzgFhWSvAdMZ54Aqy9iq3ZzkxBgfl5yxTTFhnuthzBxxPKFF\n'
            'KPCAHfseTNmAH4zEVpeJWjGoaTT0iNhhoY4Cu1YyQkL0xKkuRii43to60eDnHzo5xBH3Vn--gto60h8cUyCtjHC26Pv__2cQ1ofh5Vv_obU8iyAjRQpUpHvIMNN6IfRWhzYB0u8EPDm9L97cH3VyfvbcAGF64tkc1eYW_DObm_7KKLlrE-TQw\n'
            '2025-03-02T10:14:07Z DEBUG http: < HTTP/1.1 200 OK\n'
        ),
        [
            'eyJhbGciOiJSUzI1NiIsImtpZCI6IlRLZFNzVjd0akxsaVRacVMiLCJ0eXAiOiJKV1QifQ.eyJzdWIiOiJlNGRhNjBiZS0xYjA4LTRkZmEtYTA2YS05ZmY0NTliMzMwZWUiLCJvcmciOiJhY21lIiwic2NvcGUiOiJyZWFkIHdyaXRlIiwiaW',
            'F0IjoxNzQxOTcwOTg5fQ.Kr9OXYl-HP_MjAXDWrSGP67A71RWmNaxGwMDzdqmrzf2JTFMlPmEk4Wnk4Dl__eLxQNKIyYOFc2DxlS2iiTCg64AL0SVDMfYzhDqWgv6NGtRe1J2TnzgFhWSvAdMZ54Aqy9iq3ZzkxBgfl5yxTTFhnuthzBxxPKFF',
            'KPCAHfseTNmAH4zEVpeJWjGoaTT0iNhhoY4Cu1YyQkL0xKkuRii43to60eDnHzo5xBH3Vn--gto60h8cUyCtjHC26Pv__2cQ1ofh5Vv_obU8iyAjRQpUpHvIMNN6IfRWhzYB0u8EPDm9L97cH3VyfvbcAGF64tkc1eYW_DObm_7KKLlrE-TQw',
        ],
    ),
    (
        'Python: a service-role JWT split over two concatenated string lines [spans] [neutral]',
        (
            's = (\n'
            '    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJzdXBhYmFzZSIsInJlZiI6Imtnbmhldmd4YmRhc3VqaHRmcGVtIiwicm9sZSI6I"\n'
            '    "nNlcnZpY2Vfcm9sZSIsImlhdCI6MTcxMTM4NTc0NywiZXhwIjoyMDI2NzQ1NzQ3fQ.yY9MbrHo0ijcnkMrbqzHia5lDz0oM2_66v14s5tm2EM"\n'
            ')\n'
            'supabase = create_client("https://qzrtvbnmplkjhgfdsawe.supabase.co", s)\n'
        ),
        [
            'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJzdXBhYmFzZSIsInJlZiI6Imtnbmhldmd4YmRhc3VqaHRmcGVtIiwicm9sZSI6I',
            'nNlcnZpY2Vfcm9sZSIsImlhdCI6MTcxMTM4NTc0NywiZXhwIjoyMDI2NzQ1NzQ3fQ.yY9MbrHo0ijcnkMrbqzHia5lDz0oM2_66v14s5tm2EM',
        ],
    ),
    (
        '.http request file: Authorization value wrapped onto a second indented line [spans]',
        (
            '### whoami\n'
            'GET https://api.example.net/v1/me\n'
            'Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJodHRwczovL2F1dGguZXhhbXBsZS5uZXQvIiwiYXVkIjoiYmlsbGluZ\n'
            '    yIsInN1YiI6InN2Y3xVVkZWNjJpWTZ1RDEiLCJleHAiOjE3NjcyMjU2MDB9.JUYGPscooPcthJqmXnsQ6k4FmFrzf2u9PHK3NcOn0CM\n'
        ),
        [
            'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJodHRwczovL2F1dGguZXhhbXBsZS5uZXQvIiwiYXVkIjoiYmlsbGluZ',
            'yIsInN1YiI6InN2Y3xVVkZWNjJpWTZ1RDEiLCJleHAiOjE3NjcyMjU2MDB9.JUYGPscooPcthJqmXnsQ6k4FmFrzf2u9PHK3NcOn0CM',
        ],
    ),
    (
        'PEM EC private key block (SEC1) [spans]',
        (
            '-----BEGIN EC PRIVATE KEY-----\n'
            'MHcCAQEEIDLdy42EQ7M45I52iz+TQ+je08XecV7XI1kvRviIttMBoAoGCCqGSM49\n'
            'AwEHoUQDQgAEdhRAphOpE3bGs4qGyJ0TFMPl8SYWeOaxTyxdCVm6seWryiMqnsJt\n'
            'OHjFYeSKQT3DY2nK47TNMSnoOpPQjAoPRA==\n'
            '-----END EC PRIVATE KEY-----\n'
        ),
        [
            'MHcCAQEEIDLdy42EQ7M45I52iz+TQ+je08XecV7XI1kvRviIttMBoAoGCCqGSM49',
            'AwEHoUQDQgAEdhRAphOpE3bGs4qGyJ0TFMPl8SYWeOaxTyxdCVm6seWryiMqnsJt',
            'OHjFYeSKQT3DY2nK47TNMSnoOpPQjAoPRA==',
        ],
    ),
    (
        'PEM RSA private key block (PKCS#1), pasted after a shell prompt [spans]',
        (
            '$ cat deploy/id_rsa\n'
            '-----BEGIN RSA PRIVATE KEY-----\n'
            'MIICXAIBAAKBgQCE4UojSeZvTdnII6AKQ2o/bPa5peoExf1TPI+blr8tvQ9rFvam\n'
            '1SKXD1gDOWM8BedzlvphwMWQ78zgsGWXQ8fOxedjeXrrb656n0JNT5eKSkUNh4wk\n'
            'h7aHaI0QX18Em6Zdo8PhYuu6vhcD78BArWBxXWWHJKLzmNpBKj1me3ok/AkChrDN\n'
            'BDVNEsmSQK0pWbz97K6W9vDStSlDoko7keUmtHWgMd3/qEQ0+cwqB0IsnXKrCeHu\n'
            'UExj1phf9tYausLY6LcQKRbB/xfD4QlqycUlqpE4m2hFldiDo7GxrkIBKhtWERwP\n'
            'wKYiNEmJVR7JGSa7j7mQ8WyLK2uc387kwARdSOZmeAE5DLI6o6MpKwYcJnZo+99J\n'
            'l0J7fICCzv9Pd7hqcLYcK6GaFhU2iuwZUfH1lCfEAuw3otg9YjJC7IJc2eNUdOzm\n'
            'OeT9H4SlJz/owsEZBAy+QyIFUH0ldC230rLGmtPkfUKKH3mpUX1mvaHCK1sFSJej\n'
            'itkwBhnRkzAwH4gDgkZR7mOCwKA4htA4BX+DXVExQGtTI97DjGpd7njwdYCxLPCm\n'
            '1mYRsjgQgVMnU7xd5/nwEAD4uH4+rARd/55iVXwkP3vMmUCO88QFOMWxaoKdiTug\n'
            '7n/mOybskww2T9N7wwNTC+u9Q2w/d4n9ub3u5e73kp1wbLjKRhi2iyQt78c/LmFf\n'
            'A9Wp4GOb8QJOxItxFfFpvjDAoG8faf2qnAHkn2K0AkrpqF9eicpNznFsUUg0EQ5Z\n'
            'GFcbohiTpuxIo3OGcxr14xTYb4y+L36KVY3WfqhtCwI=\n'
            '-----END RSA PRIVATE KEY-----\n'
        ),
        [
            'MIICXAIBAAKBgQCE4UojSeZvTdnII6AKQ2o/bPa5peoExf1TPI+blr8tvQ9rFvam',
            '1SKXD1gDOWM8BedzlvphwMWQ78zgsGWXQ8fOxedjeXrrb656n0JNT5eKSkUNh4wk',
            'h7aHaI0QX18Em6Zdo8PhYuu6vhcD78BArWBxXWWHJKLzmNpBKj1me3ok/AkChrDN',
            'BDVNEsmSQK0pWbz97K6W9vDStSlDoko7keUmtHWgMd3/qEQ0+cwqB0IsnXKrCeHu',
            'UExj1phf9tYausLY6LcQKRbB/xfD4QlqycUlqpE4m2hFldiDo7GxrkIBKhtWERwP',
            'wKYiNEmJVR7JGSa7j7mQ8WyLK2uc387kwARdSOZmeAE5DLI6o6MpKwYcJnZo+99J',
            'l0J7fICCzv9Pd7hqcLYcK6GaFhU2iuwZUfH1lCfEAuw3otg9YjJC7IJc2eNUdOzm',
            'OeT9H4SlJz/owsEZBAy+QyIFUH0ldC230rLGmtPkfUKKH3mpUX1mvaHCK1sFSJej',
            'itkwBhnRkzAwH4gDgkZR7mOCwKA4htA4BX+DXVExQGtTI97DjGpd7njwdYCxLPCm',
            '1mYRsjgQgVMnU7xd5/nwEAD4uH4+rARd/55iVXwkP3vMmUCO88QFOMWxaoKdiTug',
            '7n/mOybskww2T9N7wwNTC+u9Q2w/d4n9ub3u5e73kp1wbLjKRhi2iyQt78c/LmFf',
            'A9Wp4GOb8QJOxItxFfFpvjDAoG8faf2qnAHkn2K0AkrpqF9eicpNznFsUUg0EQ5Z',
            'GFcbohiTpuxIo3OGcxr14xTYb4y+L36KVY3WfqhtCwI=',
        ],
    ),
    (
        'OpenSSH private key block (ed25519, unencrypted) [spans]',
        (
            '-----BEGIN OPENSSH PRIVATE KEY-----\n'
            'b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n'
            'QyNTUxOQAAACDU42jc9vGIR4nNejVCYdvcgANcSLdPAcDhsaxUSRXKmQAAAJg7ilUQO4pV\n'
            'EAAAAAtzc2gtZWQyNTUxOQAAACDU42jc9vGIR4nNejVCYdvcgANcSLdPAcDhsaxUSRXKmQ\n'
            'AAAEAUOGmWasE7u/IQv/UsMqeC2dBQGMlnMY9Xt+dopiLpuNTjaNz28YhHic16NUJh29yA\n'
            'A1xIt08BwOGxrFRJFcqZAAAAE2RlcGxveUBjaS1ydW5uZXItMDcBAg==\n'
            '-----END OPENSSH PRIVATE KEY-----\n'
        ),
        [
            'QyNTUxOQAAACDU42jc9vGIR4nNejVCYdvcgANcSLdPAcDhsaxUSRXKmQAAAJg7ilUQO4pV',
            'EAAAAAtzc2gtZWQyNTUxOQAAACDU42jc9vGIR4nNejVCYdvcgANcSLdPAcDhsaxUSRXKmQ',
            'AAAEAUOGmWasE7u/IQv/UsMqeC2dBQGMlnMY9Xt+dopiLpuNTjaNz28YhHic16NUJh29yA',
            'A1xIt08BwOGxrFRJFcqZAAAAE2RlcGxveUBjaS1ydW5uZXItMDcBAg==',
        ],
    ),
    (
        'service-account JSON, private_key value on the line after its key, newlines escaped as \\n [next-line] [spans]',
        (
            '{\n'
            '  "type": "service_account",\n'
            '  "project_id": "acme-data-prod",\n'
            '  "client_email": "etl@acme-data-prod.iam.gserviceaccount.com",\n'
            '  "private_key":\n'
            '    "-----BEGIN PRIVATE KEY-----\\nMIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQCA7NHu7y8Yh3w7\\n/9tgZ7pR09cknAbd09yDOuxQ9JvfI3fx4W4WLyd0tMGVo14Qzpkmp/IRTpMbCLHZ\\n+kpJ/LtabaZQudPvncOXkZbQpIszZ7A3L8kC9vOqBiNBAeGt5oMZJ496YfHaQcCf\\nNgbcT6brTYs0DhOEsxbGU+93PbGHSddNv3WHl8FCHsXKbGAgDCAgLPZPusRJFCkI\\nQcyZKGN1605vRiTPjTdfmHE47FevQewTl16AzD/slyX73vYIem+r7n5iuqFme52F\\n8Fc6pZcIOgwv90Go8WGJrEnMNwNkoP2wQNXQg3fUphjvfNMuGbsVHr48UE9X/H3W\\nyC7VqturjmtRT4hlTU7/EjJdOE6XLkcAzNNKII7S3SR387tPgG+VHTa09/4rRDSV\\nukNVLkKUiug1Y4ddONyvZ79kRIvezr+kkw+3vkG7P+SbGr4AfZeATs4XZtOVNKRB\\negT6F0/M4+ltTcwshIRFHKIHtZ1ScxCOavAWiuv/HmO/lZrO01HaHfMmZ6a2JBXV\\nB3p9EDaQNhVgp/JAZPZloM3dU7N74l6P2Sv3gPYsSRfMFe+FEi0TtP6oy1zEUZb0\\nNJFyeWDD2RiTNnMoiNN97p2Sp+RryeZC1cLAEsUjtwJkWMLgNTcolp4uMCtoO3Cj\\nP6DOnk94WP1Zf76jprDmPOhGtly6zaYD0pnZ3x0He+pJ9zzUWWZgAIBThY/V7R/u\\na81CGdF7NDtwp6mci13c5UGEyuSb83mCXjGZLQcaGs22i1oMx9D63jn9u6QfTzkG\\n9fs+pI11XKnmpGYKqq/v5TZueqd0l14//iV5xcjsfq+DVU+TDFH5gqrrk71royUw\\nVEA9vvwFjPUJEq/EdsIC0/+0N3Xhe4ZDRVTeo7IxufbTai2Im9Rbor0GTOmsyhgC\\nmxNt9TzaRf8I0OJCo4C0zisDZle3IdQwppbIbZxIzKbgRTz13tBsUO0uEo3US0NL\\nnnhdQFdQ1wiuecicfXIeIqE3i7BLbt1aRDK6rJxGOkj9EatMZRU58vaBdHytHZG8\\nHazdP3/YyXCag12SF7nMbj7MOoZlOz27pmwgEckA3PACY1VpOMcoy1fPTjX7+LmS\\nlWvji29UPhRFbUi57i9LlmWn7IYqZS9314Z86BfPS6zpr3cWbYupPmAqS82GKIwO\\nyA37wLbZxzX7pd6ih8h76qS115++OGrqfiFpokBj9arpgmpS1Pq3aQ/h65COhaOq\\nTJkBPgwS7LwImmMPFfEAeemYEEBtPZgoMWtPKn1884YkIEDk7jpr8tcGWBPwCDMb\\n/rZQGCQyQl0xxXln+bFgcAJn+8AwPaoQ2AYZ/AhlfZ3ho3ZScbctdWdsNePJO/Tg\\nVN73mtoJXwx7iiUuz5s9yWGlvCQcrBZuAi/GK91Qb4yD2iRoYUwc/dunw/nvhY78\\n+C2/f5fgtl0JRU4bugfpL0HgxOX3AqaDIHoVlVY6QNTZuxCNjvMV3piz0F/CIeae\\nTq0oGCTes5XhuLIFXOWB3NU2zsGFiPrxEoFzNu6fb3EZMCItJlx38tkhFEx6qm8l\\nIFsVV/rzu0/r7M4J34u0iUMV\\n-----END PRIVATE KEY-----\\n"\n'
            '}\n'
        ),
        [
            'MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQCA7NHu7y8Yh3w7',
            '/9tgZ7pR09cknAbd09yDOuxQ9JvfI3fx4W4WLyd0tMGVo14Qzpkmp/IRTpMbCLHZ',
            '+kpJ/LtabaZQudPvncOXkZbQpIszZ7A3L8kC9vOqBiNBAeGt5oMZJ496YfHaQcCf',
            'NgbcT6brTYs0DhOEsxbGU+93PbGHSddNv3WHl8FCHsXKbGAgDCAgLPZPusRJFCkI',
            'QcyZKGN1605vRiTPjTdfmHE47FevQewTl16AzD/slyX73vYIem+r7n5iuqFme52F',
            '8Fc6pZcIOgwv90Go8WGJrEnMNwNkoP2wQNXQg3fUphjvfNMuGbsVHr48UE9X/H3W',
            'yC7VqturjmtRT4hlTU7/EjJdOE6XLkcAzNNKII7S3SR387tPgG+VHTa09/4rRDSV',
            'ukNVLkKUiug1Y4ddONyvZ79kRIvezr+kkw+3vkG7P+SbGr4AfZeATs4XZtOVNKRB',
            'egT6F0/M4+ltTcwshIRFHKIHtZ1ScxCOavAWiuv/HmO/lZrO01HaHfMmZ6a2JBXV',
            'B3p9EDaQNhVgp/JAZPZloM3dU7N74l6P2Sv3gPYsSRfMFe+FEi0TtP6oy1zEUZb0',
            'NJFyeWDD2RiTNnMoiNN97p2Sp+RryeZC1cLAEsUjtwJkWMLgNTcolp4uMCtoO3Cj',
            'P6DOnk94WP1Zf76jprDmPOhGtly6zaYD0pnZ3x0He+pJ9zzUWWZgAIBThY/V7R/u',
            'a81CGdF7NDtwp6mci13c5UGEyuSb83mCXjGZLQcaGs22i1oMx9D63jn9u6QfTzkG',
            '9fs+pI11XKnmpGYKqq/v5TZueqd0l14//iV5xcjsfq+DVU+TDFH5gqrrk71royUw',
            'VEA9vvwFjPUJEq/EdsIC0/+0N3Xhe4ZDRVTeo7IxufbTai2Im9Rbor0GTOmsyhgC',
            'mxNt9TzaRf8I0OJCo4C0zisDZle3IdQwppbIbZxIzKbgRTz13tBsUO0uEo3US0NL',
            'nnhdQFdQ1wiuecicfXIeIqE3i7BLbt1aRDK6rJxGOkj9EatMZRU58vaBdHytHZG8',
            'HazdP3/YyXCag12SF7nMbj7MOoZlOz27pmwgEckA3PACY1VpOMcoy1fPTjX7+LmS',
            'lWvji29UPhRFbUi57i9LlmWn7IYqZS9314Z86BfPS6zpr3cWbYupPmAqS82GKIwO',
            'yA37wLbZxzX7pd6ih8h76qS115++OGrqfiFpokBj9arpgmpS1Pq3aQ/h65COhaOq',
            'TJkBPgwS7LwImmMPFfEAeemYEEBtPZgoMWtPKn1884YkIEDk7jpr8tcGWBPwCDMb',
            '/rZQGCQyQl0xxXln+bFgcAJn+8AwPaoQ2AYZ/AhlfZ3ho3ZScbctdWdsNePJO/Tg',
            'VN73mtoJXwx7iiUuz5s9yWGlvCQcrBZuAi/GK91Qb4yD2iRoYUwc/dunw/nvhY78',
            '+C2/f5fgtl0JRU4bugfpL0HgxOX3AqaDIHoVlVY6QNTZuxCNjvMV3piz0F/CIeae',
            'Tq0oGCTes5XhuLIFXOWB3NU2zsGFiPrxEoFzNu6fb3EZMCItJlx38tkhFEx6qm8l',
            'IFsVV/rzu0/r7M4J34u0iUMV',
        ],
    ),
    (
        'env file exported by a tool: values quoted over two lines (dotenv multi-line) [next-line] [neutral]',
        (
            'APP_ENV=production\n'
            'BLOB="\n'
            'fo1_s2esH8tL6CBTsl7FwQb4GYa-9Vs8yOD800xxCyLTEfJ\n'
            '"\n'
        ),
        [
            'fo1_s2esH8tL6CBTsl7FwQb4GYa-9Vs8yOD800xxCyLTEfJ',
        ],
    ),
    (
        'GitHub Actions matrix include, value on the line below its key [next-line] [neutral]',
        (
            '    strategy:\n'
            '      matrix:\n'
            '        include:\n'
            '          - target: eu\n'
            '            x:\n'
            '              "4d9f5879679e58a3850b626d56e19779-us6"\n'
        ),
        [
            '4d9f5879679e58a3850b626d56e19779-us6',
        ],
    ),
    (
        'Azure pipeline variables group, value on the line after name [next-line] [neutral]',
        (
            'variables:\n'
            '  - name: buildConfiguration\n'
            '    value: Release\n'
            '  - name: arg\n'
            '    value:\n'
            '      Xwn4Q~LMbReE254.m78ClAHVtEkWvPiumsULUQuk\n'
        ),
        [
            'Xwn4Q~LMbReE254.m78ClAHVtEkWvPiumsULUQuk',
        ],
    ),
    (
        'AWS credentials INI, secret on an indented continuation line [next-line]',
        (
            '[ci-deploy]\n'
            'region = eu-west-1\n'
            'aws_access_key_id = AKIA5YXOZQWGYBD2TBBZ\n'
            'aws_secret_access_key =\n'
            '    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\n'
        ),
        [
            'bqGZSDd0Q3W6lhYxtD+OOT3oFhcEW4QhX0u4walH',
        ],
    ),
    (
        'SonarQube scanner properties, token after a trailing backslash [next-line]',
        (
            'sonar.projectKey=acme_ledger\n'
            'sonar.host.url=https://sonar.example.net\n'
            'sonar.token=\\\n'
            '  sqp_6b532ffde96fd7c3154c6c44f1b3f1b9ffd2ff5b\n'
        ),
        [
            'sqp_6b532ffde96fd7c3154c6c44f1b3f1b9ffd2ff5b',
        ],
    ),
]


VENDOR = [
    (
        'Sentry',
        'export SENTRY_AUTH_TOKEN=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',
        ['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'],
    ),
    (
        'Sentry',
        'sentry-cli --auth-token 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 releases new 4.2.0 --org acme --project web',
        ['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'],
    ),
    (
        'Sentry',
        'SENTRY_DSN=https://163198ab81040d5d11a66f35550c746b@o7283311.ingest.us.sentry.io/6798267890264853',
        ['163198ab81040d5d11a66f35550c746b'],
    ),
    (
        'Sentry',
        'Sentry.init({ dsn: "https://8da2e95e9e0d0b0a562b839a1eea7524@o345866.ingest.de.sentry.io/2741025", tracesSampleRate: 0.2 });',
        ['8da2e95e9e0d0b0a562b839a1eea7524'],
    ),
    (
        'Sentry',
        "client = raven.Client('https://70b69a6c326f53ffc8f570f888ca7ab3:76cfbb57db1e74bf6fb9d4bf8ad4c9d4@sentry.example.org/12')",
        ['70b69a6c326f53ffc8f570f888ca7ab3', '76cfbb57db1e74bf6fb9d4bf8ad4c9d4'],
    ),
    (
        'Datadog',
        'curl -s https://api.datadoghq.com/api/v1/validate -H "DD-API-KEY: 4dd02f5cc6b5b10b68ba8705839d1865"',
        ['4dd02f5cc6b5b10b68ba8705839d1865'],
    ),
    (
        'Datadog',
        '{"site": "datadoghq.eu", "a": "bed7fbac179ab6d00db9274c5150706b", "b": "32edda9b10cfe8dabcad98adc8d2ecbed70b0373"}',
        ['bed7fbac179ab6d00db9274c5150706b', '32edda9b10cfe8dabcad98adc8d2ecbed70b0373'],
    ),
    (
        'Datadog',
        'helm upgrade --install agent datadog/datadog --set datadog.site=us5.datadoghq.com --set k=e0366e792babc2e12892c568173fb3b6',
        ['e0366e792babc2e12892c568173fb3b6'],
    ),
    (
        'Datadog',
        'DD_APP_KEY=7bc9cf1ae4a234c55ef45bc260006256a157b39a',
        ['7bc9cf1ae4a234c55ef45bc260006256a157b39a'],
    ),
    (
        'Algolia',
        'ALGOLIA_ADMIN_KEY=ce0ca80821ea7127fc6409e2414afba8',
        ['ce0ca80821ea7127fc6409e2414afba8'],
    ),
    (
        'Algolia',
        'const client = algoliasearch("7C4Q6BYUBG", "272cfd48e1b38834157e2e82bf8ee897"); // indexing job, server side',
        ['272cfd48e1b38834157e2e82bf8ee897'],
    ),
    (
        'Algolia',
        'curl -X DELETE "https://EJ4W5CJJNH.algolia.net/1/indexes/products" -H "X-Algolia-API-Key: 9b921ed105dbfe60cbeb5ce2851862d2"',
        ['9b921ed105dbfe60cbeb5ce2851862d2'],
    ),
    (
        'Cloudflare',
        'curl https://api.cloudflare.com/client/v4/user/tokens/verify -H "Authorization: Bearer _I8Qef0-qRHjKBYP2e8okAp8EvgsMxncuGxE0pFZ"',
        ['_I8Qef0-qRHjKBYP2e8okAp8EvgsMxncuGxE0pFZ'],
    ),
    (
        'Cloudflare',
        'CLOUDFLARE_API_TOKEN=5si_uXVVFz2rLZ3tb-by-0Uga-ue6it2-Y74t2Gu npx wrangler deploy',
        ['5si_uXVVFz2rLZ3tb-by-0Uga-ue6it2-Y74t2Gu'],
    ),
    (
        'Cloudflare',
        '-H "X-Auth-Email: ops@example.net" -H "X-Auth-Key: 8d110a5dc384474fb2f7314d8cb638f9ee1c3"',
        ['8d110a5dc384474fb2f7314d8cb638f9ee1c3'],
    ),
    (
        'Fastly',
        'curl -H "Fastly-Key: vgI5MmPYFylutI5bgwAPFGB5LzanBxzj" https://api.fastly.com/service',
        ['vgI5MmPYFylutI5bgwAPFGB5LzanBxzj'],
    ),
    (
        'Fastly',
        'FASTLY_API_TOKEN: 4SRtPk-AKH03BMWj2JFO956zC7vvJTi8',
        ['4SRtPk-AKH03BMWj2JFO956zC7vvJTi8'],
    ),
    (
        'Heroku',
        'HEROKU_API_KEY=HRKU-AAJ6VeVLaefcT48a5Vbmrzq5oaYdK8j_2weZIT4mKfVIeNzx3pHy2g4Zvtkr heroku apps:info -a acme-web',
        ['HRKU-AAJ6VeVLaefcT48a5Vbmrzq5oaYdK8j_2weZIT4mKfVIeNzx3pHy2g4Zvtkr'],
    ),
    (
        'Heroku',
        'provider "heroku" { email = "ops@example.net"  api_key = "52a361be-a847-443d-aa32-b8eef29f94f4" }',
        ['52a361be-a847-443d-aa32-b8eef29f94f4'],
    ),
    (
        'Vercel',
        'vercel deploy --prod --token vcp_XWyqEb4BrS4WjGU_3B1toilLHOzvU405km_4qpKGX7_L71lIgg27kRFB',
        ['vcp_XWyqEb4BrS4WjGU_3B1toilLHOzvU405km_4qpKGX7_L71lIgg27kRFB'],
    ),
    (
        'Vercel',
        '"env": {"VERCEL_TOKEN": "vck_xvqQywZwQ-9FWs--M3p2LEpt_9YAtqlpwOV7Hik17NAvxD7nTW3No6T5", "VERCEL_ORG_ID": "team_3XG1CHzj0WrDP6BEWqafSilT"}',
        ['vck_xvqQywZwQ-9FWs--M3p2LEpt_9YAtqlpwOV7Hik17NAvxD7nTW3No6T5'],
    ),
    (
        'Netlify',
        'netlify deploy --prod --dir dist --auth nfp_qIBCOeVaM3Udlu7wbErd5Wf5xuIuNtk6IkRN',
        ['nfp_qIBCOeVaM3Udlu7wbErd5Wf5xuIuNtk6IkRN'],
    ),
    (
        'Netlify',
        '  NETLIFY_AUTH_TOKEN: nfp_YSQKvSuW6jhFczSfvTYBKw0LgmCYfytDZk0v',
        ['nfp_YSQKvSuW6jhFczSfvTYBKw0LgmCYfytDZk0v'],
    ),
    (
        'Render',
        "curl -H 'Authorization: Bearer rnd_iELy8USwkQUlLhKlyPBQ5eyI' 'https://api.render.com/v1/services?limit=20'",
        ['rnd_iELy8USwkQUlLhKlyPBQ5eyI'],
    ),
    (
        'Fly.io',
        'export FLY_API_TOKEN="FlyV1 fm2_zeY1JVQSsRTKt5nij/Fo7jsefRI2lOkPP0BkqMS5PlTR0u7GqeowXbLIpGbt1n11UTgkkcV5envxG54udC7AT+zZheJvC6DcIjI9zexQXkzFj0eoZC+ZVIWJJMxcn/0nm6b/EmhBIx11wIzwr6Ic1BZmZgXfXs2MK8z69v3dwRrFMdYIyqj5mwdeLlYDch8shecQK6GFAzDtGaAygyOKoX4sYpb2iWuy,fm2_BdiKpLT9q9//cd6sf52F74B2iDw92y4Pz5ROjXZFwi2s0/cz/Q7dbfBTMpLp6n10O4CzWER+VUiP26kf+J7o4guO1HmkIO1H/hp+NM4PtKSsNcAgJVq6Z50Ag8wuU5SL"',
        ['fm2_zeY1JVQSsRTKt5nij/Fo7jsefRI2lOkPP0BkqMS5PlTR0u7GqeowXbLIpGbt1n11UTgkkcV5envxG54udC7AT+zZheJvC6DcIjI9zexQXkzFj0eoZC+ZVIWJJMxcn/0nm6b/EmhBIx11wIzwr6Ic1BZmZgXfXs2MK8z69v3dwRrFMdYIyqj5mwdeLlYDch8shecQK6GFAzDtGaAygyOKoX4sYpb2iWuy,fm2_BdiKpLT9q9//cd6sf52F74B2iDw92y4Pz5ROjXZFwi2s0/cz/Q7dbfBTMpLp6n10O4CzWER+VUiP26kf+J7o4guO1HmkIO1H/hp+NM4PtKSsNcAgJVq6Z50Ag8wuU5SL'],
    ),
    (
        'Fly.io',
        'flyctl deploy --remote-only --access-token fo1_ErBWdzTJUXlU7jrdgeeoKbQnhngpVcV5mWPP8ITsxEu',
        ['fo1_ErBWdzTJUXlU7jrdgeeoKbQnhngpVcV5mWPP8ITsxEu'],
    ),
    (
        'Railway',
        'RAILWAY_TOKEN=d0ee7c83-3167-4b09-ac2f-3f0eb4ff43df railway up --detach',
        ['d0ee7c83-3167-4b09-ac2f-3f0eb4ff43df'],
    ),
    (
        'Railway',
        "-H 'Project-Access-Token: 243fa549-d581-42d8-b4d6-e5772ed24faf' https://backboard.railway.com/graphql/v2",
        ['243fa549-d581-42d8-b4d6-e5772ed24faf'],
    ),
    (
        'Supabase',
        'SUPABASE_SERVICE_ROLE_KEY=eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJzdXBhYmFzZSIsInJlZiI6Inl5bmN4dW5ycnhsY3puam1hYm1lIiwicm9sZSI6InNlcnZpY2Vfcm9sZSIsImlhdCI6MTczMzExNTM5NywiZXhwIjoyMDQ4NDc1Mzk3fQ.tWmYoOyA8yRrUBEvsqQ8pzdk_Yj6roQPttkoqf_PrkY',
        ['eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJzdXBhYmFzZSIsInJlZiI6Inl5bmN4dW5ycnhsY3puam1hYm1lIiwicm9sZSI6InNlcnZpY2Vfcm9sZSIsImlhdCI6MTczMzExNTM5NywiZXhwIjoyMDQ4NDc1Mzk3fQ.tWmYoOyA8yRrUBEvsqQ8pzdk_Yj6roQPttkoqf_PrkY'],
    ),
    (
        'Supabase',
        'const admin = createClient("https://eiiqgdrdqhvtxolcjbyq.supabase.co", "sb_secret_AYgytQRVGpDJFGcpwq3wM3_gjktN6SN");',
        ['sb_secret_AYgytQRVGpDJFGcpwq3wM3_gjktN6SN'],
    ),
    (
        'Firebase',
        'Authorization: key=AAAAkfVblQU:APA91bBovGETiMDC7osxsZMHXjQA4q4QSKTjplDMLya39mvPn_4GHiWpwYJaTEQ96ggpnjisBxacipz63mDNLl9_Gg_fdy3_s6o7Og8FrBiafsIuelrUYi9lRWgnhqnqvZ1C3LrSP5pf',
        ['AAAAkfVblQU:APA91bBovGETiMDC7osxsZMHXjQA4q4QSKTjplDMLya39mvPn_4GHiWpwYJaTEQ96ggpnjisBxacipz63mDNLl9_Gg_fdy3_s6o7Og8FrBiafsIuelrUYi9lRWgnhqnqvZ1C3LrSP5pf'],
    ),
    (
        'Firebase',
        '"serverKey": "AAAAbVeS19A:APA91bxu_H3G9Mw1SgWNB1g-OKrUdZUgQGW7L-0C0N5bDdf17mCXNDkzshs0M0RPf1eWh9OwuNgldVeGKQ6gHVbbeSlt-dLHuEyMeCwheMFPPivbv0Xrm0KS41LdVP0urU7_KZgB1Auy",',
        ['AAAAbVeS19A:APA91bxu_H3G9Mw1SgWNB1g-OKrUdZUgQGW7L-0C0N5bDdf17mCXNDkzshs0M0RPf1eWh9OwuNgldVeGKQ6gHVbbeSlt-dLHuEyMeCwheMFPPivbv0Xrm0KS41LdVP0urU7_KZgB1Auy'],
    ),
    (
        'Mailchimp',
        'mailchimp.setConfig({ apiKey: "34292d23fab2aa99c8aca67ed3c1e3a5-us6", server: "us6" });',
        ['34292d23fab2aa99c8aca67ed3c1e3a5-us6'],
    ),
    (
        'Mailchimp',
        'curl --user "anystring:eed9c1652a851d4a2f3e82f75e8810f5-us21" https://us21.api.mailchimp.com/3.0/lists',
        ['eed9c1652a851d4a2f3e82f75e8810f5-us21'],
    ),
    (
        'Postmark',
        'X-Postmark-Server-Token: 4f5bf5e2-376c-4aa6-af3f-9d17decb0459',
        ['4f5bf5e2-376c-4aa6-af3f-9d17decb0459'],
    ),
    (
        'Postmark',
        'postmark: { server_token: "074b0a43-5675-48a3-99df-ece2c9efd345", message_stream: outbound }',
        ['074b0a43-5675-48a3-99df-ece2c9efd345'],
    ),
    (
        'Intercom',
        'Authorization: Bearer dG9rOjNmNjNjMmQ3X2Y1ZTFfNDFjNV85ZWU2X2M1ZGY1MWQzOTcwZDoxOjA=',
        ['dG9rOjNmNjNjMmQ3X2Y1ZTFfNDFjNV85ZWU2X2M1ZGY1MWQzOTcwZDoxOjA='],
    ),
    (
        'Intercom',
        'INTERCOM_ACCESS_TOKEN="dG9rOmU1YTVhZGJiXzBlMGZfNDJmN19hZGJhX2M0NTJmZDlmOTUyYzoxOjA="',
        ['dG9rOmU1YTVhZGJiXzBlMGZfNDJmN19hZGJhX2M0NTJmZDlmOTUyYzoxOjA='],
    ),
    (
        'Zendesk',
        'curl https://acme.zendesk.com/api/v2/tickets.json -u ops@example.net/token:tFDxGgEdpb2CJ7QiSfFjFeaH5sd5Ng9ydt8bm4kJ',
        ['tFDxGgEdpb2CJ7QiSfFjFeaH5sd5Ng9ydt8bm4kJ'],
    ),
    (
        'Zendesk',
        'ZENDESK_API_TOKEN=9fYNa84JepRfVYHP492fr5btn7taUzblOBTfbBCd',
        ['9fYNa84JepRfVYHP492fr5btn7taUzblOBTfbBCd'],
    ),
    (
        'Asana',
        'curl https://app.asana.com/api/1.0/users/me -H "Authorization: Bearer 2/6017801985802387/5306286990186840:0ac833e85f55fa67dcfa4359b7db6b7e"',
        ['2/6017801985802387/5306286990186840:0ac833e85f55fa67dcfa4359b7db6b7e'],
    ),
    (
        'Asana',
        "client = asana.Client.access_token('1/6511778360369904:9140a89f3845b4d24e6426b3a88c61e4')",
        ['1/6511778360369904:9140a89f3845b4d24e6426b3a88c61e4'],
    ),
    (
        'Notion',
        'NOTION_TOKEN=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',
        ['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'],
    ),
    (
        'Notion',
        'const notion = new Client({ auth: "secret_gxda6XZwLeFOsZoSUD4V1iYDdd7Rqednz9iCRcPuKBI" });',
        ['secret_gxda6XZwLeFOsZoSUD4V1iYDdd7Rqednz9iCRcPuKBI'],
    ),
    (
        'Figma',
        "curl -H 'X-Figma-Token: figd_523SXewTXCIDoVJ13XSDOt5d7T9vZ-0kL_awcNuu' https://api.figma.com/v1/files/6zDNs3PAOWWHDCRdX8kpoq",
        ['figd_523SXewTXCIDoVJ13XSDOt5d7T9vZ-0kL_awcNuu'],
    ),
    (
        'Discord',
        "bot.run('OTMyMjI4NzYyMDQ5MTI1MTcx.1LbO9g.HeSG7jWj8CLU7YrycG2czKKLXafp4DfI814HMc')",
        ['OTMyMjI4NzYyMDQ5MTI1MTcx.1LbO9g.HeSG7jWj8CLU7YrycG2czKKLXafp4DfI814HMc'],
    ),
    (
        'Discord',
        'https://discord.com/api/webhooks/4987040957446732546/nqnJbKhUcKqkJSyc_KacyfMyVdgGSPfrufm_jz7PD2WBTOZN00fs9oNd64aAIeLgkMgd',
        ['nqnJbKhUcKqkJSyc_KacyfMyVdgGSPfrufm_jz7PD2WBTOZN00fs9oNd64aAIeLgkMgd'],
    ),
    (
        'Telegram',
        "curl -s 'https://api.telegram.org/bot3081281105:AA3jydF3gKUIv97AaytAvrD-1csY4QumZWI/sendMessage?chat_id=-1004625055271&text=deployed'",
        ['3081281105:AA3jydF3gKUIv97AaytAvrD-1csY4QumZWI'],
    ),
    (
        'Telegram',
        'TELEGRAM_BOT_TOKEN=9895877686:AA7IdhLFIzHCTkCpeCBuJfDr7m1aDTvfcZJ',
        ['9895877686:AA7IdhLFIzHCTkCpeCBuJfDr7m1aDTvfcZJ'],
    ),
    (
        'Twitch',
        'TWITCH_CLIENT_SECRET=l4y1coj8k0lt35ezy8thtxj95iifkd',
        ['l4y1coj8k0lt35ezy8thtxj95iifkd'],
    ),
    (
        'Twitch',
        'PASS oauth:1sb9g38txph34boqr77s6m3sb37h5z',
        ['1sb9g38txph34boqr77s6m3sb37h5z'],
    ),
    (
        'Okta',
        'curl -H "Authorization: SSWS 001McaKLc4_6-YR901aPwWBkvSLGRd-kOcYHz-bAWm" https://acme.okta.com/api/v1/users?limit=25',
        ['001McaKLc4_6-YR901aPwWBkvSLGRd-kOcYHz-bAWm'],
    ),
    (
        'Okta',
        "okta: { client: { orgUrl: 'https://acme.okta.com', token: '004q9qao4ZKr82S0-iAu7M3snZ84X7Xr051vslH9xV' } }",
        ['004q9qao4ZKr82S0-iAu7M3snZ84X7Xr051vslH9xV'],
    ),
    (
        'Auth0',
        'AUTH0_CLIENT_SECRET=iMlw_cY-M6FlvnzwGV41CAY3EikPRX47GLaYE7p7ZCZa8ZLyew814hvMiOEikw3E',
        ['iMlw_cY-M6FlvnzwGV41CAY3EikPRX47GLaYE7p7ZCZa8ZLyew814hvMiOEikw3E'],
    ),
    (
        'Auth0',
        '{"client_id":"PWGEs67TflutPfkXpnKii2e9l7vuCsFC","client_secret":"XKwvsRzt1vtsGSHE_LbJcZO2KlOYiQReVUd21LNcWEbp_51qc2YMsbnrA18o64t0","audience":"https://api.example.net","grant_type":"client_credentials"}',
        ['XKwvsRzt1vtsGSHE_LbJcZO2KlOYiQReVUd21LNcWEbp_51qc2YMsbnrA18o64t0'],
    ),
    (
        'Azure AD',
        'AZURE_CLIENT_SECRET=E437Q~gXgCOvCHn8~3aa_OHXC1Cws6HPOKzOamKf',
        ['E437Q~gXgCOvCHn8~3aa_OHXC1Cws6HPOKzOamKf'],
    ),
    (
        'Azure AD',
        'az login --service-principal -u db58d0dc-206b-40ad-93a1-0d23ccc2d832 -p Zvx8Q~r4.b9yc3gKfIna.gIuL~.UQkXmdHSsUTQ0 --tenant cef8183e-bf8b-41c2-bc63-cc0076e376a6',
        ['Zvx8Q~r4.b9yc3gKfIna.gIuL~.UQkXmdHSsUTQ0'],
    ),
    (
        'Azure Storage',
        'https://acmebackups.blob.core.windows.net/db/nightly.bak?sp=r&st=2025-03-01T09:00:00Z&se=2025-03-01T17:00:00Z&spr=https&sv=2022-11-02&sr=b&sig=HwOkgb%2F92yygh194ksj0A6MCf%2FTG1aPtXQOhQsoShv8%3D',
        ['HwOkgb%2F92yygh194ksj0A6MCf%2FTG1aPtXQOhQsoShv8%3D'],
    ),
    (
        'Azure Storage',
        'DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey=bwUK2ksl0shIPyBOxf8F2TwcQFZY6wu5C1zPYxmApWmX6aeLttiyX65HMlNUuUBDAaly/aPeiJc7aH8dTHFh0w==;EndpointSuffix=core.windows.net',
        ['bwUK2ksl0shIPyBOxf8F2TwcQFZY6wu5C1zPYxmApWmX6aeLttiyX65HMlNUuUBDAaly/aPeiJc7aH8dTHFh0w=='],
    ),
    (
        'AWS',
        'export AWS_SESSION_TOKEN=IQoJb3JpZ2luX2Vji1Dh78YtxAWxW2MMWoD99gNAYOUrsU5XxbpRQF1bLxpwRhNxkH+9cenlWMf/5YSEkzLmaoO63f5cB+aTz66v/Abzx8vVD+/MI7VsqUR9LpYAjVgzSBkKGmFMyw2l4Cc26MFRL5UJOxHVnIU2Zrh34XwMLUFGmj9kOs+AOku/Wl+gvyzKmlFKI1P4fN5J/ZVgDjH2RiExhWUA615dQyoLHNF6sN3QyZAoBYp5o+rSlmbZw8AG13vtm27Fq6K7PcUo/YibTJXTOKksHrv31ICcQKybVKO9UitayJuPzd32EXwkre0lqSck/N6oLZUVdbatjleFDLdSOXCe8odPyFDOYjr7zssdKNqu+59zr4nKC0HI0Z2032xlhzzzyx0uTuLEx/TcfnvpR7o2M0lUp+l2+leY1NZiQpJFz4fpC8dURQK9FzN3nBfcDPHtY+/YbEKHTEYRDQsiIW0gd2KSEGHfK2YMLcXIUmvF53AJpgP89tBcZ1BOesuVSpMuT7EfWLnxwQW3jEFOwttao15I1nP2YdDTVd74Hb/N6iaWXjgwuJhb/hw/KstVG+hX0aPUzTls2+OQp54jhsPgcBubxzZeLGT6z7Im7Dg4',
        ['IQoJb3JpZ2luX2Vji1Dh78YtxAWxW2MMWoD99gNAYOUrsU5XxbpRQF1bLxpwRhNxkH+9cenlWMf/5YSEkzLmaoO63f5cB+aTz66v/Abzx8vVD+/MI7VsqUR9LpYAjVgzSBkKGmFMyw2l4Cc26MFRL5UJOxHVnIU2Zrh34XwMLUFGmj9kOs+AOku/Wl+gvyzKmlFKI1P4fN5J/ZVgDjH2RiExhWUA615dQyoLHNF6sN3QyZAoBYp5o+rSlmbZw8AG13vtm27Fq6K7PcUo/YibTJXTOKksHrv31ICcQKybVKO9UitayJuPzd32EXwkre0lqSck/N6oLZUVdbatjleFDLdSOXCe8odPyFDOYjr7zssdKNqu+59zr4nKC0HI0Z2032xlhzzzyx0uTuLEx/TcfnvpR7o2M0lUp+l2+leY1NZiQpJFz4fpC8dURQK9FzN3nBfcDPHtY+/YbEKHTEYRDQsiIW0gd2KSEGHfK2YMLcXIUmvF53AJpgP89tBcZ1BOesuVSpMuT7EfWLnxwQW3jEFOwttao15I1nP2YdDTVd74Hb/N6iaWXjgwuJhb/hw/KstVG+hX0aPUzTls2+OQp54jhsPgcBubxzZeLGT6z7Im7Dg4'],
    ),
    (
        'AWS',
        'AWS_ACCESS_KEY_ID=ASIAEQNUUNIQYGIP3OCL AWS_SECRET_ACCESS_KEY=o9ZudvUyjHRHjcC+oE4GUVeqMBzWDSToYuetrl8N AWS_SESSION_TOKEN=IQoJb3JpZ2luX2VjEkcR63rdt5usE2yhtKTZfX4aIat3o5kw/+j7lJ2M16NrW70Jxta75q4UMLUVJrerOBziJYmJW4x0j5Gf9KTlG9yqIrS2Qxc8j7n3fow6JhuatGdheuAi/lFYWpj7Pifj4wAyTgPnG/JSi/Mz0CB3oB8kW3XaB5QT4SIvCZrNgfkva+qnW0qg+xJ7h6EuI2AUDjg/mFqny40XGQ4ZqJwR7FqxAdLB7VsdbjRU0Jrl6BfFPSTkURhS5uFX2gDC/9rO24yvnZOKtjxSdOLXeWONSn/mybGzijyLW2MlMHNfAWyZFmIea7vrlpb87qEAyKl44En6ySZMEs/BiRzgbuM+644F2pITAIRAMZRT0BMAVv815TnLvC74XeRN53nk1v+nfhzTsg908gMK/d4v14y7Q6UYpQgG9sQV1mpZe+OoUpbysOXIllD/7qHIq76GMGNQVHSfyEI88m6o+5pbaFZ5cZT5DwcDvu9W7ESERLMjqMz1V0ZO04caBGtjBY3xa1061oVA2PzI6TrlzUi+Ih4SWzasBO4099w9nX3wbOnx8C5xqxu6iXhmK7CrgN1vRtdn2LzIWvPApxMSUYEY45SVELul/U3Eu4LR aws s3 ls',
        ['o9ZudvUyjHRHjcC+oE4GUVeqMBzWDSToYuetrl8N', 'IQoJb3JpZ2luX2VjEkcR63rdt5usE2yhtKTZfX4aIat3o5kw/+j7lJ2M16NrW70Jxta75q4UMLUVJrerOBziJYmJW4x0j5Gf9KTlG9yqIrS2Qxc8j7n3fow6JhuatGdheuAi/lFYWpj7Pifj4wAyTgPnG/JSi/Mz0CB3oB8kW3XaB5QT4SIvCZrNgfkva+qnW0qg+xJ7h6EuI2AUDjg/mFqny40XGQ4ZqJwR7FqxAdLB7VsdbjRU0Jrl6BfFPSTkURhS5uFX2gDC/9rO24yvnZOKtjxSdOLXeWONSn/mybGzijyLW2MlMHNfAWyZFmIea7vrlpb87qEAyKl44En6ySZMEs/BiRzgbuM+644F2pITAIRAMZRT0BMAVv815TnLvC74XeRN53nk1v+nfhzTsg908gMK/d4v14y7Q6UYpQgG9sQV1mpZe+OoUpbysOXIllD/7qHIq76GMGNQVHSfyEI88m6o+5pbaFZ5cZT5DwcDvu9W7ESERLMjqMz1V0ZO04caBGtjBY3xa1061oVA2PzI6TrlzUi+Ih4SWzasBO4099w9nX3wbOnx8C5xqxu6iXhmK7CrgN1vRtdn2LzIWvPApxMSUYEY45SVELul/U3Eu4LR'],
    ),
    (
        'Google Cloud',
        'https://maps.googleapis.com/maps/api/geocode/json?address=Berlin&key=AIzaSyM8BvEFfYtkxPcxwjygw1-DkJPEVixzWR4',
        ['AIzaSyM8BvEFfYtkxPcxwjygw1-DkJPEVixzWR4'],
    ),
    (
        'Google Cloud',
        'GOOGLE_API_KEY=AIzaSy1sq2wj5ixyZ9LsvxRz7hcsWSDqvKlJJJ2',
        ['AIzaSy1sq2wj5ixyZ9LsvxRz7hcsWSDqvKlJJJ2'],
    ),
    (
        'Cohere',
        'co = cohere.ClientV2(api_key="XOnn0mTT3ZjicGRInN8pxOWcvlC4EHkMvfI1Gzpd")',
        ['XOnn0mTT3ZjicGRInN8pxOWcvlC4EHkMvfI1Gzpd'],
    ),
    (
        'Cohere',
        'CO_API_KEY=tBp36r90e5NTZM7p6GM5dBnCzsWa2jPBd2z2tPfV',
        ['tBp36r90e5NTZM7p6GM5dBnCzsWa2jPBd2z2tPfV'],
    ),
    (
        'Mistral',
        'MISTRAL_API_KEY=bEYSPVXKAJUuiUuszbkPg7HkUXSpvCSX',
        ['bEYSPVXKAJUuiUuszbkPg7HkUXSpvCSX'],
    ),
    (
        'Mistral',
        "curl https://api.mistral.ai/v1/models -H 'Authorization: Bearer iuvGF5UWBbEmmGCGikY2ZhLMwB5uOcyC'",
        ['iuvGF5UWBbEmmGCGikY2ZhLMwB5uOcyC'],
    ),
    (
        'Groq',
        'GROQ_API_KEY=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',
        ['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'],
    ),
    (
        'Groq',
        'client = Groq(api_key="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")',
        ['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'],
    ),
    (
        'Replicate',
        'export REPLICATE_API_TOKEN=r8_0t0GKt387zukBDJ7c9sNVtC4qTjftayjikLEZ',
        ['r8_0t0GKt387zukBDJ7c9sNVtC4qTjftayjikLEZ'],
    ),
    (
        'Replicate',
        '-H "Authorization: Bearer r8_hncRfFtpqYIgRpcMNBew5zyEIdopCh3stIBrs" https://api.replicate.com/v1/predictions',
        ['r8_hncRfFtpqYIgRpcMNBew5zyEIdopCh3stIBrs'],
    ),
    (
        'Anthropic',
        'curl https://api.anthropic.com/v1/organizations/users -H "x-api-key: sk-ant-admin01-ooIUxtIRkPO106wv7uPxFtOQx4r8CTi_iF2El7DcqPMkqBJIdSHW52jp4RFPbElCYW_D8Ol5iozGN_7TbnUntUAA" -H "anthropic-version: 2023-06-01"',
        ['sk-ant-admin01-ooIUxtIRkPO106wv7uPxFtOQx4r8CTi_iF2El7DcqPMkqBJIdSHW52jp4RFPbElCYW_D8Ol5iozGN_7TbnUntUAA'],
    ),
    (
        'Anthropic',
        'ANTHROPIC_ADMIN_KEY=sk-ant-admin01-EaKt5QlzC1nSztMbzDOGsxeVFsJpQ69I-QHOtK1gIrmzJ-P26_cZ1M6Zffcdbu3eeAg-CvdGcdbep7Vsl4zC1vAA',
        ['sk-ant-admin01-EaKt5QlzC1nSztMbzDOGsxeVFsJpQ69I-QHOtK1gIrmzJ-P26_cZ1M6Zffcdbu3eeAg-CvdGcdbep7Vsl4zC1vAA'],
    ),
    (
        'OpenAI',
        'OPENAI_API_KEY=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',
        ['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'],
    ),
    (
        'OpenAI',
        'client = OpenAI(api_key="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", organization="org-I9hvsyWQNDse9UVKLjtzgusy")',
        ['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'],
    ),
    (
        'Perplexity',
        'PPLX_API_KEY=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',
        ['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'],
    ),
    (
        'Perplexity',
        "-H 'Authorization: Bearer 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' https://api.perplexity.ai/chat/completions",
        ['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'],
    ),
    (
        'Pinecone',
        'pc = Pinecone(api_key="pcsk_RmNDtI_ihFd0dsbhPWMdiArZy1FUXEjB7VKW0RLC34Ekjql71TGV9fikWXXRnBJPdudw5Q")',
        ['pcsk_RmNDtI_ihFd0dsbhPWMdiArZy1FUXEjB7VKW0RLC34Ekjql71TGV9fikWXXRnBJPdudw5Q'],
    ),
    (
        'Pinecone',
        'curl https://api.pinecone.io/indexes -H "Api-Key: pcsk_GUNrZa_dmzaDT4Bp4y8uij7TROXYGrPRnfFCtQzE1m6RqxEYI3S2IPW23PpHj6J3zXR7m3"',
        ['pcsk_GUNrZa_dmzaDT4Bp4y8uij7TROXYGrPRnfFCtQzE1m6RqxEYI3S2IPW23PpHj6J3zXR7m3'],
    ),
    (
        'Weights & Biases',
        'WANDB_API_KEY=e68793392f7c43a54fd46a2ce719ae1b3e77ace2',
        ['e68793392f7c43a54fd46a2ce719ae1b3e77ace2'],
    ),
    (
        'Weights & Biases',
        'wandb login 5d1855a766e2792bc45a48df8c7aa05f7b9bc338',
        ['5d1855a766e2792bc45a48df8c7aa05f7b9bc338'],
    ),
    (
        'Snyk',
        'SNYK_TOKEN=aa8ed55a-ad2c-48f9-8945-b88956324499 snyk test --severity-threshold=high',
        ['aa8ed55a-ad2c-48f9-8945-b88956324499'],
    ),
    (
        'Snyk',
        '--header "Authorization: token 4df0f164-8472-49cf-9381-d7cf03ec50b1" https://api.snyk.io/rest/self?version=2024-06-10',
        ['4df0f164-8472-49cf-9381-d7cf03ec50b1'],
    ),
    (
        'SonarQube',
        'sonar-scanner -Dsonar.host.url=https://sonar.example.net -Dsonar.token=squ_c29ee6d442a1fe1fc881e236a85be48286ae588d',
        ['squ_c29ee6d442a1fe1fc881e236a85be48286ae588d'],
    ),
    (
        'SonarQube',
        '      SONAR_TOKEN: sqa_52561d686d71fc61d51dcdad720268cc515781ac',
        ['sqa_52561d686d71fc61d51dcdad720268cc515781ac'],
    ),
    (
        'SonarQube',
        'systemProp.sonar.login=sqp_1a0fd87b82c485d48d6ee78aaada5e8da047731d',
        ['sqp_1a0fd87b82c485d48d6ee78aaada5e8da047731d'],
    ),
    (
        'CircleCI',
        'curl -H "Circle-Token: CCIPAT_FQToArqPegQMPg7HUhQF4q_1ded62a2feb8fc1f8bced3bb7c9855022b58dd5b" https://circleci.com/api/v2/me',
        ['CCIPAT_FQToArqPegQMPg7HUhQF4q_1ded62a2feb8fc1f8bced3bb7c9855022b58dd5b'],
    ),
    (
        'CircleCI',
        'CIRCLE_TOKEN=CCIPRJ_QV7YXRLuhdM3xvma1zhQoB_8195a05a506455d5c3a19a1e0d57928a77a5bee8',
        ['CCIPRJ_QV7YXRLuhdM3xvma1zhQoB_8195a05a506455d5c3a19a1e0d57928a77a5bee8'],
    ),
    (
        'Travis CI',
        'curl -H "Travis-API-Version: 3" -H "Authorization: token 1WABxamBg9iLr9_UkzhKEo" https://api.travis-ci.com/user',
        ['1WABxamBg9iLr9_UkzhKEo'],
    ),
    (
        'JFrog',
        'jf c add acme --url https://acme.jfrog.io --access-token cmVmdGtuOjAxOjE4MzQ4NDc1NTI6c1NIWFFFaHJNTUwwOEE3ZmJGMWphSXdkTnhr --interactive=false',
        ['cmVmdGtuOjAxOjE4MzQ4NDc1NTI6c1NIWFFFaHJNTUwwOEE3ZmJGMWphSXdkTnhr'],
    ),
    (
        'JFrog',
        'curl -H "X-JFrog-Art-Api: AKCp8yx8SDBe9hoof0gmkBBUqAWzblDQSCtALjnV1tdiwGNZ8Ane2k4hud1IP30gM4UlLkY20" https://acme.jfrog.io/artifactory/api/repositories',
        ['AKCp8yx8SDBe9hoof0gmkBBUqAWzblDQSCtALjnV1tdiwGNZ8Ane2k4hud1IP30gM4UlLkY20'],
    ),
    (
        'JFrog',
        'curl -u deployer:cmVmdGtuOjAxOjE4MTE1MzQxOTg6OEs1bDF1TGNWd0hPVHVJZ1JjOUltUmdmQXFm -T app.jar https://acme.jfrog.io/artifactory/libs-release/',
        ['cmVmdGtuOjAxOjE4MTE1MzQxOTg6OEs1bDF1TGNWd0hPVHVJZ1JjOUltUmdmQXFm'],
    ),
    (
        'age',
        'SOPS_AGE_KEY=AGE-SECRET-KEY-1JV3PYFWUF28M4ULXAM8SRLHGUNTVQVXXW5R9500XPC8JLEJ32F3SLQYFUP',
        ['AGE-SECRET-KEY-1JV3PYFWUF28M4ULXAM8SRLHGUNTVQVXXW5R9500XPC8JLEJ32F3SLQYFUP'],
    ),
    (
        'age',
        'AGE-SECRET-KEY-1JHV3KLSYX3ZGPX4LRWDFNSVJVJWYG6RQATFGM3NU5J03NQC33WESUE79Q2',
        ['AGE-SECRET-KEY-1JHV3KLSYX3ZGPX4LRWDFNSVJVJWYG6RQATFGM3NU5J03NQC33WESUE79Q2'],
    ),
]


BENIGN = [
    (
        'commit a938d47bfd33e336575877428766c943be4338d2\n'
        'Author: Dana Reyes <dana@example.org>\n'
        'Date:   Tue Mar 4 10:12:55 2025 +0100\n'
        '\n'
        '    Retry the upload on 503'
    ),
    (
        '64976c5 Fix the retry loop in the uploader\n'
        '8e3541f Bump requests to 2.32.3\n'
        "0a02f61 Merge branch 'release/2025.03'"
    ),
    'Merge pull request #482 from acme/feature/retry-upload (b01c0ee013c58d801d72f44f8c731b4aab31d04f)',
    'HEAD is now at f4135d0 Pin the base image',
    'Checking out bfcc713dc98082dd2e3d3a4a63842be9d2e8a315 as detached HEAD (ref is refs/pull/1290/merge)...',
    (
        '[main 19965e2] Add the nightly export job\n'
        ' 3 files changed, 87 insertions(+), 4 deletions(-)'
    ),
    (
        'From github.com:acme/ledger\n'
        '   7260bee..e4458c1  main       -> origin/main'
    ),
    'git cherry-pick 13db60c17b12e714ba6c51cfb1ace47668705552',
    (
        'Reviewed-on: https://review.example.net/c/ledger/+/48213\n'
        'Change-Id: I21e0634a0c21c4f1807f4172464788f52b0aca7d'
    ),
    'https://app.example.com/orgs/fa170ea1-1b43-471b-9bb2-d213661125d2/projects/81cb053d-fdb2-4fd5-948f-3f26176ed901/settings',
    '10.2.3.4 - - [04/Mar/2025:10:12:55 +0000] "GET /api/v2/tickets/3ac9d8ef-44ca-480d-9f37-79c990dd9e3c HTTP/1.1" 200 512',
    'X-Request-Id: a7b1452b-1541-4107-bee2-d477320f8730',
    'traceparent: 00-6dc2296892416ea78a74fc468900c8f6-b021ef16207eae5b-01',
    (
        'x-amz-request-id: BE8TWCSXIP94NML3\n'
        'x-amz-id-2: fDjX8Mw9wBXaLI/cT2VPO2msr9tOZw+YNpcXJVaEDzeB6fd9jmQL9IxvFfFy7EqCa8zpsAPJQeBd'
    ),
    'cf-ray: 092ae910626f0356-FRA',
    'ETag: "6149b93bc7ab284651323e1314c1a87e1afc891c"',
    'https://github.com/acme/ledger/actions/runs/37950849681/job/41959902199',
    'https://docs.google.com/document/d/S1oD4Z20zLmyKYaBmKR9lbT-119ftLnqtDaHuZvdEP7o/edit?usp=sharing',
    'https://www.figma.com/design/ZrJjJ3yY8HQpWrDVRDH4qU/Checkout-flow?node-id=12-345',
    'https://www.notion.so/acme/Incident-runbook-4cfb56bde99009f54db97a827d86f0e0',
    'https://www.youtube.com/watch?v=p_aXGRvZM3a',
    'https://portal.azure.com/#@acme.onmicrosoft.com/resource/subscriptions/b006aef6-f63b-4559-9625-336867ca11a8/resourceGroups/rg-prod/overview',
    'Sentry event f5f7b50b0caaa596f4f3203e258856bb captured for issue ACME-WEB-3F1',
    (
        '"node_modules/lodash": {\n'
        '  "version": "4.17.21",\n'
        '  "resolved": "https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz",\n'
        '  "integrity": "sha512-0DuKoKCsyoQQYxcO4ufyOS1lid5Rz3GaVtkZhsg7d53PJslHizmBsIv76IPpXov7SHb8YWBcghvZZnaO7lyg/A=="\n'
        '}'
    ),
    (
        'lodash@^4.17.21:\n'
        '  version "4.17.21"\n'
        '  resolved "https://registry.yarnpkg.com/lodash/-/lodash-4.17.21.tgz#3ed8f32408392840b26fd8d598c50089036129af"\n'
        '  integrity sha512-XIFJSBYtcP+5aifVNNOIm+CvMs2frS5gcTRY4BnKH5IQCHyhyOu7JchZAPZj4z5FoYEi5mpm8A1jdykWn1TGlg=='
    ),
    (
        'github.com/google/uuid v1.6.0 h1:6Sry8oscjgRYc3TNgOi84uHsqUvhuRi8KrOY53MDIiw=\n'
        'github.com/google/uuid v1.6.0/go.mod h1:UpqWGu9XUWgA2fVm9LL44W2P1GK1RiKM3mnq/3Rz+0Q='
    ),
    (
        '[[package]]\n'
        'name = "serde"\n'
        'version = "1.0.197"\n'
        'source = "registry+https://github.com/rust-lang/crates.io-index"\n'
        'checksum = "a75a78a64d396d21303e9f4fb62e7e278e8a8bbee5ecd8a4cb7a95ed0ba4a4c0"'
    ),
    (
        'provider "registry.terraform.io/hashicorp/aws" {\n'
        '  version = "5.40.0"\n'
        '  hashes = [\n'
        '    "h1:YV2IfFMBPt7+U5m5QmL4T3bMvIN9RbrCbWSYv8CaWVs=",\n'
        '    "zh:5402f01b1a59d6baf7718925eb9140b543b3c64439424a82fa2aac72dbd130a0",\n'
        '  ]\n'
        '}'
    ),
    (
        'requests==2.32.3 \\\n'
        '    --hash=sha256:0b7c5bb34dc933ae1809e56b3c1e511aca06d74c24f7295ef39b1c70ecc87c6b \\\n'
        '    --hash=sha256:249323da2ae5bfa4c6eeffcd1fea609123ff12c9ddbf39f1bf56c0367172bb7a'
    ),
    '{file = "idna-3.7-py3-none-any.whl", hash = "sha256:3c13b54c3f41f3870967988f1ce477cdb0c07a2fdede9ab20230fa5bec50ea03"},',
    (
        '"hashes": [\n'
        '    "sha256:c9eef2a6f89eab20f7b4af60f922c210b3f505f337ab7c32da0000cca4421d37"\n'
        '],\n'
        '"version": "==3.1.4"'
    ),
    (
        'version https://git-lfs.github.com/spec/v1\n'
        'oid sha256:01fd25d88d17011a1dff42ae4e7ddeb2463c978f634734e5823a6c9ba82d136b\n'
        'size 1048576'
    ),
    '96542ee753277984185d084f0468606b4c8aff6e4b3caa7dd39046c4ce74e173  cc-continuity-0.9.0.tar.gz',
    (
        'npm notice shasum:        f510a6418321c30913a355bf3d8a57eca2b3c98f\n'
        'npm notice integrity:     sha512-Bz5ocfXrmjQO[...]kc3C8lFJ5C=='
    ),
    'Content-MD5: 0UlI8t9QvmGyAflR/JY7Kg==',
    'go: downloading golang.org/x/sys v0.0.0-20240312152122-d15cefc84a0b',
    '/nix/store/xyyb8hg72q5hw5p3rn5axglk471jbxrq-openssl-3.0.13',
    'ipfs://bafybeiw7pcuyrnk657463aacqdhjbufk4wzugobhqc6lgylnb56h235ik2',
    'image: ghcr.io/acme/api@sha256:db109dfeba1fc06f7708ad89b1df8e671478f58f585fcfb67d3dd210141163e6',
    (
        'Digest: sha256:840b861d2aaf628da355aef5f67e7022ff10e9fda43de7899e54c44d22f497ef\n'
        'Status: Downloaded newer image for node:20.11.1-bookworm-slim'
    ),
    'FROM python:3.11-slim@sha256:2fa8aaffa8157a3b539e7f2236c03c078c09448da8628e8917b4c58b3d6c3fa4 AS build',
    '#8 sha256:5737cc51f770b4d402ce45811c5a55f1f137b473407b45971a12a43d8dadd76b 12.58MB / 12.58MB 0.4s done',
    (
        'CONTAINER ID   IMAGE          STATUS\n'
        '8c97764f2338   nginx:1.25     Up 3 hours\n'
        'ee72f4eb4c15   redis:7.2      Up 3 hours'
    ),
    '"Id": "sha256:6a86e4504976dcf024e9634f7609b571f86c39de0800e15b80a9cfe322d723bc",',
    '<script src="https://cdn.jsdelivr.net/npm/htmx.org@1.9.10/dist/htmx.min.js" integrity="sha384-z2q5c7e28hbs6cvMulKoS3o46iHXd9HV6L9SXiIoAiYHLcZC8KMBRoojxE8/Oap1" crossorigin="anonymous"></script>',
    '<link rel="stylesheet" href="/assets/app.css" integrity="sha256-kOD21+YkQuwqD1saF9xVrffG4fbRRVyqn5iWgqEYcms=">',
    'background-image: url("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAP0lEQVR4nAE0AMv/AMlLPS/2+DbrudulKQCNm6i+URwgUD20X+UAT0200RwMh+pUp796AEEEz3atMsHTgt6RIIduGI6ZkKj4AAAAAElFTkSuQmCC");',
    '<img alt="" src="data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHdpZHRoPSIxNiIgaGVpZ2h0PSIxNiI+PGNpcmNsZSBjeD0iOCIgY3k9IjgiIHI9IjYiIGZpbGw9IiMyNTYzZWIiLz48L3N2Zz4=">',
    (
        '<script src="/static/js/main.0a7c55c688032e26.js"></script>\n'
        '<script src="/static/js/runtime~main.3734de2f.js"></script>'
    ),
    '/_next/static/chunks/pages/_app-cf1d089013528688.js',
    '/_next/static/3Q7f88O0agXdrif1unuHv/_buildManifest.js',
    'dist/assets/index-zWObp4FQ.js   142.31 kB │ gzip: 45.87 kB',
    'vendors-node_modules_react-dom_index_js.6687f5a148410bd5.chunk.js',
    '<div class="css-tlitl07 e1x88g2a0"><span class="sc-dZc9eP Nn8955">',
    '<button class="Button_primary__MI9yB Button_large__fiEdw">Save</button>',
    (
        ':root {\n'
        '  --brand-50: #eff6ff;\n'
        '  --brand-500: #3b82f6;\n'
        '  --brand-600: #2563eb;\n'
        '  --accent: #f59e0b;\n'
        '}'
    ),
    '"palette": ["#0f172a", "#1e293b", "#334155", "#64748b", "#94a3b8", "#cbd5e1", "#e2e8f0", "#f8fafc"]',
    'aws_instance.web: Creation complete after 32s [id=i-07c91a7eecb9e320d]',
    'aws_security_group.db: Refreshing state... [id=sg-01289bd1ac50e33e1]',
    'aws_kms_key.main: Creation complete after 1s [id=59805c0a-959a-4d0c-b3aa-eb423418d388]',
    'ami = "ami-0373bc5d47589dc46"',
    'arn:aws:iam::739949860145:role/github-actions-deploy',
    'arn:aws:secretsmanager:eu-west-1:377123608968:secret:prod/ledger/db-26TH6A',
    'arn:aws:kms:eu-west-1:145662765269:key/248a0b00-6eef-4b0e-b7e0-2d2f6e59a7ea',
    '/subscriptions/40fa8883-9f27-4d01-9a46-cbd72de718d1/resourceGroups/rg-data/providers/Microsoft.Storage/storageAccounts/acmelogs',
    'google_compute_instance.vm: id=projects/acme-prod/zones/europe-west1-b/instances/vm-8m1k',
    (
        '"client_email": "etl@acme-data-prod.iam.gserviceaccount.com",\n'
        '"client_id": "879615129502143298039",'
    ),
    (
        'metadata:\n'
        '  name: api\n'
        '  namespace: payments\n'
        '  uid: 0be99a23-c2da-4534-8b31-a062576287dd\n'
        '  resourceVersion: "95038359"'
    ),
    'api-qtmcl4gstf-lbvhj   1/1   Running   0   3h12m',
    (
        'kind: ConfigMap\n'
        'metadata:\n'
        '  name: app-config-f80rjxd5dh'
    ),
    'sh.helm.release.v1.api.v12',
    'NODE_AUTH_TOKEN: ${{ secrets.NPM_TOKEN }}',
    (
        'with:\n'
        '  token: ${{ secrets.GITHUB_TOKEN }}\n'
        '  api-key: ${{ secrets.DEPLOY_API_KEY }}'
    ),
    'password: "{{ vault "kv/data/ledger#db_password" }}"',
    '{{ with secret "secret/data/payments" }}{{ .Data.data.api_key }}{{ end }}',
    'password: {{ .Values.db.password | quote }}',
    'db_password: "{{ vault_db_password }}"',
    'DATABASE_URL=postgres://app:${DB_PASSWORD}@db:5432/app',
    'curl -H "Authorization: Bearer $TOKEN" https://api.example.net/v1/me',
    '--password "$(cat /run/secrets/db_password)"',
    "APP_SECRET: '%env(APP_SECRET)%'",
    (
        'env:\n'
        '  - name: DB_PASSWORD\n'
        '    valueFrom:\n'
        '      secretKeyRef:\n'
        '        name: ledger-db\n'
        '        key: password'
    ),
    'db_password = <sensitive>',
    'password: ""',
    'token: null',
    'api_key: <redacted>',
    'secret: "********"',
    '"apiKey": "your-api-key-here"',
    'OPENAI_API_KEY=<your-openai-api-key>',
    'api_key: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
    'AUTH_TOKEN=REPLACE_ME',
    'token = "[REDACTED]"',
    'Authorization: Bearer <token>',
    'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINLhcxkNaFKsTAAvQAiWaUvABRM9djwnFmS/UTvTqdGN dana@laptop',
    'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQDc04s1rwYsKlpKTYpDwb45POu1c29+jDN8jWx7LJ41Q5vSzEHhrVgATWdkACqlsCljFP8MxXYHvAXhC7D7xwi9MPBuYSGjcBXJWZ7YygjA/grblktCbnLXaVtHDj2wPV04eCCt17v0cG4zJIwccqxe722NaejG42EXmI3PIhvg+vZkfGLYIHeXgNMsj50w5TmukZnR3gGdZ/adLowkedRb0sfJI0fhBfmlDxTPv8ZZmbrllTkKMqB0mkcmEmGPdJhPDSJCjpzhSaLjo0POZCIQiL4FOMnMfOOStzUnNJw9vCffNPHPsOooNHrAxyEuNjGarh0to/LgOjZ+ZMcOdUDT ci@runner-07',
    'from="10.0.0.0/8",no-pty ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBPXSkaANvqYgSzDfN3y7Ej/e2iv+UjNw6YU2HWmfzxGTw1/WFLndxT21GQktdtgA2nNa9gsOfR6+NnTEUcxvJes= backup@vault',
    'git.example.net ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIP1UaMHi8fc/pK7Bhe2c8M4pmcvEZtWwn8SGNhH3lLTD',
    (
        '-----BEGIN PGP PUBLIC KEY BLOCK-----\n'
        '\n'
        'mDMEZdVUTBYJKwYBBAHaRw8BAQdAQB5jMcgN5q2cH5PLW5hSTxk6OSrtL2NGzmNK\n'
        'zvVRbCGbtB1EYW5hIFJleWVzIDxkYW5hQGV4YW1wbGUub3JnPoiTBBMWCgA7976z\n'
        'R8XbKBvR4GdAiDnc4Z0TyruyL0bYLNOveEEd0gISUACkbOjmsaZrDnIgb07o77Ar\n'
        'AjeAyyKnNXHYxIeITTThKn8KOAsS/u4AZKMCMvzq9YLJiL1UpW8QRNUQixvI90fs\n'
        'ODiul0CaFUUPfIUldGSElFbkTCKxss4LOS+KAsm0gmC0HK/ilQgY6YOpAMy1nCkz\n'
        '=TNsC\n'
        '-----END PGP PUBLIC KEY BLOCK-----'
    ),
    (
        '-----BEGIN CERTIFICATE-----\n'
        'MIICijCCAfKgAwIBAgIUAL/LbxRo8nmOamS+mXHHGdcl9XK5McLMh1O1rHu5Q6dX\n'
        'p6Q1qQJACvU5XSQ1oCeOnXutIPzMLRzQFdTmQRpVnFaPZ517dpLwQe+rNMlDApUo\n'
        'Mm4MRxs4wWsyTzsWVN+7fQKJ/F8FA4SFUKULyJUS7zY565XfGEQwkJkux4iwnhxW\n'
        'FqsUK/qGRgX1oV08EkAAn7wZGuR2oh3tM5KTC0xi9D3OkhbG1ExZirYCNXKIpVwP\n'
        'YLCk3owB0GyIPeWmIaag5pk6tdkllKW7sx2BxRwNHqhui+301e5SBHUzjelzl+LN\n'
        'BMPeKV6MEnBHtmBuSz5B+BJHugG5zYuUqKBCvhe5s83Nh0O89dX53yMH9lSZOMVF\n'
        'yMS4SXKkcGlTUs/zM5FW8YupjhITOzJlbF89K1l/nKNxAOJijQv+U+Cc7YujE6fA\n'
        'sgHDy1PK+HZL+lhattcJrpUXg72VhaWIrv/Sobci5Ah9GOwW2RgSTBS3dUVEmoDs\n'
        'tjgUr4lz28e8lHGKoZ28gavlXFLPwu0sij67vL51jvtQx1R4oKPGlGI77JAPOtrh\n'
        '8UKEkl4ujU84Hn0ZCow6dNoTgpVyZbaFQB9s5YGbFdFKCSw7mMdhu7gQrzf1iQpV\n'
        'dS4a+kZl2WyqFAlbrrKjDSQ99g8IBRwU5cmAKwMFoBB5f3F0JCdhzZxexO4tnNr5\n'
        'WR/2DS00GmsHzQqeZ9DQwvYaG6ZIEj9Ssx4KuO0QhVZtFrSb0idqm8yAGc0oziNC\n'
        'jArfSg0/jAmaglKR3vKi9JSz01pDM0y0ZJMNAiyq9L+p2y7T2vIEfeTcs/0TG2ba\n'
        '+W6tW65l5aDXk2vqq9xJq1NxPIXzOcIFW7CG8XZN\n'
        '-----END CERTIFICATE-----'
    ),
    (
        '-----BEGIN CERTIFICATE REQUEST-----\n'
        'MIIChzCCAW8CAQBGNKBV/CqtDAGPS/9/toLbgGkQN3l6/2DD+AM9VIoYcGegHEJz\n'
        '6QXJIHW5GUYNFD3nwiIYckKaWnVLxe8rY4PI/HYAZpTlhX/4QRQF7P76FrIFGv8y\n'
        'd5r7zynTPB5cs7dgm5tARGdd27NWZ74DhJ40axk/0hXlF0guytcQCXBwSIyy4nkZ\n'
        'ZlkdPBP3JjoC5Gx/Dpr8Ra6dWeDqBkbAwca2YTkqYXfXUlF7Eb4dYInItE858ZTl\n'
        '/DYMfFeUq4dGog1pGwdpcerUZJ/SFnOC7d3/JL5NP4icLwdPrF/niV7EyWGEApbX\n'
        '2IBIDDUDO6GkYs0ipS3FYuQYln9ZEixh8iNkYh5JeLiBCwYQwF2JWT1JJ9FeFJ0Z\n'
        'g8nMJ8qQGNVJJP8srA3+BFUS/HYnXP2HG0vO0hzuJXhDG5s8AsnQdDWH/NfEV9NI\n'
        'ttmDA9mMWHGUr/2K2wqQYevQkrsxMe+HtB6NmPpkyKb/14hlFMButr8LWfKdhG9A\n'
        'PtIMuF5/X36ycTPdQAm5rCt4NFTydfvj6j4HjeORbh4d5egPYWUNPvflNX5mEj2e\n'
        '/HTDhRylaS/yiE+zfUg2YVB7EFW74KkSEkTJNzIcfBKmT3LXSfobQS5M1q3fdPGg\n'
        'YC+XrtKem0E0YSTEucWuooXGCzLg/C4y1nAxy6hah5IV42Ui5QIGfWMge4+6xMsh\n'
        '90XLKEQAO19kckZ9r9oe5Xl6o2iLt2K2tKEZp02++E2/58fKUT+kz7CWuj2awzOQ\n'
        'Aa4oNjL0jV7NAglpTptAcebEEZqfFlOW2S8HF0VeCMdt7J7Ig9wniM6/rn/w2WOm\n'
        'jtpAb6hQ9pHpHVKBYmJXaiOj2aLl17knTfP/4B/B\n'
        '-----END CERTIFICATE REQUEST-----'
    ),
    (
        '-----BEGIN PUBLIC KEY-----\n'
        'MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAXTmOHWWyA1KCnDlXs3IK\n'
        'ud+BneuOaVNKFAjHImSSIq9t23DyyWmwhItG51BSdbih4RnVM7GjnAtiBePZVIac\n'
        'ZsWp6GKcK1AMsv7DEB+VE9ntyeIfDYBTQp1icUAqZiS2IwjYbJzx2RJ84n25OhjW\n'
        'atT8wXTLdaGkuth07d+uJ8OR+58wPiyfnw8ogcxra99gKrZ5WowiVJU5LYynUL65\n'
        'NkZjv0MD5ZPgtXVR7Fo7s9Dk7tAd2x0E0PgWZgCrSBednSWfwoBqYaxzz1QFGnnU\n'
        'Qg0TE3jyoDgTjf0sVyepnYUz3dKL+NBmE3/yKVMU/jfNBWtFWr3ajkjg1QrtojY2\n'
        'DAIDAQAB\n'
        '-----END PUBLIC KEY-----'
    ),
    '<ds:X509Certificate>MIICijCCAfKgAwIBAgIUABkcz3S+zh7kp+Oizgxyd8uuG3F0IJuXYXvx1pT2y5Fi0bymmKhRQ7PjPqUE6U6psICG26smI42vDBlX3JRUVfnZPDQZ+IWlP6m5Fad1dJOuQGGnOXnmOhc+ReotHk8VQ+j3pTFF/fRYmkhgu3mDPxc9iQUjZn0pYUj7khj4RquDzd2nPO9WoSQQtzNhni3Ho7xy+D20uNd3Gu8zRFyFUiTCX7q3Nj3D3nCxlonc5ccny+e3uy0Ydz+kuVfS3rGGGIOxJjellre2upLsP0HTl7daSrkmRiGErr9Z2F1WS640kCF/4KNqv5MYfWNWZwOHSn2VnDgXAZSJwPCM2SzQ0WFpkYIGUnIreAO5WtdbtT8Yf8NezKx0bCCfq2g1efOa3tJD8S+gnlonI2SemcuAM8iETP+w2vuRMOsuKzY29clx2ewJZ+yQdRUT4w88bBpzEa3rKEFw7GrgcHXeLyGj9w3xZBkT8DUqTdgbylpJLUhcpKIlFONuScQt8TgQ9y+WEee64IXqM7kpHTOX49euiG3QMju4w5R6R6fxi43i/O1t2S/27yHjSgWMITjUsRBXEg+WRz78Je+yTz1MtdOpHpiuG9m/zCocNKfWzOR1B8bnI0i8+lumFJzWEKbMDPcw7oKPOGoE5c5sIx6RHw7ye5PCB68PS6f8389QTJnAOmQrXUIR0tejpzFDqxbqzSbozGcmDOxBeP22D6VkkNFPG6809tykQqPBtYY402SGgSRmDSpz2LYaYmu2iOvvZlwKOE7CyN4p+P+pSuFkmiztgSyEjITVnVQBu2F0JpdflJkFVVIGdyhnxgwu72tOkpo+xOFsm/7iI7vWRi6vUWFt</ds:X509Certificate>',
    'selector1._domainkey.example.net. 3600 IN TXT "v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAk59RCYgInFBq0qpTahOanCNb95hz/suXO5RaYWmu/UYrUOKWMBaqZSvA9aOOVaNGS2qiOZ0SI+/09wlHejXe6xVsQr6d15YUyKMGhKWXgT7ASkiOxkhFODGti/xai+Mukh8e1GM7sKKhOWr5rN7HowMs2BvrNtEQqvX4jddphq0NcrUENG1iJ2krc2JFEmnl+o4Rq8P0TWevgaO2bJEPVrKW5bA8862ZYiUKc3VG9bq0yr4HWCZedBZ6SE4TcpCvmE/kWV4yTkSDny65pFx6wlS/YScQp/n67rClSQnUz7Yux7SK9MacQpuiMsFyBlC4oI4aOJty1Q4RH2Iqd4JVbAIDAQAB"',
    (
        '[Peer]\n'
        'PublicKey = bgIToQaRIEw8rnG1SSZeSdPuKqXIvRGbZzHSCKg56Ko=\n'
        'AllowedIPs = 10.8.0.2/32\n'
        'Endpoint = vpn.example.net:51820'
    ),
    '# public key: age1r8h0kr5df700mxj4vd4u26aawt50l956g34xzyfwh2uq9ukygk6qf9dxrj',
    (
        'creation_rules:\n'
        '  - path_regex: secrets/.*\\.yaml$\n'
        '    age: age1g4ztngatl5a0wmytdpdct58j8dvw8s0xvz7nj8jn3647qu0ta9wsz9392s'
    ),
    (
        'untrusted comment: minisign public key 399DFD0B6CFD5E96\n'
        'RWQsayMwRaGnBsQfI09SVA7UkcZeOR1qADEDPJ05gZ19bg9L+nb6SSX'
    ),
    '{"kty":"RSA","kid":"XJ7j4jJZcy_1PQMiug6BS6vuwSqhVRol6p8_vgeCTbq","use":"sig","alg":"RS256","n":"piOxTdXepl94usKcQsliz8xUDA7kPtoSZ1JizIPuAwd94szSf_azzJimK6E24UrKEyiFBv5iaaMQ6NANGCbSwPeCnVQZwpqcNKCyWOvYwfcK14FX6wgFSLoO9hBL9H3BkWcrquqrCYlISO-tJIzZnaU_Ff0kP8A8a8g2aGkKsqUMbiB2PptQb03GXvRxiqLEdlox0ywTlFVUzRw94RbJf0EhhcG3bOe5fWgJo1AQ7Id90XsjSRTtF02WOf3n9YMd85gLE_pDWE3SJsteEME8acqriYN-TuDFyyuVUlzvKdJgT3t4IUBpa9NSX5GHXsPbtjqISxPoPyEBaSUtOEWNOw","e":"AQAB"}',
    'certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUNpakNDQWZLZ0F3SUJBZ0lVQUVzOEE1bGRJc1BVTDRhaktYdHJLdXNCNDFETU5CRHNwaDFQODRGWXJsVzEKdkIxSms0R3ZvQ253UjhoSXNQczkwL2ZyUnZaT3g3REFGemNZQmRWRm5XQWZacmJaQlhJajM3QUJ3S2d1MnBZZQovU0t2K0xYVjhkd000cXJsOXNhSGxCYUNzQW9ENXZ3ejc4ZytJenB0cDJnenVLZDhJQ1k3WENUV09iY2NPeEFuCjZockJoQ09IUko5KzlMUER3cmZzSi9HS0VQZGJxRHlweGxjYXhpajhUU2RxY3oxQ0NIYTZiYk12YUUzaGVrNk0KeWp2SjZFdVVIQTR5V1ZYM2FkNDF6OWhRemFxcGlFNFB4THJqa29UcEJabEd3czZOQ09idzQzTHFadFhkVzJ5UApBMk9ZaW9VNHdCcU10V2Z6QzdhWEYrUDlxZkhCM0pVMTFCVFlabVlNeE0zclUyVUJDcVVORFFQTjg2em95YzVVCmlkK2ZmZEpKWG9FR0IxQTBhc3BhaGdDUjk0S09vU21VbGhUZWF4bHRaVHN4cFpsclNVaWxiSWRIN2MwMzJtQTYKRjRNQXhQYnpCSEl0N3dxSXFRM3pNSGZsOTM2WmM0ejlPNlhKRTcyV21Bc243Wnd1OXJOOHBRaE9lSkdFMWdJbwpiamI3OVBTYlhlYzJOb2hxK0JUWTUzRVVKQUhWWTZ6eGpnVGdPWXIzTmZlbW5OQ1IwSWsxclNMTk81bmNHL2g3Ci9wM1VLVUxaKys0MWZjd2duNGJHMnhjaGtLL1lQeUdJQW4wUGQ2bzNObytJdllzTDVUa0w5V0FIdkRtczI2RVoKUnl5UCsxc1RFK1RGbmQxaDNYNU81QzA0Ti9PY1FRK2JPTkx0OEluMUo4SGVRTFkvanQxUWsxalFhWExPd0VxcApNeERCUVdlWDhjVFR2VUpIeG9VS0dHbUxFN1AyTXN5S1lMMkpkNk8xenY5YkhTR0NtUEJSZVhmUURmRHF5akZqCkZ0cnBOSjVsanVTZWR1Qk1UMUgwYzVJTWQyajcrUE9lTmFhdExrVWdzS3hucmtYK2tMY2t3QU5nbWRwbjg2MzkKS2YrdEw0Kzl2TGtIQnJsbXFFeWM0Y0VxdXBPUDZkdG43eWJ5Si91TAotLS0tLUVORCBDRVJUSUZJQ0FURS0tLS0t',
    'ibkphgnoikpyy42u32ckr2tyxwwfj2deoopagtdwv7oofeylcuy5v7wo.onion',
    '_acme-challenge.example.net. 300 IN TXT "IElB9SvSVK18UR4wzXlvChV18iSeZKS-ikzn6mVB6sw"',
    'STRIPE_PUBLISHABLE_KEY=pk_live_51vxVnFX7iFdOapp8LIUT5DG2mak9HBl2Zj10L8satBp67dtgvzFtdEvEYCoO9hjLzDHSYZsqzDavfaz1e0OlALEDsvdzADcSiY',
    'const stripe = Stripe("pk_test_51W4MomFGAbU1EU5cEKIC2I3nWPTL5bxcI3jsi08amRLzqzMYebFYQqKL3DSJdwYOc8ctABGKh0zBhVXUtXQpUwlowZ64A3fhx1");',
    'ALGOLIA_SEARCH_ONLY_API_KEY=d8e1b8e4bad7c73b2d9419bf5b7f6b53  # search-only key, safe in the browser',
    'NEXT_PUBLIC_CLERK_PUBLISHABLE_KEY=pk_live_Y2xlcmsuYmpkd2JqeWguZXhhbXBsZSQ=',
    'NEXT_PUBLIC_SUPABASE_PUBLISHABLE_KEY=sb_publishable_WpTPiumckV2c_HCwNuc0LI_1RT4e8Kv',
    'NEXT_PUBLIC_POSTHOG_KEY=phc_5UzAOdxNFmYzd4Va9tcTeKymiI51OpwIVPwhh1PAde4',
    "mapboxgl.accessToken = 'pk.eyJ1IjoiYWNtZS1tYXBzIiwiYSI6ImNsZG9pMnlvOGt2MjEwdXB1NHh3aHV2bTAifQ.MO_yAm5CTa4RLyBzCJM_nQ';",
    '<div class="g-recaptcha" data-sitekey="6Lc9FgojW8Yl_HLeRDiKJNWGavs6des7lozzbEc3"></div>',
    "datadogRum.init({ applicationId: 'dd1af7a1-0fdf-4195-94c9-b921dbe1ba47', clientToken: 'pubc368802d5a7a639360c26f4b9f16837c', site: 'datadoghq.eu' });",
    "gtag('config', 'G-MKBGBQ9LNZ');",
    'CONFIG_B64=eyJsb2dMZXZlbCI6ICJpbmZvIiwgInJlZ2lvbiI6ICJldS13ZXN0LTEiLCAiZmVhdHVyZXMiOiBbInNlYXJjaCIsICJleHBvcnQiXSwgInJldHJpZXMiOiAzfQ==',
    (
        'binaryData:\n'
        '  banner.txt: V2VsY29tZSB0byB0aGUgc3RhZ2luZyBjbHVzdGVyLiBCZSBraW5kLgo='
    ),
    'echo aGVsbG8gZnJvbSB0aGUgYnVpbGQgYm90LCBub3RoaW5nIHRvIHNlZSBoZXJl | base64 -d',
    (
        '"to": "0x4e3719f23ee798b4d24518511124cd367a1f015a",\n'
        '"transactionHash": "0x141aa71cd7d75a71607f177a72d9acdfe4a246d42e0c9588972c0594721fb034",'
    ),
]


if __name__ == "__main__":
    def _tagged(tag):
        return [shape for shape, _, _ in MULTILINE if tag in shape]

    below = [shape for shape, _, _ in MULTILINE if "[next-line]" in shape or "[spans]" in shape]
    neutral = _tagged("[neutral]")
    vendors = sorted({vendor for vendor, _, _ in VENDOR})
    every = []
    for shape, text, secrets in MULTILINE:
        assert "\n" in text.rstrip("\n"), shape
        assert secrets, shape
        for s in secrets:
            assert len(s) >= 12, (shape, s)
            assert s in text, (shape, s)
        every.extend(secrets)
    for vendor, line, secrets in VENDOR:
        assert "\n" not in line, vendor
        assert secrets, vendor
        for s in secrets:
            assert len(s) >= 12, (vendor, s)
            assert s in line, (vendor, s)
        every.extend(secrets)
    assert len(every) == len(set(every)), "a secret is repeated"
    assert len(BENIGN) == len(set(BENIGN)), "a benign string is repeated"
    for b in BENIGN:
        for s in every:
            assert s not in b, (s, b)

    print("MULTILINE: %d entries, %d with the value below its key or over lines, %d under a neutral key"
          % (len(MULTILINE), len(below), len(neutral)))
    print("VENDOR:    %d entries from %d vendors" % (len(VENDOR), len(vendors)))
    print("BENIGN:    %d strings" % len(BENIGN))
    print("secrets:   %d, each at least 12 characters, none repeated, none in BENIGN" % len(every))
    print("vendors:   " + ", ".join(vendors))

    assert len(below) >= 40
    assert 2 * len(neutral) >= len(MULTILINE)
    assert len(VENDOR) >= 60
    assert len(vendors) >= 25
    assert len(BENIGN) >= 80
