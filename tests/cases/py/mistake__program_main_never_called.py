# An async main defined and never called (the asyncio.run line left out): it is called.
# expect: 9
import asyncio


async def main():
    total = await tools.fixture.add(a=2, b=3)
    return int(total) + 4
