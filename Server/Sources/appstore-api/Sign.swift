import ArgumentParser
import Foundation
import ReceiptKit

/// `sign …`: the signatures StoreKit takes from a server. No network.
struct SignCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign", abstract: "Sign promotional offers, introductory offer eligibility and Advanced Commerce requests (no network).",
        subcommands: [PromotionalOffer.self, PromotionalOfferV2.self, IntroEligibility.self, AdvancedCommerce.self])

    /// What every signer takes: the key, the app, and what is otherwise fresh.
    struct Common: ParsableArguments {
        @OptionGroup var credentials: CredentialOptions
        @Option(help: ArgumentHelp("The nonce, a UUID (default: a new one).", valueName: "uuid")) var nonce: String?
        @Option(help: ArgumentHelp("The signing instant, milliseconds since 1970 (default: now).", valueName: "ms"))
        var timestamp: Int64?

        func resolvedNonce() throws -> UUID {
            guard let nonce else { return UUID() }
            guard let parsed = UUID(uuidString: nonce) else { throw ValidationError("--nonce must be a UUID, not '\(nonce)'") }
            return parsed
        }

        /// The instant: the option, or the clock, read here at the edge.
        var instant: Timestamp { timestamp.map(Timestamp.init(millisecondsSince1970:)) ?? Timestamp(Date()) }

        func signer() throws -> AppStoreRequestSigner {
            try signing { try AppStoreRequestSigner(key: credentials.key(), bundleId: credentials.resolvedBundleId()) }
        }
    }

    /// Maps a signer's refusal to a usage error.
    static func signing<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as ReceiptKitError {
            throw ValidationError("\(error.code): \(error.message)")
        }
    }

    static func printJSON(_ value: [String: Any]) throws {
        print(try Session.jsonText(value))
    }

    struct PromotionalOffer: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "promotional-offer",
            abstract: "A promotional offer signature (V1): {\"key_id\", \"nonce\", \"timestamp\", \"signature\"}.")

        @Option(name: .customLong("product-id"), help: "The subscription's product id.") var productId: String
        @Option(name: .customLong("offer-id"), help: "The promotional offer's id.") var offerId: String
        @Option(name: .customLong("app-account-token"), help: "The purchase's app account token (a UUID), if any.")
        var appAccountToken: String = ""
        @OptionGroup var common: Common

        func run() throws {
            let nonce = try common.resolvedNonce()
            let (keyId, signingKey) = try common.credentials.signingKey()
            let signature = try SignCommand.signing {
                try PromotionalOfferSignatureV1(
                    keyId: keyId, signingKey: signingKey, bundleId: common.credentials.resolvedBundleId(),
                    productId: productId, offerId: offerId, appAccountToken: appAccountToken, nonce: nonce,
                    timestamp: common.instant.millisecondsSince1970)
            }
            try SignCommand.printJSON([
                "key_id": signature.keyId, "nonce": signature.nonce, "timestamp": signature.timestamp, "signature": signature.signature,
            ])
        }
    }

    struct PromotionalOfferV2: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "promotional-offer-v2", abstract: "A promotional offer JWS (aud promotional-offer): {\"jws\"}.")

        @Option(name: .customLong("product-id"), help: "The subscription's product id.") var productId: String
        @Option(name: .customLong("offer-id"), help: "The promotional offer's id.") var offerId: String
        @Option(name: .customLong("transaction-id"), help: "Any transaction id of the customer (recommended).") var transactionId: String?
        @OptionGroup var common: Common

        func run() throws {
            let nonce = try common.resolvedNonce()
            let signer = try common.signer()
            let jws = try SignCommand.signing {
                try signer.promotionalOfferV2(
                    productId: productId, offerIdentifier: offerId, transactionId: transactionId, issuedAt: common.instant, nonce: nonce)
            }
            try SignCommand.printJSON(["jws": jws])
        }
    }

    struct IntroEligibility: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "intro-eligibility",
            abstract: "An introductory offer eligibility JWS (aud introductory-offer-eligibility): {\"jws\"}.")

        @Option(name: .customLong("product-id"), help: "The subscription's product id.") var productId: String
        @Option(name: .customLong("allow-introductory-offer"), help: ArgumentHelp("true or false.", valueName: "bool"))
        var allowIntroductoryOffer: String
        @Option(name: .customLong("transaction-id"), help: "Any transaction id of the customer.") var transactionId: String
        @OptionGroup var common: Common

        func run() throws {
            let allow = try parseBool(allowIntroductoryOffer, "--allow-introductory-offer")
            let nonce = try common.resolvedNonce()
            let signer = try common.signer()
            let jws = try SignCommand.signing {
                try signer.introductoryOfferEligibility(
                    productId: productId, allowIntroductoryOffer: allow, transactionId: transactionId, issuedAt: common.instant,
                    nonce: nonce)
            }
            try SignCommand.printJSON(["jws": jws])
        }
    }

    struct AdvancedCommerce: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "advanced-commerce", abstract: "An Advanced Commerce in-app request JWS (aud advanced-commerce-api): {\"jws\"}.")

        @Option(help: ArgumentHelp("The request object, a JSON file ('-': standard input).", valueName: "file")) var request: String
        @OptionGroup var common: Common

        func run() throws {
            let data = request == "-" ? FileHandle.standardInput.readDataToEndOfFile() : FileManager.default.contents(atPath: request)
            guard let data else {
                AppStoreAPI.complain("cannot read \(request)")
                throw AppStoreAPI.Status.cannotRead
            }
            let nonce = try common.resolvedNonce()
            let signer = try common.signer()
            let jws = try SignCommand.signing { try signer.advancedCommerceRequest(Array(data), issuedAt: common.instant, nonce: nonce) }
            try SignCommand.printJSON(["jws": jws])
        }
    }
}
