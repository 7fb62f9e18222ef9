//! Upstream MCP servers: one rmcp client each, started in the background, with timeouts.
