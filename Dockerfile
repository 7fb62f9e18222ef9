# toolweave serving MCP over streamable HTTP (`serve --http`), for a team or a cluster.
#
#   docker build -t toolweave .
#   docker run --rm -p 8080:8080 -e TOOLWEAVE_TOKEN=... \
#     -v "$PWD/mcp.json:/etc/toolweave/mcp.json:ro" toolweave
#
# Clients reach it at http://HOST:8080/mcp with `Authorization: Bearer <TOOLWEAVE_TOKEN>`; a name
# other than localhost needs `--allowed-host NAME` added to the command. See docs/install.md.

# Build: a release build of the binary (about 10 minutes on two cores). The cache mounts keep
# crates and build products between builds of the image.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p toolweave --bin toolweave \
    && cp target/release/toolweave /usr/local/bin/toolweave

# Run: the binary on the same Debian release it was built on, as a user without privileges.
FROM debian:bookworm-slim
# Remote upstream servers are reached over TLS, checked against the system's certificate roots.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid 10001 toolweave \
    && useradd --system --uid 10001 --gid 10001 --create-home --home-dir /home/toolweave toolweave
COPY --from=build /usr/local/bin/toolweave /usr/local/bin/toolweave
USER 10001:10001
WORKDIR /home/toolweave
EXPOSE 8080
# The config is mounted at /etc/toolweave/mcp.json (a file, or a ConfigMap); the token comes
# from the environment. Arguments after the image name replace the whole command.
ENTRYPOINT ["toolweave"]
CMD ["serve", "--http", "0.0.0.0:8080", "--auth-token-env", "TOOLWEAVE_TOKEN", \
     "--config", "/etc/toolweave/mcp.json"]
