//! The language tools are described in: TypeScript declarations or Python stubs, each read from
//! the one catalog.

use crate::{Catalog, Entry, Observations};

/// The language tools are described in: TypeScript declarations or Python stubs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Flavor {
    /// `.d.ts` declarations and signatures.
    #[default]
    TypeScript,
    /// `.pyi`-style stubs and signatures.
    Python,
}

impl Flavor {
    /// What guest code of this flavor calls to search the catalog.
    pub fn search_function(self) -> &'static str {
        match self {
            Self::TypeScript => "searchTools",
            Self::Python => "search_tools",
        }
    }

    /// The compact one-line signature of `entry`, with the result `observations` saw for it
    /// when it declares none (marked as observed).
    pub fn signature(self, entry: &Entry, observations: &dyn Observations) -> String {
        let types = entry.types_with(observations);
        match self {
            Self::TypeScript => crate::typescript::signature(
                &types,
                &format!("tools.{}.{}", entry.guest_server, entry.guest_tool),
            ),
            Self::Python => crate::python::signature(&types, entry),
        }
    }

    /// The full declaration of `entry`, with the result `observations` saw for it when it
    /// declares none.
    pub fn declaration(self, entry: &Entry, observations: &dyn Observations) -> String {
        self.declarations_of(&[entry], observations)
    }

    /// The full declarations of `entries`, one block (or class) per server, each with the
    /// result `observations` saw for it when it declares none.
    pub fn declarations_of(self, entries: &[&Entry], observations: &dyn Observations) -> String {
        match self {
            Self::TypeScript => crate::declarations::server_blocks(entries, observations),
            Self::Python => crate::python::server_stubs(entries, observations),
        }
    }

    /// The declarations of every tool of `catalog`, as one `.d.ts` or one stub file.
    pub fn declarations(self, catalog: &Catalog) -> String {
        match self {
            Self::TypeScript => catalog.declarations(),
            Self::Python => catalog.python_stubs(),
        }
    }
}
