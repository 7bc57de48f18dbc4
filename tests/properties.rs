use std::path::Path;
use std::time::Instant;
use tbb::compile::{compile, study_cells};
use tbb::family::FamilySet;

#[test]
fn timing() {
    let t = Instant::now();
    let set = FamilySet::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("families")).unwrap();
    eprintln!("load {:?}", t.elapsed());
    let mut worst = (std::time::Duration::ZERO, String::new());
    let t = Instant::now();
    let mut n = 0;
    for f in &set.families {
        for c in study_cells(f.split()) {
            let t1 = Instant::now();
            let v = compile(f, &c).unwrap();
            n += 1;
            let e = t1.elapsed();
            if e > worst.0 { worst = (e, format!("{} {} steps={}", f.name, c, v.reference_program.steps.len())); }
        }
    }
    eprintln!("compile {n} in {:?}; worst {:?}", t.elapsed(), worst);
}
