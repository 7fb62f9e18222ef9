// A typed logger that writes every element of a big array: the log budget ends it.
// expect-error: LogLimit
// expect-message: --max-log-bytes 65536
interface Row { id: number; payload: string }
const rows: Row[] = Array.from({ length: 5000 }, (_, id) => ({ id, payload: "p".repeat(50) }));
rows.forEach((row: Row) => console.info(row));
return rows.length;
