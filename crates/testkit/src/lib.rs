//! Test support: a fixture MCP server with known tools, and a harness that drives the real toolweave binary.
