"""A tool-calling loop over the Responses API, written as users write it
with the `openai` package, pointed at `memory serve`; then its remote
compaction, both ways the API offers it.

    python responses_loop.py BASE_URL STEPS [--stream] OUT.json

It asks the model to work through a task in STEPS steps, runs each call
(every result starts "step K of N:" and carries a long output), sending
its whole history each time. Then it compacts that history with
`responses.compact`, and again with a `compaction_trigger` item, goes on
from the compaction with a new task, and tries a forged handle and a
handle under another conversation's `session-id`. OUT.json gets what it
saw.
"""

import json
import sys

import openai
from openai import OpenAI

TOOLS = [
    {
        "type": "function",
        "name": "step",
        "description": "Carry out one step of the task.",
        "parameters": {
            "type": "object",
            "properties": {"step": {"type": "integer"}, "of": {"type": "integer"}},
            "required": ["step", "of"],
        },
    }
]

CONVERSATION = {"session-id": "conversation-a"}


def run_tool(arguments):
    args = json.loads(arguments)
    k, n = args["step"], args["of"]
    lines = [f"line {i} of step {k}: value_{k}_{i} = {k * 1000 + i}" for i in range(60)]
    return f"step {k} of {n}: " + "\n".join(lines)


def create(client, items, stream, headers=CONVERSATION):
    """The response's output items, as dicts."""
    if not stream:
        response = client.responses.create(
            model="scripted", input=items, tools=TOOLS, extra_headers=headers
        )
        return [item.model_dump(exclude_none=True) for item in response.output]
    done, completed, numbers = [], None, []
    events = client.responses.create(
        model="scripted", input=items, tools=TOOLS, stream=True, extra_headers=headers
    )
    for event in events:
        numbers.append(event.sequence_number)
        if event.type == "response.output_item.done":
            done.append(event.item.model_dump(exclude_none=True))
        elif event.type == "response.completed":
            completed = event.response
    assert completed is not None, "the stream completed"
    assert numbers == list(range(len(numbers))), numbers
    assert [i["id"] for i in done] == [i.id for i in completed.output]
    return done


def loop(client, items, stream):
    """Runs the task to the model's answer; the calls made."""
    calls = 0
    while True:
        output = create(client, items, stream)
        items.extend(output)
        fcs = [i for i in output if i["type"] == "function_call"]
        if not fcs:
            return calls
        for fc in fcs:
            calls += 1
            items.append(
                {"type": "function_call_output", "call_id": fc["call_id"], "output": run_tool(fc["arguments"])}
            )


def refused(client, items, headers, stream):
    try:
        create(client, items, stream, headers)
    except openai.BadRequestError as e:
        return e.body.get("param") if isinstance(e.body, dict) else str(e)
    return None


def main():
    base_url, steps = sys.argv[1], int(sys.argv[2])
    stream = "--stream" in sys.argv
    out = sys.argv[-1]
    client = OpenAI(base_url=base_url, api_key="sk-client", max_retries=0)
    items = [{"type": "message", "role": "user", "content": f"Do the task in {steps} steps."}]
    calls = loop(client, items, stream)

    compacted = client.responses.compact(model="scripted", input=items, extra_headers=CONVERSATION)
    by_endpoint = [i.model_dump(exclude_none=True) for i in compacted.output]
    by_trigger = create(client, items + [{"type": "compaction_trigger"}], stream)

    after = [by_trigger[0], {"type": "message", "role": "user", "content": "Now do it in 2 steps."}]
    more = loop(client, after, stream)

    forged = dict(by_trigger[0], encrypted_content=by_trigger[0]["encrypted_content"] + "0")
    new_task = {"type": "message", "role": "user", "content": "go on"}
    refusals = {
        "forged": refused(client, [forged, new_task], CONVERSATION, stream),
        "other_conversation": refused(client, [by_trigger[0], new_task], {"session-id": "conversation-b"}, stream),
    }
    with open(out, "w") as f:
        json.dump(
            {
                "calls": calls,
                "calls_after": more,
                "object": compacted.object,
                "by_endpoint": by_endpoint,
                "by_trigger": by_trigger,
                "after": after,
                "refusals": refusals,
            },
            f,
        )


if __name__ == "__main__":
    main()
