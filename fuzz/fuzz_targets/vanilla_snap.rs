#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    cuzk_fuzz::targets::vanilla_snap(data);
});
