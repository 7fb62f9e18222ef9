```python
# A Python program sent inside a markdown fence: the fence is not code.
# expect: "5"
await tools.fixture.add(a=2, b=3)
```
