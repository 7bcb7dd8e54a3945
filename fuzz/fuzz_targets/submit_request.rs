#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    cuzk_fuzz::targets::submit_request(data);
});
