#!/usr/bin/env python3
"""Copy etcd's .proto files into the build tree without their gogoproto and google.api annotations.

etcd's protos import gogoproto/gogo.proto and google/api/annotations.proto, which Debian does not
ship for C++; every use of them is an option (code-generation hints for Go, HTTP gateway routes),
so dropping them changes no message and no wire path. Package names are kept, so the services stay
/etcdserverpb.KV/Range etc. and talk to the real server.

What is removed:
  - `import "gogoproto/..."` and `import "google/api/..."` lines;
  - `option (gogoproto.X) = ...;` and `option (google.api.http) = { ... };` statements: the value
    is matched by braces (the http blocks nest braces, e.g. `additional_bindings { ... }`), with
    string literals and comments skipped, never by a regular expression over the braces;
  - `(gogoproto.X) = V` entries inside field option brackets `[...]` (the brackets go when empty).

Usage: strip_etcd_protos.py ETCD_SOURCE_ROOT OUTPUT_ROOT REL_PATH...
  Each REL_PATH (e.g. etcdserver/etcdserverpb/rpc.proto) is read from ETCD_SOURCE_ROOT and written
  to OUTPUT_ROOT/etcd/REL_PATH, because the files import each other as "etcd/...".
A file is rewritten only when its content changes, so the generated C++ is not rebuilt for nothing.
"""
import pathlib
import sys

STRIPPED_OPTION_PREFIXES = ("(gogoproto.", "(google.api.")
STRIPPED_IMPORT_PREFIXES = ('"gogoproto/', '"google/api/')


class ProtoError(Exception):
    pass


def skip_string_or_comment(text, i):
    """If text[i] starts a string literal or a comment, return the index just past it; else i."""
    c = text[i]
    if c in "\"'":
        j = i + 1
        while j < len(text) and text[j] != c:
            j += 2 if text[j] == "\\" else 1
        if j >= len(text):
            raise ProtoError("unterminated string literal at offset %d" % i)
        return j + 1
    if text.startswith("//", i):
        j = text.find("\n", i)
        return len(text) if j < 0 else j
    if text.startswith("/*", i):
        j = text.find("*/", i + 2)
        if j < 0:
            raise ProtoError("unterminated comment at offset %d" % i)
        return j + 2
    return i


def matching_close(text, open_index):
    """Index of the bracket closing the one at open_index; nested brackets, strings, comments skipped."""
    pairs = {"{": "}", "[": "]", "(": ")"}
    stack = [pairs[text[open_index]]]
    i = open_index + 1
    while i < len(text):
        j = skip_string_or_comment(text, i)
        if j != i:
            i = j
            continue
        c = text[i]
        if c in pairs:
            stack.append(pairs[c])
        elif c in "}])":
            if c != stack.pop():
                raise ProtoError("mismatched '%s' at offset %d" % (c, i))
            if not stack:
                return i
        i += 1
    raise ProtoError("unbalanced '%s' at offset %d" % (text[open_index], open_index))


def statement_end(text, i):
    """Index just past the ';' ending the statement starting at i (a braced value is matched)."""
    while i < len(text):
        j = skip_string_or_comment(text, i)
        if j != i:
            i = j
            continue
        if text[i] == "{":
            i = matching_close(text, i) + 1
            continue
        if text[i] == ";":
            return i + 1
        i += 1
    raise ProtoError("statement without ';'")


def drop_line_if_blank(text, start, end):
    """Widen [start, end) to the whole line when nothing else is on it, so no blank line remains."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    if text[line_start:start].strip() == "" and text[end:line_end].strip() == "":
        return line_start, min(line_end + 1, len(text))
    return start, end


def strip_bracket_options(body):
    """The entries of a field option list `a = b, (gogoproto.x) = y` without the stripped ones."""
    entries, depth, current, i = [], 0, "", 0
    while i < len(body):
        j = skip_string_or_comment(body, i)
        if j != i:
            current += body[i:j]
            i = j
            continue
        c = body[i]
        if c in "{[(":
            depth += 1
        elif c in "}])":
            depth -= 1
        if c == "," and depth == 0:
            entries.append(current)
            current = ""
        else:
            current += c
        i += 1
    entries.append(current)
    kept = [e.strip() for e in entries if e.strip() and not e.strip().startswith(STRIPPED_OPTION_PREFIXES)]
    return ", ".join(kept)


def strip(text):
    out, i = [], 0
    while i < len(text):
        j = skip_string_or_comment(text, i)
        if j != i:
            out.append(text[i:j])
            i = j
            continue
        at_word_start = i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")
        rest = text[i:]
        if at_word_start and (rest.startswith("import ") or rest.startswith("option ")):
            is_import = rest.startswith("import ")
            target = rest[len("import "):].lstrip()  # "option " has the same length
            prefixes = STRIPPED_IMPORT_PREFIXES if is_import else STRIPPED_OPTION_PREFIXES
            if target.startswith(prefixes):
                end = statement_end(text, i)
                start, end = drop_line_if_blank(text, i, end)
                # The part of this line already copied (indentation) goes with the statement.
                already = i - start
                if already:
                    copied = "".join(out)
                    out = [copied[: len(copied) - already]]
                i = end
                continue
        if text[i] == "[":
            close = matching_close(text, i)
            body = text[i + 1:close]
            if any(p in body for p in STRIPPED_OPTION_PREFIXES):
                kept = strip_bracket_options(body)
                if kept:
                    out.append("[" + kept + "]")
                else:
                    # `int64 x = 1 [(gogoproto.nullable) = false];` -> `int64 x = 1;`
                    while out and out[-1].endswith((" ", "\t")):
                        out[-1] = out[-1].rstrip(" \t")
                i = close + 1
                continue
        out.append(text[i])
        i += 1
    result = "".join(out)
    for prefix in STRIPPED_OPTION_PREFIXES + STRIPPED_IMPORT_PREFIXES:
        if prefix in result:
            raise ProtoError("'%s' is still present after stripping" % prefix)
    return result


def main(argv):
    if len(argv) < 4:
        sys.stderr.write(__doc__)
        return 2
    source_root, output_root = pathlib.Path(argv[1]), pathlib.Path(argv[2])
    for rel in argv[3:]:
        source = source_root / rel
        try:
            stripped = strip(source.read_text())
        except (OSError, ProtoError) as e:
            sys.stderr.write("strip_etcd_protos: %s: %s\n" % (source, e))
            return 1
        header = "// Generated by scripts/strip_etcd_protos.py from etcd's %s; do not edit.\n" % rel
        target = output_root / "etcd" / rel
        content = header + stripped
        if not target.exists() or target.read_text() != content:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
