import UploadWire

/// Swift's dictionaries and sets keep their storage when elements are removed: after 100,000 jobs
/// are cleared, the job table would keep room (and memory) for 100,000 jobs for the rest of the
/// daemon's life. These give it back once most of it is empty; a rebuild costs one pass over what
/// is left, and happens again only after the table lost three quarters of its room once more.
///
/// Inlinable, so that each caller gets them specialized for its types: called across modules as
/// generic code, the look at the capacity alone took ~630 instructions (the metadata of the
/// dictionary's types found at run time), six times for each small file uploaded.
extension Dictionary {
    /// Rebuilds the storage to fit the elements when they fill less than a quarter of it.
    @inlinable public mutating func shrinkIfSparse() {
        guard capacity > 1024, count * 4 < capacity else { return }
        var fitted = Self(minimumCapacity: count)
        for (key, value) in self { fitted[key] = value }
        self = fitted
    }

    /// Rebuilds the storage when it is larger than these elements alone would have grown it: what
    /// a `reserveCapacity` that guessed too high leaves.
    @inlinable public mutating func fitCapacity() {
        guard Self(minimumCapacity: count).capacity < capacity else { return }
        var fitted = Self(minimumCapacity: count)
        for (key, value) in self { fitted[key] = value }
        self = fitted
    }
}

extension Set {
    /// Rebuilds the storage to fit the elements when they fill less than a quarter of it.
    @inlinable public mutating func shrinkIfSparse() {
        guard capacity > 1024, count * 4 < capacity else { return }
        var fitted = Self(minimumCapacity: count)
        for element in self { fitted.insert(element) }
        self = fitted
    }
}
