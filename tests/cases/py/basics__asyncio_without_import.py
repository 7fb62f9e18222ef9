# asyncio is there without an import; importing it again does no harm. Top-level await works.
# expect: [[1,2],[1,2]]
async def pair():
    return await asyncio.gather(asyncio_free(1), asyncio_free(2))

async def asyncio_free(value):
    return value

first = await pair()
import asyncio
second = asyncio.run(pair())
[first, second]
