#!/usr/bin/env python3
"""The requests of the router test (tests/dist/router_test.sh), sent to one endpoint; prints their
answers without the per-server fields (ids, timestamps, cached_tokens), so that a worker and the
router in front of it print the same bytes.

  router_client.py URL [API_KEY]

Greedy and seeded; completions, chat and Anthropic messages; whole and streamed (SSE deltas
concatenated per choice); one after the other, then a batch at once."""
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from api_client import chat, completion, connect, messages, stream  # noqa: E402

connect(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "")

LONG = " ".join(("river stone lantern orbit maple signal harbor velvet copper meadow").split() * 25)
SEQUENTIAL = [
    lambda: completion({"prompt": "The quick brown fox", "max_tokens": 16, "temperature": 0,
                        "logprobs": 2}),
    lambda: completion({"prompt": "Once upon a time", "max_tokens": 20, "temperature": 0.9,
                        "seed": 5, "n": 2}),
    lambda: completion({"prompt": LONG, "max_tokens": 12, "temperature": 0.7, "seed": 3}),
    lambda: stream("/v1/completions", {"model": "m", "prompt": "Numbers: 1 2 3",
                                       "max_tokens": 18, "temperature": 0.8, "seed": 9}),
    lambda: chat({"messages": [{"role": "user", "content": "Hello!"}], "max_tokens": 16,
                  "temperature": 0}),
    lambda: stream("/v1/chat/completions", {"model": "m", "max_tokens": 20, "temperature": 1.0,
                                            "seed": 12, "messages": [
                                                {"role": "system", "content": LONG},
                                                {"role": "user", "content": "Go on."}]}),
    lambda: messages({"max_tokens": 14, "temperature": 0, "system": "Be brief.",
                      "messages": [{"role": "user", "content": "Hi there"}]}),
    # (the Anthropic API has no seed: greedy)
    lambda: stream("/v1/messages", {"model": "m", "max_tokens": 14, "temperature": 0,
                                    "messages": [{"role": "user", "content": "Yo"}]}),
]
TOGETHER = [
    {"prompt": "Alpha beta gamma", "max_tokens": 20, "temperature": 0.9, "seed": 5},
    {"prompt": "In the beginning", "max_tokens": 24, "temperature": 0},
    {"prompt": "The weather today", "max_tokens": 30, "temperature": 0.7, "seed": 2,
     "stop": ["e"]},
    {"prompt": LONG + " and then", "max_tokens": 10, "temperature": 1.2, "seed": 21, "top_k": 5},
]

out = [f() for f in SEQUENTIAL]
with ThreadPoolExecutor(len(TOGETHER)) as pool:
    out.append(list(pool.map(completion, TOGETHER)))
print(json.dumps(out, ensure_ascii=False))
