#!/usr/bin/env python3
"""The official JSON Schema Test Suite (draft 2020-12) through `deepinfer grammar-check`.

usage: json_schema_suite.py DEEPINFER_BIN TOKENIZER_DIR SUITE.jsonl [--table FILE] [--check]
                            [--min-passed N] [--json-schema-strict on|off]

Every group's schema is compiled as a structured-output constraint and every instance of the
group is walked through the matcher, as constrained decoding would generate it. A group is
  passed             compiled; every valid instance accepted, every invalid one rejected
  over-constrained   compiled; some valid instance rejected (output the user asked for is
                     impossible)
  under-constrained  compiled; some invalid instance accepted (output that breaks the schema is
                     possible)
  refused            the compiler refused the schema with an error
An unsatisfiable schema must be an error before generation: a refusal that says the schema
matches nothing (UNSATISFIABLE) counts as passed when the group has no valid instance.
Prints the per-category table (Markdown). --table writes it to FILE as well. --check exits 1
when any group is under-constrained (conformance is absolute: a schema the grammar cannot
express exactly must be refused) or fewer than N groups pass (--min-passed: the coverage
reached so far may not regress). Over-constrained groups are printed; docs/structured_outputs.md
says which deliberate choices cause them (format asserted, object keys in schema order; with
--json-schema-strict on, the default, as grammar-check's: no extra properties unless
additionalProperties allows them).
"""
import collections
import json
import re
import subprocess
import sys

# The compiler's errors for a schema no value satisfies.
UNSATISFIABLE = re.compile(r"matches nothing|nothing matches|every branch is false|"
                           r"'enum' must be a non-empty array|minContains above maxContains|"
                           r"matches no element")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    binary, tokenizer, suite = args[:3]
    table_file = None
    if "--table" in sys.argv:
        table_file = sys.argv[sys.argv.index("--table") + 1]
        args.remove(table_file)
    strict = "on"
    if "--json-schema-strict" in sys.argv:
        strict = sys.argv[sys.argv.index("--json-schema-strict") + 1]
        args.remove(strict)
    min_passed = 0
    if "--min-passed" in sys.argv:
        min_passed = int(sys.argv[sys.argv.index("--min-passed") + 1])
        args.remove(str(min_passed))
    groups = [json.loads(line) for line in open(suite, encoding="utf-8") if line.strip()]
    records = "".join(
        json.dumps({"schema": g["schema"], "instances": [t["data"] for t in g["tests"]]},
                   ensure_ascii=False) + "\n" for g in groups)
    run = subprocess.run([binary, "grammar-check", "--tokenizer", tokenizer,
                          "--json-schema-strict", strict], input=records,
                         capture_output=True, text=True, timeout=1200)
    if run.returncode != 0:
        sys.exit("grammar-check failed: " + run.stderr[-2000:])
    answers = [json.loads(line) for line in run.stdout.splitlines()]
    if len(answers) != len(groups):
        sys.exit(f"grammar-check answered {len(answers)} lines for {len(groups)} groups")
    kinds = ("passed", "over", "under", "refused")
    by_category = collections.OrderedDict()
    problems = []
    for g, a in zip(groups, answers):
        row = by_category.setdefault(g["category"], dict.fromkeys(kinds, 0))
        if "error" in a:
            no_valid = not any(t["valid"] for t in g["tests"])
            row["passed" if no_valid and UNSATISFIABLE.search(a["error"]) else "refused"] += 1
            continue
        over = [t for t, ok in zip(g["tests"], a["accepted"]) if t["valid"] and not ok]
        under = [t for t, ok in zip(g["tests"], a["accepted"]) if not t["valid"] and ok]
        if over:
            row["over"] += 1
            problems.append(("over-constrained", g, over[0]))
        elif under:
            row["under"] += 1
            problems.append(("under-constrained", g, under[0]))
        else:
            row["passed"] += 1
    lines = ["| category | groups | passed | over-constrained | under-constrained | refused |",
             "|---|---|---|---|---|---|"]
    totals = dict.fromkeys(kinds, 0)
    full = 0
    for category, row in by_category.items():
        n = sum(row.values())
        full += row["passed"] == n
        for k in kinds:
            totals[k] += row[k]
        lines.append(f"| {category} | {n} | {row['passed']} | {row['over']} | {row['under']} | "
                     f"{row['refused']} |")
    n_all = sum(totals.values())
    lines.append(f"| **all** ({len(by_category)} categories, {full} fully passed) | {n_all} | "
                 f"{totals['passed']} | {totals['over']} | {totals['under']} | "
                 f"{totals['refused']} |")
    table = "\n".join(lines) + "\n"
    print(table)
    for kind, g, t in problems:
        print(f"{kind}: {g['category']} #{g['group']} ({g['description']}): "
              f"{json.dumps(t['data'], ensure_ascii=False)[:120]}")
    if table_file:
        with open(table_file, "w", encoding="utf-8") as f:
            f.write(table)
    if "--check" in sys.argv:
        if totals["under"]:
            sys.exit(f"{totals['under']} groups under-constrained: output that breaks its schema "
                     "could be generated")
        if totals["passed"] < min_passed:
            sys.exit(f"{totals['passed']} groups passed, fewer than {min_passed}")


if __name__ == "__main__":
    main()
