"""robots.txt conformance: the crawler's decisions against public test suites, beside protego's.

    .venv/bin/python -m benchmarks.robots_conformance --google PATH [--protego PATH] [-v]

PATH is a checkout of the suite, a bare git repository of it (read at HEAD), or the test
file itself:

- `--google`: Google's reference parser (github.com/google/robotstxt), `robots_test.cc`;
  its `EXPECT_TRUE/EXPECT_FALSE(IsUserAgentAllowed(robots.txt, agent, url))` cases, the
  C++ strings built as the file builds them (literals, StrCat, StrAppend, the loops that
  grow a long line). The reference is Google's parser.
- `--protego`: protego's own suite (github.com/scrapy/protego), `tests/test_protego.py` and
  `tests/test_on_google_spec.py`, one set each: every `assert [not] rp.can_fetch(url, agent)`
  after `rp = Protego.parse(...)` whose arguments are literals, names bound to literals,
  f-strings of pytest parameters or loop variables over literal lists. The reference is
  what each assertion expects.

For each set it prints the cases extracted and how many of them the crawler
(`transforms.fetch.robots.RobotsPolicy`, asked as a crawler sending the agent as its
User-Agent) and
protego (`Protego.parse(text).can_fetch(url, agent)`) decide as the reference does, and with
-v every case either gets wrong. Exit status 1 when the crawler agrees with the reference
on fewer cases than protego on any set (2: a suite cannot be read).

The suites are third-party files: they are read where they are, at run time, never copied
into this repository.
"""
from __future__ import annotations

import argparse
import ast
import itertools
import os
import re
import subprocess
import sys
from dataclasses import dataclass

from protego import Protego

from transforms.fetch.robots import RobotsPolicy


@dataclass(frozen=True)
class Case:
    where: str        # test name (and line) the case comes from
    robots: str
    agent: str
    url: str
    allowed: bool     # what the reference decides


# ------------------------------------------------------------------ reading a suite

def read_suite_file(path: str, name: str) -> str:
    """`name` (a path inside the suite) from a file, a checkout or a bare git repository."""
    if os.path.isfile(path):
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            return f.read()
    candidate = os.path.join(path, name)
    if os.path.isfile(candidate):
        return read_suite_file(candidate, name)
    if os.path.isdir(os.path.join(path, "objects")) or os.path.isdir(os.path.join(path, ".git")):
        out = subprocess.run(["git", "-C", path, "show", f"HEAD:{name}"], capture_output=True)
        if out.returncode == 0:
            return out.stdout.decode("utf-8", "surrogateescape")
    raise FileNotFoundError(f"{path}: no {name} there (give the suite's checkout, its bare git "
                            "repository, or the file)")


# ------------------------------------------------------------------ Google's C++ cases

_TOKEN = re.compile(r"""
    (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:\\.|[^"\\])*")
  | (?P<char>'(?:\\.|[^'\\])')
  | (?P<number>\d+)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<op>::|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/<>=;,(){}\[\].&!])
  | (?P<space>\s+)
""", re.S | re.X)

_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "'": "'", "0": "\0"}


def _c_string(literal: str) -> str:
    """A C++ string literal's bytes (as latin-1 text, so \\xHH is one byte)."""
    body, out, i = literal[1:-1], [], 0
    raw = body.encode("utf-8", "surrogateescape")
    while i < len(raw):
        c = chr(raw[i])
        if c == "\\" and i + 1 < len(raw):
            e = chr(raw[i + 1])
            if e == "x":
                m = re.match(rb"[0-9A-Fa-f]{1,2}", raw[i + 2:])
                out.append(chr(int(m.group(0), 16)))
                i += 2 + len(m.group(0))
                continue
            out.append(_ESCAPES.get(e, e))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _tokens(text: str) -> list[tuple[str, str]]:
    out = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind not in ("comment", "space"):
            out.append((kind, m.group(0)))
    return out


class _Cpp:
    """Runs the statements of one TEST body that build strings and check decisions."""

    def __init__(self, tokens, test):
        self.t, self.i, self.test = tokens, 0, test
        self.env: dict[str, object] = {}
        self.cases: list[Case] = []

    def peek(self, k=0):
        j = self.i + k
        return self.t[j] if j < len(self.t) else ("eof", "")

    def take(self, value=None):
        tok = self.peek()
        if value is not None and tok[1] != value:
            raise SyntaxError(f"expected {value!r}, got {tok[1]!r}")
        self.i += 1
        return tok

    # expressions: literals, names, calls, .length()/.size(), * + - <
    def expr(self):
        return self._binary(self.unary(), 0)

    def _binary(self, left, min_prec):
        prec = {"<": 1, "+": 2, "-": 2, "*": 3}
        while self.peek()[1] in prec and prec[self.peek()[1]] >= min_prec:
            op = self.take()[1]
            right = self.unary()
            while self.peek()[1] in prec and prec[self.peek()[1]] > prec[op]:
                right = self._binary(right, prec[self.peek()[1]])
            left = {"<": lambda a, b: a < b, "+": lambda a, b: a + b,
                    "-": lambda a, b: a - b, "*": lambda a, b: a * b}[op](left, right)
        return left

    def args(self):
        self.take("(")
        out = []
        while self.peek()[1] != ")":
            out.append(self.expr())
            if self.peek()[1] == ",":
                self.take()
        self.take(")")
        return out

    def unary(self):
        kind, value = self.peek()
        if value == "&":
            self.take()
            return ("ref", self.take()[1])
        if value == "(":
            self.take()
            v = self.expr()
            self.take(")")
            return v
        if kind == "string":
            parts = []
            while self.peek()[0] == "string":
                parts.append(_c_string(self.take()[1]))
            return "".join(parts)
        if kind == "number":
            return int(self.take()[1])
        if kind == "name":
            name = self.take()[1]
            if self.peek()[1] == "(":
                args = self.args()
                value = self.call(name, args)
            else:
                value = self.env.get(name, _UNKNOWN)
            while self.peek()[1] == ".":
                self.take()
                method = self.take()[1]
                self.args()
                value = len(value) if method in ("length", "size") else _UNKNOWN
            return value
        raise SyntaxError(f"unexpected {value!r}")

    def call(self, name, args):
        if name in ("absl::StrCat", "std::string") and all(isinstance(a, str) for a in args):
            return "".join(args)
        if name == "absl::StrAppend" and args and isinstance(args[0], tuple):
            self.env[args[0][1]] = self.env.get(args[0][1], "") + "".join(args[1:])
            return None
        if name == "absl::string_view" and not args:
            return ""
        if name == "IsUserAgentAllowed":
            return ("decision", *args)
        if name in ("EXPECT_TRUE", "EXPECT_FALSE") and args and isinstance(args[0], tuple) \
                and args[0][0] == "decision":
            robots, agent, url = args[0][1:]
            if all(isinstance(a, str) for a in (robots, agent, url)):
                self.cases.append(Case(self.test, _text(robots), _text(agent), _text(url),
                                       name == "EXPECT_TRUE"))
            return None
        return _UNKNOWN

    # statements
    def block(self):
        """Statements up to the matching '}' (the '{' already taken)."""
        while self.peek()[1] not in ("}", ""):
            self.statement()
        self.take("}")

    def statement(self):
        kind, value = self.peek()
        if value == "{":
            self.take()
            return self.block()
        if value == "while":
            self.take()
            self.take("(")
            start = self.i
            for _ in range(100_000):
                self.i = start
                cond = self.expr()
                self.take(")")
                self.take("{")
                if cond is not True:
                    self._skip_block()
                    return
                self.block()
            raise RuntimeError("loop does not end")
        decl = self._declaration()
        if decl:
            return
        self._expression_statement()

    def _declaration(self):
        """`[static] [const] TYPE NAME[[]] [= EXPR];` -> bound in env."""
        j = self.i
        while self.t[j][1] in ("static", "const"):
            j += 1
        if not (self.t[j][0] == "name" and self.t[j + 1][0] == "name"):
            return False
        self.i = j + 2
        name = self.t[j + 1][1]
        if self.peek()[1] == "[":
            self.take()
            self.take("]")
        value = ""
        if self.peek()[1] == "=":
            self.take()
            value = self._guarded_expr()
        self.env[name] = value
        self._to_semicolon()
        return True

    def _guarded_expr(self):
        try:
            return self.expr()
        except (SyntaxError, TypeError):
            return _UNKNOWN

    def _expression_statement(self):
        self._guarded_expr()
        self._to_semicolon()

    def _to_semicolon(self):
        depth = 0
        while self.peek()[1] != "":
            v = self.take()[1]
            if v in "({[":
                depth += 1
            elif v in ")}]":
                depth -= 1
            elif v == ";" and depth <= 0:
                return

    def _skip_block(self):
        depth = 1
        while depth:
            v = self.take()[1]
            depth += v == "{"
            depth -= v == "}"


class _Unknown:
    def __repr__(self):
        return "<unknown>"


_UNKNOWN = _Unknown()


def _text(s: str) -> str:
    """A C++ string's bytes (latin-1 text) as the UTF-8 text they spell."""
    return s.encode("latin-1").decode("utf-8", "surrogateescape")


def google_cases(source: str) -> list[Case]:
    tokens = _tokens(source)
    cases = []
    for i, (kind, value) in enumerate(tokens):
        if value == "TEST" and tokens[i + 1][1] == "(":
            name = tokens[i + 4][1]
            j = i + 1
            while tokens[j][1] != "{":
                j += 1
            run = _Cpp(tokens[j + 1:], name)
            try:
                run.block()
            except (SyntaxError, RuntimeError, IndexError, KeyError):
                pass   # a body this reader cannot follow: the cases before it count
            cases += run.cases
    return cases


# ------------------------------------------------------------------ protego's Python cases

class _PyRun:
    """Runs one pytest test's straight-line statements, `for` loops (with break/else), `if`s
    and asserts over literal values, asking `decide(robots, url, agent)` wherever the test
    asks `rp.can_fetch(url, agent)`. An assert made after asking it (since the last
    assert) is a case; it agrees when it holds."""

    def __init__(self, where, decide):
        self.where, self.decide = where, decide
        self.asked = 0
        self.held, self.failed = 0, []

    def value(self, node, env):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return env.get(node.id, _UNKNOWN)
        if isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                x = self.value(v.value, env) if isinstance(v, ast.FormattedValue) else v.value
                if isinstance(x, _Unknown):
                    return _UNKNOWN
                parts.append(str(x))
            return "".join(parts)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            a, b = self.value(node.left, env), self.value(node.right, env)
            return a + b if isinstance(a, str) and isinstance(b, str) else _UNKNOWN
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.value(e, env) for e in node.elts]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            v = self.value(node.operand, env)
            return _UNKNOWN if isinstance(v, _Unknown) else not v
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and \
                isinstance(node.ops[0], (ast.Eq, ast.Is, ast.NotEq, ast.IsNot)):
            a, b = self.value(node.left, env), self.value(node.comparators[0], env)
            if isinstance(a, _Unknown) or isinstance(b, _Unknown):
                return _UNKNOWN
            same = a == b if isinstance(node.ops[0], (ast.Eq, ast.NotEq)) else a is b
            return same if isinstance(node.ops[0], (ast.Eq, ast.Is)) else not same
        if isinstance(node, ast.Call) and _is_parse(node):
            arg = node.args[0] if node.args else next(
                (k.value for k in node.keywords if k.arg == "content"), None)
            text = self.value(arg, env) if arg is not None else _UNKNOWN
            return ("parsed", text) if isinstance(text, str) else _UNKNOWN
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "can_fetch" and len(node.args) == 2:
            parsed = self.value(node.func.value, env)
            url, agent = (self.value(a, env) for a in node.args)
            if isinstance(parsed, tuple) and isinstance(url, str) and isinstance(agent, str):
                self.asked += 1
                return self.decide(parsed[1], url, agent)
        return _UNKNOWN

    def run(self, body, env) -> bool:
        """Runs `body`; True when it ended in `break`."""
        for stmt in body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                    and isinstance(stmt.targets[0], ast.Name):
                env[stmt.targets[0].id] = self.value(stmt.value, env)
            elif isinstance(stmt, ast.For) and isinstance(stmt.target, ast.Name):
                items = self.value(stmt.iter, env)
                if not isinstance(items, list):
                    continue
                for item in items:
                    env[stmt.target.id] = item
                    if self.run(stmt.body, env):
                        break
                else:
                    self.run(stmt.orelse, env)
            elif isinstance(stmt, ast.If):
                cond = self.value(stmt.test, env)
                if not isinstance(cond, _Unknown) and self.run(stmt.body if cond else stmt.orelse, env):
                    return True
            elif isinstance(stmt, ast.Break):
                return True
            elif isinstance(stmt, ast.Assert):
                self._assert(stmt, env)
        return False

    def _assert(self, stmt, env):
        try:
            held = self.value(stmt.test, env)
        except Exception as e:   # noqa: BLE001 - a decider that raises fails the case
            held = f"raised {type(e).__name__}: {e}"
        asked, self.asked = self.asked, 0
        if not asked or isinstance(held, _Unknown):
            return   # not about a decision asked since the last assert
        if held is True:
            self.held += 1
        else:
            self.failed.append(f"{self.where}:{stmt.lineno}")


def _is_parse(node):
    f = node.func
    return isinstance(f, ast.Attribute) and f.attr == "parse" and \
        isinstance(f.value, ast.Name) and f.value.id == "Protego"


def _parameter_sets(func):
    """Every combination of the function's pytest.mark.parametrize values, as dicts."""
    axes = []
    for dec in func.decorator_list:
        if isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute) \
                and dec.func.attr == "parametrize" and len(dec.args) >= 2:
            names = ast.literal_eval(dec.args[0])
            names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
            try:
                values = ast.literal_eval(dec.args[1])
            except ValueError:
                return []
            axes.append([dict(zip(names, v if len(names) > 1 else (v,))) for v in values])
    return [dict(itertools.chain.from_iterable(d.items() for d in combo))
            for combo in itertools.product(*axes)] if axes else [{}]


class PythonSuite:
    """A pytest file's can_fetch assertions, run with any decider."""

    def __init__(self, source: str, label: str):
        self.label = label
        self.tests = [(node, params) for node in ast.walk(ast.parse(source))
                      if isinstance(node, ast.FunctionDef) and node.name.startswith("test")
                      for params in _parameter_sets(node)]

    def run(self, decide):
        """(cases, agreeing, [where each disagreeing case is])."""
        held, failed = 0, []
        for node, params in self.tests:
            run = _PyRun(f"{self.label}::{node.name}{_ids(params)}", decide)
            run.run(node.body, dict(params))
            held += run.held
            failed += run.failed
        return held + len(failed), held, failed


def _ids(params):
    return f"[{'-'.join(str(v) for v in params.values())}]" if params else ""


class CaseSuite:
    """Cases with their reference decisions (Google's), run with any decider."""

    def __init__(self, cases: list[Case]):
        self.cases = cases

    def run(self, decide):
        held, failed = 0, []
        for c in self.cases:
            try:
                got = decide(c.robots, c.url, c.agent)
            except Exception as e:   # noqa: BLE001 - a parser that raises decides nothing
                got = f"raised {type(e).__name__}: {e}"
            if got is c.allowed:
                held += 1
            else:
                failed.append(f"{c.where}: agent={c.agent!r} url={c.url[:80]!r} expected "
                              f"{c.allowed}, got {got}; robots.txt {c.robots[:100]!r}")
        return len(self.cases), held, failed


# ------------------------------------------------------------------ deciding

def crawler_decides(robots: str, url: str, agent: str) -> bool:
    return RobotsPolicy.parse(robots).allowed(url, agent)


def protego_decides(robots: str, url: str, agent: str) -> bool:
    return Protego.parse(robots).can_fetch(url, agent)


def suites_from(args) -> dict:
    suites = {}
    if args.google:
        suites["google robots_test.cc"] = CaseSuite(google_cases(read_suite_file(args.google, "robots_test.cc")))
    if args.protego:
        for name in ("tests/test_protego.py", "tests/test_on_google_spec.py"):
            label = os.path.basename(name)
            suites[f"protego {label}"] = PythonSuite(read_suite_file(args.protego, name), label)
    return suites


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--google", help="google/robotstxt: checkout, bare repository or robots_test.cc")
    ap.add_argument("--protego", help="scrapy/protego: checkout or bare repository")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every case decided wrong")
    args = ap.parse_args(argv)
    if not (args.google or args.protego):
        ap.error("give --google PATH and/or --protego PATH")
    try:
        suites = suites_from(args)
    except (OSError, SyntaxError, UnicodeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    behind = False
    print(f"{'set':32s} {'cases':>5s} {'crawler':>8s} {'protego':>8s}")
    for name, suite in suites.items():
        n, ours, our_wrong = suite.run(crawler_decides)
        n2, theirs, their_wrong = suite.run(protego_decides)
        behind |= ours < theirs
        print(f"{name:32s} {n:5d} {ours:8d} {theirs:8d}" + ("" if n == n2 else f"  (protego ran {n2})"))
        if args.verbose:
            for who, wrong in (("crawler", our_wrong), ("protego", their_wrong)):
                for line in wrong:
                    print(f"    {who} disagrees: {line}")
    return 1 if behind else 0


if __name__ == "__main__":
    sys.exit(main())
