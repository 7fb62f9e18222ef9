// A JSON endpoint through the fetch server: its answer is a preamble and then the body, so the
// program parses from the first brace, and counts the copies.
// expect: {"titles":["Dune","Emma"],"copies":4}
const text = await tools.fetch.fetch({ url: "{{URL}}/books.json", raw: true });
const data = JSON.parse(text.slice(text.indexOf("{")));
return {
  titles: data.books.map((book) => book.title),
  copies: data.books.reduce((sum, book) => sum + book.copies, 0),
};
