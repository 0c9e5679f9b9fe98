//! The one rule of Berth's wire (spec §2 conventions): no record field is ever `null`. A field
//! the spec marks `?` is left out when it has no value; one it lists without `?` is always
//! present, with its type or its record's own "none" state. [`Wire`] enforces the first half
//! for every answer the shim serves, whatever type it holds: a struct field that would
//! serialize as `null` (an `Option` that is `None`, a unit, a `serde_json::Value::Null`) is
//! skipped. Maps are left as they are: `details` and `attributes` hold the caller's JSON,
//! nulls included. [`NoNullFields`] says the same in the OpenAPI document.

use schemars::Schema;
use schemars::transform::{Transform, transform_subschemas};
use serde::ser::{self, Serialize, Serializer};
use serde_json::Value;

/// `value` as it goes on the wire: serialized with every `null` struct field left out.
pub struct Wire<'a, T: ?Sized>(pub &'a T);

impl<T: Serialize + ?Sized> Serialize for Wire<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(NoNull(serializer))
    }
}

/// `value` as a JSON body: what the shim writes.
pub fn to_vec<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<Vec<u8>> {
    serde_json::to_vec(&Wire(value))
}

/// `value` as a JSON value, the same way.
pub fn to_value<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<Value> {
    serde_json::to_value(Wire(value))
}

/// How a unit enum value is spelled on the wire (`succeeded` for a deployment state); `None`
/// for a value that is not a string.
pub fn name_of<T: Serialize>(value: T) -> Option<String> {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
}

/// The unit enum value the wire spells `name`; `None` for a spelling it does not have.
pub fn from_name<T: serde::de::DeserializeOwned>(name: &str) -> Option<T> {
    serde_json::from_value(Value::String(name.to_string())).ok()
}

/// Whether `value` serializes as `null`, found without serializing it: the probe answers at
/// the first call.
fn is_null<T: Serialize + ?Sized>(value: &T) -> bool {
    value.serialize(NullProbe).unwrap_or(false)
}

/// A serializer wrapper that skips null struct fields at every depth.
struct NoNull<S>(S);

macro_rules! forward {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {
        $(fn $method(self, $($arg: $ty),*) -> Result<Self::Ok, Self::Error> {
            self.0.$method($($arg),*)
        })*
    };
}

impl<S: Serializer> Serializer for NoNull<S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = NoNull<S::SerializeSeq>;
    type SerializeTuple = NoNull<S::SerializeTuple>;
    type SerializeTupleStruct = NoNull<S::SerializeTupleStruct>;
    type SerializeTupleVariant = NoNull<S::SerializeTupleVariant>;
    type SerializeMap = NoNull<S::SerializeMap>;
    type SerializeStruct = NoNull<S::SerializeStruct>;
    type SerializeStructVariant = NoNull<S::SerializeStructVariant>;

    forward! {
        serialize_bool(v: bool);
        serialize_i8(v: i8);
        serialize_i16(v: i16);
        serialize_i32(v: i32);
        serialize_i64(v: i64);
        serialize_i128(v: i128);
        serialize_u8(v: u8);
        serialize_u16(v: u16);
        serialize_u32(v: u32);
        serialize_u64(v: u64);
        serialize_u128(v: u128);
        serialize_f32(v: f32);
        serialize_f64(v: f64);
        serialize_char(v: char);
        serialize_str(v: &str);
        serialize_bytes(v: &[u8]);
        serialize_none();
        serialize_unit();
        serialize_unit_struct(name: &'static str);
        serialize_unit_variant(name: &'static str, index: u32, variant: &'static str);
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<S::Ok, S::Error> {
        self.0.serialize_some(&Wire(value))
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<S::Ok, S::Error> {
        self.0.serialize_newtype_struct(name, &Wire(value))
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<S::Ok, S::Error> {
        self.0
            .serialize_newtype_variant(name, index, variant, &Wire(value))
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, S::Error> {
        self.0.serialize_seq(len).map(NoNull)
    }

    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, S::Error> {
        self.0.serialize_tuple(len).map(NoNull)
    }

    fn serialize_tuple_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct, S::Error> {
        self.0.serialize_tuple_struct(name, len).map(NoNull)
    }

    fn serialize_tuple_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleVariant, S::Error> {
        self.0
            .serialize_tuple_variant(name, index, variant, len)
            .map(NoNull)
    }

    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, S::Error> {
        self.0.serialize_map(len).map(NoNull)
    }

    fn serialize_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStruct, S::Error> {
        self.0.serialize_struct(name, len).map(NoNull)
    }

    fn serialize_struct_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStructVariant, S::Error> {
        self.0
            .serialize_struct_variant(name, index, variant, len)
            .map(NoNull)
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

/// The compound serializers that take bare values: each wraps them in [`Wire`], nothing more.
macro_rules! wrap_values {
    ($($compound:ident::$method:ident;)*) => {$(
        impl<S: ser::$compound> ser::$compound for NoNull<S> {
            type Ok = S::Ok;
            type Error = S::Error;

            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), S::Error> {
                self.0.$method(&Wire(value))
            }

            fn end(self) -> Result<S::Ok, S::Error> {
                self.0.end()
            }
        }
    )*};
}

wrap_values! {
    SerializeSeq::serialize_element;
    SerializeTuple::serialize_element;
    SerializeTupleStruct::serialize_field;
    SerializeTupleVariant::serialize_field;
}

/// A map's entries are kept, nulls too (only the structs inside them are filtered).
impl<S: ser::SerializeMap> ser::SerializeMap for NoNull<S> {
    type Ok = S::Ok;
    type Error = S::Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), S::Error> {
        self.0.serialize_key(&Wire(key))
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), S::Error> {
        self.0.serialize_value(&Wire(value))
    }

    fn end(self) -> Result<S::Ok, S::Error> {
        self.0.end()
    }
}

/// The compound serializers with named fields: a field that would be `null` is left out.
macro_rules! skip_null_fields {
    ($($compound:ident),*) => {$(
        impl<S: ser::$compound> ser::$compound for NoNull<S> {
            type Ok = S::Ok;
            type Error = S::Error;

            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<(), S::Error> {
                if is_null(value) {
                    return self.0.skip_field(key);
                }
                self.0.serialize_field(key, &Wire(value))
            }

            fn end(self) -> Result<S::Ok, S::Error> {
                self.0.end()
            }
        }
    )*};
}

skip_null_fields!(SerializeStruct, SerializeStructVariant);

/// The probe's answer: it never serializes anything, it only tells `null` from the rest.
#[derive(Debug)]
struct Answered;

impl std::fmt::Display for Answered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("probe answered")
    }
}

impl std::error::Error for Answered {}

impl ser::Error for Answered {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Answered
    }
}

/// Answers `true` for what JSON writes as `null`, `false` for anything else, at once.
struct NullProbe;

macro_rules! not_null {
    ($($method:ident($($ty:ty),*);)*) => {
        $(fn $method(self, $(_: $ty),*) -> Result<bool, Answered> {
            Ok(false)
        })*
    };
}

impl Serializer for NullProbe {
    type Ok = bool;
    type Error = Answered;
    type SerializeSeq = ser::Impossible<bool, Answered>;
    type SerializeTuple = ser::Impossible<bool, Answered>;
    type SerializeTupleStruct = ser::Impossible<bool, Answered>;
    type SerializeTupleVariant = ser::Impossible<bool, Answered>;
    type SerializeMap = ser::Impossible<bool, Answered>;
    type SerializeStruct = ser::Impossible<bool, Answered>;
    type SerializeStructVariant = ser::Impossible<bool, Answered>;

    not_null! {
        serialize_bool(bool);
        serialize_i8(i8);
        serialize_i16(i16);
        serialize_i32(i32);
        serialize_i64(i64);
        serialize_i128(i128);
        serialize_u8(u8);
        serialize_u16(u16);
        serialize_u32(u32);
        serialize_u64(u64);
        serialize_u128(u128);
        serialize_f32(f32);
        serialize_f64(f64);
        serialize_char(char);
        serialize_str(&str);
        serialize_bytes(&[u8]);
        serialize_unit_variant(&'static str, u32, &'static str);
    }

    fn serialize_none(self) -> Result<bool, Answered> {
        Ok(true)
    }

    fn serialize_unit(self) -> Result<bool, Answered> {
        Ok(true)
    }

    fn serialize_unit_struct(self, _: &'static str) -> Result<bool, Answered> {
        Ok(true)
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<bool, Answered> {
        Ok(false)
    }

    /// A newtype is what it wraps (`Time(None)` would be `null`).
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<bool, Answered> {
        value.serialize(NullProbe)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<bool, Answered> {
        Ok(false)
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Answered> {
        Err(Answered)
    }

    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Answered> {
        Err(Answered)
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Answered> {
        Err(Answered)
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Answered> {
        Err(Answered)
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Answered> {
        Err(Answered)
    }

    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, Answered> {
        Err(Answered)
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Answered> {
        Err(Answered)
    }
}

/// The OpenAPI side of the rule: no property of an object schema admits `null` (`"type":
/// [T, "null"]` becomes `T`, an `anyOf` alternative `{"type": "null"}` is dropped). Schemas
/// that are not properties, such as a body that is JSON `null` itself, stay as they are.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoNullFields;

impl Transform for NoNullFields {
    fn transform(&mut self, schema: &mut Schema) {
        if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
            for property in properties.values_mut() {
                drop_null(property);
            }
        }
        transform_subschemas(self, schema);
    }
}

/// Removes `null` from one property's schema.
fn drop_null(schema: &mut Value) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(types)) = object.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            object.insert("type".into(), only);
        }
    }
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(alternatives)) = object.get_mut(key) else {
            continue;
        };
        alternatives.retain(|a| a.get("type").and_then(Value::as_str) != Some("null"));
        if alternatives.len() == 1 {
            let only = alternatives.remove(0);
            object.remove(key);
            match only {
                Value::Object(fields) => object.extend(fields),
                other => {
                    object.insert("allOf".into(), Value::Array(vec![other]));
                }
            }
        }
    }
    if let Some(Value::Array(values)) = object.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;
    use serde_json::json;

    #[derive(Serialize, schemars::JsonSchema)]
    #[serde(rename_all = "camelCase")]
    struct Inner {
        kept: u8,
        absent: Option<String>,
    }

    #[derive(Serialize, schemars::JsonSchema)]
    #[serde(rename_all = "camelCase", tag = "kind")]
    enum Tagged {
        Server { server_id: Option<String> },
    }

    #[derive(Serialize, schemars::JsonSchema)]
    #[serde(rename_all = "camelCase")]
    struct Outer {
        inner: Inner,
        none: Option<Inner>,
        list: Vec<Inner>,
        details: std::collections::BTreeMap<String, Value>,
        value: Value,
        tagged: Tagged,
    }

    fn outer() -> Outer {
        let inner = || Inner {
            kept: 1,
            absent: None,
        };
        Outer {
            inner: inner(),
            none: None,
            list: vec![inner()],
            details: [("callerSent".to_string(), Value::Null)].into(),
            value: Value::Null,
            tagged: Tagged::Server { server_id: None },
        }
    }

    #[test]
    fn null_struct_fields_are_left_out_at_every_depth_and_map_entries_kept() {
        let json = to_value(&outer()).unwrap();
        assert_eq!(
            json,
            json!({
                "inner": {"kept": 1},
                "list": [{"kept": 1}],
                "details": {"callerSent": null},
                "tagged": {"kind": "server"},
            })
        );
        let bytes = to_vec(&outer()).unwrap();
        assert_eq!(serde_json::from_slice::<Value>(&bytes).unwrap(), json);
        // A body that is `null` itself stays `null`.
        assert_eq!(to_vec(&()).unwrap(), b"null");
    }

    #[test]
    fn the_schema_of_no_field_admits_null() {
        let mut settings = schemars::generate::SchemaSettings::draft2020_12();
        settings.transforms.push(Box::new(NoNullFields));
        let mut generator = settings.into_generator();
        let root = generator.root_schema_for::<Outer>();
        let text = serde_json::to_string(&root).unwrap();
        let definitions = serde_json::to_string(&generator.take_definitions(true)).unwrap();
        for text in [&text, &definitions] {
            assert!(!text.contains("\"null\""), "{text}");
        }
        let unit = generator.root_schema_for::<()>();
        assert_eq!(unit.get("type"), Some(&json!("null")), "{unit:?}");
    }
}
