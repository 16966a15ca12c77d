//! Enums stored and sent as fixed words: one way to write them, so every
//! set of values reads, prints and (de)serialises the same.

/// A value read from outside (a database row, an argument) that is not one
/// of its type's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} `{value}` (known: {known})")]
pub struct UnknownValue {
    /// What the value was meant to be, e.g. `session status`.
    pub kind: &'static str,
    pub value: String,
    pub known: String,
}

/// Declares an enum whose variants are the given words: `as_str`,
/// `Display`, `FromStr` (an [`UnknownValue`] names the bad word and the
/// known ones), serde as those words, and `ALL`. The crate using it must
/// depend on `serde`.
///
/// ```
/// quire_types::text_enum! {
///     /// A traffic light.
///     pub enum Light ("light") {
///         Red = "red",
///         Green = "green",
///     }
/// }
/// assert_eq!(Light::Red.as_str(), "red");
/// assert_eq!("green".parse::<Light>(), Ok(Light::Green));
/// assert!("blue".parse::<Light>().unwrap_err().to_string().contains("red, green"));
/// ```
#[macro_export]
macro_rules! text_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident ($kind:literal) {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ::serde::Serialize, ::serde::Deserialize)]
        $vis enum $name {
            $( $(#[$vmeta])* #[serde(rename = $text)] $variant, )+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The word stored and sent for this value.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )+
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::UnknownValue;

            fn from_str(text: &str) -> ::std::result::Result<Self, Self::Err> {
                match text {
                    $( $text => Ok($name::$variant), )+
                    _ => Err($crate::UnknownValue {
                        kind: $kind,
                        value: text.to_string(),
                        known: [$($text),+].join(", "),
                    }),
                }
            }
        }
    };
}
