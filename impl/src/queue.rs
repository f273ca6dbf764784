//! Binding for `scheduling::policy_queue::PolicyQueue` (written next).

use pyo3::prelude::*;

pub(crate) fn register(_module: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
