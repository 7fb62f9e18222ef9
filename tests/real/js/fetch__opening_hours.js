// Read the library's page and pick out its heading and its weekday and Sunday hours.
// expect: {"heading":"Opening hours","weekdays":"Monday to Friday, 9 to 17.","sunday":"closed"}
const page = await tools.fetch.fetch({ url: "{{URL}}/index.html" });
const lines = page.split("\n").map((line) => line.trim());
return {
  heading: lines.find((line) => line.startsWith("#")).replace(/^#+\s*/, ""),
  weekdays: lines.find((line) => line.startsWith("Monday")),
  sunday: page.match(/Sunday:\s*(\w+)/)[1],
};
