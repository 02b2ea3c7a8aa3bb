"""``cc-continuity recall [--json] [--corpus DIR]``: what share of the facts a successor needs it was told.

Without ``--corpus``: every rotation of this project, scored on the machine facts its
ledger and snapshot hold (the user's prompts, the open todos, the changed files, the last
failing command) against the first context its successor was given.  With ``--corpus``:
recorded rotations, one folder each holding ``first-request.txt`` (what the successor was
given) and ``facts.json`` (``{"machine": [...], "model": [...]}``, each fact
``{"kind", "text", "needles": [...]}``), scored on both kinds (``recall.py``).
"""

import json
import os

from .. import errors, session
from ..rotation import recall
from ._util import current_project, print_json


CorpusError = errors.CorpusError  # (defined with every error class, in errors.py)


def register(sub):
    p = sub.add_parser("recall")
    p.add_argument("--corpus", metavar="DIR", help="score recorded rotations (DIR/<case>/facts.json + "
                                                     "first-request.txt) instead of this project's")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def project_rows(proj):
    rows = []
    for n in proj.numbers():
        sdir = proj.session_dir(n)
        try:
            rec = session.load(sdir)
        except (OSError, ValueError):
            continue
        cid = (rec.get("checkpoint") or {}).get("id")
        if not cid or not rec.get("successor"):
            continue
        got = recall.of_checkpoint(sdir, cid)
        if got is not None:
            rows.append({"name": rec.get("name"), "checkpoint": cid, "successor": rec.get("successor"),
                         "machine": got})
    return rows


def _read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(1 << 22)
    except OSError as e:
        raise CorpusError(path, e.strerror or str(e)) from None


def corpus_rows(root):
    try:
        names = sorted(n for n in os.listdir(root) if os.path.isdir(os.path.join(root, n)))
    except OSError as e:
        raise CorpusError(root, e.strerror or str(e)) from None
    rows = []
    for name in names:
        case = os.path.join(root, name)
        facts_path = os.path.join(case, "facts.json")
        raw = _read(facts_path)  # outside the try below: its CorpusError is a ValueError too
        try:
            facts = json.loads(raw)
        except ValueError as e:
            raise CorpusError(facts_path, "not valid JSON: %s" % e) from None
        if not isinstance(facts, dict) or not all(isinstance(facts.get(k, []), list) for k in ("machine", "model")):
            raise CorpusError(facts_path, "wants {\"machine\": [...], \"model\": [...]}")
        text = _read(os.path.join(case, "first-request.txt"))
        rows.append({"name": name, "machine": recall.score(facts.get("machine", []), text),
                     "model": recall.score(facts.get("model", []), text), "handoff": facts.get("handoff")})
    return rows


def totals(rows, kind):
    hit = sum(r[kind]["present"] for r in rows if r.get(kind))
    total = sum(r[kind]["facts"] for r in rows if r.get(kind))
    return {"facts": total, "present": hit, "percent": recall.percent(hit, total)}


def _fmt(s):
    return "%s/%s (%s)" % (s["present"], s["facts"], "-" if s["percent"] is None else "%.1f%%" % s["percent"])


def run(args):
    if args.corpus:
        rows = corpus_rows(args.corpus)
        kinds, where = ("machine", "model"), args.corpus
    else:
        proj = current_project()
        rows = project_rows(proj)
        kinds, where = ("machine",), proj.root
    summary = {k: totals(rows, k) for k in kinds}
    if args.json:
        print_json({"source": where, "rotations": rows, "totals": summary})
        return 0
    print("%s: %d rotation%s; %s" % (where, len(rows), "" if len(rows) == 1 else "s",
                                     "; ".join("%s facts %s" % (k, _fmt(summary[k])) for k in kinds)))
    for r in rows:
        print("  %-32s %s" % (r["name"] if args.corpus else "%s %s" % (r["name"], r["checkpoint"]),
                              "  ".join("%s %s" % (k, _fmt(r[k])) for k in kinds)))
        for k in kinds:
            for m in r[k]["missing"][:5]:
                print("      missing %s %s: %s" % (k, m["kind"], m["text"][:100]))
    return 0
