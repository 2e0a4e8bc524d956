"""Several agents at once with the asyncio API: each claims its own sandbox, runs its code and
releases it, concurrently.

    /usr/bin/python3 sdk/python/examples/async_agents.py --pool python --agents 3
"""

import argparse
import asyncio

from kubox import AsyncClient, AsyncSandbox


async def agent(client: AsyncClient, pool: str, n: int) -> str:
    async with AsyncSandbox.claim(pool=pool, client=client, ttl=600) as sb:
        await sb.files.write(f"/tmp/agent{n}.py", f"print(sum(range({n} * 1000)))")
        res = await sb.run(f"python3 /tmp/agent{n}.py", check=True)
        return f"agent {n} in {sb}: {res.stdout.strip()}"


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pool", default="python")
    ap.add_argument("--namespace", default=None)
    ap.add_argument("--agents", type=int, default=3)
    args = ap.parse_args()
    async with AsyncClient(namespace=args.namespace) as client:
        for line in await asyncio.gather(*(agent(client, args.pool, n) for n in range(1, args.agents + 1))):
            print(line)


if __name__ == "__main__":
    asyncio.run(main())
