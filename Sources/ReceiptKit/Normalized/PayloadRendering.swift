// The snake_case JSON renderings of the payloads that are not purchases.

extension JWSRenewalInfo {
    func write(to writer: inout JSONWriter) {
        writer.object { json in
            json.member("environment", rawEnvironment)
            json.member("original_transaction_id", originalTransactionId)
            json.member("product_id", productId)
            json.member("auto_renew_product_id", autoRenewProductId)
            json.member("auto_renew_status", autoRenewStatus)
            json.member("expiration_intent", expirationIntent)
            json.member("is_in_billing_retry_period", isInBillingRetryPeriod)
            json.member("grace_period_expires_date", gracePeriodExpiresDate)
            json.member("price_increase_status", priceIncreaseStatus)
            json.member("recent_subscription_start_date", recentSubscriptionStartDate)
            json.member("renewal_date", renewalDate)
            json.objectMember("renewal_price", renewalPrice) { json, price in
                json.member("milliunits", price)
                json.member("currency", currency)
            }
            let offer = NormalizedTransaction.Offer(
                type: offerType, id: offerIdentifier, discountType: rawOfferDiscountType, period: offerPeriod)
            json.objectMember("offer", offer) { json, offer in offer.write(to: &json) }
            json.member("eligible_win_back_offer_ids", strings: eligibleWinBackOfferIds)
            json.member("app_account_token", appAccountToken)
            json.member("app_transaction_id", appTransactionId)
            json.member("renewal_billing_plan_type", renewalBillingPlanType)
            json.member("signed_date", signedDate)
        }
    }
}

extension NotificationPayload {
    func write(to writer: inout JSONWriter) {
        writer.object { json in
            json.member("type", rawNotificationType)
            json.member("subtype", rawSubtype)
            json.member("uuid", notificationUUID)
            json.member("version", version ?? notificationVersion)
            json.member("signed_date", signedDate)
            json.member("environment", rawEnvironment)
            json.member("bundle_id", bundleId)
            json.member("app_apple_id", appAppleId)
            json.member("bundle_version", data?.bundleVersion)
            json.member("status", data?.status)
            json.member("consumption_request_reason", data?.rawConsumptionRequestReason)
            if let summary {
                json.member("summary") { json in
                    json.object { json in
                        json.member("product_id", summary.productId)
                        json.member("request_identifier", summary.requestIdentifier)
                        json.member("storefront_country_codes", strings: summary.storefrontCountryCodes)
                        json.member("succeeded_count", summary.succeededCount)
                        json.member("failed_count", summary.failedCount)
                    }
                }
            }
            if let externalPurchaseToken {
                json.member("external_purchase_token") { json in
                    json.object { json in
                        json.member("external_purchase_id", externalPurchaseToken.externalPurchaseId)
                        json.member("token_creation_date", externalPurchaseToken.tokenCreationDate)
                    }
                }
            }
        }
    }
}

extension RealtimeRequest {
    func write(to writer: inout JSONWriter) {
        writer.object { json in
            json.member("environment", rawEnvironment)
            json.member("request_identifier", requestIdentifier)
            json.member("original_transaction_id", originalTransactionId)
            json.member("product_id", productId)
            json.member("app_apple_id", appAppleId)
            json.member("user_locale", userLocale)
            json.member("signed_date", signedDate)
        }
    }
}
