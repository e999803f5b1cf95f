#!/usr/bin/env python3
"""Finds module circles in the workspace's crates: a module A that uses B while B uses A.

For every crate under crates/ and every target of it (the library, the binaries, the
integration-test crates under tests/), the module tree is read the way rustc reads it: from the
crate root along `mod name;` declarations (`foo.rs` + `foo/`, or `foo/mod.rs`) and inline
`mod name { … }` blocks. In each file, comments (doc comments included), string, byte-string,
raw-string and char literals are skipped, so a doc link [`crate::x`] is not a dependency. A
dependency is a path that names a module of the same crate:

  * `crate::a::…` anywhere in code (in `use` trees, expressions, types, macro calls);
  * `super::…` (resolved from the module the code is in, inline modules included) and `self::…`;
  * a name brought in by a `use` (`use crate::a; … a::f()`), and items reached through a
    re-export (`use crate::Error` where the root has `pub use error::Error` leads to `error`).

Code in `#[cfg(test)]` modules counts: a test module is part of its module.

By default the graph is between top-level modules (everything under `registry/` is `registry`);
`--nested` also checks the children of every module among themselves. A child using its parent
(or the root) is not a circle: the parent declares the child, and `use super::*` is the usual
way of reaching it.

Prints the circles per crate and target, each with the first place every edge of it is made,
and exits 1 if there is any. Usage: scripts/module-cycles.py [--nested] [CRATE…]
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRATES = os.path.join(ROOT, "crates")
# Crates outside crates/: the desktop shell.
EXTRA = {"src-tauri": os.path.join(ROOT, "src-tauri")}


def crate_dir(crate: str) -> str:
    return EXTRA.get(crate, os.path.join(CRATES, crate))

KEYWORDS_BEFORE_PATH = {"pub", "crate", "in"}


@dataclass
class Tok:
    kind: str  # "id", "punct"
    text: str
    line: int


def tokenize(src: str) -> list[Tok]:
    """Identifiers and punctuation of Rust source; comments and literals are dropped."""
    toks: list[Tok] = []
    i, n, line = 0, len(src), 1

    def skip_string(j: int, raw_hashes: int | None) -> int:
        """`j` is just past the opening quote; returns the index past the closing one."""
        nonlocal line
        while j < n:
            c = src[j]
            if c == "\n":
                line += 1
            if raw_hashes is None:
                if c == "\\":
                    if j + 1 < n and src[j + 1] == "\n":
                        line += 1
                    j += 2
                    continue
                if c == '"':
                    return j + 1
            elif c == '"' and src[j + 1 : j + 1 + raw_hashes] == "#" * raw_hashes:
                return j + 1 + raw_hashes
            j += 1
        return j

    while i < n:
        c = src[i]
        if c == "\n":
            line += 1
            i += 1
        elif c.isspace():
            i += 1
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    if src[j] == "\n":
                        line += 1
                    j += 1
            i = j
        elif c == '"':
            i = skip_string(i + 1, None)
        elif c in "rbc" and _raw_or_byte_string(src, i):
            j = i
            while src[j] in "rbc":
                j += 1
            hashes = 0
            while src[j] == "#":
                hashes, j = hashes + 1, j + 1
            raw = "r" in src[i:j]
            i = skip_string(j + 1, hashes if raw else None)
        elif c == "'":
            # A char literal ('x', '\n', '\u{1F600}') or a lifetime / label ('a).
            if i + 1 < n and src[i + 1] == "\\":
                j = i + 2
                while j < n and src[j] != "'":
                    j += 1
                i = j + 1
            elif i + 2 < n and src[i + 2] == "'":
                i += 3
            else:
                j = i + 1
                while j < n and (src[j].isalnum() or src[j] == "_"):
                    j += 1
                i = j
        elif c.isalpha() or c == "_":
            j = i
            if src.startswith("r#", i):
                j = i + 2
            while j < n and (src[j].isalnum() or src[j] == "_"):
                j += 1
            text = src[i:j]
            if text.startswith("r#"):
                text = text[2:]
            toks.append(Tok("id", text, line))
            i = j
        elif c.isdigit():
            j = i
            while j < n and (src[j].isalnum() or src[j] in "_."):
                if src[j] == "." and not (j + 1 < n and src[j + 1].isdigit()):
                    break
                j += 1
            i = j
        elif src.startswith("::", i):
            toks.append(Tok("punct", "::", line))
            i += 2
        else:
            toks.append(Tok("punct", c, line))
            i += 1
    return toks


_LITERAL_PREFIX = re.compile(r'(?:br|cr|r)#*"|[bc]"')


def _raw_or_byte_string(src: str, i: int) -> bool:
    """`true` at the start of r"…", r#"…"#, b"…", br"…", c"…", cr#"…"# (not of an identifier)."""
    if i > 0 and (src[i - 1].isalnum() or src[i - 1] == "_"):
        return False
    return _LITERAL_PREFIX.match(src, i) is not None


@dataclass
class Ref:
    """A path written in module `at` (absolute module path), on `line` of `file`."""

    at: tuple[str, ...]
    path: list[str]
    file: str
    line: int


@dataclass
class Module:
    path: tuple[str, ...]
    file: str
    # name -> (absolute-ish path as written, module it was written in): from `use` declarations
    uses: dict[str, tuple[list[str], tuple[str, ...]]] = field(default_factory=dict)


class Target:
    """One crate target: a module tree from one root file."""

    def __init__(self, crate: str, name: str, root_file: str):
        self.crate, self.name = crate, name
        self.modules: dict[tuple[str, ...], Module] = {}
        self.refs: list[Ref] = []
        self.load(root_file, (), is_mod_rs=True)

    # --- reading ---------------------------------------------------------------------------

    def load(self, file: str, path: tuple[str, ...], is_mod_rs: bool) -> None:
        try:
            src = open(file, encoding="utf-8").read()
        except OSError:
            return
        self.modules[path] = Module(path, file)
        base = os.path.dirname(file) if is_mod_rs else os.path.splitext(file)[0]
        self.walk(tokenize(src), file, path, base)

    def walk(self, toks: list[Tok], file: str, path: tuple[str, ...], base: str) -> None:
        """Reads one file's tokens; `base` is the directory of the current module's children."""
        stack: list[tuple[tuple[str, ...], str, int]] = []  # (module path, base, brace depth)
        depth = 0
        cur, cur_base = path, base
        i, n = 0, len(toks)
        while i < n:
            t = toks[i]
            if t.kind == "punct":
                if t.text == "{":
                    depth += 1
                elif t.text == "}":
                    depth -= 1
                    if stack and stack[-1][2] == depth:
                        cur, cur_base, _ = stack.pop()
                i += 1
                continue
            prev = toks[i - 1] if i else None
            if t.text == "mod" and i + 1 < n and toks[i + 1].kind == "id" and i + 2 < n:
                name = toks[i + 1].text
                nxt = toks[i + 2].text
                if nxt == ";":
                    child = os.path.join(cur_base, name + ".rs")
                    as_dir = os.path.join(cur_base, name, "mod.rs")
                    if os.path.exists(child):
                        self.load(child, cur + (name,), is_mod_rs=False)
                    elif os.path.exists(as_dir):
                        self.load(as_dir, cur + (name,), is_mod_rs=True)
                    i += 3
                    continue
                if nxt == "{":
                    stack.append((cur, cur_base, depth))
                    depth += 1
                    cur, cur_base = cur + (name,), os.path.join(cur_base, name)
                    self.modules.setdefault(cur, Module(cur, file))
                    i += 3
                    continue
            if t.text == "use" and (prev is None or prev.text != "::"):
                j = self.read_use(toks, i + 1, cur, file)
                i = j
                continue
            if t.text in ("crate", "super", "self") and (prev is None or prev.text not in ("$", "::")):
                if i + 1 < n and toks[i + 1].text == "::":
                    if prev is not None and prev.text == "(" and i >= 2 and toks[i - 2].text == "pub":
                        i += 1  # pub(crate) / pub(in crate::x): visibility, not a use
                        continue
                    segs, j = self.read_path(toks, i)
                    self.refs.append(Ref(cur, segs, file, t.line))
                    i = j
                    continue
            if t.kind == "id" and (prev is None or prev.text != "::") and i + 1 < n and toks[i + 1].text == "::":
                # a path through a name a `use` brought in (`dedicated::open`)
                segs, j = self.read_path(toks, i)
                self.refs.append(Ref(cur, segs, file, t.line))
                i = j
                continue
            i += 1

    @staticmethod
    def read_path(toks: list[Tok], i: int) -> tuple[list[str], int]:
        segs = [toks[i].text]
        j = i + 1
        while j + 1 < len(toks) and toks[j].text == "::" and toks[j + 1].kind == "id":
            segs.append(toks[j + 1].text)
            j += 2
        return segs, j

    def read_use(self, toks: list[Tok], i: int, cur: tuple[str, ...], file: str) -> int:
        """Parses a use tree up to `;`, recording every leaf path (and its alias)."""
        line = toks[i].line if i < len(toks) else 0

        def tree(j: int, prefix: list[str]) -> int:
            segs = list(prefix)
            if j < len(toks) and toks[j].text == "::":
                j += 1
            while j < len(toks):
                t = toks[j]
                if t.kind == "id" and t.text != "as":
                    segs.append(t.text)
                    j += 1
                    if j < len(toks) and toks[j].text == "::":
                        j += 1
                        continue
                    alias = segs[-1]
                    if j + 1 < len(toks) and toks[j].text == "as":
                        alias = toks[j + 1].text
                        j += 2
                    self.record_use(cur, segs, alias, file, line)
                    return j
                if t.text == "*":
                    self.record_use(cur, segs, None, file, line)
                    return j + 1
                if t.text == "{":
                    j += 1
                    while j < len(toks) and toks[j].text != "}":
                        if toks[j].text == ",":
                            j += 1
                            continue
                        j = tree(j, segs)
                    return j + 1
                return j
            return j

        j = tree(i, [])
        while j < len(toks) and toks[j].text != ";":
            j += 1
        return j + 1

    def record_use(self, cur, segs, alias, file, line):
        if not segs:
            return
        if segs[-1] == "self":
            segs = segs[:-1]
            if alias == "self":
                alias = segs[-1] if segs else None
        if not segs:
            return
        self.refs.append(Ref(cur, segs, file, line))
        if alias and alias != "_":
            self.modules[cur].uses.setdefault(alias, (segs, cur))

    # --- resolving -------------------------------------------------------------------------

    def resolve(self, at: tuple[str, ...], segs: list[str], seen: int = 0) -> tuple[str, ...] | None:
        """The module a path written in `at` leads to; `None` for anything outside the crate."""
        if seen > 8 or not segs:
            return None
        head, rest = segs[0], segs[1:]
        if head == "crate":
            base = ()
        elif head == "self":
            base = at
        elif head == "super":
            base = at
            while segs and segs[0] == "super":
                if not base:
                    return None
                base, segs = base[:-1], segs[1:]
            rest = segs
        elif at + (head,) in self.modules:
            base = at + (head,)
        else:
            # a name a `use` of this module (or, for 2018 uniform paths, of an ancestor) brought in
            use = self.modules.get(at, Module(at, "")).uses.get(head)
            if use is None:
                return None
            written, where = use
            target = self.resolve(where, written, seen + 1)
            if target is None:
                return None
            return self.descend(target, rest, seen)
        return self.descend(base, rest, seen)

    def descend(self, base: tuple[str, ...], rest: list[str], seen: int) -> tuple[str, ...]:
        m = base
        for k, seg in enumerate(rest):
            if m + (seg,) in self.modules:
                m = m + (seg,)
                continue
            use = self.modules.get(m, Module(m, "")).uses.get(seg)
            if use is not None:
                written, where = use
                target = self.resolve(where, written, seen + 1)
                if target is not None:
                    return self.descend(target, rest[k + 1 :], seen + 1)
            break
        return m

    def edges(self, nested: bool) -> dict[tuple[str, ...], dict[str, dict[str, tuple[str, int]]]]:
        """Per parent module: child -> child it uses -> first (file, line)."""
        out: dict[tuple[str, ...], dict[str, dict[str, tuple[str, int]]]] = {}
        for r in self.refs:
            target = self.resolve(r.at, r.path)
            if target is None:
                continue
            src = r.at
            k = 0
            while k < len(src) and k < len(target) and src[k] == target[k]:
                k += 1
            if k >= len(src) or k >= len(target):
                continue  # same module, a descendant, or an ancestor
            if k > 0 and not nested:
                continue
            levels = range(k, k + 1)
            for lvl in levels:
                parent = src[:lvl]
                a, b = src[lvl], target[lvl]
                rel = os.path.relpath(r.file, ROOT)
                out.setdefault(parent, {}).setdefault(a, {}).setdefault(b, (rel, r.line))
        return out


def cycles(graph: dict[str, dict[str, tuple[str, int]]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def targets(crate: str) -> list[Target]:
    d = crate_dir(crate)
    found = []
    for name, rel in (("lib", "src/lib.rs"), ("bin", "src/main.rs")):
        p = os.path.join(d, rel)
        if os.path.exists(p):
            found.append(Target(crate, name, p))
    bins = os.path.join(d, "src", "bin")
    if os.path.isdir(bins):
        for f in sorted(os.listdir(bins)):
            p = os.path.join(bins, f)
            if f.endswith(".rs"):
                found.append(Target(crate, "bin " + f[:-3], p))
            elif os.path.exists(os.path.join(p, "main.rs")):
                found.append(Target(crate, "bin " + f, os.path.join(p, "main.rs")))
    tests = os.path.join(d, "tests")
    if os.path.isdir(tests):
        for f in sorted(os.listdir(tests)):
            p = os.path.join(tests, f)
            if f.endswith(".rs"):
                found.append(Target(crate, "test " + f[:-3], p))
            elif os.path.exists(os.path.join(p, "main.rs")):
                found.append(Target(crate, "test " + f, os.path.join(p, "main.rs")))
    return found


def main(argv: list[str]) -> int:
    nested = "--nested" in argv
    names = [a for a in argv if not a.startswith("--")]
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        return 0
    crates = names or sorted(c for c in os.listdir(CRATES) if os.path.isfile(os.path.join(CRATES, c, "Cargo.toml"))) + [
        c for c, d in EXTRA.items() if os.path.isfile(os.path.join(d, "Cargo.toml"))
    ]
    found = 0
    for crate in crates:
        if not os.path.isdir(crate_dir(crate)):
            print(f"{crate}: no such crate under crates/", file=sys.stderr)
            return 2
        for t in targets(crate):
            per_parent = t.edges(nested)
            problems = []
            for parent in sorted(per_parent):
                g = per_parent[parent]
                for comp in cycles(g):
                    problems.append((parent, comp, g))
            label = f"{crate} ({t.name})"
            if not problems:
                print(f"{label}: no circles ({len(t.modules)} modules)")
                continue
            for parent, comp, g in problems:
                found += 1
                where = "::".join(("crate",) + parent)
                print(f"{label}: circle among {where}::{{{', '.join(comp)}}}")
                for a in comp:
                    for b, (file, line) in sorted(g.get(a, {}).items()):
                        if b in comp:
                            print(f"    {a} -> {b}  ({file}:{line})")
    if found:
        print(f"\n{found} module circle(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
