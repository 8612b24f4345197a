namespace BoundedWork.Hosting;

/// <summary>
/// The state of an executor item that carries one delivery of a work queue's item: when the queue's executor refuses,
/// discards, evicts or abandons the executor item (it will never run), the queue calls <see cref="OnNotRun"/>, so the
/// item is handed back instead of lost. A storage (<see cref="IWorkQueueStorage{T}"/>) passes such a state to
/// <see cref="BoundedExecutor.TryExecute{TState}(Action{TState}, TState)"/> for every delivery it claims.
/// </summary>
public interface IWorkQueueDelivery
{
    /// <summary>
    /// The executor will never run this delivery. A storage returns the item to ready at once (without counting a
    /// delivery). Called once per executor item, on the thread that refused or dropped it; must not throw.
    /// </summary>
    /// <param name="reason">Why the executor did not run it.</param>
    /// <returns>A task that completes when the hand-back (or the resulting dead letter, if any) is done.</returns>
    Task OnNotRun(RejectionReason reason);
}
