#!/usr/bin/env python3
"""Records the `lark` package's verdicts on generated strings, for constrain-lark's tests.

For each grammar below, strings are made by random derivation (accepted ones, usually) and
by mutating those (rejected ones, usually); Lark's Earley parser with the dynamic lexer
decides, and its verdicts are written to crates/constrain-lark/tests/data/<name>.json:
{"name", "grammar", "accept": [...], "reject": [...], "lexer_dependent": [...]}.
Strings on which lexer="dynamic" and lexer="dynamic_complete" disagree go to
"lexer_dependent" with both verdicts (constrain-lark accepts every split into terminals,
as dynamic_complete does).

Run: python3 -m venv /root/.cache/lark-venv && /root/.cache/lark-venv/bin/pip install lark
     /root/.cache/lark-venv/bin/python scripts/lark-oracle.py
The output is deterministic for a given lark version (seeded per grammar).
"""

import json
import os
import random
import re
import sys

import lark

try:
    import re._parser as sre_parse
    import re._constants as sre_c
except ImportError:  # Python < 3.11
    import sre_parse
    import sre_constants as sre_c

OUT = os.path.join(os.path.dirname(__file__), "..", "crates", "constrain-lark", "tests", "data")
PER_GRAMMAR = 30  # accepted and rejected strings wanted, each

GRAMMARS = {
    "arithmetic": r"""
        ?start: sum
        ?sum: product | sum "+" product -> add | sum "-" product -> sub
        ?product: atom | product "*" atom | product "/" atom
        ?atom: NUMBER | "-" atom | "(" sum ")"
        %import common.NUMBER
        %import common.WS_INLINE
        %ignore WS_INLINE
    """,
    "json": r"""
        ?start: value
        ?value: object | array | string | SIGNED_NUMBER | "true" | "false" | "null"
        array: "[" [value ("," value)*] "]"
        object: "{" [pair ("," pair)*] "}"
        pair: string ":" value
        string: ESCAPED_STRING
        %import common.ESCAPED_STRING
        %import common.SIGNED_NUMBER
        %import common.WS
        %ignore WS
    """,
    "csv_line": r"""
        start: field ("," field)*
        field: QUOTED | BARE |
        QUOTED: "\"" (/[^"]/ | "\"\"")* "\""
        BARE: /[^,"\n]+/
    """,
    "key_value_config": r"""
        start: (line? NEWLINE)* line?
        line: KEY "=" VALUE | COMMENT
        KEY: /[a-z_][a-z0-9_.]*/
        VALUE: /[^\n#]+/
        COMMENT: /#[^\n]*/
        %import common.NEWLINE
    """,
    "sql_select": r"""
        start: "select"i columns "from"i NAME where? ";"?
        columns: "*" | NAME ("," NAME)*
        where: "where"i cond (("and"i | "or"i) cond)*
        cond: NAME OP (NAME | NUMBER | STRING)
        OP: "=" | "<>" | "<=" | ">=" | "<" | ">"
        NAME: /[a-z_][a-z0-9_]*/
        STRING: /'[^']*'/
        %import common.NUMBER
        %import common.WS
        %ignore WS
    """,
    "separated_list": r"""
        start: "[" _sep{item, ","} "]" | "[" "]"
        _sep{x, sep}: x (sep x)*
        item: INT | WORD
        %import common (INT, WORD)
    """,
    "ignored_whitespace": r"""
        start: "a" "b" ("c" | "d")*
        %ignore " "
        %ignore /\t+/
    """,
    "case_insensitive_keywords": r"""
        start: ("begin"i stmt* "end"i)
        stmt: "print"i NAME ";"
        NAME: /[A-Z][a-z]*/
        %ignore " "
    """,
    "repetition_ranges": r"""
        start: "a"~3 "b"~1..2 ("c" | "d")~0..3 X~2
        X: "x" | "y"
    """,
    "terminal_ranges": r"""
        start: HEX (":" HEX)*
        HEX: ("0".."9" | "a".."f" | "A".."F")~2
    """,
    "optional_brackets": r"""
        start: "f" "(" [arg ("," arg)*] ")" ["!"]
        arg: CNAME ["=" INT]
        %import common (CNAME, INT)
    """,
    "nested_parens": r"""
        start: group*
        group: "(" group* ")" | "[" group* "]"
    """,
    "regex_flags": r"""
        start: WORD_I ("-" DOTS)?
        WORD_I: /hello|world/i
        DOTS: /a.c/s
    """,
    "regex_classes": r"""
        start: ID ":" DIGITS (";" SPACEY)?
        ID: /\w+/
        DIGITS: /\d{1,4}/
        SPACEY: /x\s+y/
    """,
    "signed_numbers": r"""
        start: SIGNED_NUMBER ("," SIGNED_NUMBER)*
        %import common.SIGNED_NUMBER
        %import common.WS
        %ignore WS
    """,
    "terminal_composition": r"""
        start: DATE ("T" TIME)?
        DATE: YEAR "-" MONTH "-" DAY
        YEAR: DIGIT~4
        MONTH: "0" "1".."9" | "1" "0".."2"
        DAY: "0".."2" DIGIT | "3" ("0" | "1")
        TIME: DIGIT~2 ":" DIGIT~2 (":" DIGIT~2)?
        %import common.DIGIT
    """,
    "inline_rules": r"""
        start: _item+
        _item: pair | word
        ?pair: word "=" word
        !word: LETTER+
        %import common.LETTER
        %ignore ","
    """,
    "aliases_and_priorities": r"""
        start: expr
        expr: term "+" expr -> plus | term
        term.2: NUM | "(" expr ")"
        NUM.3: /[0-9]+/
    """,
    "comments_ignored": r"""
        start: stmt*
        stmt: CNAME "(" ")" ";"
        %import common.CNAME
        %import common.WS
        %import common.CPP_COMMENT
        %import common.C_COMMENT
        %ignore WS
        %ignore CPP_COMMENT
        %ignore C_COMMENT
    """,
    "escaped_strings": r"""
        start: ESCAPED_STRING+
        %import common.ESCAPED_STRING
        %ignore " "
    """,
    "unicode_literals": r"""
        start: ("é" | "\u00fc" | "日本" | /[α-ω]+/)+
    """,
    "words_and_newlines": r"""
        start: line+
        line: WORD (WS_INLINE WORD)* NEWLINE
        %import common (WORD, WS_INLINE, NEWLINE)
    """,
    "alternation_star": r"""
        start: ("ab" | "a" | "b")* "c"
    """,
    "ambiguous_names": r"""
        start: NAME NAME?
        NAME: /[a-z]+/
        %ignore " "
    """,
    "imports_with_alias": r"""
        start: NUM ("," NUM)*
        %import common.INT -> NUM
        %import common.WS_INLINE -> SP
        %ignore SP
    """,
}

ALPHABET = list("abcdefxyzABC0123456789 ,;:=+-*/()[]{}\"'\\\t\n.!#_éα日") + ["SELECT", "where", "  "]


def gen_regex(pattern, flags, rng):
    """A random string matching `pattern`, or None."""
    try:
        tree = sre_parse.parse(pattern, flags)
    except Exception:
        return None
    for _ in range(20):
        out = []
        try:
            gen_seq(tree, rng, out, flags)
        except Exception:
            return None
        s = "".join(out)
        if re.fullmatch(pattern, s, flags):
            return s
    return None


CANDIDATES = [chr(c) for c in range(32, 127)] + list("\t\néüα日") + ["\u00a0"]


def pick_char(test, rng):
    cands = [c for c in CANDIDATES if test(c)]
    return rng.choice(cands) if cands else "a"


def gen_seq(items, rng, out, flags):
    for op, av in items:
        gen_item(op, av, rng, out, flags)


def gen_item(op, av, rng, out, flags):
    c = sre_c
    if op == c.LITERAL:
        ch = chr(av)
        if flags & re.I and rng.random() < 0.3:
            ch = ch.swapcase()
        out.append(ch)
    elif op == c.NOT_LITERAL:
        out.append(pick_char(lambda x: x != chr(av) and x != "\n", rng))
    elif op == c.ANY:
        out.append(pick_char(lambda x: x != "\n" or flags & re.S, rng))
    elif op == c.IN:
        pat = sre_to_class(av)
        out.append(pick_char(lambda x: re.fullmatch(pat, x, flags) is not None, rng))
    elif op in (c.MAX_REPEAT, c.MIN_REPEAT):
        lo, hi, sub = av
        hi = min(hi, lo + 3)
        for _ in range(rng.randint(lo, hi)):
            gen_seq(sub, rng, out, flags)
    elif op == c.SUBPATTERN:
        gen_seq(av[-1], rng, out, flags)
    elif op == c.BRANCH:
        gen_seq(rng.choice(av[1]), rng, out, flags)
    elif op in (c.AT, c.ASSERT, c.ASSERT_NOT):
        # Assertions produce nothing; a string they forbid fails the full match and is
        # drawn again.
        pass
    else:
        raise ValueError(op)


def sre_to_class(av):
    """A pattern for one IN item, rebuilt from the parsed class."""
    parts, neg = [], False
    for op, a in av:
        if op == sre_c.NEGATE:
            neg = True
        elif op == sre_c.LITERAL:
            parts.append(re.escape(chr(a)))
        elif op == sre_c.RANGE:
            parts.append(re.escape(chr(a[0])) + "-" + re.escape(chr(a[1])))
        elif op == sre_c.CATEGORY:
            parts.append({
                sre_c.CATEGORY_DIGIT: r"\d", sre_c.CATEGORY_NOT_DIGIT: r"\D",
                sre_c.CATEGORY_SPACE: r"\s", sre_c.CATEGORY_NOT_SPACE: r"\S",
                sre_c.CATEGORY_WORD: r"\w", sre_c.CATEGORY_NOT_WORD: r"\W",
            }[a])
    return "[" + ("^" if neg else "") + "".join(parts) + "]"


class Deriver:
    def __init__(self, parser, rng):
        self.rng = rng
        self.rules = {}
        for r in parser.rules:
            self.rules.setdefault(r.origin.name, []).append([s for s in r.expansion])
        self.terms = {t.name: t for t in parser.terminals}
        self.ignore = [self.terms[n] for n in parser.ignore_tokens] if hasattr(parser, "ignore_tokens") else []
        self.height = self.heights()

    def heights(self):
        h = {}
        changed = True
        while changed:
            changed = False
            for name, exps in self.rules.items():
                for e in exps:
                    hs = [0 if s.is_term else h.get(s.name) for s in e]
                    if None in hs:
                        continue
                    v = 1 + max(hs, default=0)
                    if v < h.get(name, 1 << 30):
                        h[name] = v
                        changed = True
        return h

    def terminal(self, name):
        t = self.terms[name]
        p = t.pattern
        if p.type == "str":
            s = p.value
            if "i" in p.flags:
                s = "".join(ch.swapcase() if self.rng.random() < 0.5 else ch for ch in s)
            return s
        flags = 0
        for f in p.flags:
            flags |= {"i": re.I, "m": re.M, "s": re.S, "u": 0, "x": re.X, "l": 0}[f]
        return gen_regex(p.value, flags, self.rng) or ""

    def derive(self, name, depth, out):
        exps = self.rules[name]
        if depth > 12:
            best = min(exps, key=lambda e: max([0 if s.is_term else self.height.get(s.name, 99) for s in e], default=0))
            exp = best
        else:
            exp = self.rng.choice(exps)
        for s in exp:
            if s.is_term:
                if self.ignore and self.rng.random() < 0.3:
                    out.append(self.terminal(self.rng.choice(self.ignore).name))
                out.append(self.terminal(s.name))
            else:
                self.derive(s.name, depth + 1, out)


def mutate(s, rng):
    k = rng.randrange(6)
    i = rng.randrange(len(s) + 1)
    if k == 0 and s:
        return s[:i] + s[i + 1:]
    if k == 1:
        return s[:i] + rng.choice(ALPHABET) + s[i:]
    if k == 2 and len(s) > 1:
        i = min(i, len(s) - 2)
        return s[:i] + s[i + 1] + s[i] + s[i + 2:]
    if k == 3 and s:
        j = rng.randrange(len(s))
        a, b = sorted((i, j))
        return s[:b] + s[a:b] + s[b:]
    if k == 4:
        return s[:i]
    return s[:i] + rng.choice(ALPHABET) + s[i + 1:]


def verdict(parser, s):
    try:
        parser.parse(s)
        return True
    except lark.exceptions.LarkError:
        return False


def main():
    os.makedirs(OUT, exist_ok=True)
    total = 0
    for name, text in GRAMMARS.items():
        rng = random.Random(name)
        dyn = lark.Lark(text, parser="earley", lexer="dynamic")
        comp = lark.Lark(text, parser="earley", lexer="dynamic_complete")
        deriver = Deriver(dyn, rng)
        deriver.ignore = [deriver.terms[n] for n in dyn.lexer_conf.ignore]
        seen = set()
        accept, reject, dependent = [], [], []

        def record(s):
            if s in seen:
                return
            seen.add(s)
            d, c = verdict(dyn, s), verdict(comp, s)
            if d != c:
                dependent.append({"text": s, "dynamic": d, "dynamic_complete": c})
            elif d:
                accept.append(s)
            else:
                reject.append(s)

        derived = []
        for _ in range(400):
            if len(accept) >= PER_GRAMMAR:
                break
            out = []
            try:
                deriver.derive("start", 0, out)
            except RecursionError:
                continue
            s = "".join(out)
            derived.append(s)
            record(s)
        pool = derived or [""]
        for _ in range(2000):
            if len(reject) >= PER_GRAMMAR:
                break
            s = rng.choice(pool)
            for _ in range(rng.randint(1, 2)):
                s = mutate(s, rng)
            record(s)
        case = {
            "name": name,
            "grammar": text,
            "accept": accept,
            "reject": reject,
            "lexer_dependent": dependent,
        }
        with open(os.path.join(OUT, name + ".json"), "w", encoding="utf-8") as f:
            json.dump(case, f, ensure_ascii=False, indent=1)
            f.write("\n")
        n = len(accept) + len(reject) + len(dependent)
        total += n
        print(f"{name}: {len(accept)} accepted, {len(reject)} rejected, {len(dependent)} lexer-dependent")
    print(f"{len(GRAMMARS)} grammars, {total} strings (lark {lark.__version__})")


if __name__ == "__main__":
    sys.exit(main())
