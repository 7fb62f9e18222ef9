// URL and URLSearchParams: WHATWG parsing of common URLs (relative resolution, default ports, percent-encoding, IPv4 forms), query parameters linked to their URL; the values are Node's.
// expect: {"href":"https://api.github.com/repos/o/r/issues?state=open&labels=bug%2Cui&q=needs+review+%26+%C3%BC#top","parts":["https:","api.github.com","api.github.com","","/repos/o/r/issues","?state=open&labels=bug%2Cui&q=needs+review+%26+%C3%BC","#top","https://api.github.com"],"state":"open","all":["state","labels","q"],"relative":"http://h:8080/a/c%20d","params":"page=3&sort=created+desc","fromString":["a=1","a=2","b= x y"],"invalid":false,"json":"{\"link\":\"https://example.com/a%20b\"}","ipv4":"127.0.0.1","mailto":["someone@example.com","null"]}
const url = new URL("../issues?state=open&labels=bug,ui#top", "https://API.github.com:443/repos/o/r/pulls/");
url.searchParams.append("q", "needs review & ü");
const relative = new URL("/a/./b/../c d", "http://h:8080/x");
const params = new URLSearchParams({ page: "2", sort: "created desc" });
params.set("page", "3");
return {
  href: url.href,
  parts: [url.protocol, url.host, url.hostname, url.port, url.pathname, url.search, url.hash, url.origin],
  state: url.searchParams.get("state"),
  all: [...url.searchParams.keys()],
  relative: relative.href,
  params: params.toString(),
  fromString: [...new URLSearchParams("?a=1&a=2&b=%20x+y")].map(([k, v]) => k + "=" + v),
  invalid: URL.canParse("not a url"),
  json: JSON.stringify({ link: new URL("https://example.com/a b") }),
  ipv4: new URL("http://0x7f.1/").hostname,
  mailto: [new URL("mailto:someone@example.com").pathname, new URL("mailto:x@y").origin],
};
