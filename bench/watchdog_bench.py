"""Watchdog benchmark: memory and CPU stay flat over 10 000 cycles (issue 6).

Runs the real daemon cycle -- HTTP probe of a local model-server stand-in
(health + metrics), scan of 50 registered sessions (state files, incremental
ledger reads, psutil identity checks of 10 live stand-in ``claude``
processes), transcript growth through the watchdog package's inotify
Observer, planning, ledger and state writes -- back to back, while the
sessions keep writing: every cycle one ledger line and one transcript line,
every 50 cycles a turn starts or ends somewhere.

Reports RSS (current and peak) at cycle 1 000 and at the end, their growth,
and CPU time per cycle (process user+system, all threads) over cycles
1 000..end.  Goal: < 5 % RSS growth.

Usage: python bench/watchdog_bench.py [--cycles 10000] [--sessions 50] [--live 10] [--json]
Everything lives in a temporary CC_CONTINUITY_HOME that is removed afterwards.
"""

import argparse
import http.server
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def serve(port_file):
    """Child-process mode: the model-server stand-in (kept out of the measured process)."""
    state = {"tokens": 0}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            state["tokens"] += 5
            body = ("vllm:iteration_tokens_total_count %d\nvllm:num_requests_running 1\n" % state["tokens"]
                    if self.path.startswith("/metrics") else "").encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(httpd.server_address[1]))
    os.replace(port_file + ".tmp", port_file)
    httpd.serve_forever()


class Server:
    """/health 200 and a vLLM-like metrics page whose token counter always moves (a child process)."""

    def __init__(self, tmp):
        port_file = os.path.join(tmp, "port")
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve", port_file])
        deadline = time.monotonic() + 10
        while not os.path.exists(port_file):
            if time.monotonic() > deadline:
                raise RuntimeError("model-server stand-in did not start")
            time.sleep(0.02)
        with open(port_file) as f:
            self.base = "http://127.0.0.1:%s" % f.read().strip()

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def spawn_claude(bindir):
    script = os.path.join(bindir, "claude")
    if not os.path.exists(script):
        with open(script, "w") as f:
            f.write("#!%s\nimport time\ntime.sleep(100000)\n" % sys.executable)
        os.chmod(script, 0o755)
    return subprocess.Popen([script], stdin=subprocess.DEVNULL, start_new_session=True)


def make_sessions(root, n_sessions, live_pids, dead_pid):
    """``n_sessions`` registered sessions over 5 projects; returns [(ledger, transcript)]."""
    from cc_continuity import ledger, session
    from cc_continuity.project import Project

    out = []
    per = max(1, n_sessions // 5)
    made = 0
    p = 0
    while made < n_sessions:
        proj_root = os.path.join(root, "src", "proj%d" % p)
        os.makedirs(os.path.join(proj_root, ".git"))
        proj = Project(proj_root)
        tdir = os.path.join(root, "claude", "projects", "-src-proj%d" % p)
        os.makedirs(tdir)
        for _ in range(min(per, n_sessions - made)):
            n = proj.allocate_number()
            sdir = proj.session_dir(n)
            stride = max(1, n_sessions // max(1, len(live_pids)))
            live = made % stride == 0 and made // stride < len(live_pids)   # spread over the projects
            transcript = os.path.join(tdir, "s%03d.jsonl" % n)
            with open(transcript, "w") as f:
                f.write('{"type":"user"}\n')
            rec = session.new_record(n, proj.session_name(n), "sid-%d-%d" % (p, n),
                                     pid=live_pids[made // stride] if live else dead_pid, transcript=transcript,
                                     tmux_socket=None, tmux_pane=None)
            rec["created"] = time.time() + 1   # registered after the process started
            session.save(sdir, rec)
            led = session.ledger_path(sdir)
            ledger.append(led, {"ev": "session_start", "source": "startup"})
            ledger.append(led, {"ev": "prompt", "text": "go"})
            if made % 3:
                ledger.append(led, {"ev": "stop"})
            out.append((led, transcript, live))
            made += 1
        p += 1
    return out


def rss():
    import psutil

    return psutil.Process().memory_info().rss


def peak_rss():
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r if sys.platform == "darwin" else r * 1024


def cpu():
    t = os.times()
    return t.user + t.system


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cycles", type=int, default=10000)
    ap.add_argument("--sessions", type=int, default=50)
    ap.add_argument("--live", type=int, default=10, help="sessions backed by a live stand-in claude process")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--serve", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.serve:
        return serve(args.serve)
    checkpoint = min(1000, args.cycles)

    tmp = tempfile.mkdtemp(prefix="cc-wd-bench-")
    os.environ["HOME"] = tmp
    os.environ["CC_CONTINUITY_HOME"] = os.path.join(tmp, "cchome")
    bindir = os.path.join(tmp, "bin")
    os.makedirs(bindir)
    procs = [spawn_claude(bindir) for _ in range(args.live)]
    dead = subprocess.Popen(["true"])
    dead.wait()
    server = Server(tmp)
    rng = random.Random(6)
    try:
        time.sleep(0.2)
        sessions = make_sessions(tmp, args.sessions, [p.pid for p in procs], dead.pid)
        from cc_continuity import ledger
        from cc_continuity.watch import Settings
        from cc_continuity.watch.daemon import Daemon

        settings = Settings(health_url=server.base + "/health", progress_url=server.base + "/metrics",
                            probe_timeout=2, interval=0.001, grace=5, stall=30, exit_hang=5, backoff=1)
        pushes = []
        daemon = Daemon(settings, push_fn=lambda *a, **k: pushes.append(a[0]) or True)
        daemon.transcripts.start()
        live = [s for s in sessions if s[2]]
        marks = {}
        t_start = time.perf_counter()
        for i in range(1, args.cycles + 1):
            led, transcript, _ = live[i % len(live)]
            ledger.append(led, {"ev": "tool", "tool": "Bash"})
            with open(transcript, "a") as f:
                f.write('{"type":"assistant","n":%d}\n' % i)
            if i % 50 == 0:
                led2 = rng.choice(sessions)[0]
                ledger.append(led2, {"ev": rng.choice(["prompt", "stop"])})
            daemon.cycle()
            if i == checkpoint:
                marks["first"] = {"cycle": i, "rss": rss(), "peak": peak_rss(), "cpu": cpu(),
                                  "wall": time.perf_counter() - t_start}
        marks["last"] = {"cycle": args.cycles, "rss": rss(), "peak": peak_rss(), "cpu": cpu(),
                         "wall": time.perf_counter() - t_start}
        watched = len(daemon.transcripts.watched_dirs)
        daemon.transcripts.stop()
        a, b = marks["first"], marks["last"]
        span = max(1, b["cycle"] - a["cycle"])
        result = {
            "cycles": args.cycles, "sessions": args.sessions, "live_processes": args.live,
            "rss_mb_at_1000": round(a["rss"] / 2**20, 2), "rss_mb_at_end": round(b["rss"] / 2**20, 2),
            "rss_growth_pct": round(100.0 * (b["rss"] - a["rss"]) / a["rss"], 2),
            "peak_rss_mb_at_1000": round(a["peak"] / 2**20, 2), "peak_rss_mb_at_end": round(b["peak"] / 2**20, 2),
            "peak_rss_growth_pct": round(100.0 * (b["peak"] - a["peak"]) / a["peak"], 2),
            "cpu_ms_per_cycle": round(1000.0 * (b["cpu"] - a["cpu"]) / span, 3),
            "wall_ms_per_cycle": round(1000.0 * (b["wall"] - a["wall"]) / span, 3),
            "watched_dirs": watched, "pushes": len(pushes),
            "ledger_ok": ledger.verify(daemon._ledger)[0],
        }
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            print("watchdog bench: %(cycles)d cycles, %(sessions)d sessions (%(live_processes)d live)" % result)
            print("  RSS       at 1000: %(rss_mb_at_1000).2f MB   at end: %(rss_mb_at_end).2f MB   "
                  "growth %(rss_growth_pct).2f%%" % result)
            print("  peak RSS  at 1000: %(peak_rss_mb_at_1000).2f MB   at end: %(peak_rss_mb_at_end).2f MB   "
                  "growth %(peak_rss_growth_pct).2f%%" % result)
            print("  CPU per cycle: %(cpu_ms_per_cycle).3f ms   wall per cycle: %(wall_ms_per_cycle).3f ms" % result)
            print("  goal < 5%% RSS growth: %s" % ("met" if result["peak_rss_growth_pct"] < 5 else "MISSED"))
        return 0 if result["peak_rss_growth_pct"] < 5 else 1
    finally:
        server.stop()
        for p in procs:
            p.kill()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
