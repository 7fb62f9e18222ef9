# A result that is not a single text item is the content list.
# expect: ["image"]
content = await tools.fixture.image()
[item["type"] for item in content]
