//! Values crossing the boundary: JSON from the host becomes Python values, and Python values the
//! guest sends (tool arguments, the result) become JSON.
//!
//! JSON → Python is total: objects become dicts, arrays lists, numbers ints or floats. Python →
//! JSON accepts what JSON can say without guessing — dicts with string keys, lists, tuples, sets
//! and frozensets (as arrays, a set's in its iteration order), strings, finite floats, ints
//! within 64 bits, booleans and `None` — and names what it cannot send and where it sits, with
//! the usual conversion, so the model can fix its code.

use std::fmt::Write as _;

use monty_types::{DictPairs, MontyObject};
use serde_json::{Map, Number, Value};

use crate::MAX_VALUE_DEPTH;

/// Where in a value a conversion failed: a root label and the keys and indexes below it.
#[derive(Debug, Clone)]
pub(super) struct ValuePath {
    root: String,
    segments: Vec<Segment>,
}

#[derive(Debug, Clone)]
enum Segment {
    Key(String),
    Index(usize),
}

impl ValuePath {
    /// A path that starts at `root` (`result`, `the arguments of tools.a.b`, ...).
    pub(super) fn new(root: impl Into<String>) -> Self {
        Self {
            root: root.into(),
            segments: Vec::new(),
        }
    }

    fn describe(&self) -> String {
        /// Segments shown at each end of a long path.
        const SHOWN: usize = 6;
        let mut text = self.root.clone();
        let count = self.segments.len();
        for (at, segment) in self.segments.iter().enumerate() {
            if count > 2 * SHOWN && at >= SHOWN && at < count - SHOWN {
                if at == SHOWN {
                    let _ = write!(text, "[… {} levels …]", count - 2 * SHOWN);
                }
                continue;
            }
            match segment {
                Segment::Key(key) => {
                    let _ = write!(text, "[{}]", serde_json::json!(key));
                }
                Segment::Index(index) => {
                    let _ = write!(text, "[{index}]");
                }
            }
        }
        text
    }
}

/// A Python value as JSON, or a message naming what cannot be sent and where.
pub(super) fn to_json(value: &MontyObject, path: &mut ValuePath) -> Result<Value, String> {
    match value {
        MontyObject::None => Ok(Value::Null),
        MontyObject::Bool(value) => Ok(Value::Bool(*value)),
        MontyObject::Int(value) => Ok(Value::from(*value)),
        MontyObject::BigInt(value) => {
            // Only the range between i64::MAX and u64::MAX fits a JSON number exactly.
            match value.to_string().parse::<u64>() {
                Ok(unsigned) => Ok(Value::from(unsigned)),
                Err(_) => Err(refused(
                    "an int beyond 64 bits",
                    "send it as a string with str(...)",
                    path,
                )),
            }
        }
        MontyObject::Float(value) => match Number::from_f64(*value) {
            Some(number) => Ok(Value::Number(number)),
            None => Err(refused(
                &format!("the float {}", float_name(*value)),
                "JSON has no NaN or infinity: use None or a string",
                path,
            )),
        },
        MontyObject::String(text) => Ok(Value::String(text.clone())),
        MontyObject::List(_)
        | MontyObject::Tuple(_)
        | MontyObject::Set(_)
        | MontyObject::FrozenSet(_)
        | MontyObject::NamedTuple { .. }
        | MontyObject::Dict(_)
            if path.segments.len() >= MAX_VALUE_DEPTH =>
        {
            Err(refused(
                &format!("nested more than {MAX_VALUE_DEPTH} levels deep"),
                "flatten the data",
                path,
            ))
        }
        MontyObject::List(items)
        | MontyObject::Tuple(items)
        | MontyObject::Set(items)
        | MontyObject::FrozenSet(items) => array(items, path),
        MontyObject::NamedTuple { values, .. } => array(values, path),
        MontyObject::Dict(pairs) => {
            let mut object = Map::new();
            for (key, item) in pairs {
                let MontyObject::String(key) = key else {
                    return Err(refused(
                        &format!("a dict with a key of type {}", type_name(key)),
                        "JSON object keys are strings: convert them with str(key)",
                        path,
                    ));
                };
                path.segments.push(Segment::Key(key.clone()));
                let converted = to_json(item, path);
                path.segments.pop();
                object.insert(key.clone(), converted?);
            }
            Ok(Value::Object(object))
        }
        other => Err(unsendable(other, path)),
    }
}

/// Why `value` at `path` cannot be sent as JSON: what it is, and what to send instead.
fn refused(what: &str, instead: &str, path: &ValuePath) -> String {
    let instead = if instead.is_empty() {
        String::new()
    } else {
        format!("; {instead}")
    };
    format!(
        "{} is {what}, which cannot be sent as JSON{instead}",
        path.describe()
    )
}

/// Why a value of a kind JSON has nothing for (bytes, dates, functions, ...) cannot be sent.
fn unsendable(value: &MontyObject, path: &ValuePath) -> String {
    let refuse = refused;
    match value {
        MontyObject::Bytes(_) => refuse(
            "bytes",
            "decode it to a string first (.decode(), or base64)",
            path,
        ),
        MontyObject::Date(_)
        | MontyObject::DateTime(_)
        | MontyObject::Time(_)
        | MontyObject::TimeZone(_) => refuse(
            &format!("a {}", type_name(value)),
            "convert it with .isoformat() or str(...)",
            path,
        ),
        MontyObject::TimeDelta(_) => refuse(
            "a datetime.timedelta",
            "convert it with .total_seconds() or str(...)",
            path,
        ),
        MontyObject::Exception { .. } => {
            refuse("an exception object", "convert it with str(error)", path)
        }
        MontyObject::ClassInstance(instance) => refuse(
            &format!(
                "an instance of the class {}",
                instance.class_type.name.as_str()
            ),
            "build a dict from its fields, such as {'name': item.name} (dataclasses.asdict is not available)",
            path,
        ),
        MontyObject::Path(_) => refuse("a Path", "convert it with str(...)", path),
        MontyObject::Function { .. } | MontyObject::BuiltinFunction(_) => {
            refuse("a function", "call it and send its value instead", path)
        }
        MontyObject::Cycle(_, _) => refuse("a value that contains itself", "", path),
        MontyObject::Repr(repr) if repr == "<deeply nested>" => {
            refuse("nested too deeply", "flatten the data", path)
        }
        MontyObject::Repr(repr) if repr.starts_with("<function") || repr.starts_with("<bound") => {
            refuse(
                &format!("a function ({repr})"),
                "call it and send its value instead",
                path,
            )
        }
        MontyObject::Repr(repr) if repr.starts_with("<coroutine") => refuse(
            &format!("a coroutine ({repr}): a call that was not awaited"),
            "await it, or `await asyncio.gather(...)` several",
            path,
        ),
        MontyObject::Repr(repr) => refuse(repr, "", path),
        MontyObject::Ellipsis
        | MontyObject::NotImplemented
        | MontyObject::Type(_)
        | MontyObject::FileHandle(_) => refuse(&format!("a {}", type_name(value)), "", path),
        // Sent by `to_json`; named plainly should one ever come here.
        MontyObject::None
        | MontyObject::Bool(_)
        | MontyObject::Int(_)
        | MontyObject::BigInt(_)
        | MontyObject::Float(_)
        | MontyObject::String(_)
        | MontyObject::List(_)
        | MontyObject::Tuple(_)
        | MontyObject::Set(_)
        | MontyObject::FrozenSet(_)
        | MontyObject::NamedTuple { .. }
        | MontyObject::Dict(_) => refuse(&format!("a {}", type_name(value)), "", path),
    }
}

fn array(items: &[MontyObject], path: &mut ValuePath) -> Result<Value, String> {
    let mut converted = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        path.segments.push(Segment::Index(index));
        let value = to_json(item, path);
        path.segments.pop();
        converted.push(value?);
    }
    Ok(Value::Array(converted))
}

fn float_name(value: f64) -> &'static str {
    if value.is_nan() {
        "nan"
    } else if value > 0.0 {
        "inf"
    } else {
        "-inf"
    }
}

/// The Python type name of a value, for messages.
pub(super) fn type_name(value: &MontyObject) -> String {
    match value {
        MontyObject::Ellipsis => "ellipsis".to_owned(),
        MontyObject::NotImplemented => "NotImplementedType".to_owned(),
        MontyObject::None => "NoneType".to_owned(),
        MontyObject::Bool(_) => "bool".to_owned(),
        MontyObject::Int(_) | MontyObject::BigInt(_) => "int".to_owned(),
        MontyObject::Float(_) => "float".to_owned(),
        MontyObject::String(_) => "str".to_owned(),
        MontyObject::Bytes(_) => "bytes".to_owned(),
        MontyObject::List(_) => "list".to_owned(),
        MontyObject::Tuple(_) => "tuple".to_owned(),
        MontyObject::NamedTuple { type_name, .. } => type_name.clone(),
        MontyObject::Dict(_) => "dict".to_owned(),
        MontyObject::Set(_) => "set".to_owned(),
        MontyObject::FrozenSet(_) => "frozenset".to_owned(),
        MontyObject::Date(_) => "datetime.date".to_owned(),
        MontyObject::DateTime(_) => "datetime.datetime".to_owned(),
        MontyObject::Time(_) => "datetime.time".to_owned(),
        MontyObject::TimeDelta(_) => "datetime.timedelta".to_owned(),
        MontyObject::TimeZone(_) => "datetime.timezone".to_owned(),
        MontyObject::Exception { exc_type, .. } => exc_type.to_string(),
        MontyObject::Type(_) => "type".to_owned(),
        MontyObject::BuiltinFunction(_) | MontyObject::Function { .. } => "function".to_owned(),
        MontyObject::Path(_) => "Path".to_owned(),
        MontyObject::FileHandle(_) => "file".to_owned(),
        MontyObject::ClassInstance(instance) => instance.class_type.name.clone(),
        MontyObject::Repr(_) | MontyObject::Cycle(_, _) => "object".to_owned(),
    }
}

/// A JSON value from the host as a Python value.
pub(super) fn from_json(value: Value) -> MontyObject {
    match value {
        Value::Null => MontyObject::None,
        Value::Bool(value) => MontyObject::Bool(value),
        Value::Number(number) => match number.as_i64() {
            Some(integer) => MontyObject::Int(integer),
            // Beyond i64 (a u64) or a fraction: a float is the closest Python value.
            None => MontyObject::Float(number.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(text) => MontyObject::String(text),
        Value::Array(items) => MontyObject::List(items.into_iter().map(from_json).collect()),
        Value::Object(map) => MontyObject::Dict(
            map.into_iter()
                .map(|(key, item)| (MontyObject::String(key), from_json(item)))
                .collect::<DictPairs>(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn convert(value: &MontyObject) -> Result<Value, String> {
        to_json(value, &mut ValuePath::new("result"))
    }

    #[test]
    fn json_round_trips_through_python_values() {
        let value = json!({"a": [1, 2.5, "x", null, true], "b": {"c": -3}, "big": 18446744073709551615_u64});
        let back = convert(&from_json(value)).unwrap_or_default();
        // u64 beyond i64 arrives as a float: the closest Python value.
        assert_eq!(
            back,
            json!({"a": [1, 2.5, "x", null, true], "b": {"c": -3}, "big": 18446744073709551615.0})
        );
    }

    #[test]
    fn refusals_name_the_place_and_the_way_out() {
        let value = MontyObject::Dict(
            vec![(
                MontyObject::String("items".to_owned()),
                MontyObject::List(vec![MontyObject::Int(1), MontyObject::Bytes(vec![2])]),
            )]
            .into(),
        );
        assert_eq!(
            convert(&value),
            Err(
                "result[\"items\"][1] is bytes, which cannot be sent as JSON; decode it to a \
                 string first (.decode(), or base64)"
                    .to_owned()
            )
        );
        // Sets are arrays, in their order.
        assert_eq!(
            convert(&MontyObject::FrozenSet(vec![
                MontyObject::Int(2),
                MontyObject::Set(vec![MontyObject::Int(1)])
            ])),
            Ok(serde_json::json!([2, [1]]))
        );
        let keyed = MontyObject::Dict(vec![(MontyObject::Int(1), MontyObject::None)].into());
        assert!(
            convert(&keyed)
                .unwrap_err()
                .contains("a dict with a key of type int")
        );
        assert!(
            convert(&MontyObject::Float(f64::NAN))
                .unwrap_err()
                .contains("the float nan")
        );
        assert!(
            convert(&MontyObject::Repr(
                "<coroutine external_future(0)>".to_owned()
            ))
            .unwrap_err()
            .contains("a call that was not awaited")
        );
    }
}
