"""Side-effect holds read shell as a shell does (issue 33): a table of harmful forms, each recognised,
and of harmless ones, each let through; every form the adversarial probe found missing or wrongly held
is in it.  The classifier runs on tree-sitter's reading (a test fails, loudly, where it is missing)."""

import os

import pytest

from cc_continuity import card
from cc_continuity.holds import classify, shell

U = "https://api.example.com/v1/hooks"

# (command, the kind of effect it has)
HARMFUL = [
    # -- nested: loops, conditions, groups, negation, substitutions
    ("for i in 1; do curl -s -X POST $U; done", "http"),
    ("for u in a b; do curl -X DELETE %s/$u; done" % U, "http"),
    ("while read id; do curl -X DELETE %s/$id; done < ids.txt" % U, "http"),
    ("until curl -X POST %s; do sleep 1; done" % U, "http"),
    ("if true; then curl -X POST $U; fi", "http"),
    ("if [ -n \"$X\" ]; then echo hi; else curl -X PUT -d x %s; fi" % U, "http"),
    ("case $1 in go) curl -X POST %s ;; esac" % U, "http"),
    ("{ curl -X POST $U; }", "http"),
    ("( curl -X POST %s )" % U, "http"),
    ("! curl -X POST %s" % U, "http"),
    ("echo `curl -X POST %s`" % U, "http"),
    ("echo $(curl -X POST %s)" % U, "http"),
    ("id=$(curl -s -X POST -d '{}' %s | jq -r .id)" % U, "http"),
    ("export TOKEN=$(curl -X POST %s/token)" % U, "http"),
    ("cat <(curl -X POST %s)" % U, "http"),
    ("f() { curl -X POST %s; }; f" % U, "http"),
    ("true && curl -X PATCH -d a=1 %s" % U, "http"),
    ("false || curl -X POST %s" % U, "http"),
    ("curl -X POST %s | tee out.json" % U, "http"),
    ("curl -X POST %s > out.json 2>&1" % U, "http"),
    # -- wrappers with options
    ("nice -n 10 curl -X POST %s" % U, "http"),
    ("nice -10 curl -X POST %s" % U, "http"),
    ("timeout -s KILL 5 curl -X POST %s" % U, "http"),
    ("timeout 30 curl -X POST %s" % U, "http"),
    ("timeout --kill-after=5 30 curl -X POST %s" % U, "http"),
    ("env -i curl -X POST %s" % U, "http"),
    ("env -u X curl -X POST %s" % U, "http"),
    ("env A=1 B=2 curl -X POST %s" % U, "http"),
    ("TOKEN=abc curl -X POST %s" % U, "http"),
    ("sudo -u deploy curl -X POST %s" % U, "http"),
    ("sudo -E curl -X POST %s" % U, "http"),
    ("sudo -- curl -X POST %s" % U, "http"),
    ("stdbuf -oL curl -X POST %s" % U, "http"),
    ("stdbuf -o L curl -X POST %s" % U, "http"),
    ("nohup curl -X POST %s &" % U, "http"),
    ("time curl -X POST %s" % U, "http"),
    ("command curl -X POST %s" % U, "http"),
    ("exec curl -X POST %s" % U, "http"),
    ("ionice -c 3 curl -X POST %s" % U, "http"),
    ("flock /tmp/l curl -X POST %s" % U, "http"),
    ("sudo -u deploy nice -n 5 timeout 9 curl -X POST %s" % U, "http"),
    # -- strings that are shell again, stdin, xargs
    ("echo $U | xargs curl -X POST", "http"),
    ("xargs -I{} curl -X POST {} < urls.txt", "http"),
    ("printf '%%s\\n' a b | xargs -n1 -P4 curl -X DELETE", "http"),
    ("eval \"curl -X POST $U\"", "http"),
    ("eval curl -X POST %s" % U, "http"),
    ("sh -c \"curl -X POST %s\"" % U, "http"),
    ("bash -c 'gh release create v1.2.0'", "gh"),
    ("bash -lc 'npm publish'", "publish"),
    ("zsh -c 'curl -X POST %s'" % U, "http"),
    ("ssh deploy@host 'curl -X POST %s'" % U, "http"),
    ("ssh -p 2222 -i key host make deploy", "deploy"),
    ("bash <<EOF\nnpm publish\nEOF", "publish"),
    ("sh -s <<'EOF'\ncurl -X POST %s\nEOF" % U, "http"),
    ("env -S 'curl -X POST %s'" % U, "http"),
    ("npx vercel deploy --prod", "deploy"),
    ("npx -y wrangler deploy", "deploy"),
    # -- a method glued to other short flags
    ("curl -sX DELETE %s/1" % U, "http"),
    ("curl -sfXPOST %s" % U, "http"),
    ("curl -XPOST %s" % U, "http"),
    ("curl -sSLX PUT -d a %s" % U, "http"),
    ("curl -sd @body.json %s" % U, "http"),
    ("curl --request=POST %s" % U, "http"),
    ("curl -d 'a=1' %s" % U, "http"),
    ("curl --json '{\"a\":1}' %s" % U, "http"),
    ("curl -F file=@x.png %s" % U, "http"),
    ("curl -T file.bin %s" % U, "http"),
    ("wget --method=DELETE %s/1" % U, "http"),
    ("wget --post-data='a=1' %s" % U, "http"),
    ("http POST %s name=x" % U, "http"),
    ("xh PUT %s a=1" % U, "http"),
    ("gh api -XPOST repos/o/r/dispatches", "gh"),
    ("gh api --method DELETE repos/o/r/issues/1/labels/x", "gh"),
    ("gh api repos/o/r/issues -f title=x", "gh"),
    ("gh api graphql -f query='mutation { addStar(input:{starrableId:\"x\"}) { clientMutationId } }'", "gh"),
    # -- options before the subcommand
    ("gh -R o/r pr create --fill", "gh"),
    ("gh --repo o/r issue comment 1 -b hi", "gh"),
    ("gh release create v1 --notes x", "gh"),
    ("gh pr merge 12 --squash", "gh"),
    ("npm --prefix pkg publish", "publish"),
    ("npm publish --access public", "publish"),
    ("pnpm -C packages/a publish", "publish"),
    ("yarn npm publish", "publish"),
    ("cargo --manifest-path x/Cargo.toml publish", "publish"),
    ("twine upload dist/*", "publish"),
    ("python -m twine upload dist/*", "publish"),
    ("uv publish", "publish"),
    ("make -C infra deploy", "deploy"),
    ("make -j 4 release", "deploy"),
    ("make build deploy", "deploy"),
    ("kubectl -n prod rollout restart deploy/web", "deploy"),
    ("kubectl delete pod web-1", "deploy"),
    ("helm -n prod install web ./chart", "deploy"),
    ("terraform apply -auto-approve", "deploy"),
    ("terraform -chdir=infra apply", "deploy"),
    ("fly deploy", "deploy"),
    ("vercel --prod", "deploy"),
    ("aws s3 cp ./x s3://bucket/x", "deploy"),
    ("aws s3 rm s3://bucket/x", "deploy"),
    ("aws --profile p lambda invoke --function-name f out.json", "deploy"),
    ("npm version patch", "bump"),
    ("poetry version minor", "bump"),
    ("bump2version patch", "bump"),
    ("mail -s hi ops@example.com < body.txt", "mail"),
    ("sendmail ops@example.com < msg", "mail"),
    # -- SQL, where the statement is
    ("psql <<EOF\nDELETE FROM users WHERE id = 1;\nEOF", "db"),
    ("psql -d app <<'SQL'\nBEGIN;\nUPDATE t SET a = 1;\nCOMMIT;\nSQL", "db"),
    ("psql -c 'INSERT INTO t VALUES (1)'", "db"),
    ("psql --set ON_ERROR_STOP=1 -c 'drop table t'", "db"),
    ("mysql -e 'UPDATE t SET x=1'", "db"),
    ("mysql --default-character-set=utf8mb4 -e 'delete from t'", "db"),
    ("sqlite3 app.db 'DELETE FROM t'", "db"),
    ("sqlite3 app.db <<< 'insert into t values (1)'", "db"),
    ("psql -c 'WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x'", "db"),
    ("psql -c \"COPY t FROM '/tmp/x.csv'\"", "db"),
    ("redis-cli SET k v", "db"),
    ("redis-cli -h h DEL k", "db"),
    ("mongosh --eval 'db.users.deleteMany({})'", "db"),
    # -- scripts run or sourced
    ("source ./deploy.sh", "http"),
    (". ./deploy.sh", "http"),
    ("./deploy.sh", "http"),
    ("bash deploy.sh", "http"),
    ("semantic-release", "deploy"),
]

HARMLESS = [
    "ls -la", "echo hello", "git status", "git push origin main", "git push --force-with-lease",
    "docker push img:1", "kubectl apply -f k8s/", "helm upgrade --install web ./chart", "terraform plan",
    "curl %s" % U, "curl -s %s | jq ." % U, "curl -I %s" % U, "curl -G -d q=x %s" % U, "curl -X GET %s" % U,
    "curl -sX GET %s" % U, "wget %s" % U, "http GET %s" % U, "http %s" % U,
    "curl -X POST http://127.0.0.1:8000/api", "curl -X POST http://localhost:3000/x",
    "curl -X POST 'http://user:pw@localhost:8080/x'",
    "gh pr view 1", "gh pr list", "gh issue list -R o/r", "gh -R o/r pr view 2", "gh api repos/o/r",
    "gh api graphql -f query='query { viewer { login } }'", "gh api graphql -f query='{ viewer { login } }'",
    "gh release view v1", "gh run list",
    "psql -c 'select 1'", "psql --set ON_ERROR_STOP=1 -c 'select 1'",
    "mysql --default-character-set=utf8mb4 -e 'select * from t'", "psql -c \"select 'copy', 'delete'\"",
    "psql -c 'select 1 -- delete from t'", "psql <<EOF\nSELECT count(*) FROM users;\nEOF",
    "psql -c \"COPY t TO STDOUT\"", "sqlite3 app.db '.tables'", "sqlite3 app.db 'select * from t'",
    "redis-cli GET k", "redis-cli --scan", "mongosh --eval 'db.users.find()'",
    "psql -c 'SET search_path TO app; SELECT 1'",
    "kubectl rollout status deploy/web", "kubectl rollout history deploy/web", "kubectl get pods",
    "kubectl -n prod describe pod x", "kubectl logs web-1",
    "aws s3 cp s3://bucket/x ./x", "aws s3 ls s3://bucket", "aws s3 sync s3://bucket ./local",
    "aws ec2 describe-instances",
    "npm publish --dry-run", "helm install web ./chart --dry-run", "kubectl run x --image=y --dry-run=client",
    "cargo publish --dry-run", "npm version", "npm version --json",
    "npm test", "npm run build", "npm ci", "pnpm install", "cargo build", "make test", "make -C infra build",
    "python -m pytest -q", "echo 'curl -X POST %s'" % U, "grep -rn 'npm publish' .", "cat deploy.sh",
    "printf 'gh release create v1'", "git log --grep release", "./check_release.sh",
    "bash check_release.sh", "source ./env.sh", "ls deploy/", "echo deploy",
]

SCRIPTS = {
    "deploy.sh": "#!/bin/sh\nset -e\ncurl -X POST %s\n" % U,
    "check_release.sh": "#!/bin/sh\necho 'release checks ok'\n",
    "env.sh": "export A=1\n",
}


@pytest.fixture(scope="module", autouse=True)
def _tree_sitter():
    if shell.parser() is None:
        pytest.fail("tree-sitter cannot be imported here (%s): pip install -e '.[dev]' brings it" % shell.PROBLEM)


@pytest.fixture
def cwd(tmp_path):
    for name, text in SCRIPTS.items():
        (tmp_path / name).write_text(text)
        os.chmod(tmp_path / name, 0o755)
    return str(tmp_path)


def test_the_tables_hold_what_the_issue_names():
    assert len(HARMFUL) >= 100 and len(HARMLESS) >= 60
    assert len({c for c, _ in HARMFUL}) == len(HARMFUL) and len(set(HARMLESS)) == len(HARMLESS)


@pytest.mark.parametrize("command, kind", HARMFUL, ids=[c[:60] for c, _ in HARMFUL])
def test_a_harmful_form_is_recognised(command, kind, cwd):
    found = classify.classify(command, {"cwd": cwd})
    assert found and kind in [e["kind"] for e in found], (command, found)
    assert all(e["harm"] for e in found)


@pytest.mark.parametrize("command", HARMLESS, ids=[c[:60] for c in HARMLESS])
def test_a_harmless_form_is_let_through(command, cwd):
    assert classify.classify(command, {"cwd": cwd}) == [], command


@pytest.mark.parametrize("command, kind", HARMFUL, ids=[c[:60] for c, _ in HARMFUL])
def test_the_per_tool_call_pre_filter_lets_every_harmful_form_through(command, kind):
    """The standard-library pre-filter on every tool call only sends calls on: it must send each of these."""
    fx = {"hold": True, "words": []}
    assert card.may_have_effect({"fx": fx}, "Bash", {"command": command}), command


def test_the_local_exemption_reads_the_urls_host_not_a_word_after_it():
    for url in ("https://api.example.com?notify=ops@localhost", "https://api.example.com#@127.0.0.1",
                "https://api.example.com/@localhost", "https://localhost.evil.example/x",
                "https://127.0.0.1.nip.io/x"):
        found = classify.classify("curl -X POST '%s'" % url, {"local_exempt": True})
        assert found, url
    for url in ("http://localhost:3000/x", "http://user:pw@127.0.0.1/x", "http://[::1]:8080/x", "localhost:9/x"):
        assert classify.classify("curl -X POST '%s'" % url, {"local_exempt": True}) == [], url
        assert classify.classify("curl -X POST '%s'" % url, {"local_exempt": False}), url


def test_the_same_effect_nested_or_wrapped_has_the_same_identity():
    from cc_continuity.holds import effects

    plain = effects.key(classify.classify("curl -X POST -d a=1 %s" % U), None)
    for form in ("for i in 1; do curl -X POST -d a=1 %s; done" % U, "nice -n 10 curl -X POST -d a=1 %s" % U,
                 "sudo -u deploy curl -sXPOST -d a=1 %s" % U, "eval \"curl -X POST -d a=1 %s\"" % U):
        assert effects.key(classify.classify(form), None) == plain, form
