//! The benchmark suites, each one module: its options, its steps and their summaries' detail. They
//! reach the database only through `driver`'s traits.

pub mod analytics;
pub mod ibench;
pub mod sysbench;
