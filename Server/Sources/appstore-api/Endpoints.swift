import AppStoreServerAPI
import ArgumentParser
import Foundation
import ReceiptKit

/// `transaction ID`: Get Transaction Info.
struct TransactionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "transaction", abstract: "Get Transaction Info: one transaction's JWS.")

    @Argument(help: "The transaction id.") var transactionId: String
    @OptionGroup var options: APIOptions

    func run() async throws {
        try await Session.run(options) { session in
            let item = try await session.client.transactionInfo(transactionId)
            if session.json { try session.object(["signedTransactionInfo": item.jws]) } else { session.line(item.jws) }
        }
    }
}

/// `history ID [filters]`: Get Transaction History v2, every page.
struct HistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history", abstract: "Get Transaction History v2: every transaction's JWS, all pages, in Apple's order.")

    @Argument(help: "Any transaction id of the customer.") var transactionId: String
    @Option(help: ArgumentHelp("Only purchases from this instant (ISO 8601).", valueName: "instant")) var start: String?
    @Option(help: ArgumentHelp("Only purchases before this instant (ISO 8601).", valueName: "instant")) var end: String?
    @Option(name: .customLong("product-id"), help: "Only this product (repeatable).") var productIds: [String] = []
    @Option(name: .customLong("product-type"), help: "AUTO_RENEWABLE, NON_RENEWABLE, CONSUMABLE or NON_CONSUMABLE (repeatable).")
    var productTypes: [String] = []
    @Option(help: "ASCENDING or DESCENDING (by modification date).") var sort: String?
    @Option(name: .customLong("subscription-group"), help: "Only this subscription group (repeatable).") var groups: [String] = []
    @Option(help: "PURCHASED or FAMILY_SHARED.") var ownership: String?
    @Option(help: ArgumentHelp("Only revoked (true) or only not revoked (false) transactions.", valueName: "bool")) var revoked: String?
    @OptionGroup var options: APIOptions

    func filter() throws -> TransactionHistoryFilter {
        TransactionHistoryFilter(
            startDate: try start.map { try parseInstant($0, "--start") }, endDate: try end.map { try parseInstant($0, "--end") },
            productIds: productIds,
            productTypes: try productTypes.map { text in
                guard let type = TransactionHistoryFilter.ProductType(rawValue: text.uppercased()) else {
                    throw ValidationError("--product-type must be AUTO_RENEWABLE, NON_RENEWABLE, CONSUMABLE or NON_CONSUMABLE")
                }
                return type
            },
            sort: try sort.map { text in
                guard let sort = TransactionHistoryFilter.Sort(rawValue: text.uppercased()) else {
                    throw ValidationError("--sort must be ASCENDING or DESCENDING")
                }
                return sort
            },
            subscriptionGroupIdentifiers: groups, inAppOwnershipType: ownership,
            revoked: try revoked.map { try parseBool($0, "--revoked") })
    }

    func run() async throws {
        let filter = try filter()
        try await Session.run(options) { session in
            for try await page in session.client.transactionHistoryPages(transactionId, filter: filter) {
                if session.json {
                    try session.object([
                        "revision": page.revision.orNull, "hasMore": page.hasMore, "bundleId": page.bundleId.orNull,
                        "appAppleId": page.appAppleId.orNull, "environment": page.rawEnvironment.orNull,
                        "signedTransactions": page.transactions.map(\.jws),
                    ])
                } else {
                    page.transactions.forEach { session.line($0.jws) }
                }
                session.reject(page.rejected)
            }
        }
    }
}

/// `statuses ID [--status …]`: Get All Subscription Statuses.
struct StatusesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "statuses",
        abstract: "Get All Subscription Statuses: each subscription's latest transaction and renewal info JWS.")

    @Argument(help: "Any transaction id of the customer.") var transactionId: String
    @Option(help: "Only this status (repeatable): active, expired, billing-retry, grace-period, revoked, or 1-5.")
    var status: [String] = []
    @OptionGroup var options: APIOptions

    func run() async throws {
        let names: [String: SubscriptionStatusFilter] = [
            "active": .active, "expired": .expired, "billing-retry": .billingRetry, "grace-period": .billingGracePeriod,
            "revoked": .revoked,
        ]
        let filter = try status.map { text in
            guard let value = names[text.lowercased()] ?? Int32(text).flatMap(SubscriptionStatusFilter.init(rawValue:)) else {
                throw ValidationError("--status must be active, expired, billing-retry, grace-period, revoked, or 1-5")
            }
            return value
        }
        try await Session.run(options) { session in
            let statuses = try await session.client.subscriptionStatuses(transactionId, status: filter)
            if session.json {
                try session.object([
                    "environment": statuses.rawEnvironment.orNull, "bundleId": statuses.bundleId.orNull,
                    "appAppleId": statuses.appAppleId.orNull,
                    "data": statuses.groups.map { group in
                        [
                            "subscriptionGroupIdentifier": group.subscriptionGroupIdentifier.orNull,
                            "lastTransactions": group.lastTransactions.map { item in
                                [
                                    "status": item.rawStatus.orNull, "originalTransactionId": item.originalTransactionId.orNull,
                                    "signedTransactionInfo": item.transaction.jws, "signedRenewalInfo": item.renewalInfo.jws,
                                ]
                            },
                        ]
                    },
                ])
            } else {
                for item in statuses.groups.flatMap(\.lastTransactions) {
                    session.line(item.transaction.jws)
                    session.line(item.renewalInfo.jws)
                }
            }
            session.reject(statuses.rejected)
        }
    }
}

/// `refunds ID`: Get Refund History v2, every page.
struct RefundsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "refunds", abstract: "Get Refund History v2: every refunded transaction's JWS, all pages.")

    @Argument(help: "Any transaction id of the customer.") var transactionId: String
    @OptionGroup var options: APIOptions

    func run() async throws {
        try await Session.run(options) { session in
            for try await page in session.client.refundHistoryPages(transactionId) {
                if session.json {
                    try session.object(["revision": page.revision.orNull, "hasMore": page.hasMore,
                                    "signedTransactions": page.transactions.map(\.jws)])
                } else {
                    page.transactions.forEach { session.line($0.jws) }
                }
                session.reject(page.rejected)
            }
        }
    }
}

/// `order ORDER_ID`: Look Up Order ID.
struct OrderCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "order", abstract: "Look Up Order ID: the order's transactions' JWS (status 1, an unknown order: exit 2).")

    @Argument(help: "The order id from the customer's receipt e-mail.") var orderId: String
    @OptionGroup var options: APIOptions

    func run() async throws {
        try await Session.run(options) { session in
            let order = try await session.client.lookUpOrder(orderId)
            if session.json {
                try session.object(["status": order.rawStatus.orNull, "signedTransactions": order.transactions.map(\.jws)])
            } else {
                order.transactions.forEach { session.line($0.jws) }
            }
            session.reject(order.rejected)
            if !order.isValid {
                AppStoreAPI.complain("invalid_order: Apple says order id \(orderId) is not valid (status \(order.rawStatus.map(String.init) ?? "none"))")
                throw AppStoreAPI.Status.apiError
            }
        }
    }
}

/// `app-transaction ID`: Get App Transaction Info.
struct AppTransactionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "app-transaction", abstract: "Get App Transaction Info: the customer's app transaction JWS.")

    @Argument(help: "Any transaction id of the customer.") var transactionId: String
    @OptionGroup var options: APIOptions

    func run() async throws {
        try await Session.run(options) { session in
            let item = try await session.client.appTransactionInfo(transactionId)
            if session.json { try session.object(["signedAppTransactionInfo": item.jws]) } else { session.line(item.jws) }
        }
    }
}

/// `notifications --start … --end …`: Get Notification History, every page.
struct NotificationsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notifications",
        abstract: "Get Notification History: every notification as a webhook body {\"signedPayload\": …}, all pages.")

    @Option(help: ArgumentHelp("The window's start (ISO 8601); Apple keeps 180 days.", valueName: "instant")) var start: String
    @Option(help: ArgumentHelp("The window's end (ISO 8601).", valueName: "instant")) var end: String
    @Flag(name: .customLong("only-failures"), help: "Only notifications that never reached your server.") var onlyFailures = false
    @Option(name: .customLong("type"), help: "Only this notification type, e.g. DID_RENEW.") var notificationType: String?
    @Option(help: "Only this notification subtype.") var subtype: String?
    @Option(name: .customLong("transaction-id"), help: "Only this transaction's notifications.") var transactionId: String?
    @OptionGroup var options: APIOptions

    func run() async throws {
        let request = NotificationHistoryRequest(
            startDate: try parseInstant(start, "--start"), endDate: try parseInstant(end, "--end"),
            notificationType: notificationType, notificationSubtype: subtype, transactionId: transactionId,
            onlyFailures: onlyFailures ? true : nil)
        try await Session.run(options) { session in
            for try await page in session.client.notificationHistoryPages(request) {
                if session.json {
                    try session.object([
                        "paginationToken": page.paginationToken.orNull, "hasMore": page.hasMore,
                        "notificationHistory": page.items.map { item in
                            ["signedPayload": item.notification.signedPayload, "sendAttempts": item.sendAttempts.map(Self.json)]
                        },
                    ])
                } else {
                    for item in page.items { session.line(try session.webhookBody(item.notification.signedPayload)) }
                }
                session.reject(page.rejected)
            }
        }
    }

    static func json(_ attempt: SendAttempt) -> [String: Any] {
        ["attemptDate": attempt.attemptDate.json, "sendAttemptResult": attempt.rawSendAttemptResult.orNull]
    }
}

/// `test-notification [TOKEN]`: Request a Test Notification, or Get Test Notification Status.
struct TestNotificationCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test-notification",
        abstract: "Without TOKEN: ask Apple to send a test notification and print its token. With TOKEN: print that notification as a webhook body.")

    @Argument(help: "A token an earlier call printed.") var token: String?
    @OptionGroup var options: APIOptions

    func run() async throws {
        try await Session.run(options) { session in
            guard let token else {
                let token = try await session.client.requestTestNotification()
                if session.json { try session.object(["testNotificationToken": token]) } else { session.line(token) }
                return
            }
            let status = try await session.client.testNotificationStatus(token)
            if session.json {
                try session.object(["signedPayload": status.notification.signedPayload,
                                "sendAttempts": status.sendAttempts.map(NotificationsCommand.json)])
            } else {
                session.line(try session.webhookBody(status.notification.signedPayload))
            }
        }
    }
}

/// `consumption ID …`: Send Consumption Information (v2, or v1 from a JSON file).
struct ConsumptionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "consumption", abstract: "Send Consumption Information for a CONSUMPTION_REQUEST (v2; --v1-body FILE for v1).")

    @Argument(help: "The transaction id of the refund request.") var transactionId: String
    @Option(name: .customLong("customer-consented"), help: ArgumentHelp("Whether the customer consented (true).", valueName: "bool"))
    var customerConsented: String = "true"
    @Option(name: .customLong("delivery-status"), help: "DELIVERED, UNDELIVERED_QUALITY_ISSUE, UNDELIVERED_WRONG_ITEM, UNDELIVERED_SERVER_OUTAGE or UNDELIVERED_OTHER.")
    var deliveryStatus: String?
    @Option(name: .customLong("consumption-percentage"), help: "How much was consumed, 0-100000 (thousandths of a percent).")
    var consumptionPercentage: Int32?
    @Option(name: .customLong("refund-preference"), help: "DECLINE, GRANT_FULL or GRANT_PRORATED.") var refundPreference: String?
    @Option(name: .customLong("sample-content-provided"), help: ArgumentHelp("Whether a sample or trial was provided.", valueName: "bool"))
    var sampleContentProvided: String = "false"
    @Option(name: .customLong("v1-body"), help: ArgumentHelp("Send Apple's v1 body from this JSON file instead.", valueName: "file"))
    var v1Body: String?
    @OptionGroup var options: APIOptions

    func run() async throws {
        if let v1Body {
            guard let data = FileManager.default.contents(atPath: v1Body) else {
                AppStoreAPI.complain("cannot read \(v1Body)")
                throw AppStoreAPI.Status.cannotRead
            }
            let body: ConsumptionRequestV1
            do {
                body = try JSONDecoder().decode(ConsumptionRequestV1.self, from: data)
            } catch {
                throw ValidationError("\(v1Body) is not a v1 ConsumptionRequest: \(error)")
            }
            try await Session.run(options) { session in try await session.client.sendConsumptionInformationV1(transactionId, body) }
            return
        }
        guard let deliveryStatus else { throw ValidationError("missing --delivery-status (or --v1-body FILE)") }
        let body = ConsumptionRequest(
            customerConsented: try parseBool(customerConsented, "--customer-consented"), consumptionPercentage: consumptionPercentage,
            deliveryStatus: deliveryStatus, refundPreference: refundPreference,
            sampleContentProvided: try parseBool(sampleContentProvided, "--sample-content-provided"))
        try await Session.run(options) { session in try await session.client.sendConsumptionInformation(transactionId, body) }
    }
}

/// `set-app-account-token ORIGINAL_ID TOKEN`.
struct SetAppAccountTokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set-app-account-token", abstract: "Set App Account Token: the app account token (a UUID) of a purchase.")

    @Argument(help: "The original transaction id.") var originalTransactionId: String
    @Argument(help: "The app account token, a UUID.") var appAccountToken: String
    @OptionGroup var options: APIOptions

    func run() async throws {
        let token: UUIDString
        do {
            token = try UUIDString(appAccountToken)
        } catch {
            throw ValidationError("the app account token must be a UUID, not '\(appAccountToken)'")
        }
        try await Session.run(options) { session in
            try await session.client.setAppAccountToken(originalTransactionId: originalTransactionId, appAccountToken: token)
        }
    }
}

/// `finish ID`: Finish Transaction.
struct FinishCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "finish", abstract: "Finish Transaction.")

    @Argument(help: "The transaction id.") var transactionId: String
    @OptionGroup var options: APIOptions

    func run() async throws {
        try await Session.run(options) { session in try await session.client.finishTransaction(transactionId) }
    }
}

/// `extend ORIGINAL_ID --days N --reason N --request-id ID`.
struct ExtendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "extend", abstract: "Extend a Subscription Renewal Date; prints Apple's answer.")

    @Argument(help: "The subscription's original transaction id.") var originalTransactionId: String
    @Option(help: "Days to extend by, 1-90.") var days: Int32
    @Option(help: "0 undeclared, 1 customer satisfaction, 2 other, 3 service issue or outage.") var reason: Int32
    @Option(name: .customLong("request-id"), help: "Your id for this extension, carried back in Apple's answer.")
    var requestIdentifier: String
    @OptionGroup var options: APIOptions

    func run() async throws {
        try await Session.run(options) { session in
            let answer = try await session.client.extendRenewalDate(
                originalTransactionId: originalTransactionId,
                ExtendRenewalDateRequest(extendByDays: days, extendReasonCode: reason, requestIdentifier: requestIdentifier))
            try session.object([
                "originalTransactionId": answer.originalTransactionId.orNull, "webOrderLineItemId": answer.webOrderLineItemId.orNull,
                "success": answer.success.orNull, "effectiveDate": answer.effectiveDate.json,
            ])
            if answer.success != true {
                AppStoreAPI.complain("extension_failed: Apple did not extend \(originalTransactionId)")
                throw AppStoreAPI.Status.apiError
            }
        }
    }
}

/// `extend-all --product-id P --days N --reason N --request-id UUID [--storefront C]…`.
struct ExtendAllCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "extend-all",
        abstract: "Extend Subscription Renewal Dates for All Active Subscribers; prints the request identifier.")

    @Option(name: .customLong("product-id"), help: "The subscription's product id.") var productId: String
    @Option(help: "Days to extend by, 1-90.") var days: Int32
    @Option(help: "0 undeclared, 1 customer satisfaction, 2 other, 3 service issue or outage.") var reason: Int32
    @Option(name: .customLong("request-id"), help: "Your UUID for this request.") var requestIdentifier: String
    @Option(name: .customLong("storefront"), help: "Only this storefront, ISO 3166-1 alpha-3 (repeatable).") var storefronts: [String] = []
    @OptionGroup var options: APIOptions

    func run() async throws {
        try await Session.run(options) { session in
            let identifier = try await session.client.massExtendRenewalDate(MassExtendRenewalDateRequest(
                extendByDays: days, extendReasonCode: reason, requestIdentifier: requestIdentifier,
                storefrontCountryCodes: storefronts.isEmpty ? nil : storefronts, productId: productId))
            try session.object(["requestIdentifier": identifier])
        }
    }
}

/// `extend-status PRODUCT_ID REQUEST_ID`.
struct ExtendStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "extend-status", abstract: "Get Status of Subscription Renewal Date Extensions; prints Apple's answer.")

    @Argument(help: "The subscription's product id.") var productId: String
    @Argument(help: "The request identifier given to extend-all.") var requestIdentifier: String
    @OptionGroup var options: APIOptions

    func run() async throws {
        try await Session.run(options) { session in
            let status = try await session.client.massExtendRenewalDateStatus(productId: productId, requestIdentifier: requestIdentifier)
            try session.object([
                "requestIdentifier": status.requestIdentifier.orNull, "complete": status.complete.orNull,
                "completeDate": status.completeDate.json, "succeededCount": status.succeededCount.orNull,
                "failedCount": status.failedCount.orNull,
            ])
        }
    }
}
