# The columns of the seeded orders table, with their types.
# expect: [["id", "INTEGER"], ["customer", "TEXT"], ["amount", "REAL"]]
import json

text = await tools.sqlite.describe_table(table_name="orders")
columns = json.loads(text.replace("'", '"').replace("None", "null"))
[[column["name"], column["type"]] for column in columns]
