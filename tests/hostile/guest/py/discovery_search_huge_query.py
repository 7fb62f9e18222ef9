# A search query of 400 KB is refused; a caught refusal leaves the next search working.
# expect: {"refused":"a search query is at most 1000 bytes, and this one is 400000. Search with a few words that say what the tool should do.","found":true}
refused = None
try:
    await search_tools("add " * 100000)
except Exception as error:
    refused = str(error)
hits = await search_tools("add two numbers")
{"refused": refused, "found": len(hits) > 0}
