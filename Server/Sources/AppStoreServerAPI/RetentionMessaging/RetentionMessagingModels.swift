// The models of Apple's Retention Messaging API (1.5), named as Apple's documentation names
// them. Apple's enumerations keep their raw string beside the typed value, so that a value this
// version does not know still decodes and prints as Apple sent it.

// MARK: Enumerations

/// Apple's `imageSize`: what an image is for, and so the dimensions Apple requires of it.
public enum ImageSize: String, Sendable, Hashable, CaseIterable, Codable {
    /// An image shown with the message: 3840 pixels wide, 160 to 2160 pixels high.
    case fullSize = "FULL_SIZE"
    /// A bullet point's icon: 1024 × 1024 pixels.
    case bulletPoint = "BULLET_POINT"
}

/// Apple's `imageState`: where Apple's review of an uploaded image stands.
public enum ImageState: String, Sendable, Hashable, CaseIterable, Codable {
    /// Uploaded, not yet reviewed.
    case pending = "PENDING"
    /// Reviewed and shown to customers (the sandbox approves every upload at once).
    case approved = "APPROVED"
    /// Reviewed and refused.
    case rejected = "REJECTED"
}

/// Apple's `messageState`: where Apple's review of an uploaded message stands.
public enum MessageState: String, Sendable, Hashable, CaseIterable, Codable {
    /// Uploaded, not yet reviewed.
    case pending = "PENDING"
    /// Reviewed and shown to customers (the sandbox approves every upload at once).
    case approved = "APPROVED"
    /// Reviewed and refused.
    case rejected = "REJECTED"
}

/// Apple's `headerPosition`: where a message's header goes.
public enum HeaderPosition: String, Sendable, Hashable, CaseIterable, Codable {
    /// Above the body, below the image (Apple's default).
    case aboveBody = "ABOVE_BODY"
    /// Above the image: the message needs an image.
    case aboveImage = "ABOVE_IMAGE"
}

/// Apple's `PerformanceTestStatus`: the outcome of a performance test.
public enum PerformanceTestStatus: String, Sendable, Hashable, CaseIterable, Codable {
    /// The test is still running.
    case pending = "PENDING"
    /// The endpoint met the thresholds: a production realtime URL may be configured.
    case pass = "PASS"
    /// The endpoint missed a threshold.
    case fail = "FAIL"
}

// MARK: Requests

extension UUIDString: Codable {
    /// Decodes a JSON string that is a UUID.
    ///
    /// - Throws: `DecodingError.dataCorrupted` when it is not one.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            try self.init(text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "'\(text)' is not a UUID")
        }
    }

    /// Encodes the lowercase text.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}

/// Apple's `UploadMessageImage`: the image of a text message, and its alternative text.
public struct UploadMessageImage: Sendable, Hashable, Codable {
    /// An image uploaded with the ``ImageSize/fullSize`` size (`imageIdentifier`).
    public var imageIdentifier: UUIDString
    /// What the image shows, for VoiceOver (`altText`; Apple: at most 150 characters).
    public var altText: String

    /// Creates an image reference.
    public init(imageIdentifier: UUIDString, altText: String) {
        self.imageIdentifier = imageIdentifier
        self.altText = altText
    }
}

/// Apple's `BulletPoint`: one bullet of a text message, its icon and the icon's alternative text.
public struct BulletPoint: Sendable, Hashable, Codable {
    /// The bullet's text (`text`; Apple: at most 66 characters).
    public var text: String
    /// An image uploaded with the ``ImageSize/bulletPoint`` size (`imageIdentifier`).
    public var imageIdentifier: UUIDString
    /// What the icon shows (`altText`; Apple: at most 150 characters).
    public var altText: String

    /// Creates a bullet point.
    public init(text: String, imageIdentifier: UUIDString, altText: String) {
        self.text = text
        self.imageIdentifier = imageIdentifier
        self.altText = altText
    }
}

/// Apple's `UploadMessageRequestBody`: the body of Upload Message.
///
/// Apple's limits (header 66, body 144, alternative texts 150, bullet text 66 characters; five
/// bullet points in Apple's own libraries, not in its documentation) are left to Apple, which
/// answers `HeaderTooLongError` (4000162) and the like: Apple does not say how it counts a
/// "UTF-8-encoded value's maximum length", so a check here could refuse what Apple accepts.
/// A promotional-offer or switch-plan message has neither an image nor bullet points.
public struct UploadMessageRequestBody: Sendable, Hashable, Codable {
    /// The header (`header`).
    public var header: String
    /// The body (`body`).
    public var body: String
    /// The image of a text message with an image (`image`).
    public var image: UploadMessageImage?
    /// The bullet points (`bulletPoints`).
    public var bulletPoints: [BulletPoint]?
    /// `headerPosition`, raw.
    public var rawHeaderPosition: String?

    /// The typed header position, `nil` when absent or unknown to this version.
    public var headerPosition: HeaderPosition? {
        get { rawHeaderPosition.flatMap(HeaderPosition.init(rawValue:)) }
        set { rawHeaderPosition = newValue?.rawValue }
    }

    /// Creates a body; members left `nil` are not sent.
    public init(
        header: String, body: String, image: UploadMessageImage? = nil, headerPosition: HeaderPosition? = nil,
        bulletPoints: [BulletPoint]? = nil
    ) {
        self.header = header
        self.body = body
        self.image = image
        self.rawHeaderPosition = headerPosition?.rawValue
        self.bulletPoints = bulletPoints
    }

    enum CodingKeys: String, CodingKey {
        case header, body, image, bulletPoints
        case rawHeaderPosition = "headerPosition"
    }
}

/// Apple's `DefaultConfigurationRequest`: the body of Configure Default Message.
struct DefaultConfigurationRequest: Encodable {
    let messageIdentifier: UUIDString
}

/// Apple's `RealtimeUrlRequest`: the body of Configure Realtime URL.
struct RealtimeUrlRequest: Encodable {
    let realtimeURL: String
}

/// Apple's `PerformanceTestRequest`: the body of Initiate Performance Test.
struct PerformanceTestRequest: Encodable {
    let originalTransactionId: String
}

// MARK: Responses

/// Apple's `GetImageListResponse`: every uploaded image and its state.
public struct GetImageListResponse: Sendable, Hashable, Codable {
    /// The images, in Apple's order (`imageIdentifiers`).
    public let imageIdentifiers: [GetImageListResponseItem]?
}

/// Apple's `GetImageListResponseItem`: one uploaded image.
public struct GetImageListResponseItem: Sendable, Hashable, Codable {
    /// The identifier it was uploaded with (`imageIdentifier`), as Apple writes it: compare it
    /// case-insensitively.
    public let imageIdentifier: String?
    /// `imageState`, raw.
    public let rawImageState: String?
    /// `imageSize`, raw.
    public let rawImageSize: String?

    /// The typed state, `nil` when absent or unknown to this version.
    public var imageState: ImageState? { rawImageState.flatMap(ImageState.init(rawValue:)) }
    /// The typed size, `nil` when absent or unknown to this version.
    public var imageSize: ImageSize? { rawImageSize.flatMap(ImageSize.init(rawValue:)) }

    enum CodingKeys: String, CodingKey {
        case imageIdentifier
        case rawImageState = "imageState"
        case rawImageSize = "imageSize"
    }
}

/// Apple's `GetMessageListResponse`: every uploaded message and its state.
public struct GetMessageListResponse: Sendable, Hashable, Codable {
    /// The messages, in Apple's order (`messageIdentifiers`).
    public let messageIdentifiers: [GetMessageListResponseItem]?
}

/// Apple's `GetMessageListResponseItem`: one uploaded message.
public struct GetMessageListResponseItem: Sendable, Hashable, Codable {
    /// The identifier it was uploaded with (`messageIdentifier`), as Apple writes it: compare
    /// it case-insensitively.
    public let messageIdentifier: String?
    /// `messageState`, raw.
    public let rawMessageState: String?

    /// The typed state, `nil` when absent or unknown to this version.
    public var messageState: MessageState? { rawMessageState.flatMap(MessageState.init(rawValue:)) }

    enum CodingKeys: String, CodingKey {
        case messageIdentifier
        case rawMessageState = "messageState"
    }
}

/// Apple's `DefaultConfigurationResponse`: the default message of a product in a locale.
public struct DefaultConfigurationResponse: Sendable, Hashable, Codable {
    /// The message's identifier (`messageIdentifier`).
    public let messageIdentifier: String?
}

/// Apple's `RealtimeUrlResponse`: the configured URL of the Get Retention Message endpoint,
/// for the environment the request went to.
public struct RealtimeUrlResponse: Sendable, Hashable, Codable {
    /// The URL (`realtimeURL`).
    public let realtimeURL: String?
}

/// Apple's `PerformanceTestConfig`: how a performance test calls the endpoint and what it
/// requires of it.
public struct PerformanceTestConfig: Sendable, Hashable, Codable {
    /// The most requests in flight at once (`maxConcurrentRequests`).
    public let maxConcurrentRequests: Int64?
    /// How many requests the test sends (`totalRequests`).
    public let totalRequests: Int64?
    /// How long the test runs, in milliseconds from its start (`totalDuration`).
    public let totalDuration: Int64?
    /// The longest an answer may take, in milliseconds (`responseTimeThreshold`; about 700).
    public let responseTimeThreshold: Int64?
    /// The share of requests, in percent, that must succeed (`successRateThreshold`).
    public let successRateThreshold: Int32?
}

/// Apple's `PerformanceTestResponse`: the answer of Initiate Performance Test.
public struct PerformanceTestResponse: Sendable, Hashable, Codable {
    /// The test's parameters (`config`).
    public let config: PerformanceTestConfig?
    /// The id to ask for the result with (`requestId`).
    public let requestId: String?
}

/// Apple's `PerformanceTestResponseTimes`: the endpoint's answer times, in milliseconds.
public struct PerformanceTestResponseTimes: Sendable, Hashable, Codable {
    /// The mean (`average`).
    public let average: Int64?
    /// The median (`p50`).
    public let p50: Int64?
    /// The 90th percentile (`p90`).
    public let p90: Int64?
    /// The 95th percentile (`p95`).
    public let p95: Int64?
    /// The 99th percentile (`p99`).
    public let p99: Int64?
}

/// Apple's `PerformanceTestResultResponse`: the answer of Get Performance Test Results.
public struct PerformanceTestResultResponse: Sendable, Hashable, Codable {
    /// The test's parameters (`config`).
    public let config: PerformanceTestConfig?
    /// The URL the test called (`target`).
    public let target: String?
    /// `result`, raw.
    public let rawResult: String?
    /// The share of requests that succeeded, in percent (`successRate`).
    public let successRate: Int32?
    /// How many requests have not completed yet (`numPending`).
    public let numPending: Int32?
    /// The answer times (`responseTimes`).
    public let responseTimes: PerformanceTestResponseTimes?
    /// The failed requests by Apple's `sendAttemptResult` (`TIMED_OUT`, `NO_RESPONSE`,
    /// `UNSUCCESSFUL_HTTP_RESPONSE_CODE`, …), raw: how many failed that way (`failures`).
    public let failures: [String: Int32]?

    /// The typed outcome, `nil` when absent or unknown to this version.
    public var result: PerformanceTestStatus? { rawResult.flatMap(PerformanceTestStatus.init(rawValue:)) }

    enum CodingKeys: String, CodingKey {
        case config, target, successRate, numPending, responseTimes, failures
        case rawResult = "result"
    }
}
