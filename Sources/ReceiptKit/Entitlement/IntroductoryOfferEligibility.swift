/// Whether a customer may still have an introductory offer (a free trial or an introductory
/// price) of a product, from their verified transactions: Apple allows one per subscription
/// group. The rule an introductory offer eligibility signature asserts
/// (``AppStoreRequestSigner/introductoryOfferEligibility(productId:allowIntroductoryOffer:transactionId:issuedAt:nonce:)``).
public enum IntroductoryOfferEligibility {
    /// Whether none of `transactions` in the product's subscription group had an introductory
    /// offer or a free trial. The product's group is the one a transaction of the product names;
    /// when none does, any introductory offer counts.
    ///
    /// - Parameters:
    ///   - productId: The product the offer is of.
    ///   - transactions: The customer's verified transactions.
    public static func isEligible(productId: String, transactions: some Sequence<NormalizedTransaction>) -> Bool {
        let transactions = Array(transactions)
        let group = transactions.first { $0.productId == productId }?.subscriptionGroupId
        return !transactions.contains { transaction in
            guard group == nil || transaction.subscriptionGroupId == group else { return false }
            return transaction.offer?.type == "introductory" || transaction.offer?.discountType == "free_trial"
        }
    }
}
