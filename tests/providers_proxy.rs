//! The built-in providers through the proxy the environment names: plain HTTP is forwarded (the
//! request in absolute form, the proxy's credentials on it), HTTPS goes through a CONNECT tunnel
//! (the credentials on the CONNECT, TLS from end to end), and a loopback URL never uses the proxy.
//! A test binary of its own: the proxy variables are process-wide.
#![cfg(feature = "providers")]

#[path = "providers/support.rs"]
mod support;

use std::sync::{Arc, Mutex};

use agent::json::json;
use support::loopback::*;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

#[tokio::test(flavor = "multi_thread")]
async fn requests_go_through_the_proxy_the_environment_names() {
    // The proxy records each request head. A CONNECT is relayed to the TLS server (whatever host
    // it names); any other request is answered by the proxy itself.
    let tls = tls_server("127.0.0.1").await;
    let heads = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = heads.clone();
    let upstream = tls.addr;
    let proxy = serve("127.0.0.1", move |mut socket| {
        let seen = seen.clone();
        async move {
            let head = read_request(&mut socket).await;
            seen.lock().unwrap().push(head.clone());
            if head.starts_with("CONNECT ") {
                let _ = socket
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .await;
                let mut server = TcpStream::connect(upstream).await.unwrap();
                let _ = tokio::io::copy_bidirectional(&mut socket, &mut server).await;
            } else {
                let _ = socket.write_all(answer().as_bytes()).await;
            }
        }
    })
    .await;
    let address = format!("http://user:secret@{}", proxy.addr);
    for name in ["HTTP_PROXY", "HTTPS_PROXY"] {
        std::env::set_var(name, &address);
    }
    for name in [
        "http_proxy",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
        "NO_PROXY",
        "no_proxy",
    ] {
        std::env::remove_var(name);
    }
    // "user:secret" in Basic form (names are matched case-insensitively).
    let has_credentials = |head: &str| {
        head.lines().any(|line| {
            line.to_ascii_lowercase()
                .starts_with("proxy-authorization:")
                && line.ends_with(": Basic dXNlcjpzZWNyZXQ=")
        })
    };

    // Plain HTTP: the proxy gets the whole URL and the credentials, and its answer is the run's.
    let last = run(&agent(
        model("http://model.example:8080/v1", "openai-completions"),
        json!({}),
    ))
    .await;
    assert_eq!(last["content"][0]["text"], "ok", "{last}");
    let head = heads.lock().unwrap()[0].clone();
    assert!(
        head.starts_with("POST http://model.example:8080/v1/chat/completions HTTP/1.1\r\n"),
        "{head}"
    );
    assert!(has_credentials(&head), "{head}");

    // HTTPS: a tunnel to the named host with the credentials on the CONNECT; TLS then runs with
    // the server at the tunnel's end, whose certificate (trusted CA, other name) is refused.
    let error = error_of(
        model("https://model.example/v1", "openai-completions"),
        json!({"caCertificateFile": tls_path("ca.pem")}),
    )
    .await;
    assert_eq!(
        error,
        "TLS handshake with model.example:443 failed: its certificate is not valid for that host name."
    );
    let head = heads.lock().unwrap()[1].clone();
    assert!(
        head.starts_with("CONNECT model.example:443 HTTP/1.1\r\n"),
        "{head}"
    );
    assert!(has_credentials(&head), "{head}");
    assert!(
        !head.contains("sk-"),
        "the key stays inside the tunnel: {head}"
    );

    // Loopback: straight to the server, never through the proxy.
    let direct = serve("127.0.0.1", |mut socket| async move {
        read_request(&mut socket).await;
        let _ = socket.write_all(answer().as_bytes()).await;
    })
    .await;
    let last = run(&agent(openai(direct.addr), json!({}))).await;
    assert_eq!(last["content"][0]["text"], "ok", "{last}");
    assert_eq!(
        direct.connections.load(std::sync::atomic::Ordering::SeqCst),
        1
    );
    assert_eq!(heads.lock().unwrap().len(), 2);

    // A proxy that cannot be reached is named as the cause, not the model's host. (Another
    // connect timeout makes another client, which reads the environment again.)
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    std::env::set_var("HTTPS_PROXY", format!("http://127.0.0.1:{port}"));
    let error = error_of(
        model("https://model.example/v1", "openai-completions"),
        json!({"connectTimeoutMs": 12345}),
    )
    .await;
    assert_eq!(
        error,
        format!("Could not reach model.example:443 through the proxy http://127.0.0.1:{port}/ (named by HTTPS_PROXY, HTTP_PROXY or ALL_PROXY): Connection refused (os error 111).")
    );
}
