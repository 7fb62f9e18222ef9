// Totals per customer from the orders table the test seeded (Ada 12.5 + 7.5, Grace 30). The
// server answers rows as a Python list of dicts, not JSON: the program reads it as JSON once its
// quotes and None are made JSON's.
// expect: {"seeded":true,"totals":{"Ada":20,"Grace":30}}
const pythonRows = (text) =>
  JSON.parse(text.replace(/'/g, '"').replace(/\bNone\b/g, "null"));
const tables = pythonRows(await tools.sqlite.list_tables({}));
const rows = pythonRows(
  await tools.sqlite.read_query({
    query: "SELECT customer, SUM(amount) AS total FROM orders GROUP BY customer ORDER BY customer",
  }),
);
const totals = {};
for (const row of rows) totals[row.customer] = row.total;
return { seeded: tables.some((table) => table.name === "orders"), totals };
