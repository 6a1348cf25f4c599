"""A tool-calling agent loop written as users write them with the `openai`
package, pointed at `memory serve`.

    python agent_loop.py BASE_URL STEPS [--stream] OUT.json

It asks the model to work through a task in STEPS steps, runs each tool
call it gets (every result starts "step K of N:" and carries a long
output), sends its whole history every call, and stops at the model's
closing answer. OUT.json gets the whole conversation as the client holds
it, and the `x-memory-session` of every call.
"""

import json
import sys

from openai import OpenAI

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "step",
            "description": "Carry out one step of the task.",
            "parameters": {
                "type": "object",
                "properties": {"step": {"type": "integer"}, "of": {"type": "integer"}},
                "required": ["step", "of"],
            },
        },
    }
]


def run_tool(arguments):
    args = json.loads(arguments)
    k, n = args["step"], args["of"]
    lines = [f"line {i} of the output of step {k}: value_{k}_{i} = {k * 1000 + i}" for i in range(30)]
    return f"step {k} of {n}: " + "\n".join(lines)


def call(client, messages, stream):
    raw = client.chat.completions.with_raw_response.create(
        model="scripted", messages=messages, tools=TOOLS, stream=stream, temperature=0
    )
    session = raw.headers.get("x-memory-session")
    if not stream:
        message = raw.parse().choices[0].message
        # As most loops do: the reply object goes back into the history.
        return session, message, [(c.id, c.function.arguments) for c in message.tool_calls or []]
    text, calls = "", {}
    for chunk in raw.parse():
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        text += delta.content or ""
        for c in delta.tool_calls or []:
            entry = calls.setdefault(c.index, {"id": "", "name": "", "arguments": ""})
            entry["id"] += c.id or ""
            if c.function:
                entry["name"] += c.function.name or ""
                entry["arguments"] += c.function.arguments or ""
    message = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for _, c in sorted(calls.items())
        ]
    return session, message, [(c["id"], c["arguments"]) for _, c in sorted(calls.items())]


def as_dict(message):
    return message if isinstance(message, dict) else message.model_dump(exclude_none=True)


def main():
    stream = "--stream" in sys.argv[1:]
    base_url, steps, out = [a for a in sys.argv[1:] if a != "--stream"][:3]
    steps = int(steps)
    client = OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    messages = [
        {"role": "system", "content": "You are a careful agent. Use the step tool."},
        {"role": "user", "content": f"Work through the task in {steps} steps ({'streamed' if stream else 'plain'})."},
    ]
    sessions = []
    for _ in range(steps + 2):
        session, message, calls = call(client, messages, stream)
        sessions.append(session)
        messages.append(message)
        if not calls:
            break
        for call_id, arguments in calls:
            messages.append({"role": "tool", "tool_call_id": call_id, "content": run_tool(arguments)})
    with open(out, "w") as f:
        json.dump({"messages": [as_dict(m) for m in messages], "sessions": sessions}, f)


if __name__ == "__main__":
    main()
