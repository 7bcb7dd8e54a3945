//! The shared bearer token: when one is configured, every cuzk.v1 call must carry
//! `authorization: Bearer <token>` metadata. gRPC health and reflection stay open — load
//! balancers probe health without credentials, and reflection only describes the public
//! wire contract.

use std::path::Path;
use std::sync::Arc;

use subtle::ConstantTimeEq;
use tonic::{Request, Status};

/// Environment variable holding the token when no token file is configured.
pub const TOKEN_ENV: &str = "CUZK_AUTH_TOKEN";

/// The token from `file` if given, else from $CUZK_AUTH_TOKEN; None when neither is set.
/// Surrounding whitespace (the newline `echo` leaves in a file) is not part of the token.
pub fn load_token(file: Option<&Path>) -> anyhow::Result<Option<String>> {
    let (token, from) = match file {
        Some(path) => (
            std::fs::read_to_string(path)
                .map_err(|e| anyhow::anyhow!("reading auth token file {}: {e}", path.display()))?,
            path.display().to_string(),
        ),
        None => match std::env::var(TOKEN_ENV) {
            Ok(t) => (t, TOKEN_ENV.to_string()),
            Err(_) => return Ok(None),
        },
    };
    let token = token.trim().to_string();
    if token.is_empty() {
        anyhow::bail!("auth token from {from} is empty");
    }
    // The token travels as an HTTP/2 header value: it must be visible ASCII.
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        anyhow::bail!("auth token from {from} must be printable ASCII without spaces");
    }
    Ok(Some(token))
}

/// The interceptor in front of the cuzk.v1 service. Without a token it lets every call
/// through, so the server has one shape with and without authentication.
#[derive(Clone)]
pub struct BearerAuth {
    token: Option<Arc<[u8]>>,
}

impl BearerAuth {
    pub fn new(token: Option<String>) -> Self {
        BearerAuth {
            token: token.map(|t| Arc::from(t.into_bytes())),
        }
    }

    pub fn check<T>(&self, request: Request<T>) -> Result<Request<T>, Status> {
        let Some(expected) = &self.token else {
            return Ok(request);
        };
        let Some(value) = request.metadata().get("authorization") else {
            return Err(Status::unauthenticated(
                "missing `authorization: Bearer <token>` metadata: this daemon requires a \
                 token (cuzk-client: --token-file or CUZK_AUTH_TOKEN)",
            ));
        };
        // A value that is not ASCII, or not a bearer credential, is a wrong token.
        let presented = value
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .unwrap_or("");
        // Constant time in the token's content, so response timing does not reveal how
        // much of a guess was right (a length mismatch returns early: the length is not
        // the secret).
        if bool::from(presented.as_bytes().ct_eq(expected)) {
            Ok(request)
        } else {
            Err(Status::unauthenticated("invalid bearer token"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_header(v: &str) -> Request<()> {
        let mut r = Request::new(());
        r.metadata_mut().insert("authorization", v.parse().unwrap());
        r
    }

    #[test]
    fn accepts_only_the_right_bearer_token() {
        let auth = BearerAuth::new(Some("s3cret".into()));
        assert!(auth.check(with_header("Bearer s3cret")).is_ok());
        for bad in [
            "Bearer s3cre",
            "Bearer s3cret2",
            "Basic s3cret",
            "s3cret",
            "Bearer ",
        ] {
            let e = auth.check(with_header(bad)).unwrap_err();
            assert_eq!(e.code(), tonic::Code::Unauthenticated, "{bad}");
        }
        let e = auth.check(Request::new(())).unwrap_err();
        assert_eq!(e.code(), tonic::Code::Unauthenticated);
        assert!(e.message().contains("missing"));
        // Binary garbage in the header is refused, not a panic.
        let mut r = Request::new(());
        r.metadata_mut().insert(
            "authorization",
            tonic::metadata::MetadataValue::try_from(&b"Bearer \xff\xfe"[..]).unwrap(),
        );
        assert!(auth.check(r).is_err());
    }

    #[test]
    fn no_token_lets_calls_through() {
        assert!(BearerAuth::new(None).check(Request::new(())).is_ok());
    }

    #[test]
    fn token_file_is_trimmed_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("t");
        std::fs::write(&f, "abc123\n").unwrap();
        assert_eq!(load_token(Some(&f)).unwrap().as_deref(), Some("abc123"));
        std::fs::write(&f, "  \n").unwrap();
        assert!(load_token(Some(&f)).is_err());
        std::fs::write(&f, "a b").unwrap();
        assert!(load_token(Some(&f)).is_err());
        assert!(load_token(Some(&dir.path().join("missing"))).is_err());
    }
}
