namespace BoundedWork.Internal;

/// <summary>
/// An item as it sits in the queue. A struct, so queuing a fire-and-forget item allocates nothing.
/// </summary>
internal readonly struct QueuedItem
{
    /// <summary>Invokes a plain <see cref="Action"/>.</summary>
    public static readonly Action<object, object?> InvokeAction = static (callback, _) => ((Action)callback)();

    /// <summary>
    /// The user's delegate, invoked through <see cref="Invoker"/>, or an <see cref="IAwaitedItem"/> when
    /// <see cref="Invoker"/> is <see langword="null"/>.
    /// </summary>
    public readonly object Callback;
    public readonly object? State;
    public readonly Action<object, object?>? Invoker;
    public readonly ExecutionContext? Context;
    /// <summary>When the item was queued, on the executor's item clock (see <see cref="ItemClock"/>).</summary>
    public readonly long EnqueuedTimestamp;

    /// <summary>A high-resolution enqueue timestamp for the wait-duration histogram, or 0 when nobody listened to it.</summary>
    public readonly long PreciseEnqueuedTimestamp;

    public QueuedItem(object callback, object? state, Action<object, object?>? invoker, ExecutionContext? context, long enqueuedTimestamp, long preciseEnqueuedTimestamp = 0)
    {
        PreciseEnqueuedTimestamp = preciseEnqueuedTimestamp;
        Callback = callback;
        State = state;
        Invoker = invoker;
        Context = context;
        EnqueuedTimestamp = enqueuedTimestamp;
    }

    /// <summary>A copy with the timestamps only: what a queue slot keeps once its item was taken.</summary>
    public QueuedItem WithoutReferences() => new(null!, null, null, null, EnqueuedTimestamp, PreciseEnqueuedTimestamp);

    public IAwaitedItem? Awaited => Invoker is null ? (IAwaitedItem)Callback : null;

    public WorkItem ToWorkItem() => Invoker is null
        ? ((IAwaitedItem)Callback).ToWorkItem()
        : new WorkItem((Delegate)Callback, State, Invoker, isAwaited: false);
}

/// <summary>Invokes an <see cref="Action{T}"/> with its state without a closure.</summary>
internal static class StateInvoker<TState>
{
    public static readonly Action<object, object?> Instance = static (callback, state) => ((Action<TState>)callback)((TState)state!);
}
