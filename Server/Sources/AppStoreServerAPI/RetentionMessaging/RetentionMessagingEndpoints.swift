// The Retention Messaging API (1.5): the images and messages the App Store shows on a
// subscription's cancel screen, the default message of each product and locale, the URL of the
// developer's Get Retention Message endpoint, and the performance test that endpoint must pass
// before a production URL is accepted. Same host, token, errors and retries as the rest of the
// App Store Server API. Nothing of these answers is signed.
//
// Retries: reads, and requests Apple documents as idempotent (Configure Default Message,
// Delete Default Message) or that replace a value (Configure Realtime URL), are retried after a
// 5xx, a timeout or a failed connection; the others — Apple documents Upload and Delete of
// images and messages as not idempotent (a repeat answers "already exists" or "not found"), and
// Delete Realtime URL and Initiate Performance Test are not documented as such — only after a 429.

extension AppStoreServerAPIClient {
    // MARK: Images

    /// Upload Image: uploads a PNG for retention messages; Apple reviews it before it is shown.
    ///
    /// `PUT /inApps/v1/messaging/image/{imageIdentifier}?imageSize=…`, the PNG as the body
    /// (`Content-Type: image/png`); retried only after a 429.
    ///
    /// - Parameters:
    ///   - imageIdentifier: A new UUID of your choice, which messages name the image by.
    ///   - image: The PNG, checked for its size (``RetentionImage/init(png:size:)``).
    /// - Throws: ``AppStoreServerAPIError``; Apple's `imageAlreadyExists` (409),
    ///   `invalidImage`, `maximumNumberOfImagesReached`.
    public func uploadImage(_ imageIdentifier: UUIDString, _ image: RetentionImage) async throws {
        try await sendWithoutAnswer(
            .PUT, ["inApps", "v1", "messaging", "image", imageIdentifier.value], query: [("imageSize", image.size.rawValue)],
            body: image.png, contentType: "image/png", retry: .onlyRateLimited)
    }

    /// Delete Image: deletes an image no message uses.
    ///
    /// `DELETE /inApps/v1/messaging/image/{imageIdentifier}`; retried only after a 429.
    ///
    /// - Throws: ``AppStoreServerAPIError``; Apple's `imageNotFound` (404), `imageInUse` (403).
    public func deleteImage(_ imageIdentifier: UUIDString) async throws {
        try await sendWithoutAnswer(.DELETE, ["inApps", "v1", "messaging", "image", imageIdentifier.value], retry: .onlyRateLimited)
    }

    /// Get Image List: every uploaded image, its size and its review state.
    ///
    /// `GET /inApps/v1/messaging/image/list`
    public func imageList() async throws -> GetImageListResponse {
        try await get(["inApps", "v1", "messaging", "image", "list"])
    }

    // MARK: Messages

    /// Upload Message: uploads a message's text (with an image and bullet points for a text
    /// message); Apple reviews it before it is shown.
    ///
    /// `PUT /inApps/v1/messaging/message/{messageIdentifier}`; retried only after a 429.
    ///
    /// - Parameters:
    ///   - messageIdentifier: A new UUID of your choice, which default configurations and real-time
    ///     answers name the message by.
    ///   - message: The header, body, image, header position and bullet points.
    /// - Throws: ``AppStoreServerAPIError``; Apple's `messageAlreadyExists` (409), `headerTooLong`,
    ///   `bodyTooLong`, `altTextTooLong`, `badRequestImageSize`, `badRequestTooManyBulletPoints`,
    ///   `badRequestBulletPointTextTooLong`, `badRequestAboveImageRequiresAnImage` (400),
    ///   `maximumNumberOfMessagesReached` (403).
    public func uploadMessage(_ messageIdentifier: UUIDString, _ message: UploadMessageRequestBody) async throws {
        try await sendWithoutAnswer(
            .PUT, ["inApps", "v1", "messaging", "message", messageIdentifier.value], body: encode(message),
            retry: .onlyRateLimited)
    }

    /// Delete Message: deletes a message.
    ///
    /// `DELETE /inApps/v1/messaging/message/{messageIdentifier}`; retried only after a 429.
    ///
    /// - Throws: ``AppStoreServerAPIError``; Apple's `messageNotFound` (404).
    public func deleteMessage(_ messageIdentifier: UUIDString) async throws {
        try await sendWithoutAnswer(
            .DELETE, ["inApps", "v1", "messaging", "message", messageIdentifier.value], retry: .onlyRateLimited)
    }

    /// Get Message List: every uploaded message and its review state.
    ///
    /// `GET /inApps/v1/messaging/message/list`
    public func messageList() async throws -> GetMessageListResponse {
        try await get(["inApps", "v1", "messaging", "message", "list"])
    }

    // MARK: Default messages

    /// Configure Default Message: the message shown for a subscription in a locale when the
    /// Get Retention Message endpoint does not answer (or there is none). Replaces the previous one.
    ///
    /// `PUT /inApps/v1/messaging/default/{productId}/{locale}`, retried: Apple documents it as idempotent.
    ///
    /// - Parameters:
    ///   - productId: An auto-renewable subscription's product id.
    ///   - locale: The locale, e.g. `en-US`.
    ///   - messageIdentifier: An `APPROVED` text message (with or without an image).
    /// - Throws: ``AppStoreServerAPIError``; Apple's `messageNotFound` (404), `messageNotApproved`,
    ///   `imageNotApproved` (403), `invalidProductId`, `invalidLocale` (400).
    public func configureDefaultMessage(productId: String, locale: String, messageIdentifier: UUIDString) async throws {
        try await sendWithoutAnswer(
            .PUT, ["inApps", "v1", "messaging", "default", productId, locale],
            body: encode(DefaultConfigurationRequest(messageIdentifier: messageIdentifier)))
    }

    /// Get Default Message: the default message of a subscription in a locale.
    ///
    /// `GET /inApps/v1/messaging/default/{productId}/{locale}`
    ///
    /// - Throws: ``AppStoreServerAPIError``; Apple's `defaultMessageNotFound` (404) when none is configured.
    public func defaultMessage(productId: String, locale: String) async throws -> DefaultConfigurationResponse {
        try await get(["inApps", "v1", "messaging", "default", productId, locale])
    }

    /// Delete Default Message: the subscription has no default message in the locale any more.
    ///
    /// `DELETE /inApps/v1/messaging/default/{productId}/{locale}`, retried: Apple documents it
    /// as idempotent (200 when there was none).
    public func deleteDefaultMessage(productId: String, locale: String) async throws {
        try await sendWithoutAnswer(.DELETE, ["inApps", "v1", "messaging", "default", productId, locale])
    }

    // MARK: Realtime URL

    /// Configure Realtime URL: the URL the App Store calls for a message in real time (Get
    /// Retention Message), for the environment the client sends to. A production URL needs a
    /// passed performance test.
    ///
    /// `PUT /inApps/v1/messaging/realtime/url`, retried: it replaces the URL.
    ///
    /// - Parameter realtimeURL: Your endpoint's HTTPS URL (Apple: at most 256 characters).
    /// - Throws: ``AppStoreServerAPIError``; Apple's `badRequestRealtimeURL` (400),
    ///   `forbiddenNoPassingTest` (403).
    public func configureRealtimeURL(_ realtimeURL: String) async throws {
        try await sendWithoutAnswer(
            .PUT, ["inApps", "v1", "messaging", "realtime", "url"], body: encode(RealtimeUrlRequest(realtimeURL: realtimeURL)))
    }

    /// Get Realtime URL: the configured URL of the environment the client sends to.
    ///
    /// `GET /inApps/v1/messaging/realtime/url`
    ///
    /// - Throws: ``AppStoreServerAPIError``; Apple's `realtimeURLNotFound` (404) when none is configured.
    public func realtimeURL() async throws -> RealtimeUrlResponse {
        try await get(["inApps", "v1", "messaging", "realtime", "url"])
    }

    /// Delete Realtime URL: the App Store stops calling your endpoint (default messages only).
    ///
    /// `DELETE /inApps/v1/messaging/realtime/url`; retried only after a 429.
    public func deleteRealtimeURL() async throws {
        try await sendWithoutAnswer(.DELETE, ["inApps", "v1", "messaging", "realtime", "url"], retry: .onlyRateLimited)
    }

    // MARK: Performance test

    /// Initiate Performance Test: the sandbox calls your configured sandbox Get Retention Message
    /// endpoint many times and measures it; follow it with ``performanceTestResult(requestId:)``.
    ///
    /// `POST /inApps/v1/messaging/performanceTest` (sandbox only); retried only after a 429.
    ///
    /// - Parameter originalTransactionId: An active sandbox auto-renewable subscription's
    ///   original transaction id, which the test's requests carry.
    /// - Throws: ``AppStoreServerAPIError``; Apple's `invalidPerformanceTestRequest`,
    ///   `existingPerformanceTestRun`, `invalidTransactionId`, `transactionIdNotOriginalTransactionId`
    ///   (400); `malformed_response` when the answer has no `requestId`.
    public func initiatePerformanceTest(originalTransactionId: String) async throws -> PerformanceTestResponse {
        let answer: PerformanceTestResponse = try await send(
            .POST, ["inApps", "v1", "messaging", "performanceTest"],
            body: encode(PerformanceTestRequest(originalTransactionId: originalTransactionId)), retry: .onlyRateLimited)
        guard let requestId = answer.requestId, !requestId.isEmpty else {
            throw AppStoreServerAPIError(.malformedResponse, "Apple's PerformanceTestResponse has no requestId", httpStatus: 200)
        }
        return answer
    }

    /// Get Performance Test Results: the outcome of a performance test (`PENDING` while it runs).
    ///
    /// `GET /inApps/v1/messaging/performanceTest/result/{requestId}`
    ///
    /// - Throws: ``AppStoreServerAPIError``; Apple's `performanceTestRunNotFound` (404),
    ///   `invalidRequestId` (400).
    public func performanceTestResult(requestId: String) async throws -> PerformanceTestResultResponse {
        try await get(["inApps", "v1", "messaging", "performanceTest", "result", requestId])
    }
}
