import Foundation
import NIOConcurrencyHelpers
package import ReceiptKit

/// The entitlements file `RECEIPTKIT_ENTITLEMENTS_FILE` names (``EntitlementCatalog``): read at
/// start, where an error stops the server naming the line and member, and again on `SIGHUP`,
/// where an error keeps the catalog in use and is logged.
package final class EntitlementsFile: Sendable {
    /// The variable that names the file.
    package static let variable = "RECEIPTKIT_ENTITLEMENTS_FILE"

    /// The file's path.
    package let path: String
    private let current: Locked<EntitlementCatalog>

    /// Reads the file.
    ///
    /// - Throws: ``ConfigurationError`` naming the file, the line and the member at fault.
    package init(path: String) throws(ConfigurationError) {
        self.path = path
        current = Locked(try Self.read(path))
    }

    /// A file already read (the tests).
    package init(path: String, catalog: EntitlementCatalog) {
        self.path = path
        current = Locked(catalog)
    }

    /// The catalog in use.
    package var catalog: EntitlementCatalog {
        current.withLockedValue { $0 }
    }

    /// Puts a catalog read again in use.
    package func replace(with catalog: EntitlementCatalog) {
        current.withLockedValue { $0 = catalog }
    }

    /// Reads the file at `path`.
    ///
    /// - Throws: ``ConfigurationError`` naming the file and ReceiptKit's reason (its line and
    ///   member).
    package static func read(_ path: String) throws(ConfigurationError) -> EntitlementCatalog {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError("\(variable): cannot read \(path)")
        }
        do {
            return try EntitlementCatalog(jsonBytes: Array(data))
        } catch {
            throw ConfigurationError("\(variable): \(path): \(error.reason)")
        }
    }

    /// Checks a catalog against the products the store has seen (``EntitlementCatalog/contradictions(productTypes:)``):
    /// a duration on a product that is not a non-renewing subscription, none on one that is, or a
    /// consumable.
    ///
    /// - Throws: ``ConfigurationError`` listing each product at fault.
    package static func check(_ catalog: EntitlementCatalog, path: String, against store: Store, at instant: Timestamp) async throws {
        let productIds = Set(catalog.entitlements.values.flatMap { $0.map(\.id) })
        let types = try await store.productTypes(of: productIds, at: instant)
        let contradictions = catalog.contradictions(productTypes: types)
        guard contradictions.isEmpty else {
            throw ConfigurationError("\(variable): \(path): \(contradictions.joined(separator: "; "))")
        }
    }
}
