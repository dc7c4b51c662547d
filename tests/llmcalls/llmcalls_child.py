"""A child process for the kill -9 and shared-store tests: answers ``N`` calls (numbered from
``argv[2]``, default 0) through a SimulatedServer (each answer takes a while) into the answer store
under ``argv[1]``, then prints the client's counts."""

from __future__ import annotations

import json
import sys
import time

from sourcebias.llmcalls import open_client, user_call
from sourcebias.llmcalls.simulated import SimulatedServer

N = 40


def slow(messages, params):
    time.sleep(0.05)
    return messages[-1]["content"].upper(), None


if __name__ == "__main__":
    start = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    with SimulatedServer(slow, model="slow") as url:
        client = open_client(f"openai:slow@{url}", cache_dir=sys.argv[1], concurrency=2)
        answers = client.answer([user_call(f"call {i}") for i in range(start, start + N)])
        assert [a.text for a in answers] == [f"CALL {i}" for i in range(start, start + N)]
        print(json.dumps(client.describe()["calls"]))
