#!/usr/bin/env python3
"""Usage: scripts/locomo-long-chat.py [OUTPUT] [--times N]

Writes one long chat, an OpenAI chat JSON transcript (an array of
messages), made of the LoCoMo conversations of the data directory one after
the other, N times in a row (default 4): a system prompt, then each
utterance of speaker_a as a user message and of speaker_b as an assistant
message, consecutive utterances of one role joined into one message (with a
newline), so that the chat alternates. From the data directory's seven
conversations (4,124 utterances) four times this is 16,106 messages and
8,052 model calls: a session far longer than any one conversation, for
measuring how a strategy's time per call grows with the session.

  scripts/locomo-long-chat.py long-chat.json
  memory replay --input long-chat.json --budget 8000 \\
      --pipeline window --pipeline thrift --report report-long-chat.json

Environment:
  MEMORY_DATA_DIR  data directory (default: ../shared/data from the
                   repository root); reads locomo/locomo-dev.json there.
"""

import json
import os
import re
import sys


def utterances(sample):
    """The (role, text) of each utterance of one LoCoMo sample, in order."""
    conversation = sample["conversation"]
    user = conversation["speaker_a"]
    sessions = sorted(
        (int(key.split("_")[1]), value)
        for key, value in conversation.items()
        if re.fullmatch(r"session_\d+", key) and isinstance(value, list)
    )
    for _, session in sessions:
        for utterance in session:
            role = "user" if utterance["speaker"] == user else "assistant"
            yield role, utterance["text"]


def long_chat(samples, times):
    """The system prompt and the joined utterances of `samples`, `times`
    times over."""
    messages = [
        {
            "role": "system",
            "content": "You are one of two friends chatting. Reply as yourself.",
        }
    ]
    for _ in range(times):
        for sample in samples:
            for role, text in utterances(sample):
                last = messages[-1]
                if last["role"] == role:
                    last["content"] += "\n" + text
                else:
                    messages.append({"role": role, "content": text})
    return messages


def main(argv):
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        return 0
    times, output = 4, None
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg == "--times" and rest:
            times = int(rest.pop(0))
        elif output is None and not arg.startswith("-"):
            output = arg
        else:
            print(f"locomo-long-chat: unexpected argument `{arg}`", file=sys.stderr)
            return 2
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    data = os.environ.get("MEMORY_DATA_DIR") or os.path.join(repo, "..", "shared", "data")
    path = os.path.join(data, "locomo", "locomo-dev.json")
    if not os.path.exists(path):
        print(f"locomo-long-chat: {path} not found; set MEMORY_DATA_DIR", file=sys.stderr)
        return 1
    with open(path, encoding="utf-8") as f:
        samples = json.load(f)
    messages = long_chat(samples, times)
    calls = sum(1 for m in messages if m["role"] == "assistant")
    text = json.dumps(messages, ensure_ascii=False)
    if output is None:
        sys.stdout.write(text + "\n")
    else:
        with open(output, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    print(f"locomo-long-chat: {len(messages)} messages, {calls} calls", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
