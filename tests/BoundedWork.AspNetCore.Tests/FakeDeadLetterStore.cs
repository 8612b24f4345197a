using System.Collections.Concurrent;
using BoundedWork.Hosting;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>
/// A stand-in storage for queue "payments": records the selections it is given, answers with fixed counts, fails, or
/// (with <see cref="Hold"/>) does not answer a requeue until the hold is released or the caller cancels.
/// </summary>
internal sealed class FakeDeadLetterStore : IDeadLetterStore
{
    public string QueueName => "payments";

    public int Affected { get; init; }

    public Exception? Failure { get; init; }

    public ConcurrentQueue<DeadLetterSelection> Requeued { get; } = new();

    public ConcurrentQueue<DeadLetterSelection> Purged { get; } = new();

    public TaskCompletionSource<int>? Hold { get; init; }

    public TaskCompletionSource<bool> HeldCallCancelled { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public Task<DeadLetterPage> ListDeadLettersAsync(DeadLetterQuery query, CancellationToken cancellationToken = default) =>
        Failure is { } failure ? Task.FromException<DeadLetterPage>(failure) : Task.FromResult(new DeadLetterPage([], null));

    public Task<StoredDeadLetter?> GetDeadLetterAsync(long itemId, int maxPayloadLength, CancellationToken cancellationToken = default) =>
        Failure is { } failure ? Task.FromException<StoredDeadLetter?>(failure) : Task.FromResult<StoredDeadLetter?>(null);

    public Task<int> RequeueDeadLettersAsync(DeadLetterSelection selection, CancellationToken cancellationToken = default)
    {
        Requeued.Enqueue(selection);
        if (Hold is { } hold)
        {
            cancellationToken.Register(() => HeldCallCancelled.TrySetResult(true));
            return hold.Task.WaitAsync(cancellationToken);
        }

        return Failure is { } failure ? Task.FromException<int>(failure) : Task.FromResult(Affected);
    }

    public Task<int> PurgeDeadLettersAsync(DeadLetterSelection selection, CancellationToken cancellationToken = default)
    {
        Purged.Enqueue(selection);
        return Failure is { } failure ? Task.FromException<int>(failure) : Task.FromResult(Affected);
    }
}
