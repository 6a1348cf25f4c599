"""Two clients of one team's server, each with its own key, written as
users write them with the `openai` package (and the standard library's
`urllib` for the server's own session routes).

    python two_keys.py BASE_URL ALICE_KEY BOB_KEY OUT.json

Alice has a conversation; Bob then names her session, sends her visible
history and starts with the opening she used; Alice starts a second
conversation, and Bob asks for it and a recall from it, and for the one
he named. OUT.json gets what each call answered: the session and
admission headers, and the status and body of every inspection.
"""

import json
import sys
import urllib.error
import urllib.request

from openai import OpenAI, NotFoundError


def call(client, messages, session=None, stream=False):
    headers = {"X-Memory-Session": session} if session else {}
    raw = client.chat.completions.with_raw_response.create(
        model="m", messages=messages, extra_headers=headers, stream=stream
    )
    if stream:
        text = "".join(c.choices[0].delta.content or "" for c in raw.parse() if c.choices)
    else:
        text = raw.parse().choices[0].message.content
    return {
        "session": raw.headers.get("x-memory-session"),
        "admission": raw.headers.get("x-memory-admission"),
        "text": text,
    }


def fetch(url, key, body=None):
    """Status, body and header names (but the date and length) of a call."""
    headers = {"Authorization": f"Bearer {key}"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request) as r:
            status, text, names = r.status, r.read().decode(), list(r.headers.keys())
    except urllib.error.HTTPError as e:
        status, text, names = e.code, e.read().decode(), list(e.headers.keys())
    names = sorted(n.lower() for n in names if n.lower() not in ("date", "content-length"))
    return status, text, names


def inspect(base_url, key, session):
    root = base_url.removesuffix("/v1")
    status, body, headers = fetch(f"{root}/v1/memory/sessions/{session}", key)
    recall_status, recall_body, _ = fetch(
        f"{root}/v1/memory/sessions/{session}/recall", key, {"handle": "r:000000000000"}
    )
    return {
        "status": status,
        "body": body.replace(session, "ID"),
        "headers": headers,
        "recall_status": recall_status,
        "recall_body": recall_body.replace(session, "ID"),
    }


def main():
    base_url, alice_key, bob_key, out = sys.argv[1:5]
    alice = OpenAI(base_url=base_url, api_key=alice_key, max_retries=0)
    bob = OpenAI(base_url=base_url, api_key=bob_key, max_retries=0)
    opening = [
        {"role": "system", "content": "You are the team's agent."},
        {"role": "user", "content": "alpha secret 777"},
    ]
    result = {"alice": call(alice, opening)}
    session = result["alice"]["session"]
    history = opening + [
        {"role": "assistant", "content": result["alice"]["text"]},
        {"role": "user", "content": "and then?"},
    ]
    result["bob_named"] = call(bob, [{"role": "user", "content": "beta 1"}], session=session)
    result["bob_history"] = call(bob, history, stream=True)
    result["bob_opening"] = call(bob, opening)
    result["alice_again"] = call(alice, history, stream=True)
    result["alice_second"] = call(alice, [{"role": "user", "content": "gamma private 888"}])
    result["bob_inspects"] = inspect(base_url, bob_key, result["alice_second"]["session"])
    result["bob_inspects_named"] = inspect(base_url, bob_key, session)
    result["bob_inspects_missing"] = inspect(base_url, bob_key, "s-" + "0" * 32)
    result["alice_inspects"] = inspect(base_url, alice_key, session)
    try:
        bob.models.list()
        result["bob_models"] = "ok"
    except NotFoundError:
        result["bob_models"] = "404"
    with open(out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
