/// An option a command accepts: a flag, or an option that takes one value.
struct OptionSpec: Sendable, Equatable {
    /// With its dashes: `--to`.
    var name: String
    /// What the value is called in help (`DEST`), or nil for a flag.
    var valueName: String?

    static func flag(_ name: String) -> OptionSpec { OptionSpec(name: name, valueName: nil) }
    static func value(_ name: String, _ valueName: String) -> OptionSpec {
        OptionSpec(name: name, valueName: valueName)
    }

    var takesValue: Bool { valueName != nil }
}

/// One option as it appeared on the command line.
struct ParsedOption: Sendable, Equatable {
    var name: String
    /// nil for a flag.
    var value: String?
}

/// A command line split into options (in order) and positional arguments (in order).
struct ParsedArguments: Sendable, Equatable {
    var options: [ParsedOption] = []
    var positionals: [String] = []

    /// Every value given to a repeatable option, in order.
    func values(_ name: String) -> [String] { options.filter { $0.name == name }.compactMap(\.value) }

    /// The value of a single-valued option; the last one wins when it is repeated.
    func value(_ name: String) -> String? { values(name).last }

    /// Whether a flag (or an option) was given.
    func contains(_ name: String) -> Bool { options.contains { $0.name == name } }

    /// The same arguments without the named options.
    func removing(_ names: Set<String>) -> ParsedArguments {
        ParsedArguments(options: options.filter { !names.contains($0.name) }, positionals: positionals)
    }
}

/// Splits arguments the way getopt_long does: `--opt value`, `--opt=value`, flags, and `--` ending the options.
enum ArgumentParser {
    /// `-h` is always read as `--help`; whether `--help` is accepted is up to `options`.
    static func parse(_ arguments: [String], options: [OptionSpec]) throws(UsageError) -> ParsedArguments {
        var parsed = ParsedArguments()
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                parsed.positionals.append(contentsOf: arguments[index...])
                break
            }
            // `-5` is a number (a priority), not an option: no option is a digit.
            let isNegativeNumber =
                argument.count > 1 && argument.dropFirst().allSatisfy(\.isNumber)
                && !options.contains { $0.name == argument }
            guard argument.hasPrefix("-"), argument != "-", !isNegativeNumber else {
                parsed.positionals.append(argument)
                continue
            }
            var name = argument == "-h" ? "--help" : argument
            var inlineValue: String?
            if name.hasPrefix("--"), let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let spec = options.first(where: { $0.name == name }) else {
                throw UsageError("unknown option '\(name)'")
            }
            if !spec.takesValue {
                if inlineValue != nil { throw UsageError("option '\(name)' takes no value") }
                parsed.options.append(ParsedOption(name: name, value: nil))
            } else if let inlineValue {
                parsed.options.append(ParsedOption(name: name, value: inlineValue))
            } else if index < arguments.endIndex {
                parsed.options.append(ParsedOption(name: name, value: arguments[index]))
                index += 1
            } else {
                throw UsageError("option '\(name)' needs a value (\(spec.valueName ?? "VALUE"))")
            }
        }
        return parsed
    }
}
