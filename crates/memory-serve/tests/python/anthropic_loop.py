"""A tool-use loop written as users write them with Anthropic's `anthropic`
package, pointed at `memory serve`'s Messages front.

    python anthropic_loop.py BASE_URL STEPS PAD [--stream] OUT.json

It asks the model to work through a task in STEPS steps, runs each
`tool_use` it gets (every result starts "step K of N:" and carries PAD
characters of output), sends its whole conversation every call (each
assistant turn's content blocks as the SDK returned them, the tool results
in a user turn), and stops at the model's closing answer. Streamed, it
reads each reply with `client.messages.stream(...)` and
`get_final_message()`.

OUT.json gets the system prompt, the conversation as the client holds it,
the `x-memory-session` and stop reason of every call, and the body of every
request the SDK sent, as it went on the wire.
"""

import json
import sys

import anthropic

SYSTEM = "You are a careful agent. Use the step tool."

TOOLS = [
    {
        "name": "step",
        "description": "Carry out one step of the task.",
        "input_schema": {
            "type": "object",
            "properties": {"step": {"type": "integer"}, "of": {"type": "integer"}},
            "required": ["step", "of"],
        },
    }
]


def run_tool(tool_input, pad):
    k, n = tool_input["step"], tool_input["of"]
    output = " ".join(f"value_{k}_{i}={k * 1000 + i};" for i in range(pad))
    return f"step {k} of {n}: {output[:pad]}"


def call(client, messages, stream):
    """The session header and the reply of one call."""
    params = dict(model="scripted", max_tokens=256, system=SYSTEM, tools=TOOLS, messages=messages)
    if stream:
        with client.messages.stream(**params) as events:
            session = events.response.headers.get("x-memory-session")
            return session, events.get_final_message()
    raw = client.messages.with_raw_response.create(**params)
    return raw.headers.get("x-memory-session"), raw.parse()


def as_json(value):
    """A turn's content as JSON: the SDK's blocks dumped as it sends them."""
    if isinstance(value, list):
        return [as_json(v) for v in value]
    if isinstance(value, dict):
        return {k: as_json(v) for k, v in value.items()}
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_none=True)
    return value


def main():
    stream = "--stream" in sys.argv[1:]
    base_url, steps, pad, out = [a for a in sys.argv[1:] if a != "--stream"][:4]
    steps, pad = int(steps), int(pad)
    sent = []

    def record(request):
        if request.url.path.endswith("/v1/messages"):
            sent.append(json.loads(request.read()))

    client = anthropic.Anthropic(
        base_url=base_url,
        api_key="sk-ant-test",
        max_retries=0,
        http_client=anthropic.DefaultHttpxClient(event_hooks={"request": [record]}),
    )
    messages = [
        {"role": "user", "content": f"Work through the task in {steps} steps ({'streamed' if stream else 'plain'})."}
    ]
    sessions, stops = [], []
    for _ in range(steps + 2):
        session, message = call(client, messages, stream)
        sessions.append(session)
        stops.append(message.stop_reason)
        # As most loops do: the reply's content goes back as it came.
        messages.append({"role": "assistant", "content": message.content})
        uses = [b for b in message.content if b.type == "tool_use"]
        if message.stop_reason != "tool_use":
            break
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": b.id, "content": run_tool(b.input, pad)} for b in uses
                ],
            }
        )
    summary = {
        "system": SYSTEM,
        "messages": as_json(messages),
        "sessions": sessions,
        "stop_reasons": stops,
        "sent": sent,
    }
    with open(out, "w") as f:
        json.dump(summary, f)


if __name__ == "__main__":
    main()
