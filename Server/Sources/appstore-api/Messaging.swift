import AppStoreServerAPI
import ArgumentParser
import Foundation

/// `messaging …`: the Retention Messaging API, one subcommand per endpoint. Each prints Apple's
/// answer as one JSON object (`{}` for Apple's empty 200); exit 2 for an API error, 64 for bad
/// arguments (an identifier that is not a UUID, an image Apple would refuse), 66 for an
/// unreadable file.
struct MessagingCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "messaging",
        abstract: "Retention Messaging: images, messages, default messages, the realtime URL, the performance test.",
        subcommands: [ImageCommand.self, MessageCommand.self, DefaultCommand.self, RealtimeURLCommand.self, PerformanceTestCommand.self])

    /// Prints an answer as one JSON object, members sorted.
    static func printAnswer(_ value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        Swift.print(String(decoding: try encoder.encode(value), as: UTF8.self))
    }

    /// Prints Apple's empty 200.
    static func printEmpty() {
        Swift.print("{}")
    }

    /// An identifier Apple requires to be a UUID.
    static func uuid(_ text: String, _ what: String) throws -> UUIDString {
        do {
            return try UUIDString(text)
        } catch {
            throw ValidationError("\(what) must be a UUID, not '\(text)'")
        }
    }

    /// A value of one of Apple's enumerations, given in any case.
    static func value<Value: RawRepresentable & CaseIterable>(_ text: String, _ option: String) throws -> Value
    where Value.RawValue == String {
        guard let value = Value.allCases.first(where: { $0.rawValue == text.uppercased() }) else {
            throw ValidationError("\(option) must be \(Value.allCases.map(\.rawValue).joined(separator: " or ")), not '\(text)'")
        }
        return value
    }

    // MARK: Images

    /// `messaging image upload|delete|list`.
    struct ImageCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "image", abstract: "Upload Image, Delete Image, Get Image List.", subcommands: [Upload.self, Delete.self, List.self])

        /// `messaging image upload ID FILE [--size FULL_SIZE|BULLET_POINT]`.
        struct Upload: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Upload Image: a PNG without transparency, 3840 wide and 160-2160 high (FULL_SIZE) or 1024 x 1024 (BULLET_POINT).")

            @Argument(help: "A new image id, a UUID.") var imageIdentifier: String
            @Argument(help: "The PNG file.") var file: String
            @Option(help: "FULL_SIZE (an image above the message body, the default) or BULLET_POINT (a bullet's icon).")
            var size: String = ImageSize.fullSize.rawValue
            @OptionGroup var options: APIOptions

            func run() async throws {
                let identifier = try MessagingCommand.uuid(imageIdentifier, "the image id")
                let imageSize: ImageSize = try MessagingCommand.value(size, "--size")
                guard let data = FileManager.default.contents(atPath: file) else {
                    AppStoreAPI.complain("cannot read \(file)")
                    throw AppStoreAPI.Status.cannotRead
                }
                let image: RetentionImage
                do {
                    image = try RetentionImage(png: Array(data), size: imageSize)
                } catch let error as AppStoreServerAPIError {
                    throw ValidationError("\(file): \(error.code): \(error.reason)")
                }
                try await Session.run(options) { session in
                    try await session.client.uploadImage(identifier, image)
                    MessagingCommand.printEmpty()
                }
            }
        }

        /// `messaging image delete ID`.
        struct Delete: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Delete Image: an image no message uses.")

            @Argument(help: "The image id.") var imageIdentifier: String
            @OptionGroup var options: APIOptions

            func run() async throws {
                let identifier = try MessagingCommand.uuid(imageIdentifier, "the image id")
                try await Session.run(options) { session in
                    try await session.client.deleteImage(identifier)
                    MessagingCommand.printEmpty()
                }
            }
        }

        /// `messaging image list`.
        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Get Image List: each image's id, size and review state.")

            @OptionGroup var options: APIOptions

            func run() async throws {
                try await Session.run(options) { session in try MessagingCommand.printAnswer(try await session.client.imageList()) }
            }
        }
    }

    // MARK: Messages

    /// `messaging message upload|delete|list`.
    struct MessageCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "message", abstract: "Upload Message, Delete Message, Get Message List.",
            subcommands: [Upload.self, Delete.self, List.self])

        /// `messaging message upload ID --header TEXT --body TEXT [--image ID --alt TEXT]
        /// [--header-position P] [--bullet TEXT:IMAGE_ID:ALT]…`.
        struct Upload: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Upload Message: a header and a body, with an image and bullet points for a text message.")

            @Argument(help: "A new message id, a UUID.") var messageIdentifier: String
            @Option(help: "The header (Apple: at most 66 characters).") var header: String
            @Option(help: "The body (Apple: at most 144 characters).") var body: String
            @Option(help: ArgumentHelp("A FULL_SIZE image's id, shown with the message (needs --alt).", valueName: "id"))
            var image: String?
            @Option(help: "The image's alternative text (Apple: at most 150 characters).") var alt: String?
            @Option(name: .customLong("header-position"), help: "ABOVE_BODY (Apple's default) or ABOVE_IMAGE (needs --image).")
            var headerPosition: String?
            @Option(name: .customLong("bullet"), help: ArgumentHelp(
                "A bullet point: its text, a BULLET_POINT image's id and the icon's alternative text, joined by ':' "
                    + "(repeatable; the first field that is a UUID is the image id).", valueName: "text:id:alt"))
            var bullets: [String] = []
            @OptionGroup var options: APIOptions

            /// Reads `TEXT:IMAGE_ID:ALT`: the first field that is a UUID is the image id, so that
            /// the text and the alternative text may hold colons.
            static func bulletPoint(_ text: String) throws -> BulletPoint {
                let fields = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
                for index in fields.indices.dropFirst().dropLast() {
                    if let identifier = try? UUIDString(fields[index]) {
                        return BulletPoint(
                            text: fields[..<index].joined(separator: ":"), imageIdentifier: identifier,
                            altText: fields[(index + 1)...].joined(separator: ":"))
                    }
                }
                throw ValidationError("--bullet must be TEXT:IMAGE_ID:ALT with a UUID image id, not '\(text)'")
            }

            func run() async throws {
                let identifier = try MessagingCommand.uuid(messageIdentifier, "the message id")
                let messageImage: UploadMessageImage?
                switch (image, alt) {
                case (nil, nil): messageImage = nil
                case (let image?, let alt?): messageImage = UploadMessageImage(
                    imageIdentifier: try MessagingCommand.uuid(image, "--image"), altText: alt)
                default: throw ValidationError("--image and --alt go together")
                }
                let position: HeaderPosition? = try headerPosition.map { try MessagingCommand.value($0, "--header-position") }
                let bulletPoints = try bullets.map(Self.bulletPoint)
                let body = UploadMessageRequestBody(
                    header: header, body: self.body, image: messageImage, headerPosition: position,
                    bulletPoints: bulletPoints.isEmpty ? nil : bulletPoints)
                try await Session.run(options) { session in
                    try await session.client.uploadMessage(identifier, body)
                    MessagingCommand.printEmpty()
                }
            }
        }

        /// `messaging message delete ID`.
        struct Delete: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Delete Message.")

            @Argument(help: "The message id.") var messageIdentifier: String
            @OptionGroup var options: APIOptions

            func run() async throws {
                let identifier = try MessagingCommand.uuid(messageIdentifier, "the message id")
                try await Session.run(options) { session in
                    try await session.client.deleteMessage(identifier)
                    MessagingCommand.printEmpty()
                }
            }
        }

        /// `messaging message list`.
        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Get Message List: each message's id and review state.")

            @OptionGroup var options: APIOptions

            func run() async throws {
                try await Session.run(options) { session in try MessagingCommand.printAnswer(try await session.client.messageList()) }
            }
        }
    }

    // MARK: Default messages

    /// `messaging default set|get|delete PRODUCT LOCALE`.
    struct DefaultCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "default", abstract: "Configure, Get and Delete Default Message of a subscription in a locale.",
            subcommands: [Set.self, Get.self, Delete.self])

        /// A product and a locale.
        struct Key: ParsableArguments {
            @Argument(help: "The auto-renewable subscription's product id.") var productId: String
            @Argument(help: "The locale, e.g. en-US.") var locale: String
        }

        /// `messaging default set PRODUCT LOCALE MESSAGE_ID`.
        struct Set: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Configure Default Message: an APPROVED text message.")

            @OptionGroup var key: Key
            @Argument(help: "The message id.") var messageIdentifier: String
            @OptionGroup var options: APIOptions

            func run() async throws {
                let identifier = try MessagingCommand.uuid(messageIdentifier, "the message id")
                try await Session.run(options) { session in
                    try await session.client.configureDefaultMessage(
                        productId: key.productId, locale: key.locale, messageIdentifier: identifier)
                    MessagingCommand.printEmpty()
                }
            }
        }

        /// `messaging default get PRODUCT LOCALE`.
        struct Get: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Get Default Message: {\"messageIdentifier\"}.")

            @OptionGroup var key: Key
            @OptionGroup var options: APIOptions

            func run() async throws {
                try await Session.run(options) { session in
                    try MessagingCommand.printAnswer(try await session.client.defaultMessage(productId: key.productId, locale: key.locale))
                }
            }
        }

        /// `messaging default delete PRODUCT LOCALE`.
        struct Delete: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Delete Default Message.")

            @OptionGroup var key: Key
            @OptionGroup var options: APIOptions

            func run() async throws {
                try await Session.run(options) { session in
                    try await session.client.deleteDefaultMessage(productId: key.productId, locale: key.locale)
                    MessagingCommand.printEmpty()
                }
            }
        }
    }

    // MARK: Realtime URL

    /// `messaging realtime-url set URL|get|delete`.
    struct RealtimeURLCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "realtime-url", abstract: "Configure, Get and Delete the Get Retention Message endpoint's URL.",
            subcommands: [Set.self, Get.self, Delete.self])

        /// `messaging realtime-url set URL`.
        struct Set: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Configure Realtime URL (a production URL needs a passed performance test).")

            @Argument(help: "Your Get Retention Message endpoint's HTTPS URL.") var url: String
            @OptionGroup var options: APIOptions

            func run() async throws {
                try await Session.run(options) { session in
                    try await session.client.configureRealtimeURL(url)
                    MessagingCommand.printEmpty()
                }
            }
        }

        /// `messaging realtime-url get`.
        struct Get: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Get Realtime URL: {\"realtimeURL\"}.")

            @OptionGroup var options: APIOptions

            func run() async throws {
                try await Session.run(options) { session in try MessagingCommand.printAnswer(try await session.client.realtimeURL()) }
            }
        }

        /// `messaging realtime-url delete`.
        struct Delete: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Delete Realtime URL: default messages only from then on.")

            @OptionGroup var options: APIOptions

            func run() async throws {
                try await Session.run(options) { session in
                    try await session.client.deleteRealtimeURL()
                    MessagingCommand.printEmpty()
                }
            }
        }
    }

    // MARK: Performance test

    /// `messaging performance-test start ORIGINAL_TRANSACTION_ID|result REQUEST_ID`.
    struct PerformanceTestCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "performance-test", abstract: "Initiate Performance Test, Get Performance Test Results (sandbox).",
            subcommands: [Start.self, Result.self])

        /// `messaging performance-test start ORIGINAL_TRANSACTION_ID`.
        struct Start: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Initiate Performance Test: prints {\"config\", \"requestId\"}.")

            @Argument(help: "An active sandbox subscription's original transaction id.") var originalTransactionId: String
            @OptionGroup var options: APIOptions

            func run() async throws {
                try await Session.run(options) { session in
                    try MessagingCommand.printAnswer(try await session.client.initiatePerformanceTest(originalTransactionId: originalTransactionId))
                }
            }
        }

        /// `messaging performance-test result REQUEST_ID`.
        struct Result: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Get Performance Test Results: exit 0 for PASS or PENDING, 2 for FAIL.")

            @Argument(help: "The requestId that start printed.") var requestId: String
            @OptionGroup var options: APIOptions

            func run() async throws {
                try await Session.run(options) { session in
                    let result = try await session.client.performanceTestResult(requestId: requestId)
                    try MessagingCommand.printAnswer(result)
                    if result.result == .fail {
                        AppStoreAPI.complain(
                            "performance_test_failed: the endpoint \(result.target ?? "?") succeeded for \(result.successRate.map(String.init) ?? "?")% "
                                + "of the requests; \(result.config?.successRateThreshold.map(String.init) ?? "?")% within "
                                + "\(result.config?.responseTimeThreshold.map(String.init) ?? "?") ms are needed")
                        throw AppStoreAPI.Status.apiError
                    }
                }
            }
        }
    }
}
