// A table of its own: created, three rows written, then counted and summed back.
// expect: {"affected":3,"count":3,"sum":60}
const run = (query) => tools.sqlite.write_query({ query });
await tools.sqlite.create_table({
  query: "CREATE TABLE IF NOT EXISTS visits_js (page TEXT, seconds INTEGER)",
});
await run("DELETE FROM visits_js");
const written = await run(
  "INSERT INTO visits_js VALUES ('home', 10), ('about', 20), ('home', 30)",
);
const rows = await tools.sqlite.read_query({
  query: "SELECT COUNT(*) AS n, SUM(seconds) AS total FROM visits_js",
});
const [row] = JSON.parse(rows.replace(/'/g, '"'));
return {
  affected: JSON.parse(written.replace(/'/g, '"'))[0].affected_rows,
  count: row.n,
  sum: row.total,
};
