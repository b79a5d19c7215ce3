"""What the multi-process tests' clients share (tests/dist/router_client.py, pd_client.py): an
endpoint, and the OpenAI / Anthropic requests with their answers reduced to what two servers
that answer alike share (no ids, timestamps or cached_tokens)."""
import json
import urllib.request

URL = ""
HEADERS = {"Content-Type": "application/json"}


def connect(url, key=""):
    """Sends the requests below to `url` (with a Bearer key when given)."""
    global URL
    URL = url
    if key:
        HEADERS["Authorization"] = "Bearer " + key


def post(path, body):
    req = urllib.request.Request(URL + path, data=json.dumps(body).encode(), headers=HEADERS)
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read())


def stream(path, body):
    """Per choice: the concatenated text deltas and the finish reason; whether it ended."""
    req = urllib.request.Request(URL + path, data=json.dumps(dict(body, stream=True)).encode(),
                                 headers=HEADERS)
    texts, finish, end = {}, {}, False
    with urllib.request.urlopen(req, timeout=300) as r:
        for raw in r:
            line = raw.decode().rstrip("\n")
            if not line.startswith("data: "):
                continue
            if line == "data: [DONE]":
                end = True
                continue
            event = json.loads(line[6:])
            if event.get("type") == "content_block_delta":  # Anthropic
                texts[0] = texts.get(0, "") + event["delta"].get("text", "")
            elif event.get("type") == "message_delta":
                finish[0] = event["delta"].get("stop_reason")
            elif event.get("type") == "message_stop":
                end = True
            for c in event.get("choices", []):
                piece = c.get("text") if "text" in c else (c.get("delta") or {}).get("content")
                texts[c["index"]] = texts.get(c["index"], "") + (piece or "")
                if c.get("finish_reason"):
                    finish[c["index"]] = c["finish_reason"]
    return [sorted(texts.items()), sorted(finish.items()), end]


def completion(body):
    r = post("/v1/completions", dict(body, model="m"))
    return [[c["index"], c["text"], c["finish_reason"],
             (c.get("logprobs") or {}).get("token_logprobs")] for c in r["choices"]]


def chat(body):
    r = post("/v1/chat/completions", dict(body, model="m"))
    return [[c["index"], c["message"].get("content"), c["finish_reason"]] for c in r["choices"]]


def messages(body):
    r = post("/v1/messages", dict(body, model="m"))
    return [[b.get("type"), b.get("text")] for b in r["content"]] + [r["stop_reason"]]
