//! The tool catalog: guest names, ranked search and TypeScript declarations generated from JSON Schema.
