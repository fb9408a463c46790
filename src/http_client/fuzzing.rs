//! A server's response (head and body) decoded from memory in reads of a given size, as the
//! exchange decodes it from a socket: the fuzz target `http_response` (feature `fuzzing`) checks
//! that what comes out does not depend on the reads.

use bytes::BytesMut;

use super::exchange::{Framing, HeadReader, Piece};

/// What decoding a response gave: the head (status and headers, or why it was refused), the
/// body's data, and how the body ended (`Ok(true)`: at its end; `Ok(false)`: the bytes ran out
/// first; `Err`: why its framing was refused).
#[derive(Debug, PartialEq)]
pub struct Decoded {
    pub head: Result<Option<String>, String>,
    pub data: Vec<u8>,
    pub end: Result<bool, &'static str>,
}

/// Decodes `bytes` fed `piece` bytes at a time (at least 1) as the answer to a POST.
pub fn decode(bytes: &[u8], piece: usize) -> Decoded {
    let mut buffer = BytesMut::new();
    let mut pieces = bytes.chunks(piece.max(1));
    let mut heads = HeadReader::default();
    let head = loop {
        match heads.take(&mut buffer) {
            Ok(Some(head)) => break head,
            Ok(None) => match pieces.next() {
                Some(more) => buffer.extend_from_slice(more),
                None => {
                    return Decoded {
                        head: Ok(None),
                        data: Vec::new(),
                        end: Ok(false),
                    }
                }
            },
            Err(error) => {
                return Decoded {
                    head: Err(error.to_string()),
                    data: Vec::new(),
                    end: Ok(false),
                }
            }
        }
    };
    let described = format!("{} {:?}", head.status, head.headers);
    let mut framing = match Framing::of(&hyper::Method::POST, head.status, &head.headers) {
        Ok(framing) => framing,
        Err(error) => {
            return Decoded {
                head: Err(error.to_string()),
                data: Vec::new(),
                end: Ok(false),
            }
        }
    };
    let mut data = Vec::new();
    let mut extras = 0;
    let end = loop {
        match framing.next(&mut buffer, &mut extras) {
            Ok(Piece::Data(bytes)) => data.extend_from_slice(&bytes),
            Ok(Piece::End) => break Ok(true),
            Ok(Piece::More) => match pieces.next() {
                Some(more) => buffer.extend_from_slice(more),
                None => break Ok(framing.ends_at_close()),
            },
            Err(why) => break Err(why),
        }
    };
    Decoded {
        head: Ok(Some(described)),
        data,
        end,
    }
}

/// The fuzz target's check. `data`: a byte giving the read size, then the server's bytes.
/// Panics when reads of that size decode otherwise than one read of everything.
pub fn reads_agree(data: &[u8]) {
    let [piece, bytes @ ..] = data else {
        return;
    };
    let whole = decode(bytes, bytes.len());
    let pieces = decode(bytes, usize::from(*piece));
    assert_eq!(whole, pieces, "reads of {piece} bytes decode otherwise");
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn responses_decode_as_their_framing_says() {
        let chunked = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n";
        for piece in [1, 3, chunked.len()] {
            let decoded = decode(chunked, piece);
            assert_eq!(decoded.data, b"ok");
            assert_eq!(decoded.end, Ok(true));
        }
        // Cut inside the body: not at its end, whatever the framing but "until close".
        let cut = decode(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhel", 2);
        assert_eq!((cut.data, cut.end), (b"hel".to_vec(), Ok(false)));
        let close = decode(b"HTTP/1.1 200 OK\r\n\r\nall of it", 4);
        assert_eq!((close.data, close.end), (b"all of it".to_vec(), Ok(true)));
        // Interim answers are skipped; the final head is the one described.
        let interim = decode(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
            5,
        );
        assert!(interim.head.unwrap().unwrap().starts_with("204"));
    }

    /// A head over the bound is refused whether it came in one read or in many (one read of all
    /// of it used to find it complete).
    #[test]
    fn a_head_over_the_bound_is_refused_whatever_the_reads() {
        let mut head = b"HTTP/1.1 200 OK\r\nx-pad: ".to_vec();
        head.extend(std::iter::repeat_n(b'p', super::super::READ_BUFFER_BYTES));
        head.extend_from_slice(b"\r\n\r\nbody");
        for piece in [head.len(), 4096, 1000] {
            assert_eq!(
                decode(&head, piece).head,
                Err("the response head is too large (more than 64 KB or 100 headers)".to_string()),
                "reads of {piece}"
            );
        }
    }

    /// Every committed input of the fuzz target `http_response` (its seeds and regressions):
    /// `make fuzz-replay` does not build that target (the fuzz crate would need the HTTP stack),
    /// so its inputs are replayed here.
    #[test]
    fn the_fuzz_targets_committed_inputs_decode_alike_in_any_reads() {
        let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
        let mut replayed = 0;
        for folder in ["corpus", "regressions"] {
            let dir = fuzz.join(folder).join("http_response");
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries {
                let data = std::fs::read(entry.unwrap().path()).unwrap();
                reads_agree(&data);
                replayed += 1;
            }
        }
        // fuzz/seeds/make_seeds.py writes 36 seeds: an emptied folder is a failure.
        assert!(replayed >= 36, "only {replayed} inputs");
    }
}
