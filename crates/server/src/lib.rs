//! The MCP face of toolweave: search_tools, describe_tools and execute_code over any transport.
