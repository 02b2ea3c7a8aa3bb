"""The house in figures (issue 35): what the package's shape costs a reader, before and after a move.

    python bench/house.py [--root DIR] [--json]

Package files and lines, root modules, modules of 500 lines or more (and the largest), functions of
50 lines or more, function-local imports.  ``duplicates`` pairs are the library tool's own figure:
run ``duplicates --repo cc_continuity --most 200`` and ``duplicates --repo tests --most 200``.
"""

import argparse
import ast
import json
import os
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def modules(package):
    for dirpath, dirnames, filenames in os.walk(package):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py"):
                yield os.path.join(dirpath, name)


def local_imports(tree):
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    count += 1
    return count


def functions(tree):
    """(qualified name, lines) of every function in ``tree``, methods and nested ones included."""
    out = []

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                out.append((name, child.end_lineno - child.lineno + 1))
                walk(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                walk(child, prefix + child.name + ".")
            else:
                walk(child, prefix)

    walk(tree, "")
    return out


def measure(root):
    package = os.path.join(root, "cc_continuity")
    files = lines = local = 0
    big, funcs, roots = [], [], 0
    for path in modules(package):
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        n = text.count("\n")
        files, lines = files + 1, lines + n
        if os.path.dirname(path) == package:
            roots += 1
        if n >= 500:
            big.append((rel, n))
        tree = ast.parse(text, rel)
        local += local_imports(tree)
        funcs += [("%s:%s" % (rel, name), k) for name, k in functions(tree) if k >= 50]
    big.sort(key=lambda x: -x[1])
    funcs.sort(key=lambda x: -x[1])
    return {"files": files, "lines": lines, "root_modules": roots, "modules_500": len(big),
            "largest": big[:5], "functions_50": len(funcs), "longest": funcs[:5],
            "function_local_imports": local}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=HERE)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    got = measure(args.root)
    if args.json:
        print(json.dumps(got, indent=1))
        return 0
    print("package: %(files)d files, %(lines)d lines; %(root_modules)d root modules" % got)
    print("modules >= 500 lines: %d; largest: %s" % (got["modules_500"], ", ".join(
        "%s %d" % m for m in got["largest"])))
    print("functions >= 50 lines: %d; longest: %s" % (got["functions_50"], ", ".join(
        "%s %d" % f for f in got["longest"])))
    print("function-local imports: %d" % got["function_local_imports"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
