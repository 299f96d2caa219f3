// Legacy receipts in the normalized schema: the app block and one transaction per in-app
// purchase (the record itself is built in `Verifier/VerifiedRecords.swift`).

extension NormalizedApp {
    /// Normalizes a legacy receipt's app attributes.
    ///
    /// - Parameter receipt: The verified receipt payload.
    public init(_ receipt: AppReceipt) {
        self.init(
            bundleId: receipt.bundleId, applicationVersion: receipt.applicationVersion,
            originalApplicationVersion: receipt.originalApplicationVersion,
            receiptCreationDate: receipt.receiptCreationDate, expirationDate: receipt.expirationDate,
            originalPurchaseDate: receipt.originalPurchaseDate, receiptType: receipt.rawReceiptType,
            appItemId: receipt.appItemId, downloadId: receipt.downloadId,
            versionExternalIdentifier: receipt.versionExternalIdentifier)
    }
}

extension NormalizedTransaction {
    /// Normalizes an in-app purchase of a legacy receipt.
    ///
    /// The receipt gives no subscription group, revocation reason, upgrade flag, ownership type,
    /// transaction reason, price, storefront, app account token or signed date: those are `nil`.
    /// The offer is promotional when attribute 1721 names one (a free trial when 1713 is 1),
    /// otherwise introductory when 1713 (free trial) or 1719 (introductory price) is 1.
    ///
    /// - Parameters:
    ///   - purchase: The in-app purchase.
    ///   - receipt: The receipt it belongs to (its environment and bundle id).
    public init(_ purchase: InAppPurchase, of receipt: AppReceipt) {
        source = .receipt
        environment = receipt.environment?.rawValue ?? receipt.rawReceiptType
        bundleId = receipt.bundleId
        productId = purchase.productId
        productType = Self.productType(purchase.rawProductType)
        transactionId = purchase.transactionId
        originalTransactionId = purchase.originalTransactionId
        webOrderLineItemId = purchase.webOrderLineItemId.flatMap { $0 == 0 ? nil : String($0) }
        subscriptionGroupId = nil
        quantity = purchase.quantity
        purchaseDate = purchase.purchaseDate
        originalPurchaseDate = purchase.originalPurchaseDate
        expiresDate = purchase.expiresDate
        revocationDate = purchase.cancellationDate
        revocationReason = nil
        isUpgraded = nil
        ownershipType = nil
        transactionReason = nil
        offer = Self.offer(purchase)
        price = nil
        storefront = nil
        storefrontId = nil
        appAccountToken = nil
        appTransactionId = nil
        signedDate = nil
    }

    private static func productType(_ raw: Int64?) -> String? {
        guard let raw else { return nil }
        switch InAppProductType(rawValue: raw) {
        case .nonConsumable: return "non_consumable"
        case .consumable: return "consumable"
        case .nonRenewingSubscription: return "non_renewing_subscription"
        case .autoRenewableSubscription: return "auto_renewable_subscription"
        case nil: return String(raw)
        }
    }

    private static func offer(_ purchase: InAppPurchase) -> Offer? {
        let freeTrial = purchase.isTrialPeriod ? "free_trial" : nil
        if let promotion = purchase.promotionalOfferId {
            return Offer(normalizedType: "promotional", id: promotion, discountType: freeTrial, period: nil)
        }
        if purchase.isTrialPeriod || purchase.isInIntroOfferPeriod == true {
            return Offer(normalizedType: "introductory", id: nil, discountType: freeTrial, period: nil)
        }
        return nil
    }
}
