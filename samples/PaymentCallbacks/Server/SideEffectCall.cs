using System.Diagnostics;

namespace PaymentCallbacks.Server;

/// <summary>
/// One queued side effect: the executor's item state. Submitting with state (not a closure) means an item handed
/// back at shutdown still carries its callback, so it can be written to an outbox.
/// </summary>
internal sealed record SideEffectCall(IPaymentDependency Dependency, PaymentCallback Callback, EndpointCounter Counter)
{
    /// <summary>The sample's own activity source: one <c>side effect</c> span per call, inside the item's run.</summary>
    public const string ActivitySourceName = "PaymentCallbacks";

    private static readonly ActivitySource s_source = new(ActivitySourceName);

    /// <summary>The item's body: run the side effect, count it.</summary>
    public static readonly Action<SideEffectCall> Run = static call =>
    {
        using (var activity = s_source.StartActivity("side effect"))
        {
            activity?.SetTag("payment.order_id", call.Callback.OrderId);
            call.Dependency.Call(call.Callback);
        }

        call.Counter.OnCompleted();
    };
}
