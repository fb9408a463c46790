//! placeholder
use super::Call;
use crate::stream::StreamSender;

pub fn start(call: Call, sender: &StreamSender) -> Result<(), String> {
    let _ = (call, sender);
    Err("not yet".into())
}
