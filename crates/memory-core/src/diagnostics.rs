//! [`Diagnostics`]: what the stages of a trim say about how they reached
//! their result, carried back with the [`TrimResult`](crate::TrimResult).

use std::any::Any;
use std::sync::Arc;

/// What the stages of one trim report about it (a stage's trace of what
/// it shed, the compactions it started), in stage order; each entry is any
/// type its stage defines, found again by that type.
///
/// They describe how a result was reached, not what it is: two results
/// with the same messages are equal whatever their diagnostics say.
///
/// ```
/// use memory_core::Diagnostics;
///
/// #[derive(Debug, PartialEq)]
/// struct Shed { tokens: usize }
///
/// let mut d = Diagnostics::default();
/// d.push("thrift", Shed { tokens: 40 });
/// assert_eq!(d.get::<Shed>(), Some(&Shed { tokens: 40 }));
/// assert_eq!(d.get::<String>(), None);
/// assert_eq!(d.stages().collect::<Vec<_>>(), ["thrift"]);
/// ```
#[derive(Clone, Default)]
pub struct Diagnostics {
    entries: Vec<(String, Arc<dyn Any + Send + Sync>)>,
}

impl Diagnostics {
    /// Adds what `stage` reports.
    ///
    /// ```
    /// let mut d = memory_core::Diagnostics::default();
    /// d.push("window", 3_usize);
    /// assert!(!d.is_empty());
    /// ```
    pub fn push<T: Any + Send + Sync>(&mut self, stage: impl Into<String>, report: T) {
        self.entries.push((stage.into(), Arc::new(report)));
    }

    /// The last report of type `T`, if any stage made one.
    ///
    /// ```
    /// let mut d = memory_core::Diagnostics::default();
    /// d.push("a", 1_u32);
    /// d.push("b", 2_u32);
    /// assert_eq!(d.get::<u32>(), Some(&2));
    /// ```
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.entries
            .iter()
            .rev()
            .find_map(|(_, report)| report.downcast_ref::<T>())
    }

    /// Every report of type `T`, in stage order.
    ///
    /// ```
    /// let mut d = memory_core::Diagnostics::default();
    /// d.push("a", 1_u32);
    /// d.push("b", 2_u32);
    /// assert_eq!(d.all::<u32>().copied().collect::<Vec<_>>(), [1, 2]);
    /// ```
    pub fn all<T: Any>(&self) -> impl Iterator<Item = &T> {
        self.entries
            .iter()
            .filter_map(|(_, report)| report.downcast_ref::<T>())
    }

    /// The names of the stages that reported, in order.
    ///
    /// ```
    /// assert_eq!(memory_core::Diagnostics::default().stages().count(), 0);
    /// ```
    pub fn stages(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(stage, _)| stage.as_str())
    }

    /// Whether no stage reported.
    ///
    /// ```
    /// assert!(memory_core::Diagnostics::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `earlier`'s reports, then these (a pipeline's stages in order).
    ///
    /// ```
    /// let mut first = memory_core::Diagnostics::default();
    /// first.push("a", 1_u8);
    /// let mut second = memory_core::Diagnostics::default();
    /// second.push("b", 2_u8);
    /// second.follow(first);
    /// assert_eq!(second.stages().collect::<Vec<_>>(), ["a", "b"]);
    /// ```
    pub fn follow(&mut self, mut earlier: Diagnostics) {
        earlier.entries.append(&mut self.entries);
        self.entries = earlier.entries;
    }
}

impl std::fmt::Debug for Diagnostics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.stages()).finish()
    }
}

/// Diagnostics are not part of a result's value: always equal.
impl PartialEq for Diagnostics {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
