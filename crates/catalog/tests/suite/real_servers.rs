//! Declarations for the real schemas of the official npm servers, snapshotted: this is what a
//! model reads.

use toolweave_catalog::Catalog;

use super::saved_tools;

fn catalog(file: &str) -> Catalog {
    Catalog::new(&[file.to_owned()], saved_tools(file, file))
}

#[test]
fn everything_declarations() {
    insta::assert_snapshot!(catalog("everything").declarations());
}

#[test]
fn memory_declarations() {
    insta::assert_snapshot!(catalog("memory").declarations());
}

#[test]
fn filesystem_declarations() {
    insta::assert_snapshot!(catalog("filesystem").declarations());
}

#[test]
fn signatures() {
    let mut lines = Vec::new();
    for file in ["everything", "memory", "filesystem"] {
        let catalog = catalog(file);
        for entry in catalog.entries() {
            lines.push(catalog.signature(entry));
        }
    }
    insta::assert_snapshot!(lines.join("\n"));
}

#[test]
fn python_signatures() {
    let mut lines = Vec::new();
    for file in ["everything", "memory", "filesystem"] {
        let catalog = catalog(file);
        for entry in catalog.entries() {
            lines.push(catalog.python_signature(entry));
        }
    }
    insta::assert_snapshot!(lines.join("\n"));
}

#[test]
fn one_declaration() {
    let catalog = catalog("memory");
    let entry = catalog.resolve("memory.create_entities").unwrap();
    insta::assert_snapshot!(catalog.declaration(entry));
}
