"""project: root discovery, slug/key, the session counter under concurrency, id links."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from cc_continuity import paths, project
from cc_continuity.project import Project, find_root, project_key, slugify, valid_session_id


def test_find_root_from_subdir_of_git_repo(git_repo):
    sub = git_repo / "src" / "deep"
    sub.mkdir(parents=True)
    assert find_root(str(sub)) == str(git_repo)
    assert find_root(str(git_repo)) == str(git_repo)


def test_find_root_resolves_symlinks(git_repo, tmp_path):
    link = tmp_path / "via-link"
    os.symlink(git_repo, link)
    (git_repo / "sub").mkdir()
    assert find_root(str(link / "sub")) == str(git_repo)


def test_find_root_with_dot_git_file(tmp_path, git_repo):
    """Worktrees and submodules have a ``.git`` *file* pointing at the real git dir."""
    wt = tmp_path / "worktree"
    subprocess.run(["git", "worktree", "add", "-q", "-b", "wt", str(wt)], cwd=git_repo, check=True,
                   capture_output=True)
    assert (wt / ".git").is_file()
    (wt / "a" / "b").mkdir(parents=True)
    assert find_root(str(wt / "a" / "b")) == str(wt)
    assert project_key(str(wt)) != project_key(str(git_repo))


def test_find_root_outside_git_is_start_dir(tmp_path):
    d = tmp_path / "plain" / "dir"
    d.mkdir(parents=True)
    assert find_root(str(d)) == str(d)


@pytest.mark.parametrize("root,slug", [
    ("/home/me/src/MyProj", "myproj"),
    ("/home/me/src/my proj", "my-proj"),
    ("/home/me/src/My  Big -- Proj", "my-big-proj"),
    ("/home/me/src/.dotfiles", "dotfiles"),
    ("/home/me/src/..hidden..", "hidden"),
    ("/home/me/src/caf\u00e9-\u65e5\u672c", "caf"),
    ("/home/me/src/\u65e5\u672c\u8a9e", "project"),
    ("/", "project"),
    ("", "project"),
    ("/x/proj/", "proj"),
    ("/x/a_b-c.d", "a_b-c-d"),
    ("/x/" + "a" * 60, "a" * 40),
    ("/x/" + "a" * 39 + "-b", "a" * 39),
])
def test_slug_edge_cases(root, slug):
    assert slugify(root) == slug
    s = slugify(root)
    assert s and len(s) <= 40 and set(s) <= set("abcdefghijklmnopqrstuvwxyz0123456789-_")
    assert not s.startswith(("-", "_")) and not s.endswith(("-", "_"))


def test_key_stable_and_distinct():
    a = project_key("/home/me/src/app")
    assert a == project_key("/home/me/src/app")
    assert a.startswith("app-")
    assert project_key("/home/you/src/app") != a  # same slug, different root
    assert project_key("/home/me/src/App") != a
    assert project_key("/home/me/src/caf\udce9") != project_key("/home/me/src/caf\u00e9")  # undecodable bytes ok


def test_discover_and_layout(git_repo):
    p = Project.discover(str(git_repo / "."))
    assert p.root == str(git_repo)
    assert p.slug == "repo"
    assert p.dir == os.path.join(paths.home(), "projects", p.key)
    assert p.session_name(7) == "repo-007"
    assert p.session_dir(12) == os.path.join(p.dir, "sessions", "012")
    assert p.peek_next_number() == 1
    assert not os.path.exists(p.dir), "discovery must not create state"


def test_allocate_number_and_recovery(tmp_path):
    p = Project(str(tmp_path / "proj"))
    with p.lock():
        assert [p.allocate_number() for _ in range(3)] == [1, 2, 3]
    assert p.peek_next_number() == 4
    assert p.numbers() == [1, 2, 3]
    with open(p.meta_path) as f:
        meta = json.load(f)
    assert meta["counter"] == 3 and meta["root"] == p.root and meta["key"] == p.key
    assert oct(os.stat(p.session_dir(1)).st_mode & 0o777) == oct(0o700)
    # project.json lost or corrupt: the counter comes back from the session dirs
    os.unlink(p.meta_path)
    assert p.peek_next_number() == 4
    with open(p.meta_path, "w") as f:
        f.write("{torn")
    with p.lock():
        assert p.allocate_number() == 4
    # a counter ahead of the dirs (a session dir removed) is never reused
    with open(p.meta_path, "w") as f:
        json.dump({"root": p.root, "slug": p.slug, "key": p.key, "counter": 9}, f)
    with p.lock():
        assert p.allocate_number() == 10


def test_every_state_dir_is_0700(tmp_path):
    p = Project(str(tmp_path / "proj"))
    with p.lock():
        p.allocate_number()
    for d in (paths.home(), paths.projects_dir(), p.dir, os.path.join(p.dir, "sessions"), p.session_dir(1)):
        assert oct(os.stat(d).st_mode & 0o777) == oct(0o700), d


def test_counter_is_monotonic_under_concurrent_processes(tmp_path):
    """20 processes released at once, each allocating 3 numbers under the project lock."""
    root = str(tmp_path / "proj")
    go = str(tmp_path / "go")
    code = textwrap.dedent("""
        import os, sys, time
        from cc_continuity.project import Project
        p = Project(sys.argv[1])
        print("ready", flush=True)
        while not os.path.exists(sys.argv[2]):
            time.sleep(0.002)
        for _ in range(3):
            with p.lock(timeout=60):
                n = p.allocate_number()
            print(n, flush=True)
    """)
    procs = [subprocess.Popen([sys.executable, "-c", code, root, go], stdout=subprocess.PIPE, text=True)
             for _ in range(20)]
    for proc in procs:
        assert proc.stdout.readline() == "ready\n"
    open(go, "w").close()
    got = []
    for proc in procs:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0
        got += [int(x) for x in out.split()]
    assert sorted(got) == list(range(1, 61)), "duplicate or skipped session numbers: %s" % sorted(got)
    assert Project(root).numbers() == list(range(1, 61))
    assert Project(root).peek_next_number() == 61


def test_lookup_and_link(tmp_path):
    p = Project(str(tmp_path / "proj"))
    with p.lock():
        a, b = p.allocate_number(), p.allocate_number()
    sid = "f1695fac-1b2c-4d5e-8f90-123456789abc"
    assert p.lookup(sid) is None
    p.link(sid, a)
    assert p.lookup(sid) == a
    assert os.readlink(p.ids_path(sid)) == "../sessions/001"
    assert os.path.realpath(p.ids_path(sid)) == p.session_dir(a)
    p.link(sid, b)  # re-linking replaces
    assert p.lookup(sid) == b
    assert [n for n in os.listdir(os.path.join(p.dir, "ids")) if ".tmp" in n] == []
    assert p.lookup("../../etc") is None
    assert p.lookup(None) is None


@pytest.mark.parametrize("sid", ["../x", "a/b", "", "..", ".", "a b", "x\x00y", "caf\u00e9", "a" * 129, None, 5,
                                 ["x"], "/abs", "a\\b", "a\nb"])
def test_valid_session_id_rejects(sid):
    assert not valid_session_id(sid)


@pytest.mark.parametrize("sid", ["f1695fac-1b2c-4d5e-8f90-123456789abc", "abc", "A_b-9", "a" * 128])
def test_valid_session_id_accepts(sid):
    assert valid_session_id(sid)


def test_launch_dir_prefers_claude_project_dir(tmp_path):
    payload = {"cwd": "/somewhere/after/cd", "workspace": {"project_dir": "/ws"}}
    assert project.launch_dir(payload, {"CLAUDE_PROJECT_DIR": "/proj"}) == "/proj"
    # the status line's workspace.project_dir is the launch dir; cwd follows `cd`
    assert project.launch_dir(payload, {}) == "/ws"
    assert project.launch_dir({"cwd": "/somewhere/after/cd"}, {}) == "/somewhere/after/cd"
    assert project.launch_dir({"cwd": 5, "workspace": {"project_dir": "/ws"}}, {}) == "/ws"
    assert project.launch_dir({"cwd": {"a": 1}}, {}) == os.getcwd()


def test_all_projects_lists_only_consistent_ones(tmp_path):
    a = Project(str(tmp_path / "a"))
    b = Project(str(tmp_path / "b"))
    for p in (a, b):
        with p.lock():
            p.allocate_number()
    os.makedirs(os.path.join(paths.projects_dir(), "junk-dir"))
    assert [p.key for p in project.all_projects()] == sorted([a.key, b.key])
