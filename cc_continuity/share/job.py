"""The share's detached jobs (the publish, the lease renewal): started fully detached, behind the session."""

import os
import subprocess
import sys

from .. import paths, procs

TYPE_CHECKING = False  # mypy takes this name as true; at run time typing is not imported
if TYPE_CHECKING:

    pass


JOB_NICE = 10  # a job started by start_job yields the CPU to the session it serves (as the turn snapshot does)


def start_job(module: str, arg: str) -> int:
    """Start ``python -m <module> <arg>`` fully detached (own session, stdin from /dev/null, output to the
    share log): the publish job here, the lease renewal (lease.start).  Its main calls :func:`behind_the_session`."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(x for x in (paths.package_parent(), env.get("PYTHONPATH", "")) if x)
    log = paths.logs_dir() + "/share.log"
    paths.ensure_dir(os.path.dirname(log))
    out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, paths.FILE_MODE)
    try:
        proc = subprocess.Popen([sys.executable, "-S", "-m", module, arg],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=out, cwd="/", env=env,
                                start_new_session=True, close_fds=True)
    finally:
        os.close(out)
    return proc.pid


def behind_the_session() -> None:
    """Lower this job's priority: it starts while the successor starts, and must not slow it down."""
    procs.yield_cpu(JOB_NICE)
