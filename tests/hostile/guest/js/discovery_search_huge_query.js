// A search query of 400 KB is refused; a caught refusal leaves the next search working.
// expect: {"refused":"a search query is at most 1000 bytes, and this one is 400000. Search with a few words that say what the tool should do.","found":true}
let refused;
try {
  await searchTools("add ".repeat(100000));
} catch (error) {
  refused = error.message;
}
const hits = await searchTools("add two numbers");
return { refused, found: hits.length > 0 };
