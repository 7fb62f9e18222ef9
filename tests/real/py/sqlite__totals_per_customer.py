# Ada's orders from the table the test seeded (12.5 and 7.5), counted and summed in SQL. The rows
# come as a Python list of dicts written out, read here as JSON once its quotes are JSON's.
# expect: {"orders": 2, "total": 20.0}
import json

text = await tools.sqlite.read_query(
    query="SELECT COUNT(*) AS orders, SUM(amount) AS total FROM orders WHERE customer = 'Ada'"
)
row = json.loads(text.replace("'", '"'))[0]
{"orders": row["orders"], "total": row["total"]}
