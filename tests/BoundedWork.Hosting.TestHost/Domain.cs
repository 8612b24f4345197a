using BoundedWork.Hosting.TestHost;

/// <summary>A payment provider's callback, as the docs' examples use it (docs/example-types.md).</summary>
public sealed record PaymentCallback(string OrderId, decimal Amount);

/// <summary>A blocking legacy SDK: the stuck order's call never returns, the others return at once.</summary>
public sealed class LegacyPayments
{
    public const string StuckOrderId = "stuck-order";

    private readonly TaskCompletionSource _stuckCallStarted = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public Task StuckCallStarted => _stuckCallStarted.Task;

    public void Process(PaymentCallback callback)
    {
        ArgumentNullException.ThrowIfNull(callback);
        if (callback.OrderId == StuckOrderId)
        {
            _stuckCallStarted.TrySetResult();
            Thread.Sleep(Timeout.Infinite); // a dependency that hangs
        }

        Console.Out.WriteLine($"PROCESSED {callback.OrderId}");
    }
}

/// <summary>An outbox message: what would be replayed after a restart.</summary>
public sealed record OutboxMessage(string OrderId, decimal Amount)
{
    public static OutboxMessage For(PaymentCallback callback) => new(callback.OrderId, callback.Amount);
}

/// <summary>A unit of work over the outbox, writing to a file.</summary>
public sealed class OutboxDb(OutboxFile file)
{
    private readonly List<OutboxMessage> _pending = [];

    public void Add(OutboxMessage message) => _pending.Add(message);

    public async Task SaveChangesAsync()
    {
        await File.AppendAllLinesAsync(file.Path, _pending.Select(m => $"{m.OrderId};{m.Amount}"));
        _pending.Clear();
    }
}
