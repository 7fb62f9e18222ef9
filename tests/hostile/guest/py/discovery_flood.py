# 1500 search_tools calls gathered at once stop at the engine's discovery budget of 1000.
# expect-error: GuestError
# expect-message: more than 1000 search_tools/describe_tools calls in one execution
await asyncio.gather(*[search_tools("add") for i in range(1500)])
