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

/// What `describe_tools` shows for tools of two servers, named in mixed order: one block per
/// server, its tools in the order named, each named type once.
#[test]
fn declarations_of_tools_of_two_servers() {
    let servers = ["memory".to_owned(), "filesystem".to_owned()];
    let tools = servers
        .iter()
        .flat_map(|server| super::saved_tools(server, server))
        .collect();
    let catalog = Catalog::new(&servers, tools);
    let named: Vec<&toolweave_catalog::Entry> = [
        "memory.read_graph",
        "filesystem.read_text_file",
        "memory.open_nodes",
    ]
    .iter()
    .map(|name| catalog.resolve(name).unwrap())
    .collect();
    insta::assert_snapshot!(
        "declarations_of_two_servers",
        catalog.declarations_of(&named)
    );
    insta::assert_snapshot!(
        "python_stubs_of_two_servers",
        catalog.python_stubs_of(&named)
    );
}
