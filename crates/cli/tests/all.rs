//! End-to-end tests: the real `toolweave` binary over stdio, driven by an MCP client, with the
//! fixture server (and, where installed, the official npm servers) as upstreams.

mod suite;
