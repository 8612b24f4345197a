using BoundedWork.Hosting;

namespace BoundedWork.TypedQueues;

/// <summary>A product, as the legacy repository returns it.</summary>
internal sealed record Product(int Id, string Name);

/// <summary>A payment provider's callback: the item of the "payments" queue.</summary>
internal sealed record PaymentNotice(int Id, string OrderId, decimal Amount);

/// <summary>A legacy repository: synchronous, blocking, and not going to be rewritten this week.</summary>
internal interface IProductRepository
{
    Product Get(int id);
}

internal sealed class LegacyProductRepository : IProductRepository
{
    public Product Get(int id)
    {
        Thread.Sleep(50); // a synchronous database call
        return new Product(id, $"product {id} (read on thread '{Thread.CurrentThread.Name}')");
    }
}

/// <summary>
/// Records the notices in a legacy ledger with a blocking call. The ledger is flaky: every third notice fails on its
/// first attempt (and is retried), and notice 13 is always declined (and ends as a dead letter).
/// </summary>
internal sealed class PaymentNoticeHandler(Outcomes outcomes) : IBlockingWorkHandler<PaymentNotice>
{
    public void Handle(PaymentNotice item, CancellationToken cancellationToken)
    {
        var attempt = outcomes.NextAttempt(item.Id);
        Thread.Sleep(20); // the synchronous ledger call
        if (item.Id == 13)
        {
            throw new InvalidOperationException($"card declined for {item.OrderId}");
        }

        if (item.Id % 3 == 0 && attempt == 1)
        {
            throw new TimeoutException($"ledger timed out on notice {item.Id}");
        }

        outcomes.OnHandled(item, attempt);
    }
}

/// <summary>Where notices that will never be handled go: here, the console; in production, an outbox table.</summary>
internal sealed class ConsoleDeadLetters(Outcomes outcomes) : IDeadLetterHandler<PaymentNotice>
{
    public ValueTask HandleAsync(DeadLetter<PaymentNotice> deadLetter, CancellationToken cancellationToken)
    {
        Console.WriteLine($"dead letter: notice {deadLetter.Item.Id} ({deadLetter.Reason} after {deadLetter.Attempts} attempts: {deadLetter.Exception?.Message})");
        outcomes.OnDeadLetter();
        return ValueTask.CompletedTask;
    }
}

/// <summary>Counts outcomes so the sample knows when every notice has one.</summary>
internal sealed class Outcomes
{
    private readonly Dictionary<int, int> _attempts = [];
    private readonly TaskCompletionSource _all = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private int _handled;
    private int _deadLetters;
    private int _expected = int.MaxValue;

    public int Handled => Volatile.Read(ref _handled);

    public int DeadLetters => Volatile.Read(ref _deadLetters);

    public int NextAttempt(int id)
    {
        lock (_attempts)
        {
            _attempts[id] = _attempts.GetValueOrDefault(id) + 1;
            return _attempts[id];
        }
    }

    public void OnHandled(PaymentNotice notice, int attempt)
    {
        Console.WriteLine($"handled notice {notice.Id,2} for {notice.OrderId} on '{Thread.CurrentThread.Name}' (attempt {attempt})");
        Interlocked.Increment(ref _handled);
        Check();
    }

    public void OnDeadLetter()
    {
        Interlocked.Increment(ref _deadLetters);
        Check();
    }

    public Task WaitForAsync(int expected)
    {
        Volatile.Write(ref _expected, expected);
        Check();
        return _all.Task;
    }

    private void Check()
    {
        if (Handled + DeadLetters >= Volatile.Read(ref _expected))
        {
            _all.TrySetResult();
        }
    }
}
