namespace PaymentCallbacks.Server;

/// <summary>
/// One queued side effect: the executor's item state. Submitting with state (not a closure) means an item handed
/// back at shutdown still carries its callback, so it can be written to an outbox.
/// </summary>
internal sealed record SideEffectCall(IPaymentDependency Dependency, PaymentCallback Callback, EndpointCounter Counter)
{
    /// <summary>The item's body: run the side effect, count it.</summary>
    public static readonly Action<SideEffectCall> Run = static call =>
    {
        call.Dependency.Call(call.Callback);
        call.Counter.OnCompleted();
    };
}
