"""Chat questions to `deepinfer serve --spec dspark` on the trained default model (see
trained_model_test.sh). The questions are written here, not drawn from train/data: the kinds the
model was trained on (a word, a verse, a saying, a Python name) and a few it was not.

Checks, with max_tokens 128, at temperature 0 and again with no sampling fields at all (the
model's generation_config.json: what a client that sets nothing gets), seeds 0 and 1:
  * at least END_FRACTION of the replies end by themselves (finish_reason "stop", i.e. EOS);
  * at least WORD_FRACTION of the alphabetic words of all replies are English words
    (/usr/share/dict/words, Debian's wamerican, plus the words of the questions);
  * deepinfer_spec_decode_acceptance_rate on /metrics >= ACCEPTANCE (measured on the greedy
    replies, before the sampled ones).
usage: trained_model_client.py URL
"""
import json
import re
import sys
import urllib.request

# Floors for the model as shipped (step 1,750 with its self-distilled DSpark stage, measured on it:
# 1.00, 0.983, 0.889 with one draft per verify step; step 900 gave 1.00, 0.970, 0.639; the
# random-weight model gives ~0 for all three). Issue 24's targets are 0.75 / 0.8 / 0.3; the floors
# keep a margin for other kernel levels (AVX2 hosts round differently).
END_FRACTION = 0.75
WORD_FRACTION = 0.93
ACCEPTANCE = 0.7

QUESTIONS = [
    "What does the word lantern mean?",
    "Define courage.",
    "What is a harbor?",
    "What does generous mean?",
    "Explain the word orchard.",
    "Quote Psalm 23:1.",
    "What does Matthew 5:9 say?",
    "Tell me a proverb.",
    "Tell me a saying.",
    "What does list.append do?",
    "What is the os.path module?",
    "What does math.sqrt do?",
    "What is a river?",
    "Define kindness.",
    "Hello!",
    "Who was Abraham Lincoln?",
]


def post(url, body):
    req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read())


def metric(url, name):
    with urllib.request.urlopen(url + "/metrics", timeout=60) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    raise AssertionError(f"{name} is not on /metrics")


def ask(url, dictionary, sampling, label):
    """The questions with `sampling` added to each request; asserts the end and word floors."""
    ended, words, known, replies = 0, 0, 0, 0
    for q in QUESTIONS:
        for extra in sampling:
            r = post(url, {"model": "m", "messages": [{"role": "user", "content": q}],
                           "max_tokens": 128, **extra})
            choice = r["choices"][0]
            text = choice["message"]["content"] or ""
            ws = [w.lower() for w in re.findall(r"[A-Za-z]+", text)]
            words += len(ws)
            known += sum(w in dictionary for w in ws)
            ended += choice["finish_reason"] == "stop"
            replies += 1
            print(f"Q: {q} {extra}\nA ({choice['finish_reason']}, {r['usage']['completion_tokens']} tokens): {text}\n")
    end_fraction = ended / replies
    word_fraction = known / max(1, words)
    print(f"{label}: ended by themselves: {ended}/{replies} = {end_fraction:.2f} (limit {END_FRACTION})")
    print(f"{label}: English words: {known}/{words} = {word_fraction:.3f} (limit {WORD_FRACTION})")
    assert end_fraction >= END_FRACTION, f"{label}: too few replies end by themselves"
    assert words > 0 and word_fraction >= WORD_FRACTION, f"{label}: replies are not made of English words"


def main():
    url = sys.argv[1]
    with open("/usr/share/dict/words", encoding="utf-8") as f:
        dictionary = {w.strip().lower() for w in f}
    for q in QUESTIONS:
        dictionary.update(w.lower() for w in re.findall(r"[A-Za-z]+", q))
    ask(url, dictionary, [{"temperature": 0}], "greedy")
    acceptance = metric(url, "deepinfer_spec_decode_acceptance_rate")
    print(f"DSpark acceptance rate: {acceptance:.3f} (limit {ACCEPTANCE})")
    assert acceptance >= ACCEPTANCE, "DSpark acceptance below the limit"
    ask(url, dictionary, [{"seed": 0}, {"seed": 1}], "the model's defaults")


if __name__ == "__main__":
    main()
