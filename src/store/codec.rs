//! The one value codec: every value stored in RocksDB is encoded and decoded here (bincode 2, standard
//! configuration: little-endian varints). Swapping the value format later touches only this file.
//!
//! Also home of the compact serde helper for 256-bit amounts, which stores a `U256` as its big-endian bytes
//! without leading zeros (a zero value costs one byte, one ether nine).

use serde::{de::DeserializeOwned, Serialize};

/// A stored value could not be encoded or decoded.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    /// Encoding failed (never expected for our own types).
    #[error("encode: {0}")]
    Encode(#[from] bincode::error::EncodeError),
    /// The bytes are not a valid value of the expected type.
    #[error("decode: {0}")]
    Decode(#[from] bincode::error::DecodeError),
    /// The value decoded but bytes were left over.
    #[error("decode: {0} trailing bytes")]
    Trailing(usize),
}

fn config() -> impl bincode::config::Config {
    bincode::config::standard()
}

/// Encodes a value for storage.
pub fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, CodecError> {
    Ok(bincode::serde::encode_to_vec(value, config())?)
}

/// Decodes a stored value, refusing trailing bytes.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CodecError> {
    let (value, read) = bincode::serde::decode_from_slice(bytes, config())?;
    if read != bytes.len() {
        return Err(CodecError::Trailing(bytes.len() - read));
    }
    Ok(value)
}

/// `#[serde(with = "codec::amount")]`: a `U256` as minimal big-endian bytes.
pub mod amount {
    use alloy::primitives::U256;
    use serde::{de::Error, Deserializer, Serializer};

    /// Serializes without leading zero bytes.
    pub fn serialize<S: Serializer>(value: &U256, s: S) -> Result<S::Ok, S::Error> {
        let bytes = value.to_be_bytes::<32>();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        s.serialize_bytes(&bytes[skip..])
    }

    /// Deserializes at most 32 big-endian bytes.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<U256, D::Error> {
        let bytes: Vec<u8> = serde_bytes_vec(d)?;
        U256::try_from_be_slice(&bytes).ok_or_else(|| D::Error::custom("amount longer than 32 bytes"))
    }

    fn serde_bytes_vec<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Vec<u8>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E: Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
                Ok(v.to_vec())
            }
            fn visit_borrowed_bytes<E: Error>(self, v: &'de [u8]) -> Result<Vec<u8>, E> {
                Ok(v.to_vec())
            }
            fn visit_byte_buf<E: Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
                Ok(v)
            }
        }
        d.deserialize_bytes(V)
    }

    /// The same, for an optional amount.
    pub mod option {
        use alloy::primitives::U256;
        use serde::{Deserialize, Deserializer, Serialize, Serializer};

        #[derive(Serialize, Deserialize)]
        struct Wrap(#[serde(with = "super")] U256);

        /// Serializes `None` or the compact amount.
        pub fn serialize<S: Serializer>(value: &Option<U256>, s: S) -> Result<S::Ok, S::Error> {
            value.map(Wrap).serialize(s)
        }

        /// Deserializes `None` or the compact amount.
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<U256>, D::Error> {
            Ok(Option::<Wrap>::deserialize(d)?.map(|w| w.0))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy::primitives::U256;
    use proptest::prelude::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Sample {
        #[serde(with = "amount")]
        value: U256,
        #[serde(with = "amount::option")]
        maybe: Option<U256>,
        n: u64,
    }

    #[test]
    fn amounts_are_compact() {
        let zero = encode(&Sample { value: U256::ZERO, maybe: None, n: 0 }).unwrap();
        assert_eq!(zero, vec![0, 0, 0]);
        let one_eth = encode(&Sample { value: U256::from(10u64.pow(18)), maybe: None, n: 1 }).unwrap();
        assert_eq!(alloy::hex::encode(one_eth), "080de0b6b3a76400000001");
    }

    #[test]
    fn trailing_bytes_and_garbage_are_errors() {
        let mut bytes = encode(&Sample { value: U256::from(7), maybe: Some(U256::MAX), n: 9 }).unwrap();
        bytes.push(0);
        assert!(matches!(decode::<Sample>(&bytes), Err(CodecError::Trailing(1))));
        assert!(decode::<Sample>(&[0x21; 40]).is_err());
    }

    proptest! {
        #[test]
        fn values_round_trip(v: [u8; 32], m: Option<[u8; 32]>, n: u64) {
            let s = Sample { value: U256::from_be_bytes(v), maybe: m.map(U256::from_be_bytes), n };
            prop_assert_eq!(decode::<Sample>(&encode(&s).unwrap()).unwrap(), s);
        }
    }
}
