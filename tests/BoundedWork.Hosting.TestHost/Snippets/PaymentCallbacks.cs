using BoundedWork;
using Microsoft.Extensions.DependencyInjection;

public sealed class PaymentCallbacks([FromKeyedServices("payments")] BoundedExecutor executor, LegacyPayments legacy)
{
    // Never blocks the calling (request) thread: under the Wait policy, ExecuteAsync waits for room asynchronously.
    // The callback travels as the item's state, so an item abandoned at shutdown can still be saved.
    public ValueTask OnCallbackAsync(PaymentCallback callback, CancellationToken cancellationToken) =>
        executor.ExecuteAsync(legacy.Process, callback, cancellationToken);
}
