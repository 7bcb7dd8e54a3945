//! Parameter generation on the GPU gives the CPU's bytes (the CPU's are bellperson's:
//! `paramgen::tests`), for the PoRep-shaped kind and a recorded circuit.

use cuzk_core::kinds::porep_shaped::PorepShape;
use cuzk_core::kinds::synthetic::SyntheticCircuit;
use cuzk_core::paramgen::{
    generate, record_rows, CpuFixedBase, FixedBase, GpuFixedBase, RecordedRows, RowSource, Toxic,
};

/// GPU-made and CPU-made files of one set, compared byte for byte.
fn check(src: &dyn RowSource, toxic: &Toxic, gpu: &GpuFixedBase, what: &str) {
    let make = |fb: &dyn FixedBase| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("set.params");
        generate(src, toxic, fb, &path).unwrap();
        std::fs::read(&path).unwrap()
    };
    let (on_gpu, on_cpu) = (make(gpu), make(&CpuFixedBase::new()));
    assert_eq!(on_gpu.len(), on_cpu.len(), "{what}: lengths");
    let first = on_gpu.iter().zip(&on_cpu).position(|(a, b)| a != b);
    assert_eq!(first, None, "{what}: first differing byte");
}

#[test]
fn gpu_generated_parameters_equal_cpu_generated() {
    let Some(_) = cuzk_kernels::device_or_skip(0) else {
        return;
    };
    let gpu = GpuFixedBase::open(0).unwrap();
    for log in [10u32, 13] {
        let toxic = Toxic::from_seed(100 + log as u64);
        check(
            &PorepShape::new(log),
            &toxic,
            &gpu,
            &format!("porep-shaped 2^{log}"),
        );
    }
    let m = record_rows("synthetic-2^11", SyntheticCircuit::new(11, 0)).unwrap();
    check(
        &RecordedRows::new(&m).unwrap(),
        &Toxic::from_seed(7),
        &gpu,
        "uniform synthetic 2^11",
    );
}
