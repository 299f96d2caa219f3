// The App Store Server Notifications V2 webhook: reads its configuration from the environment
// (see WebhookConfiguration) and serves until SIGINT or SIGTERM.
import Foundation
import Hummingbird
import Logging
import NotificationWebhook

let configuration: WebhookConfiguration
do {
    configuration = try WebhookConfiguration(environment: ProcessInfo.processInfo.environment)
} catch {
    FileHandle.standardError.write(Data("notification-webhook: \(error)\n".utf8))
    exit(78)  // EX_CONFIG
}

let app = buildApplication(configuration, logger: Logger(label: "notification-webhook"))
try await app.runService()
