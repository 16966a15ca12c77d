//! Conversions between Rust values and their SQLite column forms.

use chrono::{DateTime, SecondsFormat, Utc};

/// Fixed-width RFC 3339 UTC with nanoseconds: sorts lexically in time order
/// and round-trips an `Event::at` exactly.
pub(crate) fn fmt_ts(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Nanos, true)
}

pub(crate) fn parse_ts(text: &str) -> Result<DateTime<Utc>, chrono::ParseError> {
    DateTime::parse_from_rfc3339(text).map(|at| at.with_timezone(&Utc))
}

/// SQLite integers are i64; counters beyond i64::MAX saturate rather than wrap.
pub(crate) fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// Negative counters cannot be written by this crate; read them as 0.
pub(crate) fn to_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

pub(crate) fn to_u32(value: i64) -> u32 {
    u32::try_from(value.max(0)).unwrap_or(u32::MAX)
}

/// A column holding one of a fixed set of words; any other word is a
/// conversion error naming it and the known ones (never a silent default).
pub(crate) fn word<T>(row: &rusqlite::Row<'_>, column: usize) -> rusqlite::Result<T>
where
    T: std::str::FromStr<Err = quire_types::UnknownValue>,
{
    let text: String = row.get(column)?;
    text.parse().map_err(|err: quire_types::UnknownValue| {
        rusqlite::Error::FromSqlConversionFailure(
            column,
            rusqlite::types::Type::Text,
            Box::new(err),
        )
    })
}
