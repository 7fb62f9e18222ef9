//! The HTTP proxy a boxed server that may reach a list of hosts talks to: it listens on the
//! server's own loopback (the listener was made inside the box's network namespace and handed
//! back, see `toolweave-process`'s `server_box`), and connects, from toolweave's network, only to
//! the hosts `"sandbox"."network"` lists. `CONNECT host:port` (HTTPS, end to end encrypted) and
//! plain requests with an absolute URL (`GET http://host:port/path`) are served; anything else,
//! and any other host, gets `403` with a body naming the entry key to change.

use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use toolweave_config::HostPort;

/// The longest request head the proxy reads.
const MAX_HEAD_BYTES: usize = 16 * 1024;

/// Who the proxy serves and what it lets through.
pub(crate) struct Allowed {
    /// The server's name, for the refusal.
    pub(crate) server: String,
    /// The key its hosts are listed under and where: `"sandbox"."network" in its entry in
    /// /etc/mcp.json`.
    pub(crate) key: String,
    /// The hosts it may reach.
    pub(crate) hosts: Vec<HostPort>,
}

/// Serves connections on `listener` until the task is aborted.
pub(crate) async fn serve(listener: TcpListener, allowed: Arc<Allowed>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            return;
        };
        tokio::spawn(relay(client, allowed.clone()));
    }
}

/// One client connection: its request head decides where it goes.
async fn relay(mut client: TcpStream, allowed: Arc<Allowed>) {
    let Some((head, rest)) = read_head(&mut client).await else {
        return;
    };
    let Some(request) = parse(&head) else {
        refuse(
            &mut client,
            &allowed,
            "it sent a request the proxy does not understand",
        )
        .await;
        return;
    };
    let permitted = allowed
        .hosts
        .iter()
        .any(|host| host.host == request.host && host.port == request.port);
    let target = format!("{}:{}", request.host, request.port);
    if !permitted {
        let why = format!("it may not reach {target}");
        refuse(&mut client, &allowed, &why).await;
        tracing::info!(server = %allowed.server, %target, "a boxed server was refused a host");
        return;
    }
    let Ok(mut upstream) = TcpStream::connect((request.host.as_str(), request.port)).await else {
        let _ = client
            .write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")
            .await;
        return;
    };
    let sent = match &request.rewritten {
        None => client
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await
            .and(Ok(())),
        Some(head) => upstream.write_all(head).await,
    };
    if sent.is_err() || upstream.write_all(&rest).await.is_err() {
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}

/// The request head (through the blank line) and whatever came after it.
async fn read_head(client: &mut TcpStream) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let read = client.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
        if let Some(end) = buffer.windows(4).position(|window| window == b"\r\n\r\n") {
            let rest = buffer.split_off(end + 4);
            return Some((buffer, rest));
        }
        if buffer.len() > MAX_HEAD_BYTES {
            return None;
        }
    }
}

/// Where a request goes, and the head to send there (`None`: a `CONNECT` tunnel).
struct Request {
    host: String,
    port: u16,
    rewritten: Option<Vec<u8>>,
}

fn parse(head: &[u8]) -> Option<Request> {
    let text = std::str::from_utf8(head).ok()?;
    let (line, fields) = text.split_once("\r\n")?;
    let mut parts = line.split(' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = split_authority(target, 443)?;
        return Some(Request {
            host,
            port,
            rewritten: None,
        });
    }
    let rest = target.strip_prefix("http://")?;
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    let (host, port) = split_authority(authority, 80)?;
    let rewritten = format!("{method} {path} {version}\r\n{fields}").into_bytes();
    Some(Request {
        host,
        port,
        rewritten: Some(rewritten),
    })
}

/// `host:port`, `[v6]:port` or `host` (with `default_port`), the host in lower case.
fn split_authority(authority: &str, default_port: u16) -> Option<(String, u16)> {
    let authority = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(port) => port.parse().ok()?,
            None => default_port,
        };
        (host, port)
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, port.parse().ok()?),
            None => (authority, default_port),
        }
    };
    (!host.is_empty()).then(|| (host.to_ascii_lowercase(), port))
}

/// Answers `403` with a body that names the entry key to change.
async fn refuse(client: &mut TcpStream, allowed: &Allowed, why: &str) {
    let listed: Vec<String> = allowed.hosts.iter().map(ToString::to_string).collect();
    let body = format!(
        "toolweave: server \"{}\" runs in a box and {why}; its box allows {}. To let it, add \"host:port\" to {}\n",
        allowed.server,
        listed.join(", "),
        allowed.key
    );
    let answer = format!(
        "HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = client.write_all(answer.as_bytes()).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_read_for_where_they_go() {
        let connect =
            parse(b"CONNECT Example.com:443 HTTP/1.1\r\nHost: example.com\r\n\r\n").unwrap();
        assert_eq!((connect.host.as_str(), connect.port), ("example.com", 443));
        assert!(connect.rewritten.is_none());
        let get = parse(b"GET http://127.0.0.1:8080/a?b HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n")
            .unwrap();
        assert_eq!((get.host.as_str(), get.port), ("127.0.0.1", 8080));
        assert_eq!(
            get.rewritten.unwrap(),
            b"GET /a?b HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"
        );
        let plain = parse(b"GET http://example.com HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!((plain.host.as_str(), plain.port), ("example.com", 80));
        let v6 = parse(b"CONNECT [::1]:8443 HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!((v6.host.as_str(), v6.port), ("::1", 8443));
        assert!(parse(b"GET /relative HTTP/1.1\r\n\r\n").is_none());
        assert!(parse(b"GET https://example.com/ HTTP/1.1\r\n\r\n").is_none());
    }
}
