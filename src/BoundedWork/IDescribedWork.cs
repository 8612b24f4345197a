namespace BoundedWork;

/// <summary>
/// Implemented by an item's state to name the item for operators (<see cref="WorkItem.Description"/>: the items running
/// now, slow-item alarms, shutdown logs) instead of the delegate that runs it. A queue whose items all run through one
/// method of its own names the handler and the item this way, for example
/// <c>Shop.LedgerHandler.Handle(PaymentNotice #42, key order-7)</c>.
/// </summary>
/// <remarks>
/// The description is shown to whoever may read the executor's state (the admin console, <c>bw</c>, logs): put no
/// personal data in it.
/// </remarks>
public interface IDescribedWork
{
    /// <summary>Gets the item's name as an operator reads it; computed when read, so keep it cheap.</summary>
    string WorkDescription { get; }
}
