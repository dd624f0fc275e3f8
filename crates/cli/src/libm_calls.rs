//! The C math functions the binary's dependencies call (`pow`, `log`, `log10f`, and in a debug
//! build `expf` and `sinf`, which optimisation folds away), defined here from the `libm` crate
//! (rust-lang's port of musl's libm). The linker finds them in the binary and, linking
//! `--as-needed`, leaves `libm.so.6` out: loading it for three functions cost every run an open,
//! its relocations and about 0.6 MiB of resident pages (its resolvers are spread over its code).
//! `tests/binary_size.rs` checks that the binary still needs no libm; a dependency calling
//! another function shows there, and its definition joins these.

#[no_mangle]
pub extern "C" fn pow(x: f64, y: f64) -> f64 {
    libm::pow(x, y)
}

#[no_mangle]
pub extern "C" fn log(x: f64) -> f64 {
    libm::log(x)
}

#[no_mangle]
pub extern "C" fn log10f(x: f32) -> f32 {
    libm::log10f(x)
}

#[no_mangle]
pub extern "C" fn expf(x: f32) -> f32 {
    libm::expf(x)
}

#[no_mangle]
pub extern "C" fn sinf(x: f32) -> f32 {
    libm::sinf(x)
}
