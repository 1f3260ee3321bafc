/// A `K: V` header or a `K=V` form field, in the order the user gave them.
public struct KeyValue: Codable, Sendable, Equatable, Hashable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}
