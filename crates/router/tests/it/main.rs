//! Integration tests of the registry against real MCP servers.
