#!/usr/bin/env python3
"""Fails when a function in crates/*/src is longer than the limit.

    python3 scripts/check-fn-length.py [--limit N] [--list] [--self-test]

A function's length runs from the line of its `fn` keyword to the line of
its closing brace. Test code is left out: `#[cfg(test)]` and
`#[cfg(all(test, ..))]` items (a `mod tests { ... }` among them) and files
that only tests include (those of a `#[cfg(test)] mod NAME;`, `*_tests.rs`,
`tests.rs`). Braces inside strings, raw and byte strings, character
literals and comments do not count, nor does a return type's `->`. Prints each offender as `path:line: fn NAME is N
lines (limit L)` and exits 1 when there is one; `--list` prints the
longest function of each crate as well.
"""

import re
import sys
from pathlib import Path

# One screen of code: a function longer than this does more than one thing
# and is split into named steps.
LIMIT = 60

FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")
RAW = re.compile(r'[bc]?r(#*)"')
# `#[cfg(test)]` or `#[cfg(all(test, ..))]`: an item compiled for tests only.
CFG_TEST = re.compile(r"#\[cfg\((?:all\(\s*)?test\b")
# `mod NAME;` declared for tests only, with the `#[path]` it may carry.
TEST_MOD = re.compile(
    r'#\[cfg\((?:all\(\s*)?test\b[^\]]*\]\s*(?:#\[path\s*=\s*"([^"]+)"\]\s*)?'
    r"(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*;"
)


def strip(source):
    """The source with comments, strings and char literals blanked out
    (newlines kept), so that braces and keywords in them do not count."""
    out = []
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if source.startswith("//", i):
            j = source.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif source.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if source.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif source.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(blank(source[i:j]))
            i = j
        elif RAW.match(source, i) and not is_ident(source, i - 1):
            # r"..", r#".."#, and their byte and C string forms (br, cr).
            m = RAW.match(source, i)
            hashes = m.group(1)
            end = source.find('"' + hashes, m.end())
            j = n if end < 0 else end + 1 + len(hashes)
            out.append(blank(source[i:j]))
            i = j
        elif c in "bc" and source.startswith(c + '"', i) and not is_ident(source, i - 1):
            j = string_end(source, i + 1)
            out.append(blank(source[i:j]))
            i = j
        elif c == '"':
            j = string_end(source, i)
            out.append(blank(source[i:j]))
            i = j
        elif c == "'":
            m = re.match(r"'(\\.|\\u\{[0-9a-fA-F]+\}|\\x[0-9a-fA-F]{2}|[^\\'])'", source[i:])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:  # a lifetime
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def is_ident(source, i):
    return i >= 0 and (source[i].isalnum() or source[i] == "_")


def string_end(source, i):
    """The index after the string that opens at source[i] == '"'."""
    j = i + 1
    while j < len(source):
        if source[j] == "\\":
            j += 2
        elif source[j] == '"':
            return j + 1
        else:
            j += 1
    return len(source)


def blank(text):
    return "".join("\n" if ch == "\n" else " " for ch in text)


def matching(code, open_at):
    """The index of the brace that closes the one at open_at."""
    depth = 0
    for j in range(open_at, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


def test_spans(code):
    """Character spans of `#[cfg(test)]` items."""
    spans = []
    for m in CFG_TEST.finditer(code):
        j = m.end()
        # The item: up to its first `;` (a `mod tests;`) or its body.
        semi = code.find(";", j)
        brace = code.find("{", j)
        if brace < 0 or (0 <= semi < brace):
            spans.append((m.start(), semi))
            continue
        spans.append((m.start(), matching(code, brace)))
    return spans


def functions(source):
    """(name, first line, length in lines) of every fn outside test code."""
    code = strip(source)
    skipped = test_spans(code)
    found = []
    for m in FN.finditer(code):
        if any(a <= m.start() <= b for a, b in skipped):
            continue
        # The body opens at the first `{` after the signature, unless a `;`
        # comes first (a declaration without a body).
        k = m.end()
        depth = 0
        body = None
        while k < len(code):
            ch = code[k]
            if code.startswith("->", k):  # a return type's arrow is no bracket
                k += 2
                continue
            if ch in "(<[":
                depth += 1
            elif ch in ")>]":
                depth -= 1
            elif ch == ";" and depth <= 0:
                break
            elif ch == "{" and depth <= 0:
                body = k
                break
            k += 1
        if body is None:
            continue
        end = matching(code, body)
        first = code.count("\n", 0, m.start()) + 1
        last = code.count("\n", 0, end) + 1
        found.append((m.group(1), first, last - first + 1))
    return found


def is_test_file(path):
    return path.name == "tests.rs" or path.name.endswith("_tests.rs") or "tests" in path.parts[3:]


def test_modules(path, source):
    """Files and folders of the modules that `path` declares for tests only
    (`#[cfg(test)] mod NAME;`, perhaps with a `#[path]`)."""
    code = strip(source)
    own = path.parent if path.name in ("lib.rs", "main.rs", "mod.rs") else path.with_suffix("")
    found = []
    for m in TEST_MOD.finditer(source):
        if code[m.start()] != "#":  # inside a comment or a string
            continue
        if m.group(1):
            found.append((path.parent / m.group(1)).resolve())
        else:
            found += [own / (m.group(2) + ".rs"), own / m.group(2)]
    return found


def test_only(paths):
    """The files among `paths` that only tests compile."""
    skipped = set()
    for path in paths:
        skipped.update(p.resolve() for p in test_modules(path, path.read_text(encoding="utf-8")))
    return {p for p in paths if any(p.resolve() == s or s in p.resolve().parents for s in skipped)}


def check(root, limit, listing):
    offenders = []
    longest = {}
    paths = sorted(root.glob("crates/*/src/**/*.rs"))
    tests_only = test_only(paths)
    for path in paths:
        if path in tests_only or is_test_file(path.relative_to(root)):
            continue
        crate = path.relative_to(root).parts[1]
        for name, line, length in functions(path.read_text(encoding="utf-8")):
            rel = path.relative_to(root)
            if length > longest.get(crate, ("", 0, 0))[2]:
                longest[crate] = (f"{rel}:{line}", name, length)
            if length > limit:
                offenders.append(f"{rel}:{line}: fn {name} is {length} lines (limit {limit})")
    for o in offenders:
        print(o)
    if listing:
        for crate, (where, name, length) in sorted(longest.items()):
            print(f"{crate}: longest fn {name}, {length} lines ({where})")
    if offenders:
        print(f"{len(offenders)} functions over {limit} lines", file=sys.stderr)
        return 1
    print(f"every function in crates/*/src is at most {limit} lines")
    return 0


SAMPLE = r'''
fn short() { let s = "}}}"; let c = '}'; }
// fn commented() { }
pub(crate) async fn long<T: Fn() -> u8>(x: T)
where
    T: Send,
{
    let r = r#"{"a": "}"}"#;
LINES
}
trait T { fn declared(&self); fn defaulted(&self) -> usize { 1 } }
fn array() -> [u8; 2] {
    [1, 2]
}
fn bytes() { let b = br#"}\"#; let c = b'{'; }
fn after_bytes() {
}
#[cfg(all(test, unix))]
fn unix_only() {
LINES
}
#[cfg(test)]
#[path = "helpers/draw.rs"]
mod draw;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod inline_tests {
    fn hidden() {
LINES
    }
}
'''


def self_test():
    source = SAMPLE.replace("LINES", "\n" * 70)
    got = {name: length for name, _, length in functions(source)}
    assert got["short"] == 1, got
    assert got["long"] == 77, got
    assert "declared" not in got and got["defaulted"] == 1, got
    assert "hidden" not in got and "commented" not in got, got
    assert got["array"] == 3 and got["bytes"] == 1 and got["after_bytes"] == 2, got
    assert "unix_only" not in got, got
    mods = test_modules(Path("src/lib.rs"), source)
    assert Path("src/helpers/draw.rs").resolve() in mods and Path("src/tests.rs") in mods, mods
    print("self-test passed")
    return 0


def main(argv):
    if "--self-test" in argv:
        return self_test()
    limit = LIMIT
    if "--limit" in argv:
        limit = int(argv[argv.index("--limit") + 1])
    root = Path(__file__).resolve().parent.parent
    return check(root, limit, "--list" in argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
