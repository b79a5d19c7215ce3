#!/usr/bin/env python3
"""Validates grammar-constrained outputs against their JSON Schemas (an independent check of the
grammar engine): every line of the input file is {"name", "schema", "output"}; the output must
parse as JSON and validate with python3-jsonschema, formats included (checked here with the
standard library, since jsonschema's own checkers for some formats need extra packages).
Exit status 0 when all lines pass; failures are printed one per line."""
import datetime
import ipaddress
import json
import re
import sys
import urllib.parse
import uuid

import jsonschema

checker = jsonschema.FormatChecker()


def _date(s):
    if not isinstance(s, str):
        return True
    return bool(re.fullmatch(r"\d{4}-\d{2}-\d{2}", s)) and bool(datetime.date.fromisoformat(s))


_TIME = r"(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})"


def _time(s):
    if not isinstance(s, str):
        return True
    m = re.fullmatch(_TIME, s)
    return bool(m) and int(m[1]) < 24 and int(m[2]) < 60 and int(m[3]) < 60


def _date_time(s):
    if not isinstance(s, str):
        return True
    d, sep, t = s.partition("T")
    return sep == "T" and _date(d) and _time(t)


def _uuid(s):
    return not isinstance(s, str) or (len(s) == 36 and bool(uuid.UUID(s)))


def _email(s):
    return not isinstance(s, str) or bool(re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", s))


def _ipv4(s):
    return not isinstance(s, str) or bool(ipaddress.IPv4Address(s))


def _uri(s):
    if not isinstance(s, str):
        return True
    p = urllib.parse.urlparse(s)
    return bool(p.scheme) and re.fullmatch(r"[A-Za-z0-9._~:/?#@!$&'()*+,;=%-]+", s) is not None


for name, fn in [("date", _date), ("time", _time), ("date-time", _date_time), ("uuid", _uuid),
                 ("email", _email), ("ipv4", _ipv4), ("uri", _uri)]:
    checker.checks(name, raises=(ValueError,))(fn)


def main(path):
    failures = n = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            n += 1
            try:
                value = json.loads(rec["output"])
                schema = rec["schema"]
                # OpenAPI's "nullable" (which the engine honours) is not JSON Schema.
                if isinstance(schema, dict) and schema.get("nullable") and "type" in schema:
                    schema = dict(schema, type=[schema["type"], "null"])
                rec["schema"] = schema
                cls = jsonschema.validators.validator_for(rec["schema"],
                                                          default=jsonschema.Draft202012Validator)
                cls(rec["schema"], format_checker=checker).validate(value)
            except Exception as e:  # noqa: BLE001 - report any failure
                failures += 1
                print(f"FAIL {rec['name']}: {rec['output']!r}: {type(e).__name__}: "
                      f"{str(e).splitlines()[0]}")
    print(f"validated {n} outputs, {failures} failures")
    return 1 if failures or n == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
