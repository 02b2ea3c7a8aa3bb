"""Paired ratios, the one way every benchmark here reports a figure.

A and B run alternately (A, B, A, B, ...), so a drift in the machine's speed
(another job starting, a CPU clock change) hits both sides alike; the figure is
the median of the per-pair ratios, with its spread and the load it ran under.
"""

import os
import statistics
import time


def summary(a, b):
    """The figure for timings ``a`` and ``b`` (seconds, paired by index)."""
    r = [x / y for x, y in zip(a, b)]
    return {"a_ms": round(statistics.median(a) * 1000, 2), "b_ms": round(statistics.median(b) * 1000, 2),
            "ratio": round(statistics.median(r), 3), "min": round(min(r), 3), "max": round(max(r), 3),
            "runs": len(r), "load": load()}


def load():
    """The 1-minute load average, reported beside every figure."""
    return "%.2f" % os.getloadavg()[0]


def timed(fn):
    """(seconds, result) of one call."""
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def alternate(run_a, run_b, runs, warmup=0):
    """Call ``run_a`` and ``run_b`` alternately; the :func:`summary` of their times."""
    for _ in range(warmup):
        run_a()
        run_b()
    ta, tb = [], []
    for _ in range(runs):
        ta.append(timed(run_a)[0])
        tb.append(timed(run_b)[0])
    return summary(ta, tb)
