"""keep_alive against a real kubox-agent: its calls are activity the agent reports."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from kubox import AsyncSandbox, ConfigError, NotFoundError, Sandbox
from kubox._proto.kubox.agent.v1 import activity_pb2


def last_request(agent) -> float:
    """The agent's last request time in seconds (GetActivity, which is not activity itself)."""
    r = httpx.post(f"{agent.url}/kubox.agent.v1.ActivityService/GetActivity",
                   content=activity_pb2.GetActivityRequest().SerializeToString(),
                   headers={"Authorization": f"Bearer {agent.token}", "Content-Type": "application/proto"})
    r.raise_for_status()
    m = activity_pb2.GetActivityResponse.FromString(r.content)
    return m.last_request_time.ToNanoseconds() / 1e9 if m.HasField("last_request_time") else 0.0


def wait_for(cond, what: str) -> None:
    deadline = time.monotonic() + 30
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_keep_alive_calls_the_agent_every_interval(agent):
    with Sandbox.attach(agent.url, agent.token, name="local") as sb:
        assert last_request(agent) == 0.0
        with sb.keep_alive(interval=0.2) as ka:
            wait_for(lambda: ka.calls >= 3, "three keep-alive calls")
            first = last_request(agent)
            assert first > 0
            wait_for(lambda: last_request(agent) > first, "a later keep-alive call")
        calls = ka.calls
        time.sleep(0.5)
        assert ka.calls == calls, "calls went on after the block ended"


@pytest.mark.asyncio
async def test_async_keep_alive_stops_and_raises_when_the_sandbox_is_gone(agent):
    # A URL under which the agent answers 404, as the router does for a deleted sandbox.
    async with AsyncSandbox.attach(agent.url + "/gone", agent.token) as sb:
        with pytest.raises(NotFoundError):
            async with sb.keep_alive(interval=0.05) as ka:
                while ka.error is None:
                    await asyncio.sleep(0.02)


def test_keep_alive_refuses_a_bad_interval(agent):
    with Sandbox.attach(agent.url, agent.token) as sb:
        with pytest.raises(ConfigError):
            sb.keep_alive(interval=0)
