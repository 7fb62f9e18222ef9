//! JSON-RPC bytes, in one place for every crate that reads them: the MCP server's transports, the
//! upstream clients and the host side of a child process.
//!
//! - [`reader`]: lines of a stream, each bounded, and what happened to a line too long: the
//!   stream fails, the line is skipped (its bytes still shown, to find its id), or it is cut.
//! - [`buffer`]: the same for a blocking reader: bytes pushed in, whole lines parsed out.
//! - [`tail`]: the last lines a child process wrote to stderr, bounded, for the error that
//!   reports its end.
//! - [`text`]: text cut to a number of bytes on a character boundary.
//! - [`surrogates`]: lone UTF-16 surrogates made well-formed, in JSON text and in QuickJS text.
//! - [`id`]: the id (and the method, and how deep it nests) of a message read from its bytes,
//!   even when they are not JSON, are cut short or arrive in pieces.
//!
//! It depends on no toolweave crate and on nothing that knows MCP: callers turn what it finds
//! into their own types.

pub mod buffer;
pub mod id;
pub mod reader;
pub mod surrogates;
pub mod tail;
pub mod text;
