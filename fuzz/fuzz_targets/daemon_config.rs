#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    cuzk_fuzz::targets::daemon_config(data);
});
