import Hummingbird

/// `DELETE /v1/customers/{customer_id}` (scope admin): erases the customer id from every table
/// (``CustomerErasure``) and answers ``ErasureAnswer``: the subscriptions they were linked to,
/// which stay, linked to no one. 404 `not_found` when nothing names the id — never stored, or
/// erased already: a repeated deletion changes nothing, and the server keeps no trace that the
/// id existed.
struct CustomerController {
    let environment: RouteEnvironment

    func add(to group: RouterGroup<ServerRequestContext>) {
        group.route(.delete, "customers/{customer_id}", scope: .admin) { _, context in
            let customerId = try RouteEnvironment.customerId(in: context)
            let store = environment.store
            guard let outcome = try await environment.read({ try await store.erase(customerId: customerId) }) else {
                throw APIError(.notFound, "not_found", "no subscription is linked to customer \(customerId) and no consent is recorded")
            }
            context.notes.update { $0.verdict = "erased" }
            return try Response.json(ErasureAnswer(customerId: customerId, outcome: outcome))
        }
    }
}
