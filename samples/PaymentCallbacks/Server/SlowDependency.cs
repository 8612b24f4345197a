using System.Security.Cryptography;
using BoundedWork;
using Microsoft.Extensions.Options;

namespace PaymentCallbacks.Server;

/// <summary>A payment callback as the payment provider posts it.</summary>
/// <param name="OrderId">The order the payment is for.</param>
/// <param name="Amount">The amount paid.</param>
/// <param name="MerchantId">The merchant the payment is for: the executor's tenant, so one merchant's flood never starves the others.</param>
internal sealed record PaymentCallback(long OrderId, decimal Amount, string? MerchantId = null)
{
    /// <summary>The tenant for fair share: the merchant, or one shared tenant for callbacks that name none.</summary>
    public string Tenant => string.IsNullOrEmpty(MerchantId) || FairShareSettings.GetTenantError(MerchantId) is not null ? "unknown-merchant" : MerchantId;
}

/// <summary>The legacy, synchronous side effect of a callback: it blocks the calling thread until done.</summary>
internal interface IPaymentDependency
{
    /// <summary>Runs the side effect for <paramref name="callback"/>, blocking the calling thread.</summary>
    /// <param name="callback">The callback.</param>
    void Call(PaymentCallback callback);
}

/// <summary>
/// The simulated legacy dependency (update the order in Redis, send the receipt): it blocks the calling thread, as
/// a synchronous client library does. It cannot be made async this week; that is the premise.
/// </summary>
internal sealed class SlowDependency(IOptions<SideEffectOptions> options) : IPaymentDependency
{
    private readonly SideEffectOptions _options = options.Value;

    /// <inheritdoc />
    public void Call(PaymentCallback callback)
    {
        var delay = _options.MinDelayMs == _options.MaxDelayMs
            ? _options.MinDelayMs
            : Random.Shared.Next(_options.MinDelayMs, _options.MaxDelayMs + 1);
        if (delay > 0)
        {
            Thread.Sleep(delay);
        }

        Hash(callback, _options.CpuIterations);
    }

    /// <summary>The side effect's CPU part: <paramref name="iterations"/> SHA-256 hashes of a 256-byte buffer.</summary>
    /// <param name="callback">The callback (its order id seeds the buffer).</param>
    /// <param name="iterations">How many hashes.</param>
    internal static void Hash(PaymentCallback callback, int iterations)
    {
        Span<byte> buffer = stackalloc byte[256];
        BitConverter.TryWriteBytes(buffer, callback.OrderId);
        Span<byte> hash = stackalloc byte[32];
        for (var i = 0; i < iterations; i++)
        {
            SHA256.HashData(buffer, hash);
            hash.CopyTo(buffer[8..]);
        }
    }
}
