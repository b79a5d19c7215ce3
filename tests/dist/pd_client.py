#!/usr/bin/env python3
"""The requests of the prefill/decode disaggregation test (tests/dist/pd_serve_test.sh), sent to one
endpoint; prints their answers without the per-server fields (ids, timestamps, cached_tokens), so
two endpoints that answer alike print the same bytes.

  pd_client.py URL

Prompts are several KV pages long (the default model's pages hold 64 positions), so a hand-off
carries pages and the decode instance computes only the partial last page."""
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from api_client import chat, completion, connect, stream  # noqa: E402

connect(sys.argv[1])
WORDS = ("river stone lantern orbit maple signal harbor velvet copper meadow quartz ember "
         "falcon ledger prism willow canyon ribbon summit glacier").split()


def text(seed, n_words):
    return " ".join(WORDS[(seed * 7 + i * i * 3 + i) % len(WORDS)] for i in range(n_words))


REQUESTS = [
    ("completion", {"prompt": text(1, 260), "max_tokens": 24, "temperature": 0, "logprobs": 2}),
    ("completion", {"prompt": text(2, 330), "max_tokens": 20, "temperature": 0.9, "seed": 5,
                    "n": 2}),
    ("chat", {"messages": [{"role": "system", "content": text(3, 300)},
                           {"role": "user", "content": "Hello!"}],
              "max_tokens": 20, "temperature": 1.0, "seed": 3}),
    ("completion", {"prompt": text(4, 280) + " Give me JSON", "max_tokens": 40,
                    "temperature": 0.8, "seed": 4,
                    "response_format": {"type": "json_schema", "json_schema": {
                        "name": "x", "schema": {"type": "object",
                                                "properties": {"a": {"type": "integer"}},
                                                "required": ["a"],
                                                "additionalProperties": False}}}}),
    ("completion", {"prompt": text(5, 40), "max_tokens": 12, "temperature": 0.7, "seed": 9}),
    ("stream_chat", {"messages": [{"role": "user", "content": text(6, 350)}],
                     "max_tokens": 30, "temperature": 0.6, "seed": 12}),
    ("stream_completion", {"prompt": text(7, 270), "max_tokens": 24, "temperature": 0}),
]


def run(kind, body):
    if kind == "completion":
        return completion(body)
    if kind == "chat":
        return chat(body)
    if kind == "stream_chat":
        return stream("/v1/chat/completions", dict(body, model="m"))
    return stream("/v1/completions", dict(body, model="m"))


out = [run(k, b) for k, b in REQUESTS]
# The same again, four at once: the prompts' pages are now cached on the decode side.
with ThreadPoolExecutor(4) as pool:
    out.append(list(pool.map(lambda kb: run(*kb), REQUESTS[:4])))
print(json.dumps(out))
