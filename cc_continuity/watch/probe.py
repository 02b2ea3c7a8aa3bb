"""Is the model server alive?  HTTP probes and the UP / DEGRADED / DOWN machine.

A 200 from ``/health`` is not proof of life: vLLM answers it while its engine
is dead or hung (field notes §3.9).  So besides the health URL there is an
optional *progress* probe, either

* a Prometheus metrics URL whose counter (``vllm:iteration_tokens_total``) must
  advance while the server has work -- work meaning ``vllm:num_requests_running``
  > 0, or, when the server does not export that gauge, some session mid-turn; or
* a completions URL (path ending in ``/completions`` or ``/messages``) asked for
  one token.

One failed probe makes the server DEGRADED; ``fail_threshold`` failures in a
row make it DOWN (a 10 s deadline and 3 failures gave zero false restarts in
production where a 2 s deadline gave eight a day).  The first success is UP
again and closes the outage, whose start and end go into the nudge text.

:class:`ServerState` and :class:`ProgressJudge` are pure (they take times and
results); only :class:`Prober` touches the network, through ``requests``
imported lazily.
"""

import json
import time
from dataclasses import asdict, dataclass

UP = "UP"
DEGRADED = "DEGRADED"
DOWN = "DOWN"
UNKNOWN = "UNKNOWN"

BUSY_METRIC = "vllm:num_requests_running"
MAX_OUTAGES = 16
_BODY_LIMIT = 4 * 1024 * 1024  # a metrics page larger than this is not a metrics page


@dataclass
class ProbeResult:
    at: float
    ok: bool
    ms: int
    health: str = None     # "HTTP 200", "timeout after 10s", "refused", None = not probed
    progress: str = None   # "+12", "stuck at 41 for 130s while busy", "1 token", None

    @property
    def detail(self):
        return "; ".join("%s %s" % (k, v) for k, v in (("health", self.health), ("progress", self.progress)) if v)

    def to_json(self):
        return asdict(self)


# -- metrics -------------------------------------------------------------------

def parse_metric(text, name):
    """The sum over all label sets of ``name`` in a Prometheus text page, or None.

    Falls back to ``name_count`` and ``name_total``: vLLM exports
    ``iteration_tokens_total`` as a histogram, whose ``_count`` is the heartbeat.
    """
    for candidate in (name, name + "_count", name + "_total"):
        total = None
        for line in text.splitlines():
            if not line.startswith(candidate) or line.startswith("#"):
                continue
            rest = line[len(candidate):]
            if rest[:1] not in ("{", " ", "\t"):
                continue  # a longer name sharing the prefix
            if rest.startswith("{"):
                end = rest.find("}")
                if end < 0:
                    continue
                rest = rest[end + 1:]
            parts = rest.split()
            if not parts:
                continue
            try:
                value = float(parts[0])
            except ValueError:
                continue
            total = value if total is None else total + value
        if total is not None:
            return total
    return None


class ProgressJudge:
    """A counter must move while the server has work; standing still is fine when idle.

    The clock starts when work starts (or the counter last moved), so a server
    idle all night is not "stuck" the moment a request arrives.
    """

    def __init__(self):
        self.value = None
        self.moved_at = None

    def judge(self, value, busy, now, grace):
        """``(ok, detail)`` for one reading of the counter."""
        if value is None:
            return False, "metric missing"
        if self.value is None or value != self.value:
            delta = None if self.value is None else value - self.value
            self.value, self.moved_at = value, now
            return True, ("%+g" % delta) if delta is not None else "at %g" % value
        if not busy:
            self.moved_at = now
            return True, "idle at %g" % value
        still = now - self.moved_at
        if still >= grace:
            return False, "stuck at %g for %.0fs while busy" % (value, still)
        return True, "busy, still for %.0fs" % still


# -- the state machine -------------------------------------------------------

class ServerState:
    """UP / DEGRADED / DOWN from a stream of probe results, plus the outage history."""

    def __init__(self, fail_threshold=3):
        self.fail_threshold = max(1, int(fail_threshold))
        self.state = UNKNOWN
        self.since = None
        self.failures = 0
        self.failing_since = None
        self.outages = []     # [start, end or None], oldest first
        self.last = None      # the last ProbeResult as JSON

    def observe(self, result):
        """Feed one result; return ``(old, new)`` when the state changed, else None."""
        self.last = result.to_json()
        old = self.state
        if result.ok:
            self.failures = 0
            self.failing_since = None
            if old == DOWN and self.outages and self.outages[-1][1] is None:
                self.outages[-1][1] = result.at
            new = UP
        else:
            self.failures += 1
            if self.failing_since is None:
                self.failing_since = result.at
            if self.failures >= self.fail_threshold or old == DOWN:
                new = DOWN
                if old != DOWN:
                    self.outages.append([self.failing_since, None])
                    del self.outages[:-MAX_OUTAGES]
            else:
                new = DEGRADED
        if new == old:
            return None
        self.state, self.since = new, result.at
        return old, new

    def open_outage(self):
        return self.outages[-1] if self.outages and self.outages[-1][1] is None else None

    def last_outage(self):
        """The most recent finished outage ``[start, end]``, or None."""
        for o in reversed(self.outages):
            if o[1] is not None:
                return o
        return None

    def to_json(self):
        return {"state": self.state, "since": self.since, "failures": self.failures,
                "failing_since": self.failing_since, "outages": self.outages, "last": self.last}

    @classmethod
    def from_json(cls, doc, fail_threshold=3):
        s = cls(fail_threshold)
        if not isinstance(doc, dict):
            return s
        if doc.get("state") in (UP, DEGRADED, DOWN, UNKNOWN):
            s.state = doc["state"]
        s.since = _num(doc.get("since"))
        if s.since is None:
            s.state = UNKNOWN   # a state without its start time is no state
        s.failures = int(doc.get("failures") or 0) if isinstance(doc.get("failures"), int) else 0
        s.failing_since = _num(doc.get("failing_since"))
        outages = doc.get("outages")
        if isinstance(outages, list):
            s.outages = [[_num(o[0]), _num(o[1])] for o in outages[-MAX_OUTAGES:]
                         if isinstance(o, list) and len(o) == 2 and _num(o[0]) is not None]
        s.last = doc.get("last") if isinstance(doc.get("last"), dict) else None
        return s


def _num(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


# -- the network side ----------------------------------------------------------

def _is_completion(url):
    path = url.split("?", 1)[0].rstrip("/")
    return path.endswith("/completions") or path.endswith("/messages")


class Prober:
    """Runs the configured probes once per cycle; keeps only the progress counter."""

    def __init__(self, settings):
        self.settings = settings
        self.judge = ProgressJudge()
        self._session = None   # one requests.Session: keep-alive, so a probe is one round trip

    def close(self):
        if self._session is not None:
            self._session.close()
            self._session = None

    def probe(self, now=None, work_expected=False):
        """One :class:`ProbeResult` (never raises for a network problem)."""
        s = self.settings
        now = time.time() if now is None else now
        t0 = time.monotonic()
        health = progress = None
        ok = True
        if s.health_url:
            ok, health = self._health(s.health_url)
        if ok and s.progress_url:
            if _is_completion(s.progress_url):
                ok, progress = self._complete(s.progress_url)
            else:
                ok, progress = self._metrics(s.progress_url, now, work_expected)
        return ProbeResult(at=now, ok=ok, ms=int((time.monotonic() - t0) * 1000), health=health, progress=progress)

    def _call(self, method, url, **kw):
        """``(response or None, failure text)``."""
        # lazy: ~90 ms, and only the daemon's prober needs it: `status --all-projects` loads this module too
        import requests

        t = self.settings.probe_timeout
        if self._session is None:
            self._session = requests.Session()
        try:
            r = self._session.request(method, url, timeout=(t, t), allow_redirects=False, stream=True, **kw)
        except requests.Timeout:
            return None, "timeout after %gs" % t
        except requests.ConnectionError as e:
            return None, "refused" if "refused" in str(e).lower() else "no connection"
        except (requests.RequestException, ValueError) as e:
            return None, "error (%s)" % type(e).__name__
        return r, None

    def _read(self, r):
        import requests  # lazy: optional (see _call)

        try:
            body = r.raw.read(_BODY_LIMIT + 1, decode_content=True)
        except (requests.RequestException, OSError, ValueError) as e:
            return None, "body: %s" % type(e).__name__
        finally:
            r.close()
        if len(body) > _BODY_LIMIT:
            return None, "body too large"
        return body, None

    def _health(self, url):
        r, why = self._call("GET", url)
        if r is None:
            return False, why
        status = r.status_code
        r.close()
        return 200 <= status < 300, "HTTP %d" % status

    def _metrics(self, url, now, work_expected):
        r, why = self._call("GET", url)
        if r is None:
            return False, why
        if not 200 <= r.status_code < 300:
            r.close()
            return False, "HTTP %d" % r.status_code
        body, why = self._read(r)
        if body is None:
            return False, why
        text = body.decode("utf-8", "replace")
        value = parse_metric(text, self.settings.progress_metric or "vllm:iteration_tokens_total")
        running = parse_metric(text, BUSY_METRIC)
        busy = running > 0 if running is not None else bool(work_expected)
        return self.judge.judge(value, busy, now, self.settings.grace)

    def _complete(self, url):
        path = url.split("?", 1)[0].rstrip("/")
        body = {"max_tokens": 1}
        if path.endswith("/completions") and not path.endswith("/chat/completions"):
            body["prompt"] = "ping"
        else:
            body["messages"] = [{"role": "user", "content": "ping"}]
        if self.settings.progress_model:
            body["model"] = self.settings.progress_model
        r, why = self._call("POST", url, json=body)
        if r is None:
            return False, why
        status = r.status_code
        raw, why = self._read(r)
        if raw is None:
            return False, why
        if not 200 <= status < 300:
            return False, "HTTP %d" % status
        try:
            doc = json.loads(raw)
        except ValueError:
            return False, "not JSON"
        if isinstance(doc, dict) and (doc.get("choices") or doc.get("content")):
            return True, "1 token"
        return False, "no completion in the answer"
