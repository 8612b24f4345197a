namespace BoundedWork;

/// <summary>
/// A submitted item as reported to callbacks and returned by shutdown: the delegate that was
/// submitted and its state.
/// </summary>
public readonly struct WorkItem
{
    private readonly Action<object, object?>? _invoker;

    internal WorkItem(Delegate callback, object? state, Action<object, object?>? invoker, bool isAwaited)
    {
        Callback = callback;
        State = state;
        _invoker = invoker;
        IsAwaited = isAwaited;
    }

    /// <summary>
    /// Gets the delegate that was submitted: an <see cref="Action"/>, an <see cref="Action{T}"/> with
    /// <see cref="State"/>, or the <see cref="Func{TResult}"/> given to <c>RunAsync</c>.
    /// </summary>
    public Delegate Callback { get; }

    /// <summary>Gets the state passed with the delegate, or <see langword="null"/>.</summary>
    public object? State { get; }

    /// <summary>
    /// Gets a value indicating whether a caller awaits this item through a task returned by <c>RunAsync</c>.
    /// That task has already been completed (faulted or cancelled) by the time the item is reported.
    /// </summary>
    public bool IsAwaited { get; }

    /// <summary>
    /// Runs a fire-and-forget item on the calling thread, for example to run abandoned items elsewhere.
    /// </summary>
    /// <exception cref="InvalidOperationException">The item is awaited (its task has already been completed) or empty.</exception>
    public void Invoke()
    {
        if (IsAwaited || _invoker is null || Callback is null)
        {
            throw new InvalidOperationException("Only fire-and-forget items can be invoked; an awaited item's task has already been completed.");
        }

        _invoker(Callback, State);
    }
}
