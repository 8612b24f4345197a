namespace BoundedWork;

/// <summary>
/// A submitted item as reported to callbacks and returned by shutdown: the delegate that was
/// submitted and its state.
/// </summary>
public readonly struct WorkItem
{
    private readonly Action<object, object?>? _invoker;
    private readonly object? _describedBy;

    internal WorkItem(Delegate callback, object? state, Action<object, object?>? invoker, bool isAwaited, object? describedBy = null)
    {
        Callback = callback;
        State = state;
        _invoker = invoker;
        IsAwaited = isAwaited;
        _describedBy = describedBy;
    }

    /// <summary>
    /// Gets the delegate that was submitted: an <see cref="Action"/>, an <see cref="Action{T}"/> with
    /// <see cref="State"/>, or the <see cref="Func{TResult}"/> given to <c>RunAsync</c>.
    /// </summary>
    public Delegate Callback { get; }

    /// <summary>
    /// Gets a name for the item that a person can read: the namespace-qualified type and the method its delegate calls,
    /// with the compiler's names for lambdas and local functions decoded (<c>Program.Main (lambda)</c>,
    /// <c>Shop.Orders.Checkout.Send (local function)</c>, <c>Shop.Orders.Receipts.Send</c> for a method group).
    /// Computed when read, so submitting an item costs nothing for it.
    /// </summary>
    /// <remarks>
    /// To give an item a name of your choosing, submit a named method (a method group or a local function) rather
    /// than a lambda. Work submitted through <c>BlockingService</c>, <c>RunAndWait</c> or the TaskScheduler view is
    /// described by the delegate you passed to them (or, for a task, as <c>Task 42 (TaskScheduler)</c>), not by the
    /// library's own wrapper in <see cref="Callback"/>. The state is never part of the description (it may hold personal
    /// data), unless it names the item itself by implementing <see cref="IDescribedWork"/>: a typed work queue's items
    /// read <c>Shop.LedgerHandler.Handle(PaymentNotice #42, key order-7)</c>.
    /// </remarks>
    public string Description => _describedBy is null && State is IDescribedWork described
        ? described.WorkDescription
        : Internal.WorkDescription.Describe(_describedBy ?? Callback);

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
