import Foundation
import Testing

/// The server's folders are layered, top to bottom, each using only the ones below it
/// (`docs/architecture.md`, "The server"): a file that names a type declared in a folder above
/// its own fails, naming the file, the line and the type. The order is ``Layering/server``.
@Suite("Architecture")
struct ArchitectureTests {
    @Test("no file of the server uses a type declared in a folder above its own")
    func serverDirections() throws {
        let sources = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/ReceiptKitServer")
        let check = try Layering.server.check(SourceTree(directory: sources))
        #expect(check.unplaced.isEmpty, "folders not in Layering.server: \(check.unplaced)")
        #expect(check.declared > 100, "the checker found the server's types (\(check.declared))")
        #expect(check.violations.isEmpty, "\(check.violations.map(\.description).joined(separator: "\n"))")
    }

    @Test("an upward use is found, and only it: not in comments, doc comments or strings")
    func findsAnUpwardUse() throws {
        let tree = try SyntheticTree([
            "High/Top.swift": """
            /// A type above.
            struct Top {
                struct Nested {}
            }
            """,
            "Low/Bottom.swift": """
            /// Not a use: ``Top``, nor /* Top */ here.
            struct Bottom {
                // Top in a comment.
                let text = "Top \\(1) \\"Top\\""
                let block = \"\"\"
                    Top
                    \"\"\"
                /* nested /* Top */ still a comment: Top */
                let top: Top?
            }
            """,
        ])
        defer { tree.remove() }
        let check = try Layering([["High"], ["Low"]]).check(SourceTree(directory: tree.root))
        #expect(check.violations == [Layering.Violation(file: "Low/Bottom.swift", line: 9, type: "Top", declaredIn: "High")])
        #expect(check.unplaced.isEmpty)
    }

    @Test("downward uses, uses within a folder and a shared row pass; an unplaced folder is named")
    func passesDownwardUses() throws {
        let tree = try SyntheticTree([
            "High/Top.swift": "struct Top { let bottom: Bottom; let side: Side }",
            "Low/Bottom.swift": "/// Below ``Top``.\nstruct Bottom { let other: Other }\nstruct Other {}",
            "Side/Side.swift": "import struct Foundation.Date\nstruct Side { let bottom: Bottom? }",
            "Elsewhere/Loose.swift": "struct Loose {}",
            "Root.swift": "let top: Top? = nil",
        ])
        defer { tree.remove() }
        let check = try Layering([["."], ["High", "Side"], ["Low"]]).check(SourceTree(directory: tree.root))
        #expect(check.violations.isEmpty)
        #expect(check.unplaced == ["Elsewhere"])
        #expect(check.declared == 5)
    }
}

/// The order of the server's folders, top to bottom, and the check that a file uses only types
/// of its own folder and the folders below it.
struct Layering {
    /// The server's order, as `docs/architecture.md` gives it: `.` is the files beside the
    /// folders (the application). Folders on one row may use each other.
    static let server = Layering([
        ["."],
        ["Routes", "Console", "Erasure"],
        ["HTTP"],
        ["Offers"],
        ["VerifyReceipt"],
        ["Reconciliation"],
        ["Configuration"],
        ["Retention"],
        ["Feed"],
        ["Consumption"],
        ["Entitlements"],
        ["Ingest"],
        ["Delivery"],
        ["Store"],
        ["Support"],
    ])

    /// The rows, top to bottom.
    let rows: [[String]]

    init(_ rows: [[String]]) {
        self.rows = rows
    }

    /// A use of a type declared in a folder above the file's.
    struct Violation: Equatable, CustomStringConvertible {
        /// The file, relative to the tree.
        var file: String
        var line: Int
        var type: String
        /// The folder the type is declared in.
        var declaredIn: String

        var description: String { "\(file):\(line): uses \(type), declared in \(declaredIn)/, a folder above" }
    }

    /// What ``check(_:)`` found.
    struct Check {
        var violations: [Violation] = []
        /// Top-level folders the order does not place.
        var unplaced: [String] = []
        /// How many top-level types the tree declares.
        var declared = 0
    }

    /// Checks every file of a tree against the order.
    func check(_ tree: SourceTree) throws -> Check {
        var rank: [String: Int] = [:]
        for (index, row) in rows.enumerated() {
            for folder in row { rank[folder] = index }
        }
        var check = Check()
        var declaredIn: [String: String] = [:]
        for file in tree.files {
            for name in file.code.declarations { declaredIn[name] = file.folder }
        }
        check.declared = declaredIn.count
        check.unplaced = Set(tree.files.map(\.folder)).filter { rank[$0] == nil }.sorted()
        for file in tree.files {
            guard let own = rank[file.folder] else { continue }
            for token in file.code.tokens {
                guard let folder = declaredIn[token.text], let above = rank[folder], above < own else { continue }
                check.violations.append(Violation(file: file.path, line: token.line, type: token.text, declaredIn: folder))
            }
        }
        return check
    }
}

/// The Swift files under a directory, each with its top-level folder (`.` for a file beside the
/// folders) and its code.
struct SourceTree {
    struct File {
        /// The path relative to the directory.
        var path: String
        var folder: String
        var code: SwiftCode
    }

    var files: [File] = []

    init(directory: URL) throws {
        let root = directory.standardizedFileURL.path
        guard let paths = FileManager.default.subpaths(atPath: root) else {
            throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: root])
        }
        for path in paths.sorted() where path.hasSuffix(".swift") {
            let text = try String(contentsOfFile: root + "/" + path, encoding: .utf8)
            let components = path.split(separator: "/")
            files.append(File(path: path, folder: components.count > 1 ? String(components[0]) : ".", code: SwiftCode(text)))
        }
    }
}

/// A Swift file's identifiers outside comments and string literals, with their lines, and the
/// types it declares at the top level (`struct`, `class`, `enum`, `protocol`, `actor`,
/// `typealias`; not those nested in a type or an extension, which are named through it).
struct SwiftCode {
    struct Token {
        var text: String
        var line: Int
    }

    private(set) var tokens: [Token] = []
    private(set) var declarations: [String] = []

    private static let declaring: Set<String> = ["struct", "class", "enum", "protocol", "actor", "typealias"]

    init(_ text: String) {
        let characters = Array(text.unicodeScalars)
        var index = 0
        var line = 1
        var depth = 0
        var previous: String?
        var previousLine = 0
        /// The line of an `import`, whose `struct Foundation.Date` declares nothing.
        var importLine = 0
        func at(_ offset: Int) -> Unicode.Scalar? {
            index + offset < characters.count ? characters[index + offset] : nil
        }
        /// Skips a string literal starting at `index` — raw (`#"…"#`) or not, single- or
        /// multi-line, its interpolations (and the literals in them) with it — counting its lines.
        /// - Returns: `false` when no literal starts there (a `#if`, say).
        func skipLiteral() -> Bool {
            var hashes = 0
            while at(hashes) == "#" { hashes += 1 }
            guard at(hashes) == "\"" else { return false }
            index += hashes
            let quotes = at(1) == "\"" && at(2) == "\"" ? 3 : 1
            index += quotes
            while index < characters.count {
                let scalar = characters[index]
                if scalar == "\\", (0..<hashes).allSatisfy({ at(1 + $0) == "#" }) {
                    index += 1 + hashes
                    guard at(0) == "(" else {
                        if at(0) == "\n" { line += 1 }
                        index += 1
                        continue
                    }
                    // An interpolation: code, up to its closing parenthesis.
                    var parentheses = 0
                    while index < characters.count {
                        let inner = characters[index]
                        if inner == "(" { parentheses += 1 }
                        if inner == ")" { parentheses -= 1 }
                        if inner == "\n" { line += 1 }
                        if inner == "\"" || inner == "#", skipLiteral() { continue }
                        index += 1
                        if parentheses == 0 { break }
                    }
                    continue
                }
                if scalar == "\n" { line += 1 }
                if scalar == "\"", (0..<quotes).allSatisfy({ at($0) == "\"" }),
                    (0..<hashes).allSatisfy({ at(quotes + $0) == "#" })
                {
                    index += quotes + hashes
                    return true
                }
                index += 1
            }
            return true
        }
        while index < characters.count {
            let character = characters[index]
            if character == "\n" {
                line += 1
                index += 1
            } else if character == "/", at(1) == "/" {
                while index < characters.count, characters[index] != "\n" { index += 1 }
            } else if character == "/", at(1) == "*" {
                // Block comments nest in Swift.
                var nesting = 0
                repeat {
                    if characters[index] == "/", at(1) == "*" {
                        nesting += 1
                        index += 2
                    } else if characters[index] == "*", at(1) == "/" {
                        nesting -= 1
                        index += 2
                    } else {
                        if characters[index] == "\n" { line += 1 }
                        index += 1
                    }
                } while nesting > 0 && index < characters.count
            } else if character == "#" || character == "\"" {
                if !skipLiteral() { index += 1 }
            } else if character == "{" {
                depth += 1
                index += 1
            } else if character == "}" {
                depth -= 1
                index += 1
            } else if character == "_" || character == "`" || character.properties.isAlphabetic {
                let start = index
                while index < characters.count,
                    characters[index] == "_" || characters[index] == "`" || characters[index].properties.isAlphabetic
                        || characters[index].properties.numericType != nil
                {
                    index += 1
                }
                let word = String(String.UnicodeScalarView(characters[start..<index])).replacingOccurrences(of: "`", with: "")
                if word == "import" { importLine = line }
                if depth == 0, let previous, Self.declaring.contains(previous), previousLine == line, importLine != line {
                    declarations.append(word)
                }
                tokens.append(Token(text: word, line: line))
                previous = word
                previousLine = line
            } else {
                index += 1
            }
        }
    }
}

/// A tree of Swift files written to a temporary directory.
struct SyntheticTree {
    let root: URL

    /// Writes the files, by path relative to the tree.
    init(_ files: [String: String]) throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("architecture-\(UUID().uuidString)")
        for (path, text) in files {
            let url = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try text.write(to: url, atomically: true, encoding: .utf8)
        }
    }

    func remove() {
        try? FileManager.default.removeItem(at: root)
    }
}
