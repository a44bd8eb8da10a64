//! One module per subcommand.

pub mod fetch_model;
pub mod funnel;
pub mod generate;
pub mod maskbench;
pub mod schema_resources;
pub mod serve;
pub mod test_cases;
