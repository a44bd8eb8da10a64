//! One module per subcommand; the benchmark and conformance commands live in
//! `constrain-bench`, and are named here under the paths the binary has always used.

pub mod fetch_model;
pub mod generate;
pub mod gpu;
pub mod limits;
pub mod serve;

pub use constrain::resources as schema_resources;
pub use constrain_bench::{funnel, maskbench, test_cases};
