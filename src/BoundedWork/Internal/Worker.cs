namespace BoundedWork.Internal;

/// <summary>
/// One dedicated worker thread's bookkeeping. Its counters are written only by its own thread (or, for
/// <see cref="Busy"/>, read by anyone), so counting costs no interlocked operation.
/// </summary>
internal sealed class Worker
{
    [ThreadStatic]
    private static Worker? t_current;

    private long _completed;
    private long _failed;
    private long _cancelled;
    private int _busy;

    public Worker(BoundedExecutor owner, int id)
    {
        Owner = owner;
        Id = id;
    }

    /// <summary>Gets the worker running on the current thread, or <see langword="null"/>.</summary>
    public static Worker? Current => t_current;

    public BoundedExecutor Owner { get; }

    public int Id { get; }

    /// <summary>Gets the worker thread's own clean execution context, restored after each item.</summary>
    public ExecutionContext? CleanContext { get; private set; }

    public long Completed => Volatile.Read(ref _completed);

    public long Failed => Volatile.Read(ref _failed);

    public long Cancelled => Volatile.Read(ref _cancelled);

    public bool Busy => Volatile.Read(ref _busy) != 0;

    public void AttachToCurrentThread()
    {
        t_current = this;
        CleanContext = ExecutionContext.Capture();
    }

    public static void DetachFromCurrentThread() => t_current = null;

    public void SetBusy(bool busy) => Volatile.Write(ref _busy, busy ? 1 : 0);

    public void Count(ItemOutcome outcome)
    {
        switch (outcome)
        {
            case ItemOutcome.Completed:
                Volatile.Write(ref _completed, _completed + 1);
                break;
            case ItemOutcome.Failed:
                Volatile.Write(ref _failed, _failed + 1);
                break;
            default:
                Volatile.Write(ref _cancelled, _cancelled + 1);
                break;
        }
    }
}
