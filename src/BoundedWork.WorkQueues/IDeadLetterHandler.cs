namespace BoundedWork.Hosting;

/// <summary>
/// Receives the items of a typed work queue that will never be handled. Register any number with
/// <c>services.AddSingleton&lt;IDeadLetterHandler&lt;T&gt;, MyDeadLetters&gt;()</c> (or scoped: each dead letter gets
/// its own scope). With none registered, each dead letter is logged at Error level with the item.
/// </summary>
/// <typeparam name="T">The item type.</typeparam>
/// <remarks>
/// A dead letter is delivered on the thread that decided the item's fate (a worker, a producer whose item was
/// rejected, or the shutdown path), so persist it quickly (for example to an outbox). An exception a handler throws,
/// from <see cref="HandleAsync"/> or from its constructor, is logged at Error level with the item and does not stop
/// the other handlers.
/// <para>
/// A handler may put the item back into its own queue. If the queue refuses it at once (full, or shut down), the
/// handler sees the refusal (<see cref="IWorkQueue{T}.TryEnqueue"/> returns <see langword="false"/>), and the refused
/// item (or an item its submission evicted) is logged at Error level rather than handed to the handlers again, which
/// could repeat for ever.
/// </para>
/// </remarks>
public interface IDeadLetterHandler<T>
{
    /// <summary>Handles one dead letter.</summary>
    /// <param name="deadLetter">The item and why it was not handled.</param>
    /// <param name="cancellationToken">Not cancelled by the queue; reserved for the caller.</param>
    /// <returns>A task that completes when the dead letter is handled.</returns>
    ValueTask HandleAsync(DeadLetter<T> deadLetter, CancellationToken cancellationToken);
}
